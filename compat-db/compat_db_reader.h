#pragma once
// Private to compat-db/: how the loader reads the entries of a compat-db
// file, shared by the section readers (compat_db_sections.cpp), the checks
// (compat_db_checks.cpp) and the loader (compat_db_load.cpp).
//
// Contract: an Entry reads one JSON object field by field; each accessor
// returns an empty value when the field is missing or malformed and records
// the first problem only, so that a reader goes on without checking every
// call and the error still names the first bad field. finish() then adds
// the first field the reader never asked for. Every Error's `where` is the
// path inside the file ("cudaReleases[3].minDriver"); the loader prepends
// the file name. An Entry refers to the JSON object it was given, which
// must outlive it. Nothing here keeps state between entries or threads.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "types/expected.h"
#include "types/field_path.h"
#include "types/quote.h"

namespace cudagate::compat_db_reader {

// How an error names a value it did not expect: "null", "a number", "the
// string \"x\"" (quoted and cut to one line), "an array".
[[nodiscard]] std::string kind_of(const nlohmann::json& value);

// "YYYY-MM", a month as NVIDIA's lifecycle pages give it.
[[nodiscard]] bool is_month(std::string_view text);
// "YYYY-MM-DD": the day a file's data was last checked.
[[nodiscard]] bool is_date(std::string_view text);

// Reading one entry: typed fields, the first problem kept, and every field
// the schema does not name reported.
class Entry {
 public:
  Entry(const nlohmann::json& object, std::string path) : object_(object), path_(std::move(path)) {}

  [[nodiscard]] std::string field_path(std::string_view key) const;

  void fail(std::string where, std::string message);

  // The first problem in this entry, unknown fields included.
  std::optional<Error> finish();

  // A required non-empty string.
  std::string text(std::string_view key);

  // An optional string, "" when absent.
  std::string optional_text(std::string_view key);

  // A list of non-empty strings; absent is an empty list unless required.
  std::vector<std::string> texts(std::string_view key, bool required);

  // A required whole number in [1, 99999].
  int number(std::string_view key);

  bool boolean(std::string_view key);

  // A string parsed by `parse` (CudaVersion::parse and friends).
  template <class T>
  std::optional<T> parsed(std::string_view key, bool required,
                          Expected<T> (*parse)(std::string_view)) {
    const nlohmann::json* value = get(key, required);
    if (value == nullptr) return std::nullopt;
    return parse_one(field_path(key), *value, parse);
  }

  template <class T>
  std::vector<T> parsed_list(std::string_view key, bool required,
                             Expected<T> (*parse)(std::string_view)) {
    std::vector<T> out;
    const nlohmann::json* value = list(key, required);
    if (value == nullptr) return out;
    for (std::size_t i = 0; i < value->size(); ++i) {
      auto item = parse_one(index_path(field_path(key), i), (*value)[i], parse);
      if (!item) return {};
      out.push_back(*item);
    }
    return out;
  }

 private:
  const nlohmann::json* get(std::string_view key, bool required);

  const nlohmann::json* list(std::string_view key, bool required);

  template <class T>
  std::optional<T> parse_one(const std::string& where, const nlohmann::json& value,
                             Expected<T> (*parse)(std::string_view)) {
    if (!value.is_string()) {
      // The parser's own wording of the expected form, from its answer to
      // an empty text, keeps one description per type.
      const std::string form = parse("").error().message;
      fail(where, form.substr(0, form.find(", got")) + ", got " + kind_of(value));
      return std::nullopt;
    }
    auto result = parse(value.get_ref<const std::string&>());
    if (!result) {
      // The version parsers quote the input as given; a control byte in it
      // would break the one-line message.
      fail(where, printable(result.error().message, 400));
      return std::nullopt;
    }
    return *result;
  }

  const nlohmann::json& object_;
  std::string path_;
  std::vector<std::string> asked_;
  std::optional<Error> error_;
};

// Reads every entry of one section with `read_one`, which fills a T from an
// Entry and may add its own checks through Entry::fail.
template <class T, class ReadOne>
std::optional<Error> read_entries(const nlohmann::json& value, std::string_view section,
                                  std::vector<T>& out, ReadOne read_one) {
  if (!value.is_array()) {
    return Error{std::string(section), "expected an array of entries, got " + kind_of(value)};
  }
  out.reserve(value.size());
  for (std::size_t i = 0; i < value.size(); ++i) {
    const nlohmann::json& item = value[i];
    if (!item.is_object()) {
      return Error{index_path(section, i), "expected an object, got " + kind_of(item)};
    }
    Entry entry(item, index_path(section, i));
    T parsed = read_one(entry);
    if (auto error = entry.finish()) return error;
    out.push_back(std::move(parsed));
  }
  return std::nullopt;
}

}  // namespace cudagate::compat_db_reader

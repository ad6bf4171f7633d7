// Reading one entry of a compat-db file: typed fields, the first problem kept, and the wording
// every error shares for what it found.
#include "compat-db/compat_db_reader.h"

#include <algorithm>
#include <cstdint>

#include "types/ascii.h"

namespace cudagate::compat_db_reader {
namespace {

using nlohmann::json;

bool digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), ascii::is_digit);
}

}  // namespace

std::string kind_of(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return "a number";
    case json::value_t::string:
      return "the string " + quote(value.get_ref<const std::string&>());
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    default:
      return "an unsupported value";
  }
}

bool is_month(std::string_view text) {
  if (text.size() != 7 || text[4] != '-' || !digits(text.substr(0, 4)) || !digits(text.substr(5))) {
    return false;
  }
  const int month = (text[5] - '0') * 10 + (text[6] - '0');
  return month >= 1 && month <= 12;
}

bool is_date(std::string_view text) {
  if (text.size() != 10 || text[7] != '-' || !is_month(text.substr(0, 7)) ||
      !digits(text.substr(8))) {
    return false;
  }
  const int day = (text[8] - '0') * 10 + (text[9] - '0');
  return day >= 1 && day <= 31;
}

std::string Entry::field_path(std::string_view key) const {
  return cudagate::field_path(path_, key);
}

void Entry::fail(std::string where, std::string message) {
  if (!error_) error_ = Error{std::move(where), std::move(message)};
}

std::optional<Error> Entry::finish() {
  if (!error_) {
    for (const auto& item : object_.items()) {
      if (std::find(asked_.begin(), asked_.end(), item.key()) != asked_.end()) continue;
      std::string expected;
      for (const auto& key : asked_) expected += (expected.empty() ? "" : ", ") + key;
      fail(cudagate::field_path(path_, printable(item.key())),
           "unknown field (this entry has: " + expected + ")");
      break;
    }
  }
  return error_;
}

std::string Entry::text(std::string_view key) {
  const json* value = get(key, true);
  if (value == nullptr) return {};
  if (!value->is_string() || value->get_ref<const std::string&>().empty()) {
    fail(field_path(key), "expected a non-empty string, got " + kind_of(*value));
    return {};
  }
  return value->get<std::string>();
}

std::string Entry::optional_text(std::string_view key) {
  const json* value = get(key, false);
  if (value == nullptr) return {};
  if (!value->is_string()) {
    fail(field_path(key), "expected a string, got " + kind_of(*value));
    return {};
  }
  return value->get<std::string>();
}

std::vector<std::string> Entry::texts(std::string_view key, bool required) {
  std::vector<std::string> out;
  const json* value = list(key, required);
  if (value == nullptr) return out;
  for (std::size_t i = 0; i < value->size(); ++i) {
    const json& item = (*value)[i];
    if (!item.is_string() || item.get_ref<const std::string&>().empty()) {
      fail(index_path(field_path(key), i), "expected a non-empty string, got " + kind_of(item));
      return {};
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

int Entry::number(std::string_view key) {
  const json* value = get(key, true);
  if (value == nullptr) return 0;
  if (!value->is_number_integer()) {
    fail(field_path(key), "expected a whole number, got " + kind_of(*value));
    return 0;
  }
  // Positive literals parse as unsigned, negative ones as signed.
  const bool in_range =
      value->is_number_unsigned()
          ? value->get<std::uint64_t>() >= 1 && value->get<std::uint64_t>() <= 99999
          : value->get<std::int64_t>() >= 1 && value->get<std::int64_t>() <= 99999;
  if (!in_range) {
    fail(field_path(key), "expected a whole number from 1 to 99999, got " + value->dump());
    return 0;
  }
  return value->get<int>();
}

bool Entry::boolean(std::string_view key) {
  const json* value = get(key, true);
  if (value == nullptr) return false;
  if (!value->is_boolean()) {
    fail(field_path(key), "expected true or false, got " + kind_of(*value));
    return false;
  }
  return value->get<bool>();
}

const json* Entry::get(std::string_view key, bool required) {
  if (std::find(asked_.begin(), asked_.end(), key) == asked_.end()) asked_.emplace_back(key);
  const auto it = object_.find(key);
  if (it == object_.end()) {
    if (required) fail(field_path(key), "required field is missing");
    return nullptr;
  }
  return &*it;
}

const json* Entry::list(std::string_view key, bool required) {
  const json* value = get(key, required);
  if (value == nullptr) return nullptr;
  if (!value->is_array() || (required && value->empty())) {
    fail(field_path(key),
         std::string(required ? "expected a non-empty array" : "expected an array") + ", got " +
             (value->is_array() ? "an empty one" : kind_of(*value)));
    return nullptr;
  }
  return value;
}

}  // namespace cudagate::compat_db_reader

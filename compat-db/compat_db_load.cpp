// Loading the compatibility matrix: each file's JSON text parsed with errors that name the
// place, its sections read in, and the checks across sections and files once all are read.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "compat-db/compat_db.h"
#include "compat-db/compat_db_checks.h"
#include "compat-db/compat_db_reader.h"
#include "compat-db/compat_db_sections.h"
#include "types/json_depth.h"
#include "types/quote.h"

namespace cudagate {
namespace {

using compat_db_reader::check_cloud_products;
using compat_db_reader::check_image_rules;
using compat_db_reader::check_instance_products;
using compat_db_reader::find_section;
using compat_db_reader::is_date;
using compat_db_reader::kind_of;
using compat_db_reader::Section;
using compat_db_reader::section_names;
using compat_db_reader::sections;
using nlohmann::json;

// The schema this loader reads; a file written for another schema is
// refused rather than half understood.
constexpr std::int64_t kSchemaVersion = 1;

// Deeper than any entry of the schema: a file nested further is not a
// compat-db, and refusing it early keeps hostile input cheap.
constexpr int kMaxDepth = 32;

// "name:line:column" for the byte at `offset` (0-based).
std::string position(std::string_view name, std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  const std::string_view before = text.substr(0, offset);
  const auto line = 1 + std::count(before.begin(), before.end(), '\n');
  const std::size_t line_start =
      before.rfind('\n') == std::string_view::npos ? 0 : before.rfind('\n') + 1;
  return std::string(name) + ":" + std::to_string(line) + ":" +
         std::to_string(offset - line_start + 1);
}

// The JSON library's own explanation, without its exception prefix and the
// position it words differently.
std::string parse_error_text(const char* what) {
  std::string_view text(what);
  if (const auto colon = text.find(": "); colon != std::string_view::npos) {
    text.remove_prefix(colon + 2);
  }
  return printable(text, 200);
}

Expected<json> parse_document(const CompatDbFile& file) {
  if (const std::size_t at = json_too_deep_at(file.text, kMaxDepth); at != std::string_view::npos) {
    return Error{position(file.name, file.text, at),
                 "nested deeper than " + std::to_string(kMaxDepth) + " levels"};
  }
  // The JSON library keeps the last of two equal keys; a compat-db file with
  // such a pair has lost data without saying so, so it is refused.
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate_key;
  json::parser_callback_t check_keys = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      if (!open_objects.empty()) open_objects.pop_back();
    } else if (event == json::parse_event_t::key && !open_objects.empty() && parsed.is_string()) {
      if (!open_objects.back().insert(parsed.get<std::string>()).second && duplicate_key.empty()) {
        duplicate_key = parsed.get<std::string>();
      }
    }
    return true;
  };
  try {
    json document = json::parse(file.text.begin(), file.text.end(), check_keys);
    if (!duplicate_key.empty()) {
      return Error{file.name, "the key " + quote(duplicate_key) +
                                  " appears twice in one object; each key may appear once"};
    }
    return document;
  } catch (const json::parse_error& e) {
    const std::size_t offset = e.byte == 0 ? 0 : e.byte - 1;
    return Error{position(file.name, file.text, offset),
                 "invalid JSON: " + parse_error_text(e.what())};
  } catch (const json::exception& e) {
    return Error{file.name, "invalid JSON: " + parse_error_text(e.what())};
  }
}

// FNV-1a, 64 bits: a stable digest of the input, not a security measure.
std::string content_revision(const std::vector<CompatDbFile>& files) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  const auto mix = [&hash](std::string_view bytes) {
    for (const char c : bytes) {
      hash ^= static_cast<unsigned char>(c);
      hash *= 0x100000001b3ULL;
    }
    hash ^= 0xffU;  // separates fields so that ("ab","c") and ("a","bc") differ
    hash *= 0x100000001b3ULL;
  };
  for (const CompatDbFile& file : files) {
    mix(file.name);
    mix(file.text);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i) {
    out[static_cast<std::size_t>(i)] = kHex[hash & 0xfU];
    hash >>= 4;
  }
  return out;
}

}  // namespace

Expected<CompatDb> load_compat_db(const std::vector<CompatDbFile>& files) {
  if (files.empty()) return Error{"", "no compat-db files given"};
  CompatDb db;
  std::map<std::string, std::string, std::less<>> section_file;  // section -> file that gave it
  for (const CompatDbFile& file : files) {
    auto document = parse_document(file);
    if (!document) return document.error();
    const json& root = *document;
    if (!root.is_object()) {
      return Error{file.name,
                   "expected a JSON object {\"schemaVersion\": " + std::to_string(kSchemaVersion) +
                       ", <sections>}, got " + kind_of(root)};
    }
    const auto version = root.find("schemaVersion");
    if (version == root.end()) {
      return Error{file.name + ": schemaVersion", "required field is missing"};
    }
    const bool supported =
        version->is_number_unsigned() &&
        version->get<std::uint64_t>() == static_cast<std::uint64_t>(kSchemaVersion);
    if (!supported) {
      return Error{file.name + ": schemaVersion",
                   "expected schema version " + std::to_string(kSchemaVersion) + ", got " +
                       (version->is_number_integer() ? version->dump() : kind_of(*version))};
    }
    for (const auto& item : root.items()) {
      const std::string& name = item.key();
      if (name == "schemaVersion") continue;
      if (name == "asOf") {
        const json& value = item.value();
        if (!value.is_string() || !is_date(value.get_ref<const std::string&>())) {
          return Error{
              file.name + ": asOf",
              "expected the date the data was checked, like 2026-12-04, got " + kind_of(value)};
        }
        db.as_of = std::max(db.as_of, value.get<std::string>());
        continue;
      }
      const Section* section = find_section(name);
      if (section == nullptr) {
        return Error{file.name + ": " + printable(name),
                     "unknown section (expected asOf or one of: " + section_names() + ")"};
      }
      if (const auto given = section_file.find(name); given != section_file.end()) {
        return Error{file.name + ": " + name, "section already given in " + given->second +
                                                  "; a section may appear in one file only"};
      }
      section_file.emplace(name, file.name);
      if (auto error = section->read(item.value(), db)) return error->within(file.name);
    }
  }
  for (const Section& section : sections()) {
    if (!section.required || section_file.find(section.name) != section_file.end()) continue;
    std::string names;
    for (const CompatDbFile& file : files) names += (names.empty() ? "" : ", ") + file.name;
    return Error{names, "missing section \"" + std::string(section.name) +
                            "\"; every compat-db section must be given by one of the files"};
  }
  if (auto error = check_cloud_products(db)) {
    return error->within(section_file.find("cloudAccelerators")->second);
  }
  if (auto error = check_instance_products(db, section_file)) return *error;

  std::stable_sort(db.cuda_releases.begin(), db.cuda_releases.end(),
                   [](const CudaRelease& a, const CudaRelease& b) {
                     if (a.cuda != b.cuda) return a.cuda < b.cuda;
                     return a.cuda.update() < b.cuda.update();
                   });
  std::stable_sort(
      db.driver_branches.begin(), db.driver_branches.end(),
      [](const DriverBranch& a, const DriverBranch& b) { return a.branch < b.branch; });
  std::stable_sort(db.cuda_targets.begin(), db.cuda_targets.end(),
                   [](const CudaTargets& a, const CudaTargets& b) { return a.since < b.since; });
  if (auto error = check_image_rules(db)) {
    return error->within(section_file.find("imageRules")->second);
  }
  db.revision = content_revision(files);
  return db;
}

}  // namespace cudagate

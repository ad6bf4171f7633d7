// Loading the compatibility matrix: JSON files checked against the schema, with errors naming the
// file, the entry and the field, and the lookups that node facts and rules rely on.
#include "compat-db/compat_db.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>

#include "types/json_depth.h"
#include "types/quote.h"

namespace cudagate {
namespace {

using nlohmann::json;

// The schema this loader reads; a file written for another schema is
// refused rather than half understood.
constexpr std::int64_t kSchemaVersion = 1;

// Deeper than any entry of the schema: a file nested further is not a
// compat-db, and refusing it early keeps hostile input cheap.
constexpr int kMaxDepth = 32;

constexpr std::array<std::string_view, 5> kDesignations = {"", "LTSB", "PB", "NFB", "developer"};
constexpr std::array<std::string_view, 4> kRuleKinds = {"cuda-base", "ngc-release", "cuda-tag",
                                                        "pytorch-tag"};
constexpr std::array<std::string_view, 3> kProviders = {"aws", "gcp", "azure"};
char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

std::string to_lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), lower);
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [](char x, char y) { return lower(x) == lower(y); });
}

bool istarts_with(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && iequals(text.substr(0, prefix.size()), prefix);
}

// The label value GPU Feature Discovery writes for an NVML product name
// (NVIDIA k8s-device-plugin, internal/lm/resource.go, sanitise): characters
// outside [A-Za-z0-9-_. ] dropped, the words that remain joined by '-'.
// "NVIDIA H100 80GB HBM3", as NVIDIA's DRA driver publishes it, is
// "NVIDIA-H100-80GB-HBM3".
std::string gfd_label_value(std::string_view nvml_name) {
  std::string out;
  bool gap = false;
  for (const char c : nvml_name) {
    const bool kept = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.';
    if (kept) {
      if (gap && !out.empty()) out += '-';
      out += c;
      gap = false;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
      gap = true;
    }
  }
  return out;
}

template <std::size_t N>
bool one_of(std::string_view value, const std::array<std::string_view, N>& allowed) {
  return std::find(allowed.begin(), allowed.end(), value) != allowed.end();
}

template <std::size_t N>
std::string listing(const std::array<std::string_view, N>& items) {
  std::string out;
  for (std::string_view item : items) {
    if (item.empty()) continue;
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

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

std::string indexed(std::string_view path, std::size_t i) {
  return std::string(path) + "[" + std::to_string(i) + "]";
}

// ---------------------------------------------------------------------------
// Reading JSON text.

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

// ---------------------------------------------------------------------------
// Reading one entry: typed fields, the first problem kept, and every field
// the schema does not name reported.

class Entry {
 public:
  Entry(const json& object, std::string path) : object_(object), path_(std::move(path)) {}

  [[nodiscard]] std::string field_path(std::string_view key) const {
    return path_ + "." + std::string(key);
  }

  void fail(std::string where, std::string message) {
    if (!error_) error_ = Error{std::move(where), std::move(message)};
  }

  // The first problem in this entry, unknown fields included.
  std::optional<Error> finish() {
    if (!error_) {
      for (const auto& item : object_.items()) {
        if (std::find(asked_.begin(), asked_.end(), item.key()) != asked_.end()) continue;
        std::string expected;
        for (const auto& key : asked_) expected += (expected.empty() ? "" : ", ") + key;
        fail(path_ + "." + printable(item.key()),
             "unknown field (this entry has: " + expected + ")");
        break;
      }
    }
    return error_;
  }

  // A required non-empty string.
  std::string text(std::string_view key) {
    const json* value = get(key, true);
    if (value == nullptr) return {};
    if (!value->is_string() || value->get_ref<const std::string&>().empty()) {
      fail(field_path(key), "expected a non-empty string, got " + kind_of(*value));
      return {};
    }
    return value->get<std::string>();
  }

  // An optional string, "" when absent.
  std::string optional_text(std::string_view key) {
    const json* value = get(key, false);
    if (value == nullptr) return {};
    if (!value->is_string()) {
      fail(field_path(key), "expected a string, got " + kind_of(*value));
      return {};
    }
    return value->get<std::string>();
  }

  // A list of non-empty strings; absent is an empty list unless required.
  std::vector<std::string> texts(std::string_view key, bool required) {
    std::vector<std::string> out;
    const json* value = list(key, required);
    if (value == nullptr) return out;
    for (std::size_t i = 0; i < value->size(); ++i) {
      const json& item = (*value)[i];
      if (!item.is_string() || item.get_ref<const std::string&>().empty()) {
        fail(indexed(field_path(key), i), "expected a non-empty string, got " + kind_of(item));
        return {};
      }
      out.push_back(item.get<std::string>());
    }
    return out;
  }

  // A required whole number in [1, 99999].
  int number(std::string_view key) {
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

  bool boolean(std::string_view key) {
    const json* value = get(key, true);
    if (value == nullptr) return false;
    if (!value->is_boolean()) {
      fail(field_path(key), "expected true or false, got " + kind_of(*value));
      return false;
    }
    return value->get<bool>();
  }

  // A string parsed by `parse` (CudaVersion::parse and friends).
  template <class T>
  std::optional<T> parsed(std::string_view key, bool required,
                          Expected<T> (*parse)(std::string_view)) {
    const json* value = get(key, required);
    if (value == nullptr) return std::nullopt;
    return parse_one(field_path(key), *value, parse);
  }

  template <class T>
  std::vector<T> parsed_list(std::string_view key, bool required,
                             Expected<T> (*parse)(std::string_view)) {
    std::vector<T> out;
    const json* value = list(key, required);
    if (value == nullptr) return out;
    for (std::size_t i = 0; i < value->size(); ++i) {
      auto item = parse_one(indexed(field_path(key), i), (*value)[i], parse);
      if (!item) return {};
      out.push_back(*item);
    }
    return out;
  }

 private:
  const json* get(std::string_view key, bool required) {
    if (std::find(asked_.begin(), asked_.end(), key) == asked_.end()) asked_.emplace_back(key);
    const auto it = object_.find(key);
    if (it == object_.end()) {
      if (required) fail(field_path(key), "required field is missing");
      return nullptr;
    }
    return &*it;
  }

  const json* list(std::string_view key, bool required) {
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

  template <class T>
  std::optional<T> parse_one(const std::string& where, const json& value,
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

  const json& object_;
  std::string path_;
  std::vector<std::string> asked_;
  std::optional<Error> error_;
};

// Reads every entry of one section with `read_one`, which fills a T from an
// Entry and may add its own checks through Entry::fail.
template <class T, class ReadOne>
std::optional<Error> read_entries(const json& value, std::string_view section, std::vector<T>& out,
                                  ReadOne read_one) {
  if (!value.is_array()) {
    return Error{std::string(section), "expected an array of entries, got " + kind_of(value)};
  }
  out.reserve(value.size());
  for (std::size_t i = 0; i < value.size(); ++i) {
    const json& item = value[i];
    if (!item.is_object()) {
      return Error{indexed(section, i), "expected an object, got " + kind_of(item)};
    }
    Entry entry(item, indexed(section, i));
    T parsed = read_one(entry);
    if (auto error = entry.finish()) return error;
    out.push_back(std::move(parsed));
  }
  return std::nullopt;
}

// Versions in the matrix name a release, so a bare major ("12") is refused.
void require_minor(Entry& entry, std::string_view key, const std::string& text) {
  if (!text.empty() && text.find('.') == std::string::npos) {
    entry.fail(entry.field_path(key),
               "expected a CUDA version with a minor part like 12.4 or 12.4.1, got " + quote(text));
  }
}

// One TORCH_CUDA_ARCH_LIST-style list: "X.Y[a|f][+PTX]" entries joined by ';'.
bool well_formed_arch_list(std::string_view text) {
  if (text.empty()) return false;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(';', start);
    std::string_view item =
        text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (item.ends_with("+PTX")) item.remove_suffix(4);
    if (item.ends_with('a') || item.ends_with('f')) item.remove_suffix(1);
    if (item.find('.') == std::string_view::npos || !ComputeCapability::parse(item)) return false;
    if (end == std::string_view::npos) return true;
    start = end + 1;
  }
}

bool digits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "YYYY-MM", a month as NVIDIA's lifecycle pages give it.
bool is_month(std::string_view text) {
  if (text.size() != 7 || text[4] != '-' || !digits(text.substr(0, 4)) || !digits(text.substr(5))) {
    return false;
  }
  const int month = (text[5] - '0') * 10 + (text[6] - '0');
  return month >= 1 && month <= 12;
}

// "YYYY-MM-DD": the day a file's data was last checked.
bool is_date(std::string_view text) {
  if (text.size() != 10 || text[7] != '-' || !is_month(text.substr(0, 7)) ||
      !digits(text.substr(8))) {
    return false;
  }
  const int day = (text[8] - '0') * 10 + (text[9] - '0');
  return day >= 1 && day <= 31;
}

// "YY.MM": an NGC monthly release.
bool is_release_name(std::string_view text) {
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (text.size() != 5 || text[2] != '.') return false;
  if (!digit(text[0]) || !digit(text[1]) || !digit(text[3]) || !digit(text[4])) return false;
  const int month = (text[3] - '0') * 10 + (text[4] - '0');
  return month >= 1 && month <= 12;
}

// NGC release notes print a bare branch ("requires driver 535 or later"); it
// is kept as the branch's first version so that comparisons work.
Expected<DriverVersion> parse_driver_or_branch(std::string_view text) {
  if (!text.empty() && text.find('.') == std::string_view::npos) {
    auto branch = DriverVersion::parse(std::string(text) + ".0");
    if (branch) return branch;
  }
  auto version = DriverVersion::parse(text);
  if (version) return version;
  return Error{
      "", "expected a driver version like 535.129.03 or a branch like 535, got " + quote(text)};
}

// --- Sections --------------------------------------------------------------

CudaRelease read_cuda_release(Entry& e) {
  CudaRelease r;
  r.version = e.text("version");
  if (auto cuda = e.parsed("version", false, &CudaVersion::parse)) r.cuda = *cuda;
  require_minor(e, "version", r.version);
  r.label = e.text("label");
  if (auto driver = e.parsed("minDriver", true, &parse_driver_or_branch)) r.min_driver = *driver;
  r.source = e.text("source");
  return r;
}

MinorVersionCompat read_minor_version_compat(Entry& e) {
  MinorVersionCompat m;
  m.cuda_major = e.number("cudaMajor");
  if (auto driver = e.parsed("minDriver", true, &DriverVersion::parse)) m.min_driver = *driver;
  m.source = e.text("source");
  return m;
}

DriverBranch read_driver_branch(Entry& e) {
  DriverBranch b;
  b.branch = e.number("branch");
  if (auto cuda = e.parsed("cuda", true, &CudaVersion::parse)) {
    b.cuda = *cuda;
    require_minor(e, "cuda", e.optional_text("cuda"));
  }
  b.designation = e.optional_text("designation");
  if (!one_of(b.designation, kDesignations)) {
    e.fail(e.field_path("designation"), "expected one of " + listing(kDesignations) +
                                            " (or leave it out), got " + quote(b.designation));
  }
  b.end_of_life = e.optional_text("endOfLife");
  if (!b.end_of_life.empty() && !is_month(b.end_of_life)) {
    e.fail(e.field_path("endOfLife"), "expected a month like 2026-06, got " + quote(b.end_of_life));
  }
  b.source = e.text("source");
  return b;
}

LastDriverBranch read_last_driver_branch(Entry& e) {
  LastDriverBranch l;
  l.family = e.text("family");
  l.capabilities = e.parsed_list("computeCapabilities", true, &ComputeCapability::parse);
  l.last_branch = e.number("lastBranch");
  l.source = e.text("source");
  return l;
}

// Capability lists are written ascending without repeats, so that a reader
// can check them against the source table at a glance.
void require_ascending(Entry& e, std::string_view key, const std::vector<ComputeCapability>& ccs) {
  for (std::size_t i = 1; i < ccs.size(); ++i) {
    if (!(ccs[i - 1] < ccs[i])) {
      e.fail(indexed(e.field_path(key), i),
             "expected capabilities in ascending order without repeats, got " + ccs[i].str() +
                 " after " + ccs[i - 1].str());
      return;
    }
  }
}

// A release cannot build a special target for a capability it does not build at all.
void require_subset_of_all(Entry& e, std::string_view key, std::string_view what,
                           const std::vector<ComputeCapability>& list,
                           const std::vector<ComputeCapability>& all) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (std::find(all.begin(), all.end(), list[i]) == all.end()) {
      e.fail(indexed(e.field_path(key), i),
             list[i].str() + " is not in \"all\"; " + std::string(what) + " is a subset of all");
      return;
    }
  }
}

CudaTargets read_cuda_targets(Entry& e) {
  CudaTargets t;
  if (auto since = e.parsed("since", true, &CudaVersion::parse)) {
    t.since = *since;
    require_minor(e, "since", e.optional_text("since"));
  }
  t.all = e.parsed_list("all", true, &ComputeCapability::parse);
  t.all_major = e.parsed_list("allMajor", true, &ComputeCapability::parse);
  t.arch_specific = e.parsed_list("archSpecific", false, &ComputeCapability::parse);
  t.family_specific = e.parsed_list("familySpecific", false, &ComputeCapability::parse);
  require_ascending(e, "all", t.all);
  require_ascending(e, "allMajor", t.all_major);
  require_ascending(e, "archSpecific", t.arch_specific);
  require_ascending(e, "familySpecific", t.family_specific);
  require_subset_of_all(e, "allMajor", "all-major", t.all_major, t.all);
  require_subset_of_all(e, "archSpecific", "an architecture-specific target", t.arch_specific,
                        t.all);
  require_subset_of_all(e, "familySpecific", "a family-specific target", t.family_specific, t.all);
  t.source = e.text("source");
  return t;
}

Product read_product(Entry& e) {
  Product p;
  p.name = e.text("name");
  p.aliases = e.texts("aliases", false);
  p.gfd_names = e.texts("gfdNames", false);
  p.gfd_prefixes = e.texts("gfdPrefixes", false);
  if (auto cc = e.parsed("computeCapability", true, &ComputeCapability::parse)) p.cc = *cc;
  p.family = e.text("family");
  p.brand = e.optional_text("brand");
  if (p.brand != to_lower(p.brand)) {
    e.fail(
        e.field_path("brand"),
        "expected the brand in lower case as NVIDIA_REQUIRE_* compares it, got " + quote(p.brand));
  }
  p.datacenter = e.boolean("datacenter");
  p.source = e.text("source");
  return p;
}

CloudAccelerator read_cloud_accelerator(Entry& e) {
  CloudAccelerator c;
  c.label = e.text("label");
  c.value = e.text("value");
  c.product = e.text("product");
  c.source = e.text("source");
  return c;
}

NamedArchitecture read_architecture(Entry& e) {
  NamedArchitecture a;
  a.name = e.text("name");
  a.arch_list = e.text("archList");
  if (!a.arch_list.empty() && !well_formed_arch_list(a.arch_list)) {
    e.fail(e.field_path("archList"),
           "expected entries like 8.0, 9.0a or 8.6+PTX joined by ';', got " + quote(a.arch_list));
  }
  a.cuda_since = e.parsed("cudaSince", false, &CudaVersion::parse);
  a.cuda_before = e.parsed("cudaBefore", false, &CudaVersion::parse);
  if (a.cuda_since && a.cuda_before && !(*a.cuda_since < *a.cuda_before)) {
    e.fail(e.field_path("cudaBefore"), "expected a CUDA release after cudaSince " +
                                           a.cuda_since->str() + ", got " + a.cuda_before->str());
  }
  a.source = e.text("source");
  return a;
}

TegraCapability read_tegra_capability(Entry& e) {
  TegraCapability t;
  if (auto cc = e.parsed("computeCapability", true, &ComputeCapability::parse)) t.cc = *cc;
  t.devices = e.text("devices");
  t.source = e.text("source");
  return t;
}

CudaImage read_cuda_image(Entry& e) {
  CudaImage i;
  i.cuda_version = e.text("cudaVersion");
  const auto cuda = e.parsed("cudaVersion", false, &CudaVersion::parse);
  require_minor(e, "cudaVersion", i.cuda_version);
  i.require_cuda = e.text("requireCuda");
  // The requirement's first term is the image's own CUDA release; a
  // mismatch means the row was copied from another image.
  if (cuda && !i.require_cuda.empty()) {
    const std::string expected = "cuda>=" + cuda->str();
    const std::string first = i.require_cuda.substr(0, i.require_cuda.find(' '));
    if (!iequals(first, expected)) {
      e.fail(e.field_path("requireCuda"), "expected the requirement to start with " +
                                              quote(expected) + " for CUDA " + i.cuda_version +
                                              ", got " + quote(first));
    }
  }
  i.source = e.text("source");
  return i;
}

NgcRelease read_ngc_release(Entry& e) {
  NgcRelease n;
  n.release = e.text("release");
  if (!n.release.empty() && !is_release_name(n.release)) {
    e.fail(e.field_path("release"),
           "expected a release like 24.01 (YY.MM), got " + quote(n.release));
  }
  n.cuda_version = e.text("cudaVersion");
  (void)e.parsed("cudaVersion", false, &CudaVersion::parse);
  require_minor(e, "cudaVersion", n.cuda_version);
  n.min_driver = e.parsed("minDriver", false, &parse_driver_or_branch);
  n.forward_compat = e.parsed_list("forwardCompat", false, &DriverVersion::parse);
  n.min_cc = e.parsed("minComputeCapability", false, &ComputeCapability::parse);
  n.pytorch_version = e.optional_text("pytorchVersion");
  n.source = e.text("source");
  return n;
}

// A torch release as major.minor ("2.7"); a patch part is refused, since
// the builds' lists change with minor releases only.
void read_torch_release(Entry& e, std::string_view key, bool required, CudaVersion& out,
                        bool& present) {
  const std::string text = e.optional_text(key);
  present = !text.empty();
  if (!present) {
    if (required) (void)e.text(key);
    return;
  }
  auto parsed = CudaVersion::parse(text);
  if (!parsed || std::count(text.begin(), text.end(), '.') != 1) {
    e.fail(e.field_path(key), "expected a torch release like 2.7, got " + quote(text));
    return;
  }
  out = *parsed;
}

TorchBuild read_torch_build(Entry& e) {
  TorchBuild t;
  t.cuda_variant = e.text("cudaVariant");
  if (auto cuda = e.parsed("cuda", true, &CudaVersion::parse)) {
    t.cuda = *cuda;
    require_minor(e, "cuda", e.optional_text("cuda"));
    const std::string variant =
        "cu" + std::to_string(cuda->major()) + std::to_string(cuda->minor());
    if (!t.cuda_variant.empty() && t.cuda_variant != variant) {
      e.fail(e.field_path("cudaVariant"), "expected " + quote(variant) + " for CUDA " +
                                              cuda->str() + ", got " + quote(t.cuda_variant));
    }
  }
  bool present = false;
  read_torch_release(e, "torchSince", true, t.torch_since, present);
  CudaVersion before;
  read_torch_release(e, "torchBefore", false, before, present);
  if (present) {
    t.torch_before = before;
    if (!(t.torch_since < before)) {
      e.fail(e.field_path("torchBefore"), "expected a torch release after torchSince " +
                                              t.torch_since.str() + ", got " + before.str());
    }
  }
  t.arch_list = e.text("archList");
  if (!t.arch_list.empty() && !well_formed_arch_list(t.arch_list)) {
    e.fail(e.field_path("archList"),
           "expected entries like 8.0, 9.0a or 8.6+PTX joined by ';', got " + quote(t.arch_list));
  }
  t.source = e.text("source");
  return t;
}

ImageRule read_image_rule(Entry& e) {
  ImageRule r;
  r.repositories = e.texts("repositories", true);
  r.kind = e.text("kind");
  if (!r.kind.empty() && !one_of(r.kind, kRuleKinds)) {
    e.fail(e.field_path("kind"),
           "expected one of " + listing(kRuleKinds) + ", got " + quote(r.kind));
  }
  r.source = e.text("source");
  return r;
}

InstanceType read_instance_type(Entry& e) {
  InstanceType t;
  t.provider = e.text("provider");
  if (!t.provider.empty() && !one_of(t.provider, kProviders)) {
    e.fail(e.field_path("provider"),
           "expected one of " + listing(kProviders) + ", got " + quote(t.provider));
  }
  t.name = e.text("instanceType");
  t.product = e.text("product");
  t.gpus = e.number("gpus");
  t.source = e.text("source");
  return t;
}

// "product" names one product, "products" several; exactly one of them.
InstanceGpuLabel read_instance_gpu_label(Entry& e) {
  InstanceGpuLabel l;
  l.label = e.text("label");
  l.value = e.text("value");
  const std::string one = e.optional_text("product");
  l.products = e.texts("products", false);
  if (!one.empty() && !l.products.empty()) {
    e.fail(e.field_path("products"), "give product (one name) or products (a list), not both");
  } else if (one.empty() && l.products.empty()) {
    e.fail(e.field_path("product"),
           "required field is missing (or give products, a non-empty list of names)");
  } else if (!one.empty()) {
    l.products = {one};
  }
  l.source = e.text("source");
  return l;
}

// --- Checks across the entries of a section --------------------------------

// The first two entries whose key(entry) are equal; keys compare as given.
template <class T, class Key>
std::optional<Error> unique(const std::vector<T>& items, std::string_view section,
                            std::string_view field, Key key) {
  using K = decltype(key(items.front()));
  std::map<K, std::size_t> seen;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto [it, inserted] = seen.emplace(key(items[i]), i);
    if (!inserted) {
      return Error{indexed(section, i) + "." + std::string(field),
                   "repeats " + indexed(section, it->second) + "; each entry must be unique"};
    }
  }
  return std::nullopt;
}

// Names and aliases are looked up ignoring case, so they must be unique that way.
std::optional<Error> check_products(const std::vector<Product>& products) {
  std::map<std::string, std::string> names;      // lower-case name or alias -> where
  std::map<std::string, std::string> gfd_names;  // lower-case GFD name -> where
  std::map<std::string, std::string> prefixes;   // lower-case GFD prefix -> where
  const auto claim = [](std::map<std::string, std::string>& taken, const std::string& value,
                        const std::string& where) -> std::optional<Error> {
    const auto [it, inserted] = taken.emplace(to_lower(value), where);
    if (!inserted) {
      return Error{
          where, quote(value) + " is already used by " + it->second + " (compared ignoring case)"};
    }
    return std::nullopt;
  };
  for (std::size_t i = 0; i < products.size(); ++i) {
    const Product& p = products[i];
    const std::string at = indexed("products", i);
    if (auto e = claim(names, p.name, at + ".name")) return e;
    for (std::size_t j = 0; j < p.aliases.size(); ++j) {
      if (auto e = claim(names, p.aliases[j], indexed(at + ".aliases", j))) return e;
    }
    for (std::size_t j = 0; j < p.gfd_names.size(); ++j) {
      if (auto e = claim(gfd_names, p.gfd_names[j], indexed(at + ".gfdNames", j))) return e;
    }
    for (std::size_t j = 0; j < p.gfd_prefixes.size(); ++j) {
      if (auto e = claim(prefixes, p.gfd_prefixes[j], indexed(at + ".gfdPrefixes", j))) return e;
    }
  }
  return std::nullopt;
}

// A newer branch never reports an older CUDA; a row that does is a typo.
std::optional<Error> check_branch_order(const std::vector<DriverBranch>& branches) {
  std::vector<std::size_t> order(branches.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return branches[a].branch < branches[b].branch;
  });
  for (std::size_t k = 1; k < order.size(); ++k) {
    const DriverBranch& older = branches[order[k - 1]];
    const DriverBranch& newer = branches[order[k]];
    if (newer.cuda < older.cuda) {
      return Error{indexed("driverBranches", order[k]) + ".cuda",
                   "branch " + std::to_string(newer.branch) + " reports CUDA " + newer.cuda.str() +
                       ", older than branch " + std::to_string(older.branch) + "'s CUDA " +
                       older.cuda.str()};
    }
  }
  return std::nullopt;
}

// A name may have several entries, one per meaning, spelt alike and for
// CUDA ranges that do not overlap, so that one CUDA release reads one meaning.
std::optional<Error> check_architectures(const std::vector<NamedArchitecture>& archs) {
  for (std::size_t i = 0; i < archs.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (!iequals(archs[i].name, archs[j].name)) continue;
      const std::string at = indexed("architectures", i) + ".name";
      if (archs[i].name != archs[j].name) {
        return Error{at, quote(archs[i].name) + " is spelt differently in " +
                             indexed("architectures", j) +
                             "; PyTorch compares names case-sensitively"};
      }
      const NamedArchitecture& a = archs[i];
      const NamedArchitecture& b = archs[j];
      const bool a_before_b = a.cuda_before && b.cuda_since && !(*b.cuda_since < *a.cuda_before);
      const bool b_before_a = b.cuda_before && a.cuda_since && !(*a.cuda_since < *b.cuda_before);
      if (!a_before_b && !b_before_a) {
        return Error{at, "repeats " + indexed("architectures", j) +
                             " for the same CUDA releases; entries of one name need "
                             "cudaSince/cudaBefore ranges that do not overlap"};
      }
    }
  }
  return std::nullopt;
}

// One variant's builds cover each torch release once.
std::optional<Error> check_torch_builds(const std::vector<TorchBuild>& builds) {
  for (std::size_t i = 0; i < builds.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      const TorchBuild& a = builds[i];
      const TorchBuild& b = builds[j];
      if (a.cuda != b.cuda) continue;
      const bool a_before_b = a.torch_before && !(b.torch_since < *a.torch_before);
      const bool b_before_a = b.torch_before && !(a.torch_since < *b.torch_before);
      if (!a_before_b && !b_before_a) {
        return Error{indexed("torchBuilds", i) + ".torchSince",
                     "repeats " + indexed("torchBuilds", j) + " for the same torch releases of " +
                         a.cuda_variant +
                         "; entries need torchSince/torchBefore ranges that do not overlap"};
      }
    }
  }
  return std::nullopt;
}

// A capability's support ends once.
std::optional<Error> check_last_driver_branches(const std::vector<LastDriverBranch>& entries) {
  std::map<std::pair<int, int>, std::size_t> seen;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    for (std::size_t k = 0; k < entries[i].capabilities.size(); ++k) {
      const ComputeCapability cc = entries[i].capabilities[k];
      const auto [it, inserted] = seen.emplace(std::make_pair(cc.major(), cc.minor()), i);
      if (!inserted) {
        return Error{indexed(indexed("lastDriverBranches", i) + ".computeCapabilities", k),
                     cc.str() + " is already in " + indexed("lastDriverBranches", it->second) +
                         "; each capability's support ends once"};
      }
    }
  }
  return std::nullopt;
}

// One section of the schema: its name, whether a matrix must give it, and
// how it is read into a CompatDb and checked across its entries.
struct Section {
  std::string_view name;
  bool required;
  std::optional<Error> (*read)(const json& value, CompatDb& db);
};

// read_entries, then `check` over the section's entries.
template <class T, class ReadOne, class Check>
std::optional<Error> read_checked(const json& value, std::string_view section, std::vector<T>& out,
                                  ReadOne read_one, Check check) {
  if (auto error = read_entries(value, section, out, read_one)) return error;
  return check(out);
}

template <class T>
std::optional<Error> no_check(const std::vector<T>& /*entries*/) {
  return std::nullopt;
}

// Every section of the schema, in the order README documents them.
const std::array<Section, 15> kSections = {{
    {"cudaReleases", true,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "cudaReleases", db.cuda_releases, read_cuda_release,
                           [](const std::vector<CudaRelease>& e) {
                             return unique(e, "cudaReleases", "version",
                                           [](const CudaRelease& r) { return r.version; });
                           });
     }},
    {"minorVersionCompat", true,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "minorVersionCompat", db.minor_version_compat,
                           read_minor_version_compat, [](const std::vector<MinorVersionCompat>& e) {
                             return unique(
                                 e, "minorVersionCompat", "cudaMajor",
                                 [](const MinorVersionCompat& m) { return m.cuda_major; });
                           });
     }},
    {"driverBranches", true,
     [](const json& v, CompatDb& db) {
       return read_checked(
           v, "driverBranches", db.driver_branches, read_driver_branch,
           [](const std::vector<DriverBranch>& e) -> std::optional<Error> {
             if (auto error = unique(e, "driverBranches", "branch",
                                     [](const DriverBranch& b) { return b.branch; })) {
               return error;
             }
             return check_branch_order(e);
           });
     }},
    {"cudaTargets", true,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "cudaTargets", db.cuda_targets, read_cuda_targets,
                           [](const std::vector<CudaTargets>& e) {
                             return unique(e, "cudaTargets", "since", [](const CudaTargets& t) {
                               return std::make_pair(t.since.major(), t.since.minor());
                             });
                           });
     }},
    {"lastDriverBranches", false,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "lastDriverBranches", db.last_driver_branches,
                           read_last_driver_branch, check_last_driver_branches);
     }},
    {"products", true,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "products", db.products, read_product, check_products);
     }},
    {"cloudAccelerators", true,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "cloudAccelerators", db.cloud_accelerators, read_cloud_accelerator,
                           [](const std::vector<CloudAccelerator>& e) {
                             return unique(e, "cloudAccelerators", "value",
                                           [](const CloudAccelerator& c) {
                                             return std::make_pair(c.label, to_lower(c.value));
                                           });
                           });
     }},
    {"architectures", true,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "architectures", db.architectures, read_architecture,
                           check_architectures);
     }},
    {"tegraCapabilities", true,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "tegraCapabilities", db.tegra, read_tegra_capability,
                           [](const std::vector<TegraCapability>& e) {
                             return unique(e, "tegraCapabilities", "computeCapability",
                                           [](const TegraCapability& t) {
                                             return std::make_pair(t.cc.major(), t.cc.minor());
                                           });
                           });
     }},
    {"cudaImages", true,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "cudaImages", db.cuda_images, read_cuda_image,
                           [](const std::vector<CudaImage>& e) {
                             return unique(e, "cudaImages", "cudaVersion",
                                           [](const CudaImage& i) { return i.cuda_version; });
                           });
     }},
    {"ngcReleases", true,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "ngcReleases", db.ngc_releases, read_ngc_release,
                           [](const std::vector<NgcRelease>& e) {
                             return unique(e, "ngcReleases", "release",
                                           [](const NgcRelease& n) { return n.release; });
                           });
     }},
    {"imageRules", true,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "imageRules", db.image_rules, read_image_rule, no_check<ImageRule>);
     }},
    {"torchBuilds", false,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "torchBuilds", db.torch_builds, read_torch_build, check_torch_builds);
     }},
    {"instanceTypes", false,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "instanceTypes", db.instance_types, read_instance_type,
                           [](const std::vector<InstanceType>& e) {
                             return unique(e, "instanceTypes", "instanceType",
                                           [](const InstanceType& t) { return t.name; });
                           });
     }},
    {"instanceGpuLabels", false,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "instanceGpuLabels", db.instance_gpu_labels, read_instance_gpu_label,
                           [](const std::vector<InstanceGpuLabel>& e) {
                             return unique(e, "instanceGpuLabels", "value",
                                           [](const InstanceGpuLabel& l) {
                                             return std::make_pair(l.label, l.value);
                                           });
                           });
     }},
}};

const Section* find_section(std::string_view name) {
  for (const Section& section : kSections) {
    if (section.name == name) return &section;
  }
  return nullptr;
}

std::string section_names() {
  std::string out;
  for (const Section& section : kSections) {
    if (!out.empty()) out += ", ";
    out += section.name;
  }
  return out;
}

// Cloud labels name products by Product::name, which may live in another file.
std::optional<Error> check_cloud_products(const CompatDb& db) {
  for (std::size_t i = 0; i < db.cloud_accelerators.size(); ++i) {
    const std::string& name = db.cloud_accelerators[i].product;
    const bool known = std::any_of(db.products.begin(), db.products.end(),
                                   [&](const Product& p) { return p.name == name; });
    if (!known) {
      return Error{indexed("cloudAccelerators", i) + ".product",
                   "no product is named " + quote(name) + " (use a products[].name)"};
    }
  }
  return std::nullopt;
}

// The product an instance type or GPU-name label names: a products[].name
// or one of a product's gfdNames, spelt exactly; nullptr when none is.
const Product* named_product(const std::vector<Product>& products, std::string_view name) {
  for (const Product& product : products) {
    if (product.name == name) return &product;
  }
  for (const Product& product : products) {
    if (std::find(product.gfd_names.begin(), product.gfd_names.end(), name) !=
        product.gfd_names.end()) {
      return &product;
    }
  }
  return nullptr;
}

Error unknown_product(const std::string& where, const std::string& name) {
  return Error{where, "no product is named " + quote(name) +
                          " (use a products[].name or one of its gfdNames, exactly)"};
}

// Instance types and GPU-name labels name products, which may live in another
// file; `file` says which file gave each of the two sections.
std::optional<Error> check_instance_products(
    const CompatDb& db, const std::map<std::string, std::string, std::less<>>& file) {
  for (std::size_t i = 0; i < db.instance_types.size(); ++i) {
    const std::string& name = db.instance_types[i].product;
    if (named_product(db.products, name) == nullptr) {
      return unknown_product(indexed("instanceTypes", i) + ".product", name)
          .within(file.find("instanceTypes")->second);
    }
  }
  for (std::size_t i = 0; i < db.instance_gpu_labels.size(); ++i) {
    const std::vector<std::string>& names = db.instance_gpu_labels[i].products;
    for (std::size_t j = 0; j < names.size(); ++j) {
      if (named_product(db.products, names[j]) == nullptr) {
        return unknown_product(indexed(indexed("instanceGpuLabels", i) + ".products", j), names[j])
            .within(file.find("instanceGpuLabels")->second);
      }
    }
  }
  return std::nullopt;
}

// A pytorch-tag rule reads torchBuilds, which may live in another file or
// be left out: then the rule has nothing to read.
std::optional<Error> check_image_rules(const CompatDb& db) {
  for (std::size_t i = 0; i < db.image_rules.size(); ++i) {
    if (db.image_rules[i].kind == "pytorch-tag" && db.torch_builds.empty()) {
      return Error{indexed("imageRules", i) + ".kind",
                   "\"pytorch-tag\" reads the arch lists of torchBuilds, which has no entry"};
    }
  }
  return std::nullopt;
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
  for (const Section& section : kSections) {
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

// --- Lookups ----------------------------------------------------------------

std::optional<DriverVersion> CompatDb::min_driver_for(CudaVersion cuda) const {
  const DriverVersion* oldest = nullptr;
  for (const CudaRelease& release : cuda_releases) {
    if (release.cuda == cuda && (oldest == nullptr || release.min_driver < *oldest)) {
      oldest = &release.min_driver;
    }
  }
  if (oldest == nullptr) return std::nullopt;
  return *oldest;
}

std::optional<CudaVersion> CompatDb::max_cuda_for(const DriverVersion& driver) const {
  const auto after =
      std::upper_bound(driver_branches.begin(), driver_branches.end(), driver.branch(),
                       [](int branch, const DriverBranch& entry) { return branch < entry.branch; });
  if (after == driver_branches.begin()) return std::nullopt;
  return std::prev(after)->cuda;
}

const MinorVersionCompat* CompatDb::minor_compat_for(int cuda_major) const {
  const auto it =
      std::find_if(minor_version_compat.begin(), minor_version_compat.end(),
                   [&](const MinorVersionCompat& m) { return m.cuda_major == cuda_major; });
  return it == minor_version_compat.end() ? nullptr : &*it;
}

const CudaTargets* CompatDb::targets_for(CudaVersion cuda) const {
  const auto after = std::upper_bound(
      cuda_targets.begin(), cuda_targets.end(), cuda,
      [](const CudaVersion& version, const CudaTargets& entry) { return version < entry.since; });
  if (after == cuda_targets.begin()) return nullptr;
  return &*std::prev(after);
}

const Product* CompatDb::product_by_name(std::string_view name) const {
  for (const Product& product : products) {
    if (iequals(product.name, name)) return &product;
    for (const std::string& alias : product.aliases) {
      if (iequals(alias, name)) return &product;
    }
  }
  return nullptr;
}

const Product* CompatDb::product_by_gfd(std::string_view label_value) const {
  // GFD appends "-SHARED" when a GPU is shared and "-MIG-<profile>" for a
  // MIG device; both describe how the GPU is used, not which GPU it is.
  std::string_view value = label_value;
  if (value.ends_with("-SHARED")) value.remove_suffix(std::string_view("-SHARED").size());
  if (const auto mig = value.find("-MIG-"); mig != std::string_view::npos)
    value = value.substr(0, mig);
  if (value.empty()) return nullptr;
  for (const Product& product : products) {
    for (const std::string& name : product.gfd_names) {
      if (iequals(name, value)) return &product;
    }
  }
  const Product* best = nullptr;
  std::size_t best_length = 0;
  for (const Product& product : products) {
    for (const std::string& prefix : product.gfd_prefixes) {
      if (prefix.size() > best_length && istarts_with(value, prefix)) {
        best = &product;
        best_length = prefix.size();
      }
    }
  }
  return best;
}

const Product* CompatDb::product_by_label(std::string_view value) const {
  if (const Product* product = product_by_gfd(value)) return product;
  if (const Product* product = product_by_name(value)) return product;
  const std::string as_gfd = gfd_label_value(value);
  return as_gfd == value ? nullptr : product_by_gfd(as_gfd);
}

const Product* CompatDb::product_by_cloud_label(std::string_view label,
                                                std::string_view value) const {
  for (const CloudAccelerator& accelerator : cloud_accelerators) {
    if (accelerator.label != label || !iequals(accelerator.value, value)) continue;
    for (const Product& product : products) {
      if (product.name == accelerator.product) return &product;
    }
  }
  return nullptr;
}

const InstanceType* CompatDb::instance_type(std::string_view name) const {
  const auto it = std::find_if(instance_types.begin(), instance_types.end(),
                               [&](const InstanceType& t) { return t.name == name; });
  return it == instance_types.end() ? nullptr : &*it;
}

std::vector<const Product*> CompatDb::products_by_instance_label(std::string_view label,
                                                                 std::string_view value) const {
  std::vector<const Product*> out;
  for (const InstanceGpuLabel& entry : instance_gpu_labels) {
    if (entry.label != label || entry.value != value) continue;
    for (const std::string& name : entry.products) {
      const Product* product = named_product(products, name);
      if (product != nullptr && std::find(out.begin(), out.end(), product) == out.end()) {
        out.push_back(product);
      }
    }
  }
  return out;
}

const NamedArchitecture* CompatDb::architecture(std::string_view name,
                                                std::optional<CudaVersion> cuda) const {
  const NamedArchitecture* newest = nullptr;
  for (const NamedArchitecture& a : architectures) {
    if (a.name != name) continue;
    if (cuda && a.applies_to(*cuda)) return &a;
    if (newest == nullptr || newest->cuda_before) newest = &a;
  }
  return newest;
}

bool CompatDb::is_tegra(ComputeCapability cc) const {
  return std::any_of(tegra.begin(), tegra.end(),
                     [&](const TegraCapability& t) { return t.cc == cc; });
}

const CudaImage* CompatDb::cuda_image(std::string_view cuda_version) const {
  const auto it = std::find_if(cuda_images.begin(), cuda_images.end(),
                               [&](const CudaImage& i) { return i.cuda_version == cuda_version; });
  return it == cuda_images.end() ? nullptr : &*it;
}

const NgcRelease* CompatDb::ngc_release(std::string_view release) const {
  const auto it = std::find_if(ngc_releases.begin(), ngc_releases.end(),
                               [&](const NgcRelease& n) { return n.release == release; });
  return it == ngc_releases.end() ? nullptr : &*it;
}

bool CompatDb::branch_beyond_known(const DriverVersion& driver) const {
  return !driver_branches.empty() && driver.branch() > driver_branches.back().branch;
}

const LastDriverBranch* CompatDb::last_driver_branch(ComputeCapability cc) const {
  for (const LastDriverBranch& entry : last_driver_branches) {
    if (std::find(entry.capabilities.begin(), entry.capabilities.end(), cc) !=
        entry.capabilities.end()) {
      return &entry;
    }
  }
  return nullptr;
}

std::optional<ComputeCapability> CompatDb::newest_capability() const {
  std::optional<ComputeCapability> newest;
  const auto consider = [&newest](ComputeCapability cc) {
    if (!newest || *newest < cc) newest = cc;
  };
  for (const CudaTargets& targets : cuda_targets) {
    for (const ComputeCapability& cc : targets.all) consider(cc);
  }
  for (const Product& product : products) consider(product.cc);
  return newest;
}

bool CompatDb::capability_beyond_known(ComputeCapability cc) const {
  std::optional<int> newest_major;
  std::optional<int> newest_minor_of_major;  // of cc's major
  const auto consider = [&](ComputeCapability known) {
    if (!newest_major || *newest_major < known.major()) newest_major = known.major();
    if (known.major() == cc.major() &&
        (!newest_minor_of_major || *newest_minor_of_major < known.minor())) {
      newest_minor_of_major = known.minor();
    }
  };
  for (const CudaTargets& targets : cuda_targets) {
    for (const ComputeCapability& known : targets.all) consider(known);
  }
  for (const Product& product : products) consider(product.cc);
  if (newest_minor_of_major) return *newest_minor_of_major < cc.minor();
  return newest_major && *newest_major < cc.major();
}

std::optional<CudaVersion> CompatDb::newest_cuda() const {
  std::optional<CudaVersion> newest;
  const auto consider = [&newest](CudaVersion cuda) {
    if (!newest || *newest < cuda) newest = cuda;
  };
  for (const CudaRelease& release : cuda_releases) consider(release.cuda);
  for (const DriverBranch& branch : driver_branches) consider(branch.cuda);
  for (const CudaTargets& targets : cuda_targets) consider(targets.since);
  return newest;
}

std::string CompatDb::describe() const {
  std::string out = "the compatibility matrix (revision ";
  out += revision;
  out += ", ";
  out += as_of.empty() ? std::string("undated") : as_of;
  out += ')';
  return out;
}

const TorchBuild* CompatDb::torch_build(CudaVersion torch, CudaVersion cuda) const {
  for (const TorchBuild& build : torch_builds) {
    if (build.cuda == cuda && build.applies_to(torch)) return &build;
  }
  return nullptr;
}

std::vector<std::pair<std::string, std::string>> newest_entries(const CompatDb& db) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!db.cuda_releases.empty()) {
    const CudaRelease& r = db.cuda_releases.back();
    out.emplace_back("CUDA release", r.label + " (" + r.version + ")");
  }
  if (!db.driver_branches.empty()) {
    const DriverBranch& b = db.driver_branches.back();
    out.emplace_back("driver branch", std::to_string(b.branch) + " (CUDA " + b.cuda.str() + ")");
  }
  if (const auto cc = db.newest_capability()) out.emplace_back("compute capability", cc->str());
  const auto newest_ngc = std::max_element(
      db.ngc_releases.begin(), db.ngc_releases.end(),
      [](const NgcRelease& a, const NgcRelease& b) { return a.release < b.release; });
  if (newest_ngc != db.ngc_releases.end()) out.emplace_back("NGC release", newest_ngc->release);
  const TorchBuild* newest_torch = nullptr;
  for (const TorchBuild& t : db.torch_builds) {
    if (newest_torch == nullptr || newest_torch->cuda < t.cuda) newest_torch = &t;
  }
  if (newest_torch != nullptr) {
    out.emplace_back("PyTorch build", newest_torch->cuda_variant + " (torch " +
                                          newest_torch->torch_since.str() + ")");
  }
  return out;
}

}  // namespace cudagate

// The scan attached to an image manifest, read from the index of its
// referrers: the descriptors' annotations, newest first.
#include "registry/scan_attachment.h"

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "types/field_path.h"
#include "types/json_depth.h"
#include "types/quote.h"

namespace cudagate {
namespace {

using nlohmann::json;

// An index of descriptors nests four levels, the facts five.
constexpr std::size_t kMaxReferrersDepth = 32;

// The artifactType query value, percent-encoded as a URL query wants it.
constexpr std::string_view kArtifactTypeQuery = "application%2Fvnd.cudagate.scan.v1%2Bjson";

Expected<json> parse_referrers_json(std::string_view text, const std::string& what) {
  if (const auto at = json_too_deep_at(text, kMaxReferrersDepth); at != std::string_view::npos) {
    return Error{what, "nested more than " + std::to_string(kMaxReferrersDepth) +
                           " levels at byte " + std::to_string(at)};
  }
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Error{what, "not valid JSON"};
  if (!doc.is_object()) return Error{what, "expected a JSON object"};
  return doc;
}

const json* referrer_member(const json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

const std::string* referrer_string(const json& object, const char* key) {
  const json* value = referrer_member(object, key);
  return value != nullptr && value->is_string() ? value->get_ptr<const std::string*>() : nullptr;
}

// A string member, required or not; null (or absent when not required) is "".
Expected<std::string> facts_text(const json& object, const char* key, const std::string& path,
                                 bool required) {
  const json* value = referrer_member(object, key);
  const std::string here = field_path(path, key);
  if (value == nullptr || value->is_null()) {
    if (required) return Error{here, value == nullptr ? "missing" : "expected a string, got null"};
    return std::string();
  }
  if (!value->is_string()) return Error{here, "expected a string"};
  return value->get<std::string>();
}

Expected<std::optional<std::string>> facts_optional_text(const json& object, const char* key,
                                                         const std::string& path) {
  const json* value = referrer_member(object, key);
  if (value == nullptr || value->is_null()) return std::optional<std::string>();
  if (!value->is_string()) return Error{field_path(path, key), "expected a string or null"};
  return std::optional<std::string>(value->get<std::string>());
}

// "8.0", "10.0f", "9.0a", "9.0?": a capability and its suffix as the scan
// writes it; "?" (not read) counts as the portable target.
std::optional<ArchTarget> parse_scanned_arch(std::string_view text) {
  ArchTarget target;
  if (!text.empty()) {
    switch (text.back()) {
      case 'a':
        target.variant = ArchVariant::arch_specific;
        text.remove_suffix(1);
        break;
      case 'f':
        target.variant = ArchVariant::family;
        text.remove_suffix(1);
        break;
      case '?':
        text.remove_suffix(1);
        break;
      default:
        break;
    }
  }
  const auto dot = text.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot > 2 || text.size() != dot + 2) {
    return std::nullopt;
  }
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  const char minor = text[dot + 1];
  if (!digit(minor) || !digit(text[0]) || (dot == 2 && !digit(text[1])) || text[0] == '0') {
    return std::nullopt;
  }
  const int major = dot == 1 ? text[0] - '0' : (text[0] - '0') * 10 + (text[1] - '0');
  target.cc = ComputeCapability(major, minor - '0');
  return target;
}

Expected<std::vector<ArchTarget>> scanned_arch_list(const json& file, const char* key,
                                                    const std::string& path, bool sass) {
  std::vector<ArchTarget> out;
  const json* list = referrer_member(file, key);
  const std::string here = field_path(path, key);
  if (list == nullptr || list->is_null()) return out;
  if (!list->is_array()) return Error{here, "expected an array of architectures"};
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json& item = (*list)[i];
    const std::string at = index_path(here, i);
    if (!item.is_string()) return Error{at, "expected an architecture string like \"9.0a\""};
    auto target = parse_scanned_arch(item.get_ref<const std::string&>());
    if (!target) {
      return Error{at, "expected an architecture X.Y with an optional a, f or ? suffix, got " +
                           quote(item.get_ref<const std::string&>())};
    }
    target->sass = sass;
    target->ptx = !sass;
    out.push_back(*target);
  }
  return out;
}

Expected<ScannedCode> read_scanned_file(const json& file, const std::string& path) {
  if (!file.is_object()) return Error{path, "expected an object with path, sass and ptx"};
  ScannedCode out;
  auto file_path = facts_text(file, "path", path, true);
  if (!file_path) return file_path.error();
  if (file_path->empty()) return Error{field_path(path, "path"), "expected a path, got \"\""};
  out.path = std::move(*file_path);
  auto sass = scanned_arch_list(file, "sass", path, true);
  if (!sass) return sass.error();
  auto ptx = scanned_arch_list(file, "ptx", path, false);
  if (!ptx) return ptx.error();
  sass->insert(sass->end(), ptx->begin(), ptx->end());
  out.archs = ArchSet(std::move(*sass));
  return out;
}

// The framework's fields into `out`; the error when one is of the wrong type.
std::optional<Error> read_scanned_framework(const json& facts, ScanFacts& out) {
  const json* framework = referrer_member(facts, "framework");
  if (framework == nullptr || framework->is_null()) return std::nullopt;
  if (!framework->is_object()) return Error{"framework", "expected an object or null"};
  auto name = facts_text(*framework, "name", "framework", true);
  if (!name) return name.error();
  auto version = facts_text(*framework, "version", "framework", false);
  if (!version) return version.error();
  auto cuda = facts_text(*framework, "cuda", "framework", false);
  if (!cuda) return cuda.error();
  auto path = facts_text(*framework, "path", "framework", false);
  if (!path) return path.error();
  out.framework = std::move(*name);
  out.framework_version = std::move(*version);
  out.framework_cuda = std::move(*cuda);
  out.framework_path = std::move(*path);
  return std::nullopt;
}

// An RFC 3339 time as nanoseconds since 1970 in UTC: "2025-01-02T03:04:05Z",
// "2025-01-02T03:04:05.123+02:00" ('t', 'z' and a space also as RFC 3339
// allows).
std::optional<std::int64_t> parse_created_time(std::string_view text) {
  std::size_t pos = 0;
  const auto number = [&](std::size_t digits) -> std::optional<int> {
    if (pos + digits > text.size()) return std::nullopt;
    int value = 0;
    for (std::size_t i = 0; i < digits; ++i) {
      const char c = text[pos + i];
      if (c < '0' || c > '9') return std::nullopt;
      value = value * 10 + (c - '0');
    }
    pos += digits;
    return value;
  };
  const auto expect = [&](std::string_view any_of) {
    if (pos >= text.size() || any_of.find(text[pos]) == std::string_view::npos) return false;
    ++pos;
    return true;
  };
  const auto year = number(4);
  if (!year || !expect("-")) return std::nullopt;
  const auto month = number(2);
  if (!month || !expect("-")) return std::nullopt;
  const auto day = number(2);
  if (!day || !expect("Tt ")) return std::nullopt;
  const auto hour = number(2);
  if (!hour || !expect(":")) return std::nullopt;
  const auto minute = number(2);
  if (!minute || !expect(":")) return std::nullopt;
  const auto second = number(2);
  if (!second) return std::nullopt;
  std::int64_t nanos = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (digits < 9) nanos = nanos * 10 + (text[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0) return std::nullopt;
    for (int i = digits; i < 9; ++i) nanos *= 10;
  }
  int offset_minutes = 0;
  if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    const int sign = text[pos] == '-' ? -1 : 1;
    ++pos;
    const auto oh = number(2);
    if (!oh || !expect(":")) return std::nullopt;
    const auto om = number(2);
    if (!om || *oh > 23 || *om > 59) return std::nullopt;
    offset_minutes = sign * (*oh * 60 + *om);
  } else if (!expect("Zz")) {
    return std::nullopt;
  }
  if (pos != text.size()) return std::nullopt;
  static constexpr int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (*year % 4 == 0 && *year % 100 != 0) || *year % 400 == 0;
  if (*month < 1 || *month > 12 || *day < 1 || *day > kDays[*month - 1] ||
      (*month == 2 && *day == 29 && !leap) || *hour > 23 || *minute > 59 || *second > 60) {
    return std::nullopt;
  }
  // Days from 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
  // days_from_civil).
  const int y = *year - (*month <= 2 ? 1 : 0);
  const int era = y / 400;
  const int yoe = y - era * 400;
  const int mp = (*month + 9) % 12;
  const int doy = (153 * mp + 2) / 5 + *day - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const std::int64_t days = static_cast<std::int64_t>(era) * 146097 + doe - 719468;
  const std::int64_t minutes = days * 1440 + std::int64_t{*hour} * 60 + *minute - offset_minutes;
  const std::int64_t seconds = minutes * 60 + *second;
  return seconds * 1000000000 + nanos;
}

struct ScanReferrer {
  std::size_t listed = 0;  // its place in the index
  std::string name;        // its digest, or its place when it has none
  std::optional<std::int64_t> created;
  const std::string* facts = nullptr;
};

}  // namespace

std::string referrers_target(std::string_view repository, std::string_view digest) {
  std::string out = "/v2/";
  out += repository;
  out += "/referrers/";
  out += digest;
  out += "?artifactType=";
  out += kArtifactTypeQuery;
  return out;
}

std::string referrers_tag_target(std::string_view repository, std::string_view digest) {
  std::string out = "/v2/";
  out += repository;
  out += "/manifests/";
  // The tag schema's name of a digest: "sha256:<hex>" -> "sha256-<hex>".
  const auto colon = digest.find(':');
  out += digest.substr(0, colon);
  if (colon != std::string_view::npos) {
    out += '-';
    out += digest.substr(colon + 1);
  }
  return out;
}

Expected<ScanFacts> parse_scan_facts(std::string_view text) {
  auto doc = parse_referrers_json(text, "");
  if (!doc) return doc.error();
  const json& facts = *doc;
  ScanFacts out;
  auto digest = facts_text(facts, "digest", "", true);
  if (!digest) return digest.error();
  out.digest = std::move(*digest);
  auto platform = facts_text(facts, "platform", "", false);
  if (!platform) return platform.error();
  out.platform = std::move(*platform);
  auto runtime = facts_optional_text(facts, "cudaRuntime", "");
  if (!runtime) return runtime.error();
  out.cuda_runtime = std::move(*runtime);
  auto compat = facts_optional_text(facts, "cudaCompat", "");
  if (!compat) return compat.error();
  out.cuda_compat = std::move(*compat);
  if (auto error = read_scanned_framework(facts, out)) return *error;
  const json* files = referrer_member(facts, "files");
  if (files == nullptr) return Error{"files", "missing"};
  if (!files->is_array()) return Error{"files", "expected an array of files"};
  if (files->size() > kMaxScannedFiles) {
    return Error{"files", std::to_string(files->size()) + " files, more than " +
                              std::to_string(kMaxScannedFiles)};
  }
  out.files.reserve(files->size());
  for (std::size_t i = 0; i < files->size(); ++i) {
    auto file = read_scanned_file((*files)[i], index_path("files", i));
    if (!file) return file.error();
    out.files.push_back(std::move(*file));
  }
  std::stable_sort(out.files.begin(), out.files.end(),
                   [](const ScannedCode& a, const ScannedCode& b) { return a.path < b.path; });
  return out;
}

Expected<std::optional<ScanFacts>> read_referrers(std::string_view index_body,
                                                  std::string_view subject_digest) {
  if (index_body.size() > kMaxReferrersBytes) {
    return Error{"referrers index", std::to_string(index_body.size()) + " bytes, more than " +
                                        std::to_string(kMaxReferrersBytes)};
  }
  auto doc = parse_referrers_json(index_body, "referrers index");
  if (!doc) return doc.error();
  const json* manifests = referrer_member(*doc, "manifests");
  // An index without referrers may say so with null (Go's empty slice).
  if (manifests == nullptr || manifests->is_null()) return std::optional<ScanFacts>();
  if (!manifests->is_array()) {
    return Error{"referrers index: manifests", "expected an array of descriptors"};
  }
  std::vector<ScanReferrer> candidates;
  for (std::size_t i = 0; i < manifests->size(); ++i) {
    const json& descriptor = (*manifests)[i];
    if (!descriptor.is_object()) continue;
    const std::string* type = referrer_string(descriptor, "artifactType");
    if (type == nullptr || *type != kScanArtifactType) continue;
    const json* annotations = referrer_member(descriptor, "annotations");
    if (annotations == nullptr || !annotations->is_object()) continue;
    const auto facts = annotations->find(kScanFactsAnnotation);
    if (facts == annotations->end()) continue;
    ScanReferrer candidate;
    candidate.listed = i;
    const std::string* digest = referrer_string(descriptor, "digest");
    candidate.name =
        "referrer " + (digest != nullptr ? printable(*digest, 80) : index_path("manifests", i));
    if (!facts->is_string()) {
      return Error{place(candidate.name, 0, "annotation " + std::string(kScanFactsAnnotation)),
                   "expected a string of JSON"};
    }
    candidate.facts = facts->get_ptr<const std::string*>();
    if (const auto created = annotations->find(kCreatedAnnotation); created != annotations->end()) {
      const std::string* text =
          created->is_string() ? created->get_ptr<const std::string*>() : nullptr;
      candidate.created = text != nullptr ? parse_created_time(*text) : std::nullopt;
      if (!candidate.created) {
        return Error{
            place(candidate.name, 0, "annotation " + std::string(kCreatedAnnotation)),
            "expected an RFC 3339 time like 2025-01-02T03:04:05Z, got " +
                (text != nullptr ? quote(*text) : std::string("a ") + created->type_name())};
      }
    }
    candidates.push_back(std::move(candidate));
  }
  // Newest first; undated last; of equal times the one listed later first.
  std::sort(candidates.begin(), candidates.end(), [](const ScanReferrer& a, const ScanReferrer& b) {
    if (a.created.has_value() != b.created.has_value()) return a.created.has_value();
    if (a.created != b.created) return *a.created > *b.created;
    return a.listed > b.listed;
  });
  for (const ScanReferrer& candidate : candidates) {
    auto facts = parse_scan_facts(*candidate.facts);
    if (!facts) {
      return facts.error().within(
          place(candidate.name, 0, "annotation " + std::string(kScanFactsAnnotation)));
    }
    if (facts->digest == subject_digest) return std::optional<ScanFacts>(std::move(*facts));
  }
  return std::optional<ScanFacts>();
}

}  // namespace cudagate

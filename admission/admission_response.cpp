// The AdmissionReview answer made acceptable to the API server: warnings cleaned to valid UTF-8
// and bounded, audit annotation keys checked, and the response written straight as JSON text.
#include "admission/admission_response.h"

#include <algorithm>
#include <cstdint>
#include <unordered_set>

#include "admission/json_write.h"
#include "types/base64.h"

namespace cudagate {
namespace {

using nlohmann::json;

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence at text[i], or 0 when it is invalid
// (overlong forms, surrogates and code points above U+10FFFF included).
std::size_t utf8_sequence(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) return 1;
  std::size_t length = 0;
  std::uint32_t cp = 0;
  if ((b0 & 0xE0) == 0xC0) {
    length = 2;
    cp = b0 & 0x1FU;
  } else if ((b0 & 0xF0) == 0xE0) {
    length = 3;
    cp = b0 & 0x0FU;
  } else if ((b0 & 0xF8) == 0xF0) {
    length = 4;
    cp = b0 & 0x07U;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3FU);
  }
  if ((length == 2 && cp < 0x80) || (length == 3 && cp < 0x800) || (length == 4 && cp < 0x10000) ||
      cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  return length;
}

// The code point of a valid sequence of `length` bytes at text[i].
std::uint32_t code_point(std::string_view text, std::size_t i, std::size_t length) {
  const auto b0 = static_cast<unsigned char>(text[i]);
  if (length == 1) return b0;
  std::uint32_t cp = b0 & (length == 2 ? 0x1FU : length == 3 ? 0x0FU : 0x07U);
  for (std::size_t k = 1; k < length; ++k) {
    cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3FU);
  }
  return cp;
}

// Go's unicode.IsControl: C0, DEL and C1.
bool is_control(std::uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp < 0xA0);
}

// One warning made acceptable: valid UTF-8, control characters as single
// spaces, trimmed, cut to kMaxWarningRunes runes.
std::string clean_warning(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t runes = 0;
  bool truncated = false;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t length = utf8_sequence(text, i);
    std::string_view piece;
    if (length == 0) {
      piece = kReplacement;
      length = 1;
    } else if (is_control(code_point(text, i, length))) {
      piece = " ";
    } else {
      piece = text.substr(i, length);
    }
    i += length;
    if (piece == " " && (out.empty() || out.back() == ' ')) continue;
    if (runes == kMaxWarningRunes) {
      truncated = true;
      break;
    }
    out += piece;
    ++runes;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (truncated) {
    // Room for the ellipsis: drop the last three runes.
    for (int k = 0; k < 3 && !out.empty(); ++k) {
      std::size_t cut = out.size() - 1;
      while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
      out.resize(cut);
    }
    out += "...";
  }
  return out;
}

bool key_char(char c, bool inner) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return inner && (c == '-' || c == '_' || c == '.');
}

}  // namespace

AdmissionResponse AdmissionResponse::allowed() {
  return AdmissionResponse();
}

AdmissionResponse AdmissionResponse::denied(std::string message) {
  AdmissionResponse r;
  r.allowed_ = false;
  r.code_ = 403;
  r.reason_ = "Forbidden";
  r.message_ = std::move(message);
  return r;
}

AdmissionResponse AdmissionResponse::patched(nlohmann::json patch) {
  AdmissionResponse r;
  if (patch.is_array() && !patch.empty()) r.patch_ = std::move(patch);
  return r;
}

AdmissionResponse AdmissionResponse::errored(int code, std::string message) {
  AdmissionResponse r;
  r.allowed_ = false;
  // Below 400 the API server turns it into 400 anyway; say what we mean.
  r.code_ = code < 400 ? 500 : code;
  r.reason_ = "InternalError";
  r.message_ = std::move(message);
  return r;
}

AdmissionResponse& AdmissionResponse::with_warning(std::string warning) {
  warnings_.push_back(std::move(warning));
  return *this;
}

AdmissionResponse& AdmissionResponse::with_warnings(std::vector<std::string> warnings) {
  for (auto& w : warnings) warnings_.push_back(std::move(w));
  return *this;
}

AdmissionResponse& AdmissionResponse::with_audit_annotation(std::string key, std::string value) {
  for (auto& [k, v] : audit_annotations_) {
    if (k == key) {
      v = std::move(value);
      return *this;
    }
  }
  // A decision records about five: one allocation for them all.
  if (audit_annotations_.empty()) audit_annotations_.reserve(8);
  audit_annotations_.emplace_back(std::move(key), std::move(value));
  return *this;
}

namespace {

// A value as the API server keeps it: valid UTF-8, at most
// kMaxAuditAnnotationValueBytes, cut on a character boundary and marked "...".
std::string audit_annotation_value(std::string_view value) {
  std::string v = valid_utf8(value);
  if (v.size() > kMaxAuditAnnotationValueBytes) {
    std::size_t cut = kMaxAuditAnnotationValueBytes - 3;
    while (cut > 0 && (static_cast<unsigned char>(v[cut]) & 0xC0) == 0x80) --cut;
    v.resize(cut);
    v += "...";
  }
  return v;
}

}  // namespace

json AdmissionResponse::complete(ReviewVersion version, std::string_view uid,
                                 Endpoint endpoint) const {
  json response = json::object();
  response["uid"] = std::string(uid);
  response["allowed"] = allowed_;
  if (!allowed_) {
    response["status"] = {{"code", code_},
                          {"status", "Failure"},
                          {"reason", reason_},
                          {"message", valid_utf8(message_)}};
  }
  // A denial carries no patch: the API server would never apply it.
  if (endpoint == Endpoint::mutate && allowed_ && patch_.is_array() && !patch_.empty()) {
    response["patchType"] = "JSONPatch";
    response["patch"] = base64_encode(patch_.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  if (auto warnings = sanitize_warnings(warnings_); !warnings.empty()) {
    response["warnings"] = std::move(warnings);
  }
  json annotations = json::object();
  for (const auto& [key, value] : audit_annotations_) {
    if (!valid_audit_annotation_key(key)) continue;
    std::string v = audit_annotation_value(value);
    annotations[key] = std::move(v);
  }
  if (!annotations.empty()) response["auditAnnotations"] = std::move(annotations);

  json review = json::object();
  review["apiVersion"] = std::string(api_version_of(version));
  review["kind"] = "AdmissionReview";
  review["response"] = std::move(response);
  return review;
}

std::string AdmissionResponse::serialize(ReviewVersion version, std::string_view uid,
                                         Endpoint endpoint) const {
  // Members in the order nlohmann::json keeps them (sorted by key), so the
  // text is what complete().dump() would print. Keys and values are used
  // where they lie unless a value must be cleaned first.
  struct Annotation {
    std::string_view key;
    std::string_view value;
  };
  std::vector<Annotation> annotations;
  annotations.reserve(audit_annotations_.size());
  std::vector<std::string> cleaned;  // reserved whole before its first use: views stay valid
  std::size_t size = 192 + message_.size() + uid.size();
  for (const auto& [key, value] : audit_annotations_) {
    if (!valid_audit_annotation_key(key)) continue;
    std::string_view v = value;
    if (value.size() > kMaxAuditAnnotationValueBytes || !is_valid_utf8(value)) {
      if (cleaned.empty()) cleaned.reserve(audit_annotations_.size());
      v = cleaned.emplace_back(audit_annotation_value(value));
    }
    // Stable: of repeated keys, the last stays last.
    annotations.push_back({key, v});
    for (std::size_t i = annotations.size() - 1; i > 0 && key < annotations[i - 1].key; --i) {
      std::swap(annotations[i], annotations[i - 1]);
    }
    size += key.size() + v.size() + 6;
  }
  const std::vector<std::string> warnings = sanitize_warnings(warnings_);
  for (const auto& w : warnings) size += w.size() + 3;

  std::string scratch;
  const auto utf8 = [&scratch](std::string_view text) -> std::string_view {
    if (is_valid_utf8(text)) return text;
    scratch = valid_utf8(text);
    return scratch;
  };

  std::string out;
  out.reserve(size);
  out += R"({"apiVersion":)";
  append_json_string(out, api_version_of(version));
  out += R"(,"kind":"AdmissionReview","response":{"allowed":)";
  out += allowed_ ? "true" : "false";
  if (!annotations.empty()) {
    out += R"(,"auditAnnotations":{)";
    for (std::size_t i = 0; i < annotations.size(); ++i) {
      // Repeated keys: the last value, as an object keeps it.
      if (i + 1 < annotations.size() && annotations[i + 1].key == annotations[i].key) continue;
      if (out.back() != '{') out += ',';
      append_json_string(out, annotations[i].key);
      out += ':';
      append_json_string(out, annotations[i].value);
    }
    out += '}';
  }
  if (endpoint == Endpoint::mutate && allowed_ && patch_.is_array() && !patch_.empty()) {
    out += R"(,"patch":)";
    append_json_string(out,
                       base64_encode(patch_.dump(-1, ' ', false, json::error_handler_t::replace)));
    out += R"(,"patchType":"JSONPatch")";
  }
  if (!allowed_) {
    out += R"(,"status":{"code":)";
    append_json_int(out, code_);
    out += R"(,"message":)";
    append_json_string(out, utf8(message_));
    out += R"(,"reason":)";
    append_json_string(out, reason_);
    out += R"(,"status":"Failure"})";
  }
  out += R"(,"uid":)";
  append_json_string(out, utf8(uid));
  if (!warnings.empty()) {
    out += R"(,"warnings":[)";
    for (std::size_t i = 0; i < warnings.size(); ++i) {
      if (i > 0) out += ',';
      append_json_string(out, warnings[i]);
    }
    out += ']';
  }
  out += "}}";
  return out;
}

bool valid_audit_annotation_key(std::string_view key) {
  if (key.empty() || key.size() > 63) return false;
  if (!key_char(key.front(), false) || !key_char(key.back(), false)) return false;
  return std::all_of(key.begin(), key.end(), [](char c) { return key_char(c, true); });
}

std::vector<std::string> sanitize_warnings(const std::vector<std::string>& warnings) {
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  std::size_t total = 0;
  for (const auto& w : warnings) {
    if (out.size() == kMaxWarnings) break;
    std::string clean = clean_warning(w);
    if (clean.empty() || !seen.insert(clean).second) continue;
    const std::size_t runes = rune_count(clean);
    if (total + runes >= kMaxWarningTotalRunes) break;
    total += runes;
    out.push_back(std::move(clean));
  }
  return out;
}

bool is_valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t length = utf8_sequence(text, i);
    if (length == 0) return false;
    i += length;
  }
  return true;
}

std::string valid_utf8(std::string_view text) {
  if (is_valid_utf8(text)) return std::string(text);
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = utf8_sequence(text, i);
    if (length == 0) {
      out += kReplacement;
      ++i;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

std::size_t rune_count(std::string_view text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

}  // namespace cudagate

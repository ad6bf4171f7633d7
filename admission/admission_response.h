#pragma once
// The answer to one AdmissionReview, built only through named constructors
// (allowed, denied, patched, errored), optionally with warnings and audit
// annotations, and finished in one place, complete(), that stamps what the
// API server checks (k8s.io/apiserver pkg/admission/plugin/webhook/request
// admissionreview.go, VerifyAdmissionResponse, and the dispatchers): the review's
// apiVersion and kind, the request's uid, patchType exactly when a patch is
// present, no patch at all on /validate, warnings the API server will keep
// (valid UTF-8, no control characters, short and few) and audit annotation
// keys it will accept.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "admission/admission_review.h"
#include "admission/endpoint.h"
#include "types/base64.h"

namespace cudagate {

// The API server keeps a warning of at most 256 runes and 4096 runes of
// warnings per request; it advises 120 characters where possible.
inline constexpr std::size_t kMaxWarningRunes = 256;
inline constexpr std::size_t kMaxWarningTotalRunes = 4096;
inline constexpr std::size_t kMaxWarnings = 10;
inline constexpr std::size_t kMaxAuditAnnotationValueBytes = 4096;

class AdmissionResponse {
 public:
  // The request may proceed unchanged.
  [[nodiscard]] static AdmissionResponse allowed();
  // A policy rejection: allowed false, status 403 Forbidden with `message`.
  [[nodiscard]] static AdmissionResponse denied(std::string message);
  // Allowed with a JSON Patch (an array of RFC 6902 operations). An empty
  // array is the same as allowed().
  [[nodiscard]] static AdmissionResponse patched(nlohmann::json patch);
  // The webhook could not judge the request and policy says to refuse it:
  // allowed false with `code` (>= 400) and reason InternalError.
  [[nodiscard]] static AdmissionResponse errored(int code, std::string message);

  AdmissionResponse& with_warning(std::string warning);
  AdmissionResponse& with_warnings(std::vector<std::string> warnings);
  // `key` is the name part the API server prefixes with the webhook's name;
  // keys it would refuse (see valid_audit_annotation_key) are dropped by
  // complete(), values are cut to kMaxAuditAnnotationValueBytes.
  AdmissionResponse& with_audit_annotation(std::string key, std::string value);

  [[nodiscard]] bool is_allowed() const { return allowed_; }
  [[nodiscard]] int code() const { return code_; }
  [[nodiscard]] const std::string& message() const { return message_; }
  [[nodiscard]] const nlohmann::json& patch() const { return patch_; }  // null when none
  [[nodiscard]] const std::vector<std::string>& warnings() const { return warnings_; }
  [[nodiscard]] const std::vector<std::pair<std::string, std::string>>& audit_annotations() const {
    return audit_annotations_;
  }

  // The AdmissionReview answering request `uid` in `version`. On /validate a
  // patch is never sent (a validating webhook may not return one).
  [[nodiscard]] nlohmann::json complete(ReviewVersion version, std::string_view uid,
                                        Endpoint endpoint) const;
  // complete() as JSON text, written directly: byte for byte what
  // complete().dump() prints, without building the document.
  [[nodiscard]] std::string serialize(ReviewVersion version, std::string_view uid,
                                      Endpoint endpoint) const;

 private:
  AdmissionResponse() = default;

  bool allowed_ = true;
  int code_ = 200;
  std::string reason_;
  std::string message_;
  nlohmann::json patch_;
  std::vector<std::string> warnings_;
  std::vector<std::pair<std::string, std::string>> audit_annotations_;
};

// The name part of a qualified name: at most 63 characters of
// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], so no '/'.
[[nodiscard]] bool valid_audit_annotation_key(std::string_view key);

// Warnings as the API server will show them: invalid UTF-8 replaced, control
// characters turned into spaces, blank and repeated entries dropped, each cut
// to kMaxWarningRunes runes, at most kMaxWarnings entries and fewer than
// kMaxWarningTotalRunes runes in all.
[[nodiscard]] std::vector<std::string> sanitize_warnings(const std::vector<std::string>& warnings);

// `text` with invalid UTF-8 sequences replaced by U+FFFD.
[[nodiscard]] std::string valid_utf8(std::string_view text);
// Whether `text` is valid UTF-8 (what valid_utf8() leaves unchanged).
[[nodiscard]] bool is_valid_utf8(std::string_view text);
// The number of code points in valid UTF-8 `text`.
[[nodiscard]] std::size_t rune_count(std::string_view text);

}  // namespace cudagate

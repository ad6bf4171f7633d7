#pragma once
// Decoding an AdmissionReview request body (admission.k8s.io/v1 or v1beta1).
//
// The body is parsed once; the request's object and oldObject are moved out
// of the parsed document, never copied or re-parsed. A body that is not an
// AdmissionReview we can answer (not JSON, truncated, another kind, no
// `request`, no `uid`) is an Error whose message names the problem: the HTTP
// layer answers it with 400. Fields the API server always sends but a
// hand-written review may lack (resource, namespace, kind) are optional, and
// fall back to the object's own metadata where one exists.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "policy/expected.h"

namespace cudagate {

enum class ReviewVersion : unsigned char { v1, v1beta1 };

// "admission.k8s.io/v1" or "admission.k8s.io/v1beta1".
[[nodiscard]] std::string_view api_version_of(ReviewVersion version);

struct AdmissionRequest {
  ReviewVersion version = ReviewVersion::v1;
  std::string uid;
  // request.kind (group/version/kind of the object as sent), else the
  // object's own apiVersion and kind.
  std::string group;
  std::string kind;
  std::string sub_resource;  // "status", "scale", ...; "" for the object itself
  std::string operation;     // CREATE, UPDATE, DELETE, CONNECT
  std::string namespace_;    // request.namespace, else object.metadata.namespace
  std::string name;          // request.name, else metadata.name, else generateName
  bool dry_run = false;
  nlohmann::json object;      // null when absent (DELETE, CONNECT)
  nlohmann::json old_object;  // null when absent (CREATE)
};

// JSON nested deeper than this is refused before it is parsed: no Kubernetes
// object comes close, and recursive walks of the document stay bounded.
inline constexpr std::size_t kMaxReviewDepth = 256;

// Decodes `body`. Errors name what was found and what was expected:
// "request body is not JSON: ...", "request body is truncated JSON ...",
// "expected kind AdmissionReview, got \"Pod\"", "AdmissionReview has no request",
// "request.uid: expected a non-empty string".
Expected<AdmissionRequest> decode_admission_review(std::string_view body);

}  // namespace cudagate

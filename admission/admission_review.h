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

#include <array>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "policy/objects/json_view.h"
#include "types/expected.h"

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

// A review's request read through a JSON view (policy/objects/json_view.h): the
// same fields as AdmissionRequest, as views into one parse, so that the
// webhook's fast parser and nlohmann::json decode a review by the same rules.
template <JsonView V>
struct ReviewRequest {
  ReviewVersion version = ReviewVersion::v1;
  std::string_view uid;
  std::string_view group;
  std::string_view kind;
  std::string_view sub_resource;
  std::string_view operation;
  std::string_view namespace_;
  std::string_view name;
  bool dry_run = false;
  V object;      // absent, or JSON null, when the review has none
  V old_object;  // likewise
};

namespace review_detail {

inline std::string quote_value(std::string_view text) {
  constexpr std::size_t kMax = 64;
  std::string out = "\"";
  out += text.substr(0, kMax);
  if (text.size() > kMax) out += "...";
  out += '"';
  return out;
}

inline Error body_error(std::string message) {
  return Error{"", std::move(message)};
}

// An optional string member (found as `v`): absent or null is "", another
// type an error.
template <JsonView V>
Expected<std::string_view> optional_string(const V& v, const char* key, std::string_view path) {
  if (!v.valid() || v.is_null()) return std::string_view();
  if (!v.is_string()) {
    return Error{std::string(path) + "." + key,
                 std::string("expected a string, got ") + v.type_name()};
  }
  return v.string();
}

// object.metadata.<key> when object and metadata are objects and the value
// is a string.
template <JsonView V>
const V metadata_string(const V& object, const char* key) {
  if (!object.valid() || !object.is_object()) return V();
  const V meta = object.find("metadata");
  if (!meta.valid() || !meta.is_object()) return V();
  const V v = meta.find(key);
  if (!v.valid() || !v.is_string()) return V();
  return v;
}

// request.kind (else the object's own kind and apiVersion), subResource,
// namespace and name (else the object's metadata) of the request whose
// members are `field` (read_review's kKeys), into `request`.
template <JsonView V>
std::optional<Error> read_identity(const std::array<V, 9>& field, ReviewRequest<V>& request) {
  if (const V gvk = field[4]; gvk.valid() && !gvk.is_null()) {
    if (!gvk.is_object()) {
      return Error{"request.kind", std::string("expected an object, got ") + gvk.type_name()};
    }
    auto group = review_detail::optional_string(gvk.find("group"), "group", "request.kind");
    if (!group) return group.error();
    auto kind_name = review_detail::optional_string(gvk.find("kind"), "kind", "request.kind");
    if (!kind_name) return kind_name.error();
    request.group = *group;
    request.kind = *kind_name;
  }
  if (request.kind.empty() && request.object.valid() && request.object.is_object()) {
    // A trimmed review without request.kind: the object names itself.
    if (const V k = request.object.find("kind"); k.valid() && k.is_string()) {
      request.kind = k.string();
    }
    if (const V v = request.object.find("apiVersion"); v.valid() && v.is_string()) {
      const std::string_view text = v.string();
      const auto slash = text.find('/');
      request.group = slash == std::string_view::npos ? std::string_view() : text.substr(0, slash);
    }
  }

  auto sub_resource = review_detail::optional_string(field[5], "subResource", "request");
  if (!sub_resource) return sub_resource.error();
  request.sub_resource = *sub_resource;

  auto ns = review_detail::optional_string(field[6], "namespace", "request");
  if (!ns) return ns.error();
  request.namespace_ = *ns;
  if (request.namespace_.empty()) {
    if (const V s = review_detail::metadata_string(request.object, "namespace"); s.valid()) {
      request.namespace_ = s.string();
    }
  }

  auto name = review_detail::optional_string(field[7], "name", "request");
  if (!name) return name.error();
  request.name = *name;
  if (request.name.empty()) {
    if (const V s = review_detail::metadata_string(request.object, "name"); s.valid()) {
      request.name = s.string();
    } else if (const V g = review_detail::metadata_string(request.object, "generateName");
               g.valid()) {
      request.name = g.string();
    }
  }
  return std::nullopt;
}

}  // namespace review_detail

// The request of the review `root`, with decode_admission_review's checks
// and errors (the body-level ones, empty or not JSON, are the parser's).
template <JsonView V>
Expected<ReviewRequest<V>> read_review(const V& root) {
  using review_detail::body_error;
  using review_detail::quote_value;
  if (!root.is_object()) {
    return body_error(std::string("expected an AdmissionReview object, got a JSON ") +
                      root.type_name());
  }
  static constexpr std::array<std::string_view, 3> kRootKeys = {"kind", "apiVersion", "request"};
  std::array<V, 3> top;
  root.find_each(kRootKeys, top);
  const V kind = top[0];
  if (!kind.valid() || !kind.is_string() || kind.string() != "AdmissionReview") {
    return body_error("expected kind AdmissionReview, got " +
                      (!kind.valid()      ? std::string("no kind")
                       : kind.is_string() ? quote_value(kind.string())
                                          : std::string("a ") + kind.type_name()));
  }
  ReviewRequest<V> request;
  const V api = top[1];
  if (api.valid() && api.is_string() && api.string() == api_version_of(ReviewVersion::v1)) {
    request.version = ReviewVersion::v1;
  } else if (api.valid() && api.is_string() &&
             api.string() == api_version_of(ReviewVersion::v1beta1)) {
    request.version = ReviewVersion::v1beta1;
  } else {
    return body_error("expected apiVersion admission.k8s.io/v1 or admission.k8s.io/v1beta1, got " +
                      (!api.valid()      ? std::string("none")
                       : api.is_string() ? quote_value(api.string())
                                         : std::string("a ") + api.type_name()));
  }

  const V req = top[2];
  if (!req.valid() || req.is_null()) return body_error("AdmissionReview has no request");
  if (!req.is_object()) {
    return body_error(std::string("request: expected an object, got ") + req.type_name());
  }

  static constexpr std::array<std::string_view, 9> kKeys = {"uid",       "operation", "object",
                                                            "oldObject", "kind",      "subResource",
                                                            "namespace", "name",      "dryRun"};
  std::array<V, 9> field;
  req.find_each(kKeys, field);
  const V uid = field[0];
  if (!uid.valid() || !uid.is_string() || uid.string().empty()) {
    return Error{"request.uid", "expected a non-empty string"};
  }
  request.uid = uid.string();

  auto operation = review_detail::optional_string(field[1], "operation", "request");
  if (!operation) return operation.error();
  request.operation = *operation;
  if (request.operation != "CREATE" && request.operation != "UPDATE" &&
      request.operation != "DELETE" && request.operation != "CONNECT") {
    return Error{"request.operation", "expected CREATE, UPDATE, DELETE or CONNECT, got " +
                                          quote_value(request.operation)};
  }

  for (std::size_t k = 2; k < 4; ++k) {
    const V v = field[k];
    if (v.valid() && !v.is_null() && !v.is_object()) {
      return Error{"request." + std::string(kKeys[k]),
                   std::string("expected an object or null, got ") + v.type_name()};
    }
  }
  request.object = field[2];
  request.old_object = field[3];

  if (auto error = review_detail::read_identity(field, request)) return *error;

  if (const V dry = field[8]; dry.valid() && !dry.is_null()) {
    if (!dry.is_boolean()) {
      return Error{"request.dryRun", std::string("expected a boolean, got ") + dry.type_name()};
    }
    request.dry_run = dry.boolean();
  }
  return request;
}

// Decodes `body`. Errors name what was found and what was expected:
// "request body is not JSON: ...", "request body is truncated JSON ...",
// "expected kind AdmissionReview, got \"Pod\"", "AdmissionReview has no request",
// "request.uid: expected a non-empty string".
Expected<AdmissionRequest> decode_admission_review(std::string_view body);

}  // namespace cudagate

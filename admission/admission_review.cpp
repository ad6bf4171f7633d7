// Decoding an AdmissionReview body with nlohmann::json, the parser that gives the errors: a body
// that is empty, too deeply nested, truncated or not JSON is refused with a message saying which.
#include "admission/admission_review.h"

#include <exception>
#include <string>
#include <utility>

#include "types/json_depth.h"

namespace cudagate {
namespace {

using nlohmann::json;
using review_detail::body_error;

constexpr std::string_view kApiV1 = "admission.k8s.io/v1";
constexpr std::string_view kApiV1beta1 = "admission.k8s.io/v1beta1";

Expected<json> parse_body(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return body_error("request body is empty; expected an AdmissionReview");
  }
  if (json_too_deep_at(body, kMaxReviewDepth) != std::string_view::npos) {
    return body_error("request body is JSON nested deeper than " + std::to_string(kMaxReviewDepth) +
                      " levels; expected an AdmissionReview");
  }
  try {
    return json::parse(body);
  } catch (const json::parse_error& e) {
    // nlohmann counts the byte it stopped at from 1; at the end of the input
    // it stops one past the last byte.
    if (e.byte > body.size()) {
      return body_error("request body is truncated JSON: the document ends after byte " +
                        std::to_string(body.size()) + " before it is complete");
    }
    return body_error("request body is not JSON: syntax error at byte " + std::to_string(e.byte));
  } catch (const std::exception& e) {
    return body_error(std::string("request body is not JSON: ") + e.what());
  }
}

}  // namespace

std::string_view api_version_of(ReviewVersion version) {
  return version == ReviewVersion::v1 ? kApiV1 : kApiV1beta1;
}

Expected<AdmissionRequest> decode_admission_review(std::string_view body) {
  auto parsed = parse_body(body);
  if (!parsed) return parsed.error();
  json& root = *parsed;
  auto read = read_review(NlohmannView(root));
  if (!read) return read.error();

  AdmissionRequest request;
  request.version = read->version;
  request.uid = read->uid;
  request.group = read->group;
  request.kind = read->kind;
  request.sub_resource = read->sub_resource;
  request.operation = read->operation;
  request.namespace_ = read->namespace_;
  request.name = read->name;
  request.dry_run = read->dry_run;
  // The objects move out of the parsed document, never copied.
  json& req = *root.find("request");
  if (auto it = req.find("object"); it != req.end()) request.object = std::move(*it);
  if (auto it = req.find("oldObject"); it != req.end()) request.old_object = std::move(*it);
  return request;
}

}  // namespace cudagate

#include "server/admission_review.h"

#include <exception>
#include <string>
#include <utility>

namespace cudagate {
namespace {

using nlohmann::json;

constexpr std::string_view kApiV1 = "admission.k8s.io/v1";
constexpr std::string_view kApiV1beta1 = "admission.k8s.io/v1beta1";

Error body_error(std::string message) {
  return Error{"", std::move(message)};
}

std::string quote_value(std::string_view text) {
  constexpr std::size_t kMax = 64;
  std::string out = "\"";
  out += text.substr(0, kMax);
  if (text.size() > kMax) out += "...";
  out += '"';
  return out;
}

// A linear scan for nesting depth, outside strings; cheaper than a parser
// callback on every token, and it keeps recursive walks of the document
// (comparison, serialisation) within the stack.
bool nesting_within(std::string_view body, std::size_t limit) {
  std::size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : body) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '{':
      case '[':
        if (++depth > limit) return false;
        break;
      case '}':
      case ']':
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return true;
}

// An optional string member: absent or null is "", another type an error.
Expected<std::string> optional_string(const json& object, const char* key, std::string_view path) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::string();
  if (!it->is_string()) {
    return Error{std::string(path) + "." + key,
                 std::string("expected a string, got ") + it->type_name()};
  }
  return it->get<std::string>();
}

const std::string* metadata_string(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return nullptr;
  const auto it = meta->find(key);
  if (it == meta->end() || !it->is_string()) return nullptr;
  return it->get_ptr<const std::string*>();
}

Expected<json> parse_body(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return body_error("request body is empty; expected an AdmissionReview");
  }
  if (!nesting_within(body, kMaxReviewDepth)) {
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

  if (!root.is_object()) {
    return body_error(std::string("expected an AdmissionReview object, got a JSON ") +
                      root.type_name());
  }
  const auto kind = root.find("kind");
  if (kind == root.end() || !kind->is_string() || *kind != "AdmissionReview") {
    return body_error("expected kind AdmissionReview, got " +
                      (kind == root.end()  ? std::string("no kind")
                       : kind->is_string() ? quote_value(kind->get_ref<const std::string&>())
                                           : std::string("a ") + kind->type_name()));
  }
  AdmissionRequest request;
  const auto api = root.find("apiVersion");
  if (api != root.end() && api->is_string() && *api == kApiV1) {
    request.version = ReviewVersion::v1;
  } else if (api != root.end() && api->is_string() && *api == kApiV1beta1) {
    request.version = ReviewVersion::v1beta1;
  } else {
    return body_error("expected apiVersion admission.k8s.io/v1 or admission.k8s.io/v1beta1, got " +
                      (api == root.end()  ? std::string("none")
                       : api->is_string() ? quote_value(api->get_ref<const std::string&>())
                                          : std::string("a ") + api->type_name()));
  }

  const auto req_it = root.find("request");
  if (req_it == root.end() || req_it->is_null()) {
    return body_error("AdmissionReview has no request");
  }
  if (!req_it->is_object()) {
    return body_error(std::string("request: expected an object, got ") + req_it->type_name());
  }
  json& req = *req_it;

  const auto uid = req.find("uid");
  if (uid == req.end() || !uid->is_string() || uid->get_ref<const std::string&>().empty()) {
    return Error{"request.uid", "expected a non-empty string"};
  }
  request.uid = uid->get<std::string>();

  auto operation = optional_string(req, "operation", "request");
  if (!operation) return operation.error();
  request.operation = std::move(*operation);
  if (request.operation != "CREATE" && request.operation != "UPDATE" &&
      request.operation != "DELETE" && request.operation != "CONNECT") {
    return Error{"request.operation", "expected CREATE, UPDATE, DELETE or CONNECT, got " +
                                          quote_value(request.operation)};
  }

  for (const char* key : {"object", "oldObject"}) {
    const auto it = req.find(key);
    if (it != req.end() && !it->is_null() && !it->is_object()) {
      return Error{std::string("request.") + key,
                   std::string("expected an object or null, got ") + it->type_name()};
    }
  }
  if (auto it = req.find("object"); it != req.end()) request.object = std::move(*it);
  if (auto it = req.find("oldObject"); it != req.end()) request.old_object = std::move(*it);

  if (const auto gvk = req.find("kind"); gvk != req.end() && !gvk->is_null()) {
    if (!gvk->is_object()) {
      return Error{"request.kind", std::string("expected an object, got ") + gvk->type_name()};
    }
    auto group = optional_string(*gvk, "group", "request.kind");
    if (!group) return group.error();
    auto kind_name = optional_string(*gvk, "kind", "request.kind");
    if (!kind_name) return kind_name.error();
    request.group = std::move(*group);
    request.kind = std::move(*kind_name);
  }
  if (request.kind.empty() && request.object.is_object()) {
    // A trimmed review without request.kind: the object names itself.
    if (const auto k = request.object.find("kind"); k != request.object.end() && k->is_string()) {
      request.kind = k->get<std::string>();
    }
    if (const auto v = request.object.find("apiVersion");
        v != request.object.end() && v->is_string()) {
      const auto& text = v->get_ref<const std::string&>();
      const auto slash = text.find('/');
      request.group = slash == std::string::npos ? std::string() : text.substr(0, slash);
    }
  }

  auto sub_resource = optional_string(req, "subResource", "request");
  if (!sub_resource) return sub_resource.error();
  request.sub_resource = std::move(*sub_resource);

  auto ns = optional_string(req, "namespace", "request");
  if (!ns) return ns.error();
  request.namespace_ = std::move(*ns);
  if (request.namespace_.empty()) {
    if (const auto* s = metadata_string(request.object, "namespace")) request.namespace_ = *s;
  }

  auto name = optional_string(req, "name", "request");
  if (!name) return name.error();
  request.name = std::move(*name);
  if (request.name.empty()) {
    if (const auto* s = metadata_string(request.object, "name")) {
      request.name = *s;
    } else if (const auto* g = metadata_string(request.object, "generateName")) {
      request.name = *g;
    }
  }

  if (const auto dry = req.find("dryRun"); dry != req.end() && !dry->is_null()) {
    if (!dry->is_boolean()) {
      return Error{"request.dryRun", std::string("expected a boolean, got ") + dry->type_name()};
    }
    request.dry_run = dry->get<bool>();
  }
  return request;
}

}  // namespace cudagate

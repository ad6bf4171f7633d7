// The admission steps: read the review once (decode it, decide which
// requests are ours to judge, read the workload and list the images to look
// up), then decide (evaluate, enforce, answer). Two choices worth knowing:
//  - A GPU pod whose fields have the wrong types (workload_from_json fails)
//    is still a review we can answer: the user's input is wrong, so enforce
//    mode denies it with the error naming the field, warn mode admits it
//    with that warning, dryrun records it. The same holds for a value the
//    user wrote that evaluate() cannot read (an annotation "12.x"). An object
//    that asks for no GPU is admitted untouched whatever else is wrong with
//    it: that is the API server's to judge, not ours.
//  - A body that is not a review (not JSON, another kind, no request) has no
//    uid to answer, so it gets HTTP 400 and {"error": "..."}.
//
// Speed: the body is parsed with simdjson into the workspace's reusable
// document, without building metadata.managedFields (admission/review_text.h),
// and read through the same mapping code as nlohmann::json
// (policy/objects/workload_reader.h, read_review in admission_review.h). Whatever
// simdjson refuses (not JSON, too deep, integers beyond 64 bits, a byte
// order mark, a body larger than kFastBodyLimit) takes the nlohmann::json
// path, which then gives the errors. nlohmann::json is also built, from the
// same body, where a document is needed: comparing a controller's old and
// new templates on UPDATE; the object a /mutate patch pins is converted
// from the fast parser's document instead.
#include "admission/admission.h"

#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "admission/admission_response.h"
#include "admission/admission_review.h"
#include "admission/enforcement.h"
#include "admission/pin_affinity.h"
#include "admission/review_text.h"
#include "admission/simd_json_view.h"
#include "policy/objects/node.h"
#include "policy/objects/pod.h"
#include "policy/objects/workload_reader.h"
#include "policy/rules/evaluate.h"
#include "policy/rules/images_wanted.h"
#include "policy/rules/metadata.h"
#include "types/quote.h"

namespace cudagate {

struct AdmissionWorkspace::Parts {
  // Bodies up to kFastBodyLimit; the buffers keep the capacity of the
  // largest seen.
  ReviewTextParser parser{std::size_t{64} * 1024, kMaxReviewDepth};
  CandidateScratch scratch;
  MetadataMemo memo;
};

AdmissionWorkspace::AdmissionWorkspace() : parts_(std::make_unique<Parts>()) {}
AdmissionWorkspace::~AdmissionWorkspace() = default;

namespace {

using nlohmann::json;

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

void bad_request(ReadReview& read, const std::string& message) {
  read.answered = true;
  read.outcome.http_status = 400;
  read.outcome.decision = AdmissionDecision::error;
  read.outcome.body = dump(json{{"error", message}});
}

// The group each handled kind belongs to ("" is the core group). A kind of
// the same name in another group (a CRD called Job) is not ours to judge.
bool handled_kind(std::string_view group, std::string_view kind) {
  if (!is_workload_kind(kind)) return false;
  if (kind == "Pod") return group.empty();
  if (kind == "Job" || kind == "CronJob") return group == "batch";
  return group == "apps" || group == "extensions";
}

// The pod template of a controller object; invalid when it has none.
template <JsonView V>
V pod_template(const V& object, std::string_view kind) {
  auto member = [](const V& value, std::string_view key) {
    return value.valid() && value.is_object() ? value.find(key) : V{};
  };
  const V spec = member(object, "spec");
  if (kind == "CronJob") return member(member(member(spec, "jobTemplate"), "spec"), "template");
  return member(spec, "template");
}

bool same_value(const NlohmannView& a, const NlohmannView& b) {
  return a.json() == b.json();
}
bool same_value(const SimdJsonView& a, const SimdJsonView& b) {
  return to_nlohmann(a) == to_nlohmann(b);
}

template <JsonView V>
bool template_changed(const ReviewRequest<V>& req) {
  const V now = pod_template(req.object, req.kind);
  const V before = pod_template(req.old_object, req.kind);
  if (!now.valid() || !before.valid()) return now.valid() != before.valid();
  return !same_value(now, before);
}

// The API server validates names only after the mutating webhooks, so the
// kind, namespace and name shown here may be anything: each is quoted and
// bounded (a namespace is at most 63 bytes, a name 253).
std::string subject_of(const AdmissionOutcome& request) {
  std::string out = request.kind.empty() ? std::string("object") : printable(request.kind, 63);
  if (!request.name.empty()) {
    std::string full(std::string_view(request.namespace_).substr(0, 64));
    if (!full.empty()) full += '/';
    full += std::string_view(request.name).substr(0, 256);
    out += ' ';
    out += quote(full, 320);
  }
  return out;
}

// The review's object for the patch writer. From the fast parser's document
// it is converted rather than parsed again with nlohmann::json (ten times
// the cost for a 13 KB review), leaving out metadata.managedFields, which
// no patch reads.
json object_for_patch(const SimdJsonView& object) {
  if (!object.valid() || !object.is_object()) return nullptr;
  json out = json::object();
  object.for_each_member([&](std::string_view key, const SimdJsonView& member) {
    out[std::string(key)] = to_nlohmann(member, key == "metadata" ? "managedFields" : "");
  });
  return out;
}

AdmissionResponse respond(const Enforcement& e, json patch) {
  AdmissionResponse response = AdmissionResponse::allowed();
  switch (e.action) {
    case EnforcementAction::deny:
      response = e.internal_error ? AdmissionResponse::errored(500, e.message)
                                  : AdmissionResponse::denied(e.message);
      break;
    case EnforcementAction::patch:
      response = AdmissionResponse::patched(std::move(patch));
      break;
    case EnforcementAction::allow:
    case EnforcementAction::warn:
      break;
  }
  response.with_warnings(e.warnings);
  for (const auto& [key, value] : e.audit_annotations) response.with_audit_annotation(key, value);
  return response;
}

AdmissionDecision decision_of(EnforcementAction action) {
  switch (action) {
    case EnforcementAction::allow:
      return AdmissionDecision::allow;
    case EnforcementAction::deny:
      return AdmissionDecision::deny;
    case EnforcementAction::warn:
      return AdmissionDecision::warn;
    case EnforcementAction::patch:
      break;
  }
  return AdmissionDecision::patch;
}

// The answer to a read or decided review: `response` written as the review
// it answers.
void answer(ReadReview& read, const AdmissionResponse& response) {
  read.answered = true;
  read.outcome.body = response.serialize(read.version, read.outcome.uid, read.endpoint);
}

void answer_enforced(ReadReview& read, const Enforcement& e, json patch = nullptr) {
  read.outcome.decision = decision_of(e.action);
  answer(read, respond(e, std::move(patch)));
}

void answer_internal_error(ReadReview& read, std::string_view what, const Policy& policy) {
  read.outcome.decision = AdmissionDecision::error;
  answer(read,
         respond(enforce_internal_error(std::string(what), policy, read.enforcement), nullptr));
}

void answer_allowed(ReadReview& read, std::optional<Verdict> verdict = std::nullopt) {
  read.outcome.verdict = verdict;
  read.outcome.decision = AdmissionDecision::allow;
  answer(read, AdmissionResponse::allowed());
}

// Decides what is not ours to judge and reads the workload of what is.
template <JsonView V>
void read_request(const ReviewRequest<V>& req, const AdmissionContext& context, ReadReview& read) {
  // Only the creation of a pod, or a new pod template, can place a pod on a
  // node; everything else passes untouched and unrecorded.
  if (req.operation == "DELETE" || req.operation == "CONNECT" || !req.sub_resource.empty() ||
      !handled_kind(req.group, req.kind)) {
    answer_allowed(read);
    return;
  }
  const auto& excluded = context.policy.exclude_namespaces;
  if (!req.namespace_.empty() &&
      std::find(excluded.begin(), excluded.end(), req.namespace_) != excluded.end()) {
    answer_allowed(read, Verdict::skip);
    return;
  }
  read.enforcement.controller = req.kind != "Pod";
  // Scheduling fields of a pod are immutable; a controller's matter only
  // when its template changes.
  if (req.operation == "UPDATE" && (!read.enforcement.controller || !template_changed(req))) {
    answer_allowed(read);
    return;
  }

  // Only the variables metadata resolution reads are kept (all are checked).
  WorkloadReadOptions read_options;
  read_options.keep_env = metadata_reads_env;
  read_options.default_kind = req.kind;
  auto workload = workload_from_view(req.object, "", read_options);
  if (!workload) {
    // Not ours to judge unless it asks for a GPU: the API server validates
    // the rest of the object, and a pod without a GPU is admitted untouched
    // whatever else is wrong with it.
    const bool gpu = workload_reader::asks_for_gpu(req.object, req.kind, [&](std::string_view r) {
      return is_gpu_resource(r, context.policy.gpu_resources);
    });
    if (!gpu) {
      answer_allowed(read, Verdict::skip);
      return;
    }
    // A GPU workload whose fields cannot be read: its compatibility is unknown.
    read.outcome.verdict = Verdict::unknown;
    answer_enforced(
        read, enforce_input_error(workload.error(), subject_of(read.outcome), read.enforcement));
    return;
  }
  // A pod that names claims is evaluate()'s to judge: one that names a
  // claim cudagate does not know is unknown, never skipped here.
  const auto gpu = gpu_containers(*workload, context.policy, context.claims);
  if (workload->spec.resource_claims.empty() && gpu.empty()) {
    answer_allowed(read, Verdict::skip);
    return;
  }

  read.images = images_wanted(*workload, gpu, context.fleet_platform, context.policy);
  read.workload = std::move(*workload);
}

// A decoded review -> the read, whichever parser decoded it.
template <JsonView V>
void read_decoded(const Expected<ReviewRequest<V>>& decoded, const AdmissionContext& context,
                  ReadReview& read) {
  if (!decoded) {
    bad_request(read, decoded.error().str());
    return;
  }
  const ReviewRequest<V>& req = *decoded;
  read.version = req.version;
  read.outcome.uid = req.uid;
  read.outcome.namespace_ = req.namespace_;
  read.outcome.kind = req.kind;
  read.outcome.name = req.name;
  read.outcome.dry_run = req.dry_run;
  if (req.operation == "CREATE" && !(req.object.valid() && req.object.is_object())) {
    bad_request(read, "request.object: expected the object being created");
    return;
  }
  try {
    read_request(req, context, read);
    if constexpr (std::is_same_v<V, SimdJsonView>) {
      if (!read.answered) read.object_view = req.object;
    }
  } catch (const std::exception& e) {
    answer_internal_error(read, e.what(), context.policy);
  } catch (...) {
    answer_internal_error(read, "unknown exception", context.policy);
  }
}

// Bodies up to this size take the fast parser; the workspace's buffers keep
// the capacity of the largest body seen, so larger (rare) ones take the
// reference parser instead of growing them.
constexpr std::size_t kFastBodyLimit = std::size_t{256} * 1024;

ReadReview read_body(Endpoint endpoint, std::string_view mode_param, std::string_view body,
                     bool padded, const AdmissionContext& context, AdmissionWorkspace& workspace,
                     ReviewParser parser) {
  ReadReview read;
  read.endpoint = endpoint;
  try {
    Mode mode = context.policy.mode;
    if (!mode_param.empty()) {
      const auto parsed = parse_mode(mode_param);
      if (!parsed) {
        bad_request(read, "invalid mode parameter \"" + std::string(mode_param.substr(0, 32)) +
                              "\": expected enforce, warn or dryrun");
        return read;
      }
      mode = *parsed;
    }
    read.outcome.mode = mode;
    read.enforcement = EnforcementRequest{mode, endpoint, false};

    if (parser == ReviewParser::fast && body.size() <= kFastBodyLimit) {
      ReviewTextParser& text_parser = workspace.parts().parser;
      const auto root = padded ? text_parser.parse(PaddedText{body}) : text_parser.parse(body);
      if (root) {
        read_decoded(read_review(*root), context, read);
        return read;
      }
    }
    auto decoded = decode_admission_review(body);
    if (!decoded) {
      bad_request(read, decoded.error().str());
      return read;
    }
    AdmissionRequest& req = *decoded;
    ReviewRequest<NlohmannView> view;
    view.version = req.version;
    view.uid = req.uid;
    view.group = req.group;
    view.kind = req.kind;
    view.sub_resource = req.sub_resource;
    view.operation = req.operation;
    view.namespace_ = req.namespace_;
    view.name = req.name;
    view.dry_run = req.dry_run;
    view.object = NlohmannView(req.object);
    view.old_object = NlohmannView(req.old_object);
    read_decoded(Expected<ReviewRequest<NlohmannView>>(view), context, read);
    if (!read.answered && endpoint == Endpoint::mutate) read.object = std::move(req.object);
    return read;
  } catch (...) {
    // Only an allocation failure or similar reaches here: no review can be
    // built, so the API server's failurePolicy decides.
    read = ReadReview{};
    read.answered = true;
    read.outcome.http_status = 500;
    read.outcome.body = R"({"error":"internal error while answering the review"})";
    return read;
  }
}

// The workload judged, enforced and pinned where the mode says so.
void judge(ReadReview& read, const AdmissionContext& context, const RegistryFacts& registry,
           AdmissionWorkspace& workspace) {
  AdmissionWorkspace::Parts& parts = workspace.parts();
  EvaluationInputs inputs;
  inputs.registry = registry.empty() ? nullptr : &registry;
  inputs.scratch = &parts.scratch;
  inputs.memo = &parts.memo;
  inputs.claims = context.claims;
  const Workload& workload = *read.workload;
  auto decision = evaluate(workload, context.inventory, context.policy, context.db, inputs);
  if (!decision) {
    read.outcome.verdict = Verdict::unknown;
    answer_enforced(
        read, enforce_input_error(decision.error(), subject_of(read.outcome), read.enforcement));
    return;
  }
  read.outcome.verdict = decision->verdict;

  Enforcement e = enforce(*decision, context.policy, read.enforcement);
  json patch;
  if (e.action == EnforcementAction::patch) {
    if (read.object_view) read.object = object_for_patch(*read.object_view);
    auto pin = pin_affinity(read.object, workload, *decision, context.inventory, context.db,
                            e.pin_reason, &context.policy);
    if (pin) {
      patch = std::move(pin->patch);
    } else {
      e = enforce_unpinnable(*decision, context.policy, read.enforcement, pin.error().str());
    }
  }
  read.outcome.record = std::move(*decision);
  answer_enforced(read, e, std::move(patch));
}

}  // namespace

std::string_view to_string(AdmissionDecision decision) {
  switch (decision) {
    case AdmissionDecision::allow:
      return "allow";
    case AdmissionDecision::deny:
      return "deny";
    case AdmissionDecision::warn:
      return "warn";
    case AdmissionDecision::patch:
      return "patch";
    case AdmissionDecision::error:
      break;
  }
  return "error";
}

void ReadReview::detach() {
  if (!object_view) return;
  if (endpoint == Endpoint::mutate) object = object_for_patch(*object_view);
  object_view.reset();
}

ReadReview read_admission(Endpoint endpoint, std::string_view mode_param, std::string_view body,
                          const AdmissionContext& context, AdmissionWorkspace& workspace,
                          ReviewParser parser) {
  return read_body(endpoint, mode_param, body, false, context, workspace, parser);
}

ReadReview read_admission(Endpoint endpoint, std::string_view mode_param, PaddedText body,
                          const AdmissionContext& context, AdmissionWorkspace& workspace,
                          ReviewParser parser) {
  return read_body(endpoint, mode_param, body.text, true, context, workspace, parser);
}

AdmissionOutcome& decide_admission(ReadReview& read, const AdmissionContext& context,
                                   const RegistryFacts& registry, AdmissionWorkspace& workspace) {
  if (!read.answered) {
    try {
      judge(read, context, registry, workspace);
    } catch (const std::exception& e) {
      answer_internal_error(read, e.what(), context.policy);
    } catch (...) {
      answer_internal_error(read, "unknown exception", context.policy);
    }
  }
  return read.outcome;
}

AdmissionOutcome handle_admission(Endpoint endpoint, std::string_view mode_param,
                                  std::string_view body, const AdmissionContext& context,
                                  AdmissionWorkspace& workspace, ReviewParser parser) {
  ReadReview read = read_admission(endpoint, mode_param, body, context, workspace, parser);
  return std::move(decide_admission(read, context, RegistryFacts{}, workspace));
}

AdmissionOutcome handle_admission(Endpoint endpoint, std::string_view mode_param, PaddedText body,
                                  const AdmissionContext& context, AdmissionWorkspace& workspace,
                                  ReviewParser parser) {
  ReadReview read = read_admission(endpoint, mode_param, body, context, workspace, parser);
  return std::move(decide_admission(read, context, RegistryFacts{}, workspace));
}

}  // namespace cudagate

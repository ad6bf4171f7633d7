// The admission handler: decode the review once, decide which requests are
// ours to judge, read the workload, evaluate it, enforce the decision and
// answer. Two choices worth knowing:
//  - A pod whose fields have the wrong types (workload_from_json fails) is
//    still a review we can answer: the user's input is wrong, so enforce
//    mode denies it with the error naming the field, warn mode admits it
//    with that warning, dryrun records it. The same holds for a value the
//    user wrote that evaluate() cannot read (an annotation "12.x").
//  - A body that is not a review (not JSON, another kind, no request) has no
//    uid to answer, so it gets HTTP 400 and {"error": "..."}.
#include "server/admission.h"

#include <algorithm>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "policy/evaluate.h"
#include "policy/pod.h"
#include "server/admission_response.h"
#include "server/admission_review.h"
#include "server/enforcement.h"
#include "server/pin_affinity.h"

namespace cudagate {
namespace {

using nlohmann::json;

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

AdmissionOutcome& bad_request(AdmissionOutcome& out, const std::string& message) {
  out.http_status = 400;
  out.decision = "error";
  out.body = dump(json{{"error", message}});
  return out;
}

// The group each handled kind belongs to ("" is the core group). A kind of
// the same name in another group (a CRD called Job) is not ours to judge.
bool handled_kind(const std::string& group, const std::string& kind) {
  if (!is_workload_kind(kind)) return false;
  if (kind == "Pod") return group.empty();
  if (kind == "Job" || kind == "CronJob") return group == "batch";
  return group == "apps" || group == "extensions";
}

const json* member(const json* object, std::string_view key) {
  if (object == nullptr || !object->is_object()) return nullptr;
  const auto it = object->find(key);
  return it == object->end() ? nullptr : &*it;
}

// The pod template of a controller object; nullptr when it has none.
const json* pod_template(const json& object, const std::string& kind) {
  const json* spec = member(&object, "spec");
  if (kind == "CronJob")
    spec = member(member(member(spec, "jobTemplate"), "spec"), "template");
  else
    spec = member(spec, "template");
  return spec;
}

bool template_changed(const AdmissionRequest& req) {
  const json* now = pod_template(req.object, req.kind);
  const json* before = pod_template(req.old_object, req.kind);
  if (now == nullptr || before == nullptr) return now != before;
  return *now != *before;
}

std::string subject_of(const AdmissionRequest& req) {
  std::string out = req.kind.empty() ? std::string("object") : req.kind;
  if (!req.name.empty()) {
    out += " \"";
    if (!req.namespace_.empty()) out += req.namespace_ + "/";
    out += req.name + "\"";
  }
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

// Judges a decoded request; fills the outcome's verdict and decision.
AdmissionResponse admit(const AdmissionRequest& req, EnforcementRequest& er,
                        const AdmissionContext& context, AdmissionOutcome& out) {
  out.decision = "allow";
  // Only the creation of a pod, or a new pod template, can place a pod on a
  // node; everything else passes untouched and unrecorded.
  if (req.operation == "DELETE" || req.operation == "CONNECT" || !req.sub_resource.empty() ||
      !handled_kind(req.group, req.kind)) {
    return AdmissionResponse::allowed();
  }
  const auto& excluded = context.policy.exclude_namespaces;
  if (!req.namespace_.empty() &&
      std::find(excluded.begin(), excluded.end(), req.namespace_) != excluded.end()) {
    out.verdict = std::string(to_string(Verdict::skip));
    return AdmissionResponse::allowed();
  }
  er.controller = req.kind != "Pod";
  // Scheduling fields of a pod are immutable; a controller's matter only
  // when its template changes.
  if (req.operation == "UPDATE" && (!er.controller || !template_changed(req))) {
    return AdmissionResponse::allowed();
  }

  auto workload = workload_from_json(req.object, "");
  if (!workload) {
    const Enforcement e = enforce_input_error(workload.error(), subject_of(req), er);
    out.decision = std::string(to_string(e.action));
    return respond(e, nullptr);
  }
  if (gpu_containers(*workload, context.policy).empty()) {
    out.verdict = std::string(to_string(Verdict::skip));
    return AdmissionResponse::allowed();
  }

  auto decision = evaluate(*workload, context.inventory, context.policy, context.db, {});
  if (!decision) {
    const Enforcement e = enforce_input_error(decision.error(), subject_of(req), er);
    out.decision = std::string(to_string(e.action));
    return respond(e, nullptr);
  }
  out.verdict = std::string(to_string(decision->verdict));

  Enforcement e = enforce(*decision, context.policy, er);
  json patch;
  if (e.action == EnforcementAction::patch) {
    auto pin =
        pin_affinity(req.object, *workload, *decision, context.inventory, context.db, e.pin_reason);
    if (pin) {
      patch = std::move(pin->patch);
    } else {
      e = enforce_unpinnable(*decision, context.policy, er, pin.error().str());
    }
  }
  out.decision = std::string(to_string(e.action));
  out.record = std::move(*decision);
  return respond(e, std::move(patch));
}

}  // namespace

AdmissionOutcome handle_admission(Endpoint endpoint, std::string_view mode_param,
                                  std::string_view body, const AdmissionContext& context) {
  AdmissionOutcome out;
  try {
    Mode mode = context.policy.mode;
    if (!mode_param.empty()) {
      const auto parsed = parse_mode(mode_param);
      if (!parsed) {
        return bad_request(out, "invalid mode parameter \"" +
                                    std::string(mode_param.substr(0, 32)) +
                                    "\": expected enforce, warn or dryrun");
      }
      mode = *parsed;
    }
    out.mode = std::string(to_string(mode));

    auto decoded = decode_admission_review(body);
    if (!decoded) return bad_request(out, decoded.error().str());
    const AdmissionRequest& req = *decoded;
    out.uid = req.uid;
    out.namespace_ = req.namespace_;
    out.kind = req.kind;
    out.name = req.name;
    out.dry_run = req.dry_run;
    if (req.operation == "CREATE" && !req.object.is_object()) {
      return bad_request(out, "request.object: expected the object being created");
    }

    EnforcementRequest er{mode, endpoint, false};
    AdmissionResponse response = [&] {
      try {
        return admit(req, er, context, out);
      } catch (const std::exception& e) {
        out.decision = "error";
        return respond(enforce_internal_error(e.what(), context.policy, er), nullptr);
      } catch (...) {
        out.decision = "error";
        return respond(enforce_internal_error("unknown exception", context.policy, er), nullptr);
      }
    }();
    out.body = dump(response.complete(req.version, req.uid, endpoint));
    return out;
  } catch (...) {
    // Only an allocation failure or similar reaches here: no review can be
    // built, so the API server's failurePolicy decides.
    out = AdmissionOutcome{};
    out.http_status = 500;
    out.decision = "error";
    out.body = R"({"error":"internal error while answering the review"})";
    return out;
  }
}

}  // namespace cudagate

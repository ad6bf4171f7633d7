// The admission handler: decode the review once, decide which requests are
// ours to judge, read the workload, evaluate it, enforce the decision and
// answer. Two choices worth knowing:
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
// Speed: the body is parsed with simdjson into a per-thread reusable
// document, without building metadata.managedFields (admission/review_text.h),
// and read through the same mapping code as nlohmann::json
// (policy/workload_reader.h, read_review in admission_review.h). Whatever
// simdjson refuses (not JSON, too deep, integers beyond 64 bits, a byte
// order mark, a body larger than kFastBodyLimit) takes the nlohmann::json
// path, which then gives the errors. nlohmann::json is also built, from the
// same body, where a document is needed: comparing a controller's old and
// new templates on UPDATE, and pinning a partial pod on /mutate.
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
#include "policy/evaluate.h"
#include "policy/metadata.h"
#include "policy/node.h"
#include "policy/pod.h"
#include "policy/workload_reader.h"
#include "types/quote.h"

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
bool handled_kind(std::string_view group, std::string_view kind) {
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

// The API server validates names only after the mutating webhooks, so the
// kind, namespace and name shown here may be anything: each is quoted and
// bounded (a namespace is at most 63 bytes, a name 253).
template <JsonView V>
std::string subject_of(const ReviewRequest<V>& req) {
  std::string out = req.kind.empty() ? std::string("object") : printable(req.kind, 63);
  if (!req.name.empty()) {
    std::string full(req.namespace_.substr(0, 64));
    if (!full.empty()) full += '/';
    full += req.name.substr(0, 256);
    out += ' ';
    out += quote(full, 320);
  }
  return out;
}

// The request as nlohmann::json, for the few steps that need a document:
// the decoded request itself on the reference path, else decoded from the
// body on first use.
class RequestDocument {
 public:
  explicit RequestDocument(const AdmissionRequest& decoded) : decoded_(&decoded) {}
  explicit RequestDocument(std::string_view body) : body_(body) {}

  const AdmissionRequest& get() {
    if (decoded_ == nullptr) {
      auto decoded = decode_admission_review(body_);
      // The fast parser read this body as a review: nlohmann::json reads
      // it too, unless memory ran out.
      if (!decoded) {
        throw std::runtime_error("review not decodable twice: " + decoded.error().str());
      }
      owned_ = std::move(*decoded);
      decoded_ = &*owned_;
    }
    return *decoded_;
  }

 private:
  const AdmissionRequest* decoded_ = nullptr;
  std::string_view body_;
  std::optional<AdmissionRequest> owned_;
};

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

// Judges a decoded request; fills the outcome's verdict and decision.
template <JsonView V>
AdmissionResponse admit(const ReviewRequest<V>& req, RequestDocument& document,
                        EnforcementRequest& er, const AdmissionContext& context,
                        AdmissionOutcome& out) {
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
  if (req.operation == "UPDATE" && (!er.controller || !template_changed(document.get()))) {
    return AdmissionResponse::allowed();
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
      out.verdict = std::string(to_string(Verdict::skip));
      return AdmissionResponse::allowed();
    }
    // A GPU workload whose fields cannot be read: its compatibility is unknown.
    out.verdict = std::string(to_string(Verdict::unknown));
    const Enforcement e = enforce_input_error(workload.error(), subject_of(req), er);
    out.decision = std::string(to_string(e.action));
    return respond(e, nullptr);
  }
  // A pod that names claims is evaluate()'s to judge: one that names a
  // claim cudagate does not know is unknown, never skipped here.
  if (workload->spec.resource_claims.empty() &&
      gpu_containers(*workload, context.policy, context.claims).empty()) {
    out.verdict = std::string(to_string(Verdict::skip));
    return AdmissionResponse::allowed();
  }

  // Registry facts are gathered before the one decision: what the cache
  // holds, or (when the caller waits for lookups) the list of what to fetch.
  RegistryFacts registry_facts;
  if (context.images != nullptr && context.policy.registry.enabled) {
    std::string platform;
    for (const ContainerSpec* c : gpu_containers(*workload, context.policy, context.claims)) {
      if (c->image.empty() || context.policy.catalog_entry(c->image) != nullptr) continue;
      if (platform.empty()) {
        platform = registry_platform(workload->spec, context.fleet_platform, context.policy);
      }
      ImageFacts::Known known = context.images->find(c->image, platform);
      if (known.config) {
        registry_facts.add(c->image, std::move(known.config));
      } else if (known.pending) {
        ImageWanted wanted{c->image, platform};
        if (std::find(out.wanted_images.begin(), out.wanted_images.end(), wanted) ==
            out.wanted_images.end()) {
          out.wanted_images.push_back(std::move(wanted));
        }
      }
    }
    if (!out.wanted_images.empty() && context.defer_for_images) {
      out.deferred = true;
      return AdmissionResponse::allowed();
    }
  }

  // Candidate sets reused by each thread: no allocation proportional to the fleet.
  thread_local CandidateScratch scratch;
  thread_local MetadataMemo memo;
  EvaluationInputs inputs;
  inputs.registry = registry_facts.empty() ? nullptr : &registry_facts;
  inputs.scratch = &scratch;
  inputs.memo = &memo;
  inputs.claims = context.claims;
  auto decision = evaluate(*workload, context.inventory, context.policy, context.db, inputs);
  if (!decision) {
    out.verdict = std::string(to_string(Verdict::unknown));
    const Enforcement e = enforce_input_error(decision.error(), subject_of(req), er);
    out.decision = std::string(to_string(e.action));
    return respond(e, nullptr);
  }
  out.verdict = std::string(to_string(decision->verdict));

  Enforcement e = enforce(*decision, context.policy, er);
  json patch;
  if (e.action == EnforcementAction::patch) {
    auto pin = [&] {
      if constexpr (std::is_same_v<V, SimdJsonView>) {
        return pin_affinity(object_for_patch(req.object), *workload, *decision, context.inventory,
                            context.db, e.pin_reason, &context.policy);
      } else {
        return pin_affinity(document.get().object, *workload, *decision, context.inventory,
                            context.db, e.pin_reason, &context.policy);
      }
    }();
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

// Bodies up to this size take the fast parser; its per-thread buffers keep
// the capacity of the largest body seen, so larger (rare) ones take the
// reference parser instead of growing them.
constexpr std::size_t kFastBodyLimit = std::size_t{256} * 1024;

// The hot path's parser: simdjson's, kept by each thread, reading a padded
// body where it lies and any other through a padded copy;
// metadata.managedFields is checked but not built.
std::optional<SimdJsonView> parse_fast(std::string_view body, bool padded) {
  if (body.size() > kFastBodyLimit) return std::nullopt;
  thread_local ReviewTextParser parser(std::size_t{64} * 1024, kMaxReviewDepth);
  return padded ? parser.parse(PaddedText{body}) : parser.parse(body);
}

// A decoded review -> the outcome, whichever parser read it.
template <JsonView V>
void answer(const Expected<ReviewRequest<V>>& decoded, RequestDocument& document, Endpoint endpoint,
            Mode mode, const AdmissionContext& context, AdmissionOutcome& out) {
  if (!decoded) {
    bad_request(out, decoded.error().str());
    return;
  }
  const ReviewRequest<V>& req = *decoded;
  out.uid = req.uid;
  out.namespace_ = req.namespace_;
  out.kind = req.kind;
  out.name = req.name;
  out.dry_run = req.dry_run;
  if (req.operation == "CREATE" && !(req.object.valid() && req.object.is_object())) {
    bad_request(out, "request.object: expected the object being created");
    return;
  }

  EnforcementRequest er{mode, endpoint, false};
  AdmissionResponse response = [&] {
    try {
      return admit(req, document, er, context, out);
    } catch (const std::exception& e) {
      out.decision = "error";
      return respond(enforce_internal_error(e.what(), context.policy, er), nullptr);
    } catch (...) {
      out.decision = "error";
      return respond(enforce_internal_error("unknown exception", context.policy, er), nullptr);
    }
  }();
  if (out.deferred) return;
  out.body = response.serialize(req.version, req.uid, endpoint);
}

}  // namespace

namespace {

AdmissionOutcome handle_review(Endpoint endpoint, std::string_view mode_param,
                               std::string_view body, bool padded, const AdmissionContext& context,
                               ReviewParser parser) {
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

    if (parser == ReviewParser::fast) {
      if (const auto root = parse_fast(body, padded)) {
        RequestDocument document(body);
        answer(read_review(*root), document, endpoint, mode, context, out);
        return out;
      }
    }
    auto decoded = decode_admission_review(body);
    if (!decoded) return bad_request(out, decoded.error().str());
    const AdmissionRequest& req = *decoded;
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
    RequestDocument document(req);
    answer(Expected<ReviewRequest<NlohmannView>>(view), document, endpoint, mode, context, out);
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

}  // namespace

std::string fleet_platform(const Inventory& inventory) {
  std::string platform;
  for (std::size_t i = 0; i < inventory.size(); ++i) {
    if (!inventory.groups()[inventory.group_of(i)].facts.has_gpu) continue;
    const std::string* arch = inventory.node_label(i, "kubernetes.io/arch");
    if (arch == nullptr || arch->empty()) return "";
    const std::string* os = inventory.node_label(i, "kubernetes.io/os");
    std::string node_platform =
        (os == nullptr || os->empty() ? std::string("linux") : *os) + "/" + *arch;
    if (platform.empty()) {
      platform = std::move(node_platform);
    } else if (platform != node_platform) {
      return "";
    }
  }
  return platform;
}

std::string registry_platform(const PodSpec& spec, std::string_view fleet_platform,
                              const Policy& policy) {
  constexpr std::string_view kArch = "kubernetes.io/arch";
  constexpr std::string_view kOs = "kubernetes.io/os";
  std::string arch;
  std::string os;
  for (const auto& [key, value] : spec.node_selector) {
    if (key == kArch) arch = value;
    if (key == kOs) os = value;
  }
  // A required affinity names one architecture when each of its terms (ORed)
  // asks for that one with In.
  if (arch.empty() && spec.required_terms && !spec.required_terms->empty()) {
    std::string common;
    bool agreed = true;
    for (const NodeSelectorTerm& term : *spec.required_terms) {
      std::string named;
      for (const NodeSelectorRequirement& r : term.match_expressions) {
        if (r.key == kArch && r.op == "In" && r.values.size() == 1) named = r.values[0];
      }
      if (named.empty() || (!common.empty() && named != common)) {
        agreed = false;
        break;
      }
      common = named;
    }
    if (agreed) arch = common;
  }
  if (arch.empty()) {
    return std::string(fleet_platform.empty() ? std::string_view(policy.registry.platform)
                                              : fleet_platform);
  }
  return (os.empty() ? std::string("linux") : os) + "/" + arch;
}

AdmissionOutcome handle_admission(Endpoint endpoint, std::string_view mode_param,
                                  std::string_view body, const AdmissionContext& context,
                                  ReviewParser parser) {
  return handle_review(endpoint, mode_param, body, false, context, parser);
}

AdmissionOutcome handle_admission(Endpoint endpoint, std::string_view mode_param, PaddedText body,
                                  const AdmissionContext& context, ReviewParser parser) {
  return handle_review(endpoint, mode_param, body.text, true, context, parser);
}

}  // namespace cudagate

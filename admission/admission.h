#pragma once
// The admission layer: an AdmissionReview body in, the HTTP answer out, in
// three steps that the caller runs in order:
//
//   read_review(body)        parse the body once; decide what is not ours to
//                            judge (answered at once) and read the workload,
//                            listing the images whose configs the registry
//                            may give (ReadReview::images)
//   (gather)                 the caller looks those images up, as long as it
//                            chooses to wait, into RegistryFacts
//   decide(read, facts)      evaluate(), the enforcement mode, and the answer
//                            (validation verdict, warnings, audit
//                            annotations, or the JSON Patch that pins a
//                            partial pod), as a typed AdmissionOutcome
//
// handle_admission() runs the three without registry facts.
//
// The layer performs no I/O and keeps no state of its own: the memory that
// admissions reuse (the parser's buffers, candidate sets, the metadata memo)
// is an AdmissionWorkspace the caller owns and lends to one admission at a
// time. The facts (AdmissionContext) are read only, so that any thread may
// call in with a workspace of its own.
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "admission/admission_review.h"
#include "admission/endpoint.h"
#include "admission/enforcement.h"
#include "admission/padded_text.h"
#include "admission/simd_json_view.h"
#include "compat-db/compat_db.h"
#include "policy/config/policy.h"
#include "policy/inventory/inventory.h"
#include "policy/objects/dra.h"
#include "policy/objects/pod.h"
#include "policy/rules/decision.h"
#include "policy/rules/metadata.h"

namespace cudagate {

// The memory admissions reuse from one to the next: the review parser's
// buffers, the candidate sets (no allocation proportional to the fleet)
// and the metadata memo. Not synchronised: the caller lends it to one
// admission at a time (a server keeps one per thread that admits).
class AdmissionWorkspace {
 public:
  AdmissionWorkspace();
  ~AdmissionWorkspace();
  AdmissionWorkspace(const AdmissionWorkspace&) = delete;
  AdmissionWorkspace& operator=(const AdmissionWorkspace&) = delete;

  struct Parts;  // admission.cpp defines it
  [[nodiscard]] Parts& parts() { return *parts_; }

 private:
  std::unique_ptr<Parts> parts_;
};

// The facts one admission is judged against: one consistent snapshot of the
// matrix, the policy and the inventory, owned by the caller for the call.
// An aggregate, so that temporaries bound to its references
// (AdmissionContext{db, Policy{}, inventory}) live as long as it does.
struct AdmissionContext {
  const CompatDb& db;
  const Policy& policy;
  const Inventory& inventory;
  // The platform ("linux/arm64") of every GPU node of the inventory when
  // they share one; "" otherwise (policy/rules/images_wanted.h).
  std::string_view fleet_platform{};
  // May be null (none known): the ResourceClaims and ResourceClaimTemplates
  // that pods name in spec.resourceClaims (Dynamic Resource Allocation).
  const ClaimCatalog* claims = nullptr;
};

// What the admission answered: the webhook's "allow", "deny", "warn" and
// "patch" (EnforcementAction), or "error" for a body that is not a review
// and an internal error.
enum class AdmissionDecision : unsigned char { allow, deny, warn, patch, error };
[[nodiscard]] std::string_view to_string(AdmissionDecision decision);

struct AdmissionOutcome {
  int http_status = 200;  // 200 with a review; 400 for a body that is not one
  std::string body;       // the JSON response body
  std::string content_type = "application/json";

  // For the decision log line and the metrics.
  std::string uid;
  std::string namespace_;
  std::string kind;
  std::string name;
  // None when nothing was evaluated (not a pod-creating change, or not a
  // review at all), which the metrics count as a skip (docs/contract.md §2.6).
  std::optional<Verdict> verdict;
  AdmissionDecision decision = AdmissionDecision::error;
  // None when the request named no valid mode.
  std::optional<Mode> mode;
  bool dry_run = false;            // the request's own dryRun: evaluate, record nowhere
  std::optional<Decision> record;  // the decision record, when one was made
};

// How the body is parsed: `fast` (simdjson, falling back to nlohmann::json
// for whatever it does not take) or `reference` (nlohmann::json only). Both
// give the same outcome; `reference` exists to test that they do.
enum class ReviewParser : unsigned char { fast, reference };

// A review as read_admission() leaves it: answered already, or a workload
// that decide_admission() judges.
struct ReadReview {
  Endpoint endpoint = Endpoint::validate;
  ReviewVersion version = ReviewVersion::v1;
  // The identity, mode and dryRun of the request; when `answered`, the
  // whole answer (a body that is not a review, a request that is not ours
  // to judge, a GPU workload whose fields cannot be read).
  AdmissionOutcome outcome;
  bool answered = false;
  // The images to look up before deciding: those of GPU containers that the
  // policy's catalog does not describe, each once, for the platform the
  // pod's nodes run. Empty when answered or when registry lookups are off.
  std::vector<ImageWanted> images;

  // What decide_admission() reads.
  EnforcementRequest enforcement;
  std::optional<Workload> workload;
  // The review's object, for /mutate's patch: a view into the workspace's
  // document, or (read by nlohmann::json, or detached) a document of its own.
  std::optional<SimdJsonView> object_view;
  nlohmann::json object;

  // Keeps what decide_admission() reads in memory of its own, so that the
  // workspace may read other reviews before this one is decided (while its
  // images are looked up).
  void detach();
};

// Step one: the body parsed once, with `workspace`. `mode_param` is the
// URL's `mode` ("" when absent); it overrides the policy's mode. Never
// throws: an internal error is answered according to policy onError.
[[nodiscard]] ReadReview read_admission(Endpoint endpoint, std::string_view mode_param,
                                        std::string_view body, const AdmissionContext& context,
                                        AdmissionWorkspace& workspace,
                                        ReviewParser parser = ReviewParser::fast);
// The same for a body followed by its padding (admission/padded_text.h),
// which the fast parser reads where it lies.
[[nodiscard]] ReadReview read_admission(Endpoint endpoint, std::string_view mode_param,
                                        PaddedText body, const AdmissionContext& context,
                                        AdmissionWorkspace& workspace,
                                        ReviewParser parser = ReviewParser::fast);

// Step three: the review judged with the registry's configs of its images
// (those not in `registry` are judged without), against the same context
// it was read with, once: its outcome, `read.outcome`, is returned. The
// workspace must be the one it was read with unless it was detached.
// Never throws.
[[nodiscard]] AdmissionOutcome& decide_admission(ReadReview& read, const AdmissionContext& context,
                                                 const RegistryFacts& registry,
                                                 AdmissionWorkspace& workspace);

// Read and decide, without registry facts.
[[nodiscard]] AdmissionOutcome handle_admission(Endpoint endpoint, std::string_view mode_param,
                                                std::string_view body,
                                                const AdmissionContext& context,
                                                AdmissionWorkspace& workspace,
                                                ReviewParser parser = ReviewParser::fast);
[[nodiscard]] AdmissionOutcome handle_admission(Endpoint endpoint, std::string_view mode_param,
                                                PaddedText body, const AdmissionContext& context,
                                                AdmissionWorkspace& workspace,
                                                ReviewParser parser = ReviewParser::fast);

}  // namespace cudagate

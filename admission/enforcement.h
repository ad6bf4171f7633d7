#pragma once
// Enforcement: what the webhook does with a decision. A pure function of the
// mode, the endpoint, the verdict and the policy (docs/contract.md §5):
//
//   verdict        enforce                                   warn     dryrun
//   pass, skip     allow                                     allow    allow
//   fail           deny                                      warn     allow
//   partial        /mutate: patch (policy mutate),           warn     allow
//                    else allow and leave it to /validate
//                  /validate: a Pod: deny (partial: deny) or
//                    warn; a controller: warn that its pods
//                    get pinned at creation (mutate on), else
//                    as a Pod
//   unknown        policy unknownImage / unknownNode         warn*    allow
//   no-candidates  policy noCandidates                       warn*    allow
//   (* when the policy action is not allow)
//
// "warn" means allowed with warnings. dryrun never denies, warns or
// mutates: it only records, in audit annotations. Every evaluated GPU
// workload gets audit annotations (verdict, mode, decision, findings, one
// key per failing rule), so the API server's audit log tells what happened.
//
// The denial message is the one a person reads in kubectl: which container,
// which value and where it came from, how many candidate nodes and a few of
// their names, and the fix.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "admission/endpoint.h"
#include "policy/config/policy.h"
#include "policy/rules/decision.h"
#include "types/expected.h"

namespace cudagate {

enum class EnforcementAction : unsigned char { allow, deny, warn, patch };
[[nodiscard]] std::string_view to_string(EnforcementAction action);

struct EnforcementRequest {
  Mode mode = Mode::enforce;
  Endpoint endpoint = Endpoint::validate;
  bool controller = false;  // a pod template (Deployment, Job, ...), not a Pod
};

struct Enforcement {
  EnforcementAction action = EnforcementAction::allow;
  // deny with reason InternalError (policy onError: deny) instead of Forbidden.
  bool internal_error = false;
  std::string message;  // deny: the reason, starting "cudagate: "
  std::vector<std::string> warnings;
  std::vector<std::pair<std::string, std::string>> audit_annotations;
  std::string pin_reason;  // patch: the value of the annotation cudagate.io/pinned
};

// Audit annotation keys (the API server prefixes them with the webhook name).
inline constexpr std::string_view kAuditVerdict = "verdict";
inline constexpr std::string_view kAuditMode = "mode";
inline constexpr std::string_view kAuditDecision = "decision";
inline constexpr std::string_view kAuditEnforceDecision = "enforce-decision";
inline constexpr std::string_view kAuditCandidates = "candidates";
inline constexpr std::string_view kAuditCompatible = "compatible";
inline constexpr std::string_view kAuditFindings = "findings";
inline constexpr std::string_view kAuditPinned = "pinned";
inline constexpr std::string_view kAuditError = "error";

[[nodiscard]] Enforcement enforce(const Decision& decision, const Policy& policy,
                                  const EnforcementRequest& request);

// /mutate in enforce mode wanted to pin a partial workload (enforce()
// returned patch) but cannot express the compatible nodes; `why` says why.
// The partial policy decides: deny, or allow with warnings.
[[nodiscard]] Enforcement enforce_unpinnable(const Decision& decision, const Policy& policy,
                                             const EnforcementRequest& request,
                                             std::string_view why);

// A value the user wrote cannot be read (an annotation "12.x", a field of
// the wrong type): denied in enforce mode with the error, allowed with a
// warning in warn mode, recorded in dryrun. `subject` names the object:
// "Pod \"trainer\"".
[[nodiscard]] Enforcement enforce_input_error(const Error& error, std::string_view subject,
                                              const EnforcementRequest& request);

// Evaluation failed inside cudagate: policy onError (allow | deny) in
// enforce mode; always allowed in warn and dryrun.
[[nodiscard]] Enforcement enforce_internal_error(std::string_view what, const Policy& policy,
                                                 const EnforcementRequest& request);

}  // namespace cudagate

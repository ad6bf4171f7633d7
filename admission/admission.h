#pragma once
// The admission layer: an AdmissionReview body in, the HTTP answer out.
//
// It decodes the review (admission.k8s.io/v1 or v1beta1), extracts the
// workload, calls the one pure evaluate(), applies the enforcement mode, and
// builds the response (validation verdict, warnings, audit annotations, or
// the JSON Patch that pins a partial pod). It performs no I/O and keeps no
// state, so the HTTP layer may call it from any thread.

#include <optional>
#include <string>
#include <string_view>

#include "admission/padded_text.h"
#include "compat-db/compat_db.h"
#include "policy/decision.h"
#include "policy/inventory.h"
#include "policy/policy.h"

namespace cudagate {

enum class Endpoint : unsigned char { validate, mutate };

// The facts one admission is judged against: one consistent snapshot of the
// matrix, the policy and the inventory, owned by the caller for the call.
struct AdmissionContext {
  const CompatDb& db;
  const Policy& policy;
  const Inventory& inventory;
};

struct AdmissionOutcome {
  int http_status = 200;  // 200 with a review; 400 for a body that is not one
  std::string body;       // the JSON response body
  std::string content_type = "application/json";

  // For the decision log line and the metrics.
  std::string uid;
  std::string namespace_;
  std::string kind;
  std::string name;
  std::string verdict;             // "pass" ... "skip"; "" when nothing was evaluated
  std::string decision;            // "allow", "deny", "warn", "patch", "error"
  std::string mode;                // "enforce", "warn", "dryrun"
  bool dry_run = false;            // the request's own dryRun: evaluate, record nowhere
  std::optional<Decision> record;  // the decision record, when one was made
};

// How the body is parsed: `fast` (simdjson, falling back to nlohmann::json
// for whatever it does not take) or `reference` (nlohmann::json only). Both
// give the same outcome; `reference` exists to test that they do.
enum class ReviewParser : unsigned char { fast, reference };

// `mode_param` is the URL's `mode` query parameter ("" when absent); it
// overrides the policy's mode. Never throws: an internal error is answered
// according to policy onError.
[[nodiscard]] AdmissionOutcome handle_admission(Endpoint endpoint, std::string_view mode_param,
                                                std::string_view body,
                                                const AdmissionContext& context,
                                                ReviewParser parser = ReviewParser::fast);
// The same for a body followed by its padding (server/padded_text.h), which
// the fast parser reads where it lies.
[[nodiscard]] AdmissionOutcome handle_admission(Endpoint endpoint, std::string_view mode_param,
                                                PaddedText body, const AdmissionContext& context,
                                                ReviewParser parser = ReviewParser::fast);

}  // namespace cudagate

#pragma once
// The admission layer: an AdmissionReview body in, the HTTP answer out.
//
// It decodes the review (admission.k8s.io/v1 or v1beta1), extracts the
// workload, calls the one pure evaluate(), applies the enforcement mode, and
// builds the response (validation verdict, warnings, audit annotations, or
// the JSON Patch that pins a partial pod). It performs no I/O and keeps no
// state, so the HTTP layer may call it from any thread.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "admission/padded_text.h"
#include "compat-db/compat_db.h"
#include "policy/decision.h"
#include "policy/dra.h"
#include "policy/inventory.h"
#include "policy/metadata.h"
#include "policy/pod.h"
#include "policy/policy.h"

namespace cudagate {

enum class Endpoint : unsigned char { validate, mutate };

// Image configs read from registries, as far as they are known when an
// admission is judged (a cache the caller keeps). Called from the thread
// that calls handle_admission.
class ImageFacts {
 public:
  virtual ~ImageFacts() = default;
  struct Known {
    std::shared_ptr<const ImageConfig> config;  // null when none is known
    bool pending = false;                       // none is known, and a lookup could give one
  };
  [[nodiscard]] virtual Known find(std::string_view image, std::string_view platform) = 0;
};

// The facts one admission is judged against: one consistent snapshot of the
// matrix, the policy and the inventory, owned by the caller for the call.
// An aggregate, so that temporaries bound to its references
// (AdmissionContext{db, Policy{}, inventory}) live as long as it does.
struct AdmissionContext {
  const CompatDb& db;
  const Policy& policy;
  const Inventory& inventory;
  // May be null: no registry facts. Asked only for GPU containers whose
  // image the catalog does not describe, and only while registry.enabled.
  ImageFacts* images = nullptr;
  // When some image is pending: answer nothing yet, and list what is
  // wanted (AdmissionOutcome::deferred), so that the caller looks it up and
  // asks again. When false, pending images are judged without registry facts.
  bool defer_for_images = false;
  // The platform ("linux/arm64") of every GPU node of the inventory when
  // they share one; "" otherwise. See registry_platform().
  std::string_view fleet_platform{};
  // May be null (none known): the ResourceClaims and ResourceClaimTemplates
  // that pods name in spec.resourceClaims (Dynamic Resource Allocation).
  const ClaimCatalog* claims = nullptr;
};

// The platform whose config a pod's images are read for: the one its
// nodeSelector or required node affinity names (kubernetes.io/arch, and
// kubernetes.io/os), else the fleet's single platform, else the policy's
// registry.platform. Its candidates then run that platform's image.
// The platform ("linux/amd64") that every GPU node of `inventory` has
// (labels kubernetes.io/os, kubernetes.io/arch), or "" when they differ or
// some does not say. Walks the inventory: computed once per inventory.
[[nodiscard]] std::string fleet_platform(const Inventory& inventory);

[[nodiscard]] std::string registry_platform(const PodSpec& spec, std::string_view fleet_platform,
                                            const Policy& policy);

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

  // With AdmissionContext::defer_for_images: nothing was answered (body
  // empty) because these images' configs may still come; judge again once
  // they are looked up.
  bool deferred = false;
  std::vector<ImageWanted> wanted_images;
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

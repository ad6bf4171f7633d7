#pragma once
// Pinning a partial workload to the nodes that can run it (/mutate).
//
// The pin is a JSON Patch that makes the pod's required node affinity its
// existing terms ANDed with pin terms that select exactly the compatible
// candidates: for each existing term T and each pin term P a term T+P
// (matchExpressions concatenated, matchFields kept); with no existing terms
// the pin terms alone. It also sets the annotation cudagate.io/pinned.
//
// Given the policy the decision was made under, pin terms are first written
// on the rules' facts as label ranges (admission/rule_pin.h), so that they
// keep selecting exactly the nodes that can run the workload after a driver
// rollout. Where that cannot be done, or the ranges would not select
// exactly today's compatible candidates, the pin is written on today's
// exact values, and the annotation says why.
//
// Exact pin terms are written on node labels, so nodes added later with the same
// facts are judged by the same rule: the labels the compatible nodes' GPU
// facts were read from (GPU Feature Discovery driver and compute capability
// labels, cudagate.io/* labels, the product or cloud accelerator label),
// with In lists of the exact values of the compatible nodes. The keys are
// chosen by the rules that failed (compute capability for gpu-arch and
// gpu-feature, driver for cuda-driver), widening to driver + compute
// capability, then + product. Every candidate set is verified against the
// inventory: the patched pod's candidates must equal the compatible
// candidates of the original. When no label scheme is exact, up to
// kMaxPinnedNodeNames nodes are named (matchFields metadata.name, one value
// per term, as the API server requires); beyond that there is no pin.
//
// Pure: the result depends only on its arguments.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "compat-db/compat_db.h"
#include "policy/config/policy.h"
#include "policy/inventory/inventory.h"
#include "policy/inventory/node_set.h"
#include "policy/objects/pod.h"
#include "policy/rules/decision.h"
#include "types/expected.h"

namespace cudagate {

inline constexpr std::string_view kPinnedAnnotation = "cudagate.io/pinned";
inline constexpr std::size_t kMaxPinnedNodeNames = 50;
// A bound on the patched term list (existing terms x pin terms).
inline constexpr std::size_t kMaxPinnedTerms = 256;

struct Pin {
  nlohmann::json patch;                 // RFC 6902 operations (a JSON array)
  std::vector<NodeSelectorTerm> terms;  // the pin terms P, ORed
  std::size_t nodes = 0;                // compatible candidate nodes selected
  std::string scheme;  // "labels nvidia.com/gpu.compute.major, ..." or "node names"
};

// `object` is the workload's object as received (a Pod or a controller);
// `workload` was read from it; `decision` is its partial decision against
// `inventory`. `reason` is the value of the annotation cudagate.io/pinned
// (with the reason for exact values appended to it when rule ranges were
// tried and could not be used). `policy`: the decision's policy, or null to
// pin on exact values only. An Error says why the compatible nodes cannot be
// selected exactly.
Expected<Pin> pin_affinity(const nlohmann::json& object, const Workload& workload,
                           const Decision& decision, const Inventory& inventory, const CompatDb& db,
                           std::string_view reason, const Policy* policy = nullptr);

// The compatible candidate nodes of `decision`: the workload's candidates
// that belong to a group the decision found compatible.
[[nodiscard]] NodeSet compatible_candidates(const Workload& workload, const Decision& decision,
                                            const Inventory& inventory);

// One JSON Pointer reference token: '~' as "~0", '/' as "~1".
[[nodiscard]] std::string json_pointer_token(std::string_view key);

}  // namespace cudagate

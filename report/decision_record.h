#pragma once
// Decisions rendered as records (docs/contract.md §7.1): the stable,
// versioned shape that tools and people read, built from a policy::Decision
// and nothing else.

#include <nlohmann/json.hpp>

#include "policy/rules/decision.h"

namespace cudagate {

// The JSON decision record: {"apiVersion": "cudagate.io/v1alpha1", "kind": "Decision", ...}.
// Unknown values are null with source "unknown", never "".
[[nodiscard]] nlohmann::json to_json(const Decision& decision);

// A node group's facts as the records carry them: driver, maxCuda,
// computeCapability, product, family (null when unknown).
[[nodiscard]] nlohmann::json facts_json(const GpuFacts& facts);

}  // namespace cudagate

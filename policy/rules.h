#pragma once
// Compatibility of one container with one group of nodes
// (docs/contract.md §2.5): cuda-driver, gpu-arch and gpu-feature, each
// failing with a finding that says what is needed, what the node has, and
// the fix.

#include <string_view>
#include <vector>

#include "compat-db/compat_db.h"
#include "policy/decision.h"
#include "policy/metadata.h"
#include "policy/node.h"
#include "policy/policy.h"

namespace cudagate {

struct RuleResult {
  Outcome outcome = Outcome::compatible;
  std::vector<Finding> findings;  // failures, and unknowns (Finding::unknown)
};

[[nodiscard]] RuleResult check_container(std::string_view container,
                                         const ContainerMetadata& metadata, const GpuFacts& node,
                                         const Policy& policy, const CompatDb& db);

}  // namespace cudagate

#pragma once
// Compatibility of one container with one group of nodes
// (docs/contract.md §2.5): every rule of kRuleTable (policy/rules/rule.h),
// in the table's order, each failing with a finding that says what is
// needed, what the node has, and the fix. A group whose GPU facts cannot
// all be true (GpuFacts::inconsistency) is judged by no rule: it gets one
// unknown cuda-driver finding that says so.

#include <string_view>

#include "compat-db/compat_db.h"
#include "policy/config/policy.h"
#include "policy/objects/node.h"
#include "policy/rules/metadata.h"
#include "policy/rules/rule_check.h"

namespace cudagate {

[[nodiscard]] RuleResult check_container(std::string_view container,
                                         const ContainerMetadata& metadata, const GpuFacts& node,
                                         const Policy& policy, const CompatDb& db);

}  // namespace cudagate

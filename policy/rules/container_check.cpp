// One container on one group of nodes: the table's rules in order.
#include "policy/rules/container_check.h"

namespace cudagate {
namespace {

constexpr std::string_view kFixInconsistent =
    "correct the node's labels (GPU Feature Discovery, cudagate.io/*): a driver newer than its "
    "GPU's last branch does not run on it";

}  // namespace

RuleResult check_container(std::string_view container, const ContainerMetadata& metadata,
                           const GpuFacts& node, const Policy& policy, const CompatDb& db) {
  RuleCheck check(container, metadata, node, policy, db);
  if (!node.inconsistency.empty()) {
    // Facts that cannot all be true judge nothing.
    check.unknown(Rule::cuda_driver, node.inconsistency, kFixInconsistent);
    return check.take();
  }
  for (const RuleInfo& rule : kRuleTable) rule.check(check);
  return check.take();
}

}  // namespace cudagate

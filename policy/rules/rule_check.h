#pragma once
// One container judged on one group of nodes: what a rule's check reads
// (the container's metadata, the group's GPU facts, the policy and the
// matrix) and where it puts its findings. A check adds a failure (the node
// cannot run the container, with what is needed, what the node has and the
// fix) or an unknown (a value it needs is missing, with how to give it);
// the outcome is the worst of them. Pure; one RuleCheck a container and
// group, used by one thread.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compat-db/compat_db.h"
#include "policy/config/policy.h"
#include "policy/objects/node.h"
#include "policy/rules/decision.h"
#include "policy/rules/metadata.h"
#include "policy/rules/rule.h"

namespace cudagate {

struct RuleResult {
  Outcome outcome = Outcome::compatible;
  std::vector<Finding> findings;  // failures, and unknowns (Finding::unknown)
  // What a person should know that changes no outcome ("... is not
  // counted: calls into it would fail there"), said once each.
  std::vector<std::string> notes;
};

class RuleCheck {
 public:
  // The references must outlive the check.
  RuleCheck(std::string_view container, const ContainerMetadata& metadata, const GpuFacts& node,
            const Policy& policy, const CompatDb& db)
      : container_(container), md_(metadata), node_(node), policy_(policy), db_(db) {}

  [[nodiscard]] const ContainerMetadata& metadata() const { return md_; }
  [[nodiscard]] const GpuFacts& node() const { return node_; }
  [[nodiscard]] const Policy& policy() const { return policy_; }
  [[nodiscard]] const CompatDb& db() const { return db_; }

  // The node cannot run the container.
  void fail(Rule rule, std::string message, std::string fix);
  // A value the rule needs is missing.
  void unknown(Rule rule, std::string message, std::string_view fix);
  // A warning that changes no outcome (RuleResult::notes).
  void note(std::string message);
  // The node's compute capability is unknown: when its product label names
  // a GPU the matrix has no entry for, that is a gap in the matrix.
  void cc_unknown(Rule rule, const std::string& prefix);

  // " (Tesla-T4)", or "" when the node's product is unknown.
  [[nodiscard]] std::string product_suffix() const;
  // Whether `cuda` is newer than every release the matrix knows.
  [[nodiscard]] bool beyond_known_cuda(CudaVersion cuda) const;

  // The findings and outcome; the check is spent.
  [[nodiscard]] RuleResult take() { return std::move(result_); }

 private:
  std::string_view container_;
  const ContainerMetadata& md_;
  const GpuFacts& node_;
  const Policy& policy_;
  const CompatDb& db_;
  RuleResult result_;
};

// Where a value came from: "CUDA_VERSION, env", or "env" when it has no name.
template <class T>
[[nodiscard]] std::string origin(const Sourced<T>& value) {
  std::string out = value.name;
  if (!out.empty()) out += ", ";
  out += to_string(value.source);
  return out;
}

}  // namespace cudagate

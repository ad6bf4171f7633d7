#pragma once
// The rules (docs/contract.md §2.5) and their one table. A rule is a value
// of `Rule`; everything else that names a rule (findings, the decision
// record, admission warnings and audit annotations, metrics labels,
// PolicyReport results) reads its row of kRuleTable, in the table's order.
//
// Adding a rule: a value here, a row in kRuleTable, its check in a source
// of its own (policy/rules/<name>.cpp, declared below) and its test.

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace cudagate {

enum class Rule : unsigned char { cuda_driver, gpu_arch, gpu_feature };

// What a rule checks of one container on one group of nodes; findings go
// into the RuleCheck (policy/rules/rule_check.h).
class RuleCheck;
using RuleCheckFunction = void (*)(RuleCheck& check);

// The value of a judged container (policy/rules/decision.h) that a rule's
// findings are about, whose source a denial names; null when it has none.
struct ContainerDecision;
struct SourcedValue;
using JudgedValueFunction = const SourcedValue* (*)(const ContainerDecision& container);

// Each rule's check and judged value, in its own source.
void check_cuda_driver(RuleCheck& check);  // policy/rules/cuda_driver.cpp
[[nodiscard]] const SourcedValue* cuda_driver_value(const ContainerDecision& container);
void check_gpu_arch(RuleCheck& check);  // policy/rules/gpu_arch.cpp
[[nodiscard]] const SourcedValue* gpu_arch_value(const ContainerDecision& container);
void check_gpu_feature(RuleCheck& check);  // policy/rules/gpu_feature.cpp
[[nodiscard]] const SourcedValue* gpu_feature_value(const ContainerDecision& container);

// The node facts a rule's findings turn on, and so what a pin selects
// nodes by (admission/pin_affinity.h): the driver's, or the GPU's.
enum class RuleFacts : unsigned char { driver, device };

struct RuleInfo {
  Rule rule;
  // Its name wherever it is written: findings, the decision record, the
  // audit annotation key, the metrics' `rule` label, a PolicyReport's rule.
  std::string_view name;
  std::string_view checks;    // one line: what it holds a container to
  std::string_view severity;  // a PolicyReport result's severity
  std::string_view category;  // a PolicyReport result's category
  // The `rule` label under which an admission that met a gap of the matrix
  // in this rule's findings is counted (cudagate_compat_db_gap_admissions_total).
  Rule gap_label;
  RuleFacts facts;
  RuleCheckFunction check;
  JudgedValueFunction judged;
};

inline constexpr std::string_view kRuleCategory = "GPU Compatibility";

// Every rule, in the order checks run and reports list them.
inline constexpr std::array<RuleInfo, 3> kRuleTable{{
    {Rule::cuda_driver, "cuda-driver",
     "the node's driver supports the image's CUDA release (or its NVIDIA_REQUIRE_CUDA)", "high",
     kRuleCategory, Rule::cuda_driver, RuleFacts::driver, &check_cuda_driver, &cuda_driver_value},
    {Rule::gpu_arch, "gpu-arch",
     "the image carries SASS or PTX that runs on the node's compute capability", "high",
     kRuleCategory, Rule::gpu_arch, RuleFacts::device, &check_gpu_arch, &gpu_arch_value},
    {Rule::gpu_feature, "gpu-feature",
     "the node's compute capability is at least the one the image's features need", "medium",
     kRuleCategory, Rule::gpu_arch, RuleFacts::device, &check_gpu_feature, &gpu_feature_value},
}};

// The table's row of `rule`.
[[nodiscard]] constexpr const RuleInfo& rule_info(Rule rule) {
  return kRuleTable.at(static_cast<std::size_t>(rule));
}

// "cuda-driver".
[[nodiscard]] constexpr std::string_view to_string(Rule rule) {
  return rule_info(rule).name;
}

// The rule named `name` ("gpu-arch"), or nullopt.
[[nodiscard]] constexpr std::optional<Rule> rule_named(std::string_view name) {
  for (const RuleInfo& info : kRuleTable) {
    if (info.name == name) return info.rule;
  }
  return std::nullopt;
}

// The table is indexed by the enum: each row stands at its value.
static_assert([] {
  for (std::size_t i = 0; i < kRuleTable.size(); ++i) {
    if (static_cast<std::size_t>(kRuleTable.at(i).rule) != i) return false;
  }
  return true;
}());

}  // namespace cudagate

// The table of rules: one row a rule at its enum value, names as the contract
// writes them (docs/contract.md §2.5), severities a PolicyReport accepts, and
// each row's judged value.
#include "policy/rules/rule.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "policy/rules/decision.h"

namespace cudagate {
namespace {

TEST(RuleTable, NamesAreTheContracts) {
  std::vector<std::string_view> names;
  for (const RuleInfo& info : kRuleTable) names.push_back(info.name);
  EXPECT_EQ(names, (std::vector<std::string_view>{"cuda-driver", "gpu-arch", "gpu-feature"}));
  EXPECT_EQ(to_string(Rule::cuda_driver), "cuda-driver");
  EXPECT_EQ(to_string(Rule::gpu_arch), "gpu-arch");
  EXPECT_EQ(to_string(Rule::gpu_feature), "gpu-feature");
}

TEST(RuleTable, EachRowIsWhole) {
  // The severities of the PolicyReport API (wgpolicyk8s.io/v1alpha2, and
  // openreports.io's).
  const std::set<std::string_view> severities = {"critical", "high", "medium", "low", "info"};
  std::set<std::string_view> seen;
  for (const RuleInfo& info : kRuleTable) {
    SCOPED_TRACE(std::string(info.name));
    EXPECT_TRUE(seen.insert(info.name).second) << "named twice";
    EXPECT_EQ(&rule_info(info.rule), &info);
    EXPECT_EQ(rule_named(info.name), info.rule);
    EXPECT_FALSE(info.checks.empty());
    EXPECT_TRUE(severities.contains(info.severity)) << info.severity;
    EXPECT_EQ(info.category, "GPU Compatibility");
    EXPECT_NE(info.check, nullptr);
    EXPECT_NE(info.judged, nullptr);
    // A gap label is a rule that counts its own gaps.
    EXPECT_EQ(rule_info(info.gap_label).gap_label, info.gap_label);
  }
}

TEST(RuleTable, UnknownNamesAreNoRule) {
  EXPECT_EQ(rule_named("cuda_driver"), std::nullopt);
  EXPECT_EQ(rule_named("Gpu-Arch"), std::nullopt);
  EXPECT_EQ(rule_named(""), std::nullopt);
}

TEST(RuleTable, WhatEachRuleJudgesAndPinsBy) {
  ContainerDecision c;
  c.cuda = SourcedValue{"12.4", "env"};
  c.archs = SourcedValue{"8.0", "label"};
  c.min_cc = SourcedValue{"8.0", "annotation"};
  EXPECT_EQ(rule_info(Rule::cuda_driver).judged(c), &c.cuda);
  EXPECT_EQ(rule_info(Rule::gpu_arch).judged(c), &c.archs);
  EXPECT_EQ(rule_info(Rule::gpu_feature).judged(c), &c.min_cc);
  // An NVIDIA_REQUIRE_CUDA is what the toolkit checks in place of the CUDA version.
  c.require = SourcedValue{"cuda>=12.4", "env"};
  EXPECT_EQ(rule_info(Rule::cuda_driver).judged(c), &c.require);
  // Without an arch list, the CUDA release says what the image can target.
  c.archs = SourcedValue{};
  EXPECT_EQ(rule_info(Rule::gpu_arch).judged(c), &c.cuda);

  EXPECT_EQ(rule_info(Rule::cuda_driver).facts, RuleFacts::driver);
  EXPECT_EQ(rule_info(Rule::gpu_arch).facts, RuleFacts::device);
  EXPECT_EQ(rule_info(Rule::gpu_feature).facts, RuleFacts::device);
}

}  // namespace
}  // namespace cudagate

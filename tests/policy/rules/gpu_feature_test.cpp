// The gpu-feature rule: a minimum compute capability.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "policy/rules/rule.h"
#include "tests/support/rule_cases.h"

namespace cudagate {
namespace {

using test_support::check_train;
using test_support::gpu_facts;
using test_support::Md;
using test_support::run_cases;
using test_support::t4_facts;

TEST(GpuFeatureRule, MinimumComputeCapability) {
  const RuleResult t4_result =
      check_train(Md().cuda("12.1").min_cc("8.0"), t4_facts("535.129.03", "12.2"));
  EXPECT_EQ(t4_result.outcome, Outcome::incompatible);
  ASSERT_EQ(t4_result.findings.size(), 1U);
  EXPECT_EQ(t4_result.findings[0].rule, Rule::gpu_feature);
  EXPECT_EQ(t4_result.findings[0].message,
            "needs compute capability 8.0 (cudagate.io/min-compute-capability); node has 7.5");
  EXPECT_EQ(t4_result.findings[0].fix, "run on a GPU of compute capability 8.0 or newer");
  run_cases({
      {"A100 has 8.0",
       Md().cuda("12.1").min_cc("8.0"),
       gpu_facts("535.129.03", "12.2", "8.0", "NVIDIA-A100-SXM4-80GB", std::nullopt),
       {},
       Outcome::compatible,
       ""},
      {"unknown capability",
       Md().require("driver>=500").min_cc("8.0"),
       gpu_facts("535.129.03", "12.2", "", "", std::nullopt),
       {},
       Outcome::unknown,
       "the node's compute capability is unknown"},
  });
}
}  // namespace
}  // namespace cudagate

// One container on one group: every rule in the table's order, a failure
// outweighing an unknown, and node facts that cannot all be true.
#include "policy/rules/container_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "tests/support/rule_cases.h"

namespace cudagate {
namespace {

using ::testing::HasSubstr;

using test_support::check_train;
using test_support::gpu_facts;
using test_support::Md;

TEST(ContainerCheck, InconsistentNodeFactsJudgeNothing) {
  GpuFacts v100 = gpu_facts("590.48.01", "13.1", "7.0", "Tesla-V100-SXM2-16GB", "tesla");
  v100.inconsistency =
      "driver 590.48.01 is newer than R580, the last driver branch for volta GPUs (compute "
      "capability 7.0): the node's labels cannot all be true";
  const RuleResult r = check_train(Md().cuda("12.4").archs("7.0"), v100);
  EXPECT_EQ(r.outcome, Outcome::unknown);
  ASSERT_EQ(r.findings.size(), 1U);
  EXPECT_EQ(r.findings[0].message, v100.inconsistency);
  EXPECT_THAT(r.findings[0].fix, HasSubstr("correct the node's labels"));
}

// An upgrade to a CUDA the release notes give only a branch for names the
// branch; one the matrix does not know says so.

TEST(ContainerCheck, AFailureOutweighsAnUnknownAndBothAreReported) {
  // CUDA fails on the driver; the capability is unknown for the minimum.
  const RuleResult r = check_train(Md().cuda("12.4").min_cc("8.0"),
                                   gpu_facts("535.129.03", "12.2", "", "", std::nullopt));
  EXPECT_EQ(r.outcome, Outcome::incompatible);
  ASSERT_EQ(r.findings.size(), 3U);
  EXPECT_FALSE(r.findings[0].unknown);
  EXPECT_TRUE(r.findings[1].unknown);
  EXPECT_EQ(r.findings[2].rule, Rule::gpu_feature);
}
}  // namespace
}  // namespace cudagate

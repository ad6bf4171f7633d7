// What every rule's check shares: findings of one container on one group, the outcome as the
// worst of them, an unknown compute capability told apart from a product the matrix lacks,
// the product suffix of messages, CUDA newer than the matrix, and where a value came from.
#include "policy/rules/rule_check.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "policy/rules/rule.h"
#include "tests/support/rule_cases.h"

namespace cudagate {
namespace {

using test_support::db;
using test_support::gpu_facts;
using test_support::Md;
using test_support::t4_facts;

constexpr std::string_view kRuleCheckFixCc =
    "label the nodes with cudagate.io/compute-capability or cudagate.io/gpu-product, or run GPU "
    "Feature Discovery";

TEST(RuleCheck, GivesBackWhatItWasGiven) {
  const ContainerMetadata md = Md().cuda("12.4");
  const GpuFacts node = t4_facts("535.129.03", "12.2");
  const Policy policy;
  RuleCheck check("train", md, node, policy, db());
  EXPECT_EQ(&check.metadata(), &md);
  EXPECT_EQ(&check.node(), &node);
  EXPECT_EQ(&check.policy(), &policy);
  EXPECT_EQ(&check.db(), &db());
  const RuleResult none = check.take();
  EXPECT_EQ(none.outcome, Outcome::compatible);
  EXPECT_TRUE(none.findings.empty());
}

TEST(RuleCheck, FindingsNameTheRuleAndTheContainer) {
  const ContainerMetadata md;
  const GpuFacts node = t4_facts("535.129.03", "12.2");
  const Policy policy;
  RuleCheck check("train", md, node, policy, db());
  check.fail(Rule::cuda_driver, "needs CUDA 12.4", "upgrade the driver");
  check.unknown(Rule::gpu_arch, "the arch list is unknown", "set TORCH_CUDA_ARCH_LIST");
  const RuleResult r = check.take();
  EXPECT_EQ(r.outcome, Outcome::incompatible);
  EXPECT_EQ(r.findings,
            (std::vector<Finding>{
                Finding{Rule::cuda_driver, "train", "needs CUDA 12.4", "upgrade the driver", false},
                Finding{Rule::gpu_arch, "train", "the arch list is unknown",
                        "set TORCH_CUDA_ARCH_LIST", true}}));
}

// The outcome is the worst finding's, whatever the order they come in.
TEST(RuleCheck, OutcomeIsTheWorstFinding) {
  struct Row {
    const char* what;
    std::vector<bool> failures;  // in order: true a failure, false an unknown
    Outcome outcome;
  };
  const std::vector<Row> rows = {
      {"nothing", {}, Outcome::compatible},
      {"an unknown", {false}, Outcome::unknown},
      {"two unknowns", {false, false}, Outcome::unknown},
      {"a failure", {true}, Outcome::incompatible},
      {"an unknown, then a failure", {false, true}, Outcome::incompatible},
      {"a failure, then an unknown", {true, false}, Outcome::incompatible},
  };
  const ContainerMetadata md;
  const GpuFacts node = t4_facts("535.129.03", "12.2");
  const Policy policy;
  for (const Row& row : rows) {
    RuleCheck check("c", md, node, policy, db());
    for (const bool failure : row.failures) {
      if (failure) {
        check.fail(Rule::gpu_feature, "fails", "fix");
      } else {
        check.unknown(Rule::gpu_feature, "unknown", "give it");
      }
    }
    const RuleResult r = check.take();
    EXPECT_EQ(r.outcome, row.outcome) << row.what;
    ASSERT_EQ(r.findings.size(), row.failures.size()) << row.what;
    for (std::size_t i = 0; i < r.findings.size(); ++i) {
      EXPECT_EQ(r.findings[i].unknown, !row.failures[i]) << row.what << " " << i;
    }
  }
}

// An unknown capability is a missing label, unless the node's product is
// one the matrix does not know: then a newer matrix would answer it.
TEST(RuleCheck, UnknownCapabilityOrAProductTheMatrixLacks) {
  struct Row {
    const char* what;
    GpuFacts node;
    std::string message;
    std::string fix;
  };
  const std::vector<Row> rows = {
      {"no product label", gpu_facts("535.129.03", "12.2", "", "", std::nullopt),
       "for 8.0: the node's compute capability is unknown", std::string(kRuleCheckFixCc)},
      {"a product the matrix knows", gpu_facts("535.129.03", "12.2", "", "Tesla-T4", "unknown"),
       "for 8.0: the node's compute capability is unknown", std::string(kRuleCheckFixCc)},
      {"a product the matrix lacks",
       gpu_facts("620.70.06", "13.5", "", "NVIDIA-X300", std::nullopt),
       "for 8.0: the node's GPU NVIDIA-X300 is a product " + db().describe() +
           " does not know, and no label gives its compute capability",
       std::string(kFixUpdateMatrix) + ", or " + std::string(kRuleCheckFixCc)},
  };
  const ContainerMetadata md;
  const Policy policy;
  for (const Row& row : rows) {
    RuleCheck check("train", md, row.node, policy, db());
    check.cc_unknown(Rule::gpu_arch, "for 8.0: ");
    const RuleResult r = check.take();
    EXPECT_EQ(r.outcome, Outcome::unknown) << row.what;
    ASSERT_EQ(r.findings.size(), 1U) << row.what;
    EXPECT_EQ(r.findings[0].rule, Rule::gpu_arch) << row.what;
    EXPECT_EQ(r.findings[0].container, "train") << row.what;
    EXPECT_TRUE(r.findings[0].unknown) << row.what;
    EXPECT_EQ(r.findings[0].message, row.message) << row.what;
    EXPECT_EQ(r.findings[0].fix, row.fix) << row.what;
    EXPECT_EQ(r.findings[0].matrix_gap(), row.fix.starts_with(kFixUpdateMatrix)) << row.what;
  }
}

TEST(RuleCheck, ProductSuffix) {
  const ContainerMetadata md;
  const Policy policy;
  const GpuFacts t4 = t4_facts("535.129.03", "12.2");
  EXPECT_EQ(RuleCheck("c", md, t4, policy, db()).product_suffix(), " (Tesla-T4)");
  const GpuFacts unnamed = gpu_facts("535.129.03", "12.2", "7.5", "", std::nullopt);
  EXPECT_EQ(RuleCheck("c", md, unnamed, policy, db()).product_suffix(), "");
}

// Newer than every release the matrix knows; an empty matrix knows none,
// so nothing is newer than it.
TEST(RuleCheck, CudaBeyondTheMatrix) {
  const ContainerMetadata md;
  const GpuFacts node = t4_facts("535.129.03", "12.2");
  const Policy policy;
  const RuleCheck check("c", md, node, policy, db());
  ASSERT_TRUE(db().newest_cuda());
  const CudaVersion newest = *db().newest_cuda();
  EXPECT_FALSE(check.beyond_known_cuda(newest));
  EXPECT_TRUE(check.beyond_known_cuda(CudaVersion(newest.major(), newest.minor() + 1)));
  EXPECT_TRUE(check.beyond_known_cuda(CudaVersion(newest.major() + 1, 0)));
  EXPECT_FALSE(check.beyond_known_cuda(CudaVersion(12, 0)));
  const CompatDb empty;
  EXPECT_FALSE(RuleCheck("c", md, node, policy, empty).beyond_known_cuda(CudaVersion(99, 0)));
}

TEST(RuleCheck, OriginNamesTheVariableAndTheSource) {
  EXPECT_EQ(origin(Sourced<CudaVersion>{CudaVersion(12, 4), Source::env, "12.4", "CUDA_VERSION"}),
            "CUDA_VERSION, env");
  EXPECT_EQ(origin(Sourced<CudaVersion>{CudaVersion(12, 4), Source::annotation, "12.4",
                                        "cudagate.io/cuda-version.train"}),
            "cudagate.io/cuda-version.train, annotation");
  EXPECT_EQ(origin(Sourced<CudaVersion>{CudaVersion(12, 4), Source::inference, "12.4", ""}),
            "inference");
}

}  // namespace
}  // namespace cudagate

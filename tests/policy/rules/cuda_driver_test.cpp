// The cuda-driver rule: outcomes, the example message and fix of
// docs/contract.md §7.1, NVIDIA_REQUIRE_* as the toolkit evaluates it, CDI
// mode, and how unknown facts are reported.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "policy/rules/rule.h"
#include "tests/support/rule_cases.h"

namespace cudagate {
namespace {

using ::testing::HasSubstr;

using test_support::check_train;
using test_support::db;
using test_support::gpu_facts;
using test_support::Md;
using test_support::mvc;
using test_support::run_cases;
using test_support::t4_facts;

TEST(CudaDriverRule, SpecExampleMessageAndFix) {
  for (const RuleResult& r : {check_train(Md().cuda("12.4"), t4_facts("535.129.03", "12.2")),
                              check_train(Md().cuda("12.4").require("cuda>=12.4", Source::registry),
                                          t4_facts("535.129.03", "12.2"))}) {
    EXPECT_EQ(r.outcome, Outcome::incompatible);
    ASSERT_EQ(r.findings.size(), 1U);
    const Finding& f = r.findings[0];
    EXPECT_EQ(f.rule, Rule::cuda_driver);
    EXPECT_EQ(f.container, "train");
    EXPECT_EQ(f.message, "needs CUDA 12.4; driver 535.129.03 supports up to CUDA 12.2");
    EXPECT_EQ(f.fix,
              "upgrade the driver to 550.54.14 or newer, or use an image built for CUDA 12.2 or "
              "older");
    EXPECT_FALSE(f.unknown);
  }
}

const std::string kCuda1281Requirement = [] {
  std::string out = "cuda>=12.8";
  for (int branch : {470, 535, 550, 560, 565}) {
    for (const char* brand : {"unknown", "grid", "tesla", "nvidia", "quadro"}) {
      out += std::string(" brand=") + brand + ",driver>=" + std::to_string(branch) + ",driver<" +
             std::to_string(branch + 1);
    }
  }
  return out;
}();

TEST(CudaDriverRule, Outcomes) {
  run_cases({
      {"older CUDA runs",
       Md().cuda("12.1"),
       t4_facts("535.129.03", "12.2"),
       {},
       Outcome::compatible,
       ""},
      {"equal CUDA runs",
       Md().cuda("12.2"),
       t4_facts("535.129.03", "12.2"),
       {},
       Outcome::compatible,
       ""},
      {"minor version compatibility accepts a newer minor", Md().cuda("12.4"),
       t4_facts("535.129.03", "12.2"), mvc(), Outcome::compatible, ""},
      {"but not a newer major", Md().cuda("13.0"), t4_facts("535.129.03", "12.2"), mvc(),
       Outcome::incompatible, "needs CUDA 13.0; driver 535.129.03 supports up to CUDA 12.2"},
      {"the runtime's requirement still applies", Md().cuda("12.4").require("cuda>=12.4"),
       t4_facts("535.129.03", "12.2"), mvc(), Outcome::incompatible, "needs CUDA 12.4"},
      {"unless disabled", Md().cuda("12.4").require("cuda>=12.4").disabled(),
       t4_facts("535.129.03", "12.2"), mvc(), Outcome::compatible, ""},
      // Disabled, what remains is the CUDA runtime's own check, which has
      // minor version compatibility whatever the policy says.
      {"disabled: the runtime's minor version compatibility",
       Md().cuda("12.4").disabled(),
       t4_facts("535.129.03", "12.2"),
       {},
       Outcome::compatible,
       ""},
      {"disabled: not across majors",
       Md().cuda("13.0").disabled(),
       t4_facts("535.129.03", "12.2"),
       {},
       Outcome::incompatible,
       "needs CUDA 13.0; driver 535.129.03 supports up to CUDA 12.2 (NVIDIA_DISABLE_REQUIRE=true: "
       "the toolkit checks no requirement, and the CUDA runtime refuses a driver older than its "
       "release outside minor version compatibility)"},
      {"disabled: not below the major's minimum driver",
       Md().cuda("11.8").disabled(),
       t4_facts("450.51.05", "11.0"),
       {},
       Outcome::incompatible,
       "needs CUDA 11.8"},
      {"minor version compatibility from the runtime label alone", Md().cuda("12.4"),
       gpu_facts("", "12.2", "7.5", "Tesla-T4", "unknown"), mvc(), Outcome::compatible, ""},
      {"runtime label alone",
       Md().cuda("12.4"),
       gpu_facts("", "12.2", "7.5", "Tesla-T4", "unknown"),
       {},
       Outcome::incompatible,
       "needs CUDA 12.4; the node's driver supports up to CUDA 12.2"},
      {"forward compatibility on a datacenter GPU",
       Md().cuda("12.8").require(kCuda1281Requirement),
       t4_facts("535.129.03", "12.2"),
       {},
       Outcome::compatible,
       ""},
      {"no forward-compatible branch",
       Md().cuda("12.8").require(kCuda1281Requirement),
       t4_facts("525.85.12", "12.0"),
       {},
       Outcome::incompatible,
       "needs CUDA 12.8; driver 525.85.12 supports up to CUDA 12.0 (NVIDIA_REQUIRE_CUDA: "
       "unsatisfied condition: cuda>=12.8)"},
      {"brand not offered",
       Md().cuda("12.8").require(kCuda1281Requirement),
       gpu_facts("535.129.03", "12.2", "8.9", "NVIDIA-GeForce-RTX-4090", "geforce"),
       {},
       Outcome::incompatible,
       "needs CUDA 12.8"},
      {"forward compatibility the toolkit allows but the GPU cannot run",
       Md().cuda("12.4").require("cuda>=12.4 brand=geforce,driver>=535,driver<536"),
       gpu_facts("535.129.03", "12.2", "8.9", "NVIDIA-GeForce-RTX-4090", "geforce"),
       {},
       Outcome::incompatible,
       "needs CUDA 12.4; driver 535.129.03 supports up to CUDA 12.2, and forward compatibility "
       "(cuda-compat) does not run on NVIDIA-GeForce-RTX-4090, which is not a datacenter GPU"},
      {"a driver term",
       Md().require("cuda>=13.0 driver>=580.95.05"),
       gpu_facts("580.65.06", "13.0", "9.0", "NVIDIA-H100-80GB-HBM3", "unknown"),
       {},
       Outcome::compatible,
       ""},
      {"a failing driver term",
       Md().require("driver>=580.95.05"),
       gpu_facts("575.57.08", "12.9", "9.0", "NVIDIA-H100-80GB-HBM3", "unknown"),
       {},
       Outcome::incompatible,
       "NVIDIA_REQUIRE_CUDA: unsatisfied condition: driver>=580.95.05; the node has driver "
       "575.57.08"},
      {"an arch term",
       Md().require("arch>=8.0"),
       t4_facts("535.129.03", "12.2"),
       {},
       Outcome::incompatible,
       "NVIDIA_REQUIRE_CUDA: unsatisfied condition: arch>=8.0; the node has driver 535.129.03 "
       "(CUDA 12.2), compute capability 7.5, brand unknown"},
      {"unknown driver",
       Md().cuda("12.4"),
       gpu_facts("", "", "7.5", "Tesla-T4", "unknown"),
       {},
       Outcome::unknown,
       "the node's driver version is unknown"},
      {"unknown driver for a requirement",
       Md().require("cuda>=12.4"),
       gpu_facts("", "", "7.5", "Tesla-T4", "unknown"),
       {},
       Outcome::unknown,
       "cannot check NVIDIA_REQUIRE_CUDA: the node's driver version is unknown"},
      {"unknown brand",
       Md().cuda("12.8").require(kCuda1281Requirement),
       gpu_facts("535.129.03", "12.2", "8.0", "NVIDIA-A100-SXM4-80GB", std::nullopt),
       {},
       Outcome::unknown,
       "cannot check NVIDIA_REQUIRE_CUDA: the brand of the node's GPU is unknown"},
      {"unknown image CUDA",
       Md(),
       t4_facts("535.129.03", "12.2"),
       {},
       Outcome::unknown,
       "the image's CUDA version is unknown"},
  });
}

TEST(CudaDriverRule, RequirementsAsTheToolkitEvaluatesThem) {
  // libnvidia-container dsl.c dsl_evaluate: groups left to right, stopping
  // at the first satisfied one; an invalid term fails only where reached;
  // an empty group after a failed one ends the evaluation unsatisfied.
  const GpuFacts r535 = t4_facts("535.129.03", "12.2");
  const GpuFacts r550 = t4_facts("550.54.15", "12.4");
  run_cases({
      {"an invalid term after a satisfied group",
       Md().require("cuda>=12.4 jetpack>=5"),
       r550,
       {},
       Outcome::compatible,
       ""},
      {"an invalid term reached",
       Md().require("cuda>=12.4 jetpack>=5"),
       r535,
       {},
       Outcome::incompatible,
       "NVIDIA_REQUIRE_CUDA: invalid expression where the toolkit reaches it on this node: "
       "unknown key \"jetpack\" in term \"jetpack>=5\": expected cuda, driver, arch or brand"},
      {"an empty group after a failed one",
       Md().cuda("12.4").require("cuda>=12.4 ,"),
       r535,
       {},
       Outcome::incompatible,
       "needs CUDA 12.4; driver 535.129.03 supports up to CUDA 12.2"},
      {"an empty group after a satisfied one",
       Md().cuda("12.4").require("cuda>=12.4 ,"),
       r550,
       {},
       Outcome::compatible,
       ""},
  });
  const RuleResult r = check_train(Md().require("cuda>=12.4 jetpack>=5"), r535);
  ASSERT_EQ(r.findings.size(), 1U);
  EXPECT_EQ(r.findings[0].fix,
            "correct or remove the term \"jetpack>=5\" of NVIDIA_REQUIRE_CUDA (the toolkit "
            "refuses to start the container on these nodes)");
}

Policy cdi() {
  Policy p;
  p.toolkit_mode = ToolkitMode::cdi;
  return p;
}

// nvidia/cuda:13.0-style requirement: cuda>=13.0 or a forward-compatible
// branch 535, 550, 570 on the datacenter brands.
const std::string kCuda130 = [] {
  std::string out = "cuda>=13.0";
  for (int branch : {535, 550, 570}) {
    for (const char* brand : {"unknown", "grid", "tesla", "nvidia"}) {
      out += std::string(" brand=") + brand + ",driver>=" + std::to_string(branch) + ",driver<" +
             std::to_string(branch + 1);
    }
  }
  return out;
}();

TEST(CudaDriverRule, CdiModeMeetsTheRuntimesCheckOnly) {
  // nvidia-container-toolkit issue 1470: CDI mode checks no NVIDIA_REQUIRE_*;
  // its enable-cuda-compat hook still brings the image's cuda-compat
  // libraries, which the image's brand groups say where they serve.
  const GpuFacts r535 = t4_facts("535.129.03", "12.2");
  const GpuFacts geforce =
      gpu_facts("535.129.03", "12.2", "8.9", "NVIDIA-GeForce-RTX-4090", "geforce");
  run_cases({
      {"legacy: the toolkit refuses a newer minor",
       Md().cuda("12.4").require("cuda>=12.4"),
       r535,
       {},
       Outcome::incompatible,
       "needs CUDA 12.4"},
      {"cdi: the runtime's minor version compatibility", Md().cuda("12.4").require("cuda>=12.4"),
       r535, cdi(), Outcome::compatible, ""},
      {"cdi: not across majors", Md().cuda("13.0").require("cuda>=13.0"), r535, cdi(),
       Outcome::incompatible,
       "needs CUDA 13.0; driver 535.129.03 supports up to CUDA 12.2 (toolkitMode cdi: the toolkit "
       "checks no requirement, and the CUDA runtime refuses a driver older than its release "
       "outside minor version compatibility)"},
      {"cdi: forward compatibility the image declares", Md().cuda("13.0").require(kCuda130), r535,
       cdi(), Outcome::compatible, ""},
      {"cdi: no forward-compatible group for the brand", Md().cuda("13.0").require(kCuda130),
       geforce, cdi(), Outcome::incompatible, "needs CUDA 13.0"},
      {"cdi: a declared group on a GPU without forward compatibility",
       Md().cuda("13.0").require("cuda>=13.0 brand=geforce,driver>=535,driver<536"), geforce, cdi(),
       Outcome::incompatible, "forward compatibility (cuda-compat) does not run"},
      {"cdi: an invalid requirement is never read", Md().cuda("12.1").require("jetpack>=5"), r535,
       cdi(), Outcome::compatible, ""},
      {"cdi: the brand decides forward compatibility", Md().cuda("13.0").require(kCuda130),
       gpu_facts("535.129.03", "12.2", "8.0", "NVIDIA-A100-SXM4-80GB", std::nullopt), cdi(),
       Outcome::unknown, "the brand of the node's GPU is unknown"},
      {"cdi: no requirement, the runtime still checks", Md().cuda("13.0"), r535, cdi(),
       Outcome::incompatible, "needs CUDA 13.0"},
  });
}

TEST(CudaDriverRule, UnknownFindingsSayHowToKnow) {
  const RuleResult node_unknown =
      check_train(Md().cuda("12.4"), gpu_facts("", "", "", "", std::nullopt));
  ASSERT_FALSE(node_unknown.findings.empty());
  EXPECT_TRUE(node_unknown.findings[0].unknown);
  EXPECT_THAT(node_unknown.findings[0].fix, HasSubstr("cudagate.io/driver-version"));
  EXPECT_THAT(node_unknown.findings[0].fix, HasSubstr("GPU Feature Discovery"));
  const RuleResult image_unknown = check_train(Md(), t4_facts("535.129.03", "12.2"));
  ASSERT_EQ(image_unknown.findings.size(), 1U);
  EXPECT_TRUE(image_unknown.findings[0].unknown);
  EXPECT_THAT(image_unknown.findings[0].fix, HasSubstr("cudagate.io/cuda-version"));
}

TEST(CudaDriverRule, FixNamesTheMinimumDriverOfTheRequiredCuda) {
  const RuleResult r = check_train(Md().require("cuda>=12.6"), t4_facts("550.54.15", "12.4"));
  ASSERT_EQ(r.findings.size(), 1U);
  EXPECT_EQ(r.findings[0].fix,
            "upgrade the driver to 560.28.03 or newer, or use an image built for CUDA 12.4 or "
            "older");
}

// A driver of a branch newer than the matrix knows supports at least the
// newest CUDA it knows (a floor): what passes at the floor passes, what
// needs more is unknown, never a denial.
TEST(CudaDriverRule, ABranchNewerThanTheMatrixIsAFloorNotACeiling) {
  GpuFacts h100 = gpu_facts("640.10.01", "13.5", "9.0", "NVIDIA-H100-80GB-HBM3", "nvidia");
  h100.max_cuda_floor = true;
  EXPECT_EQ(check_train(Md().cuda("13.4"), h100).outcome, Outcome::compatible);
  EXPECT_EQ(check_train(Md().cuda("13.5"), h100).outcome, Outcome::compatible);
  const RuleResult newer = check_train(Md().cuda("13.6"), h100);
  EXPECT_EQ(newer.outcome, Outcome::unknown);
  ASSERT_EQ(newer.findings.size(), 1U);
  EXPECT_TRUE(newer.findings[0].unknown);
  EXPECT_TRUE(newer.findings[0].matrix_gap());
  EXPECT_EQ(newer.findings[0].message,
            "needs CUDA 13.6; driver 640.10.01 is of branch 640, which " + db().describe() +
                " does not know: it supports at least CUDA 13.5 (inferred)");
  EXPECT_EQ(newer.findings[0].fix, "update cudagate or give --compat-db");
  // The toolkit's requirement, judged on the floor.
  EXPECT_EQ(check_train(Md().require("cuda>=13.2"), h100).outcome, Outcome::compatible);
  const RuleResult required = check_train(Md().require("cuda>=13.7"), h100);
  EXPECT_EQ(required.outcome, Outcome::unknown);
  ASSERT_EQ(required.findings.size(), 1U);
  EXPECT_THAT(required.findings[0].message, HasSubstr("supports at least CUDA 13.5 (inferred)"));
  EXPECT_TRUE(required.findings[0].matrix_gap());
  // Without the floor the same facts are a ceiling: R620's CUDA 13.5 is all it runs.
  h100.max_cuda_floor = false;
  EXPECT_EQ(check_train(Md().cuda("13.6"), h100).outcome, Outcome::incompatible);
}

// A node whose labels claim a driver newer than its GPU's last branch
// (Volta ends with R580) is judged by nothing: unknown, with the reason.

TEST(CudaDriverRule, FixNamesABranchWhereTheNotesGiveOnlyABranch) {
  const GpuFacts h100 = gpu_facts("595.71.05", "13.2", "9.0", "NVIDIA-H100-80GB-HBM3", "nvidia");
  const RuleResult r134 = check_train(Md().require("cuda>=13.4"), h100);
  ASSERT_EQ(r134.findings.size(), 1U);
  EXPECT_EQ(r134.findings[0].fix,
            "upgrade the driver to branch R615 or newer, or use an image built for CUDA 13.2 or "
            "older");
  const RuleResult r139 = check_train(Md().cuda("13.9"), h100);
  ASSERT_EQ(r139.findings.size(), 1U);
  EXPECT_EQ(r139.findings[0].fix,
            "upgrade the driver to one that supports CUDA 13.9 (" + db().describe() +
                " does not know CUDA 13.9), or use an image built for CUDA 13.2 or older");
}

// A GPU product the matrix has no entry for, without compute capability
// labels: the unknown names the gap.
}  // namespace
}  // namespace cudagate

// The cuda-driver, gpu-arch and gpu-feature rules: outcomes, the example messages and fixes of
// docs/contract.md §7.1, and how unknown facts are reported.
#include "policy/rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "compat-db/compat_db.h"
#include "tests/support/embedded_compat_db.h"

namespace cudagate {
namespace {

using ::testing::HasSubstr;

using test_support::db;

// Node facts as derive_gpu_facts gives them; "" leaves a fact unknown.
GpuFacts node(const std::string& driver, const std::string& max_cuda, const std::string& cc,
              const std::string& product, std::optional<std::string> brand) {
  GpuFacts f;
  f.has_gpu = true;
  if (!driver.empty()) f.driver = *DriverVersion::parse(driver);
  if (!max_cuda.empty()) f.max_cuda = *CudaVersion::parse(max_cuda);
  if (!cc.empty()) f.cc = *ComputeCapability::parse(cc);
  f.product = product;
  f.brand = std::move(brand);
  return f;
}

GpuFacts t4(const std::string& driver, const std::string& max_cuda) {
  return node(driver, max_cuda, "7.5", "Tesla-T4", "unknown");
}

// Builds one container's metadata.
class Md {
 public:
  Md& cuda(const std::string& v, Source source = Source::env) {
    m_.cuda = Sourced<CudaVersion>{*CudaVersion::parse(v), source, v, "CUDA_VERSION"};
    return *this;
  }
  Md& require(const std::string& v, Source source = Source::env) {
    RequirementSet set;
    set.requirements.push_back(parse_requirement("NVIDIA_REQUIRE_CUDA", v));
    m_.require = Sourced<RequirementSet>{set, source, v, "NVIDIA_REQUIRE_CUDA"};
    return *this;
  }
  Md& disabled() {
    m_.require_disabled = true;
    m_.require.value.reset();
    m_.require.text = "NVIDIA_DISABLE_REQUIRE=true";
    m_.require.name = "NVIDIA_DISABLE_REQUIRE";
    return *this;
  }
  Md& native() {
    m_.archs.source = Source::env;
    m_.archs.name = "TORCH_CUDA_ARCH_LIST";
    m_.archs_unknown =
        "TORCH_CUDA_ARCH_LIST is \"native\": the image was built for the GPUs of the machine "
        "that built it, which the image does not record";
    return *this;
  }
  Md& archs(const std::string& v, const std::string& name = "TORCH_CUDA_ARCH_LIST") {
    auto set = name == "TORCH_CUDA_ARCH_LIST" ? parse_torch_arch_list(v, db())
                                              : parse_cmake_arch_list(v, db(), std::nullopt);
    EXPECT_TRUE(set) << set.error().str();
    m_.archs = Sourced<ArchSet>{*set, Source::env, v, name};
    return *this;
  }
  Md& min_cc(const std::string& v) {
    m_.min_cc = Sourced<ComputeCapability>{*ComputeCapability::parse(v), Source::annotation, v,
                                           "cudagate.io/min-compute-capability"};
    return *this;
  }
  operator const ContainerMetadata&() const { return m_; }  // NOLINT: builder

 private:
  ContainerMetadata m_;
};

RuleResult check(const ContainerMetadata& md, const GpuFacts& n, const Policy& policy = {}) {
  return check_container("train", md, n, policy, db());
}

Policy mvc() {
  Policy p;
  p.minor_version_compatibility = true;
  return p;
}

Policy exact() {
  Policy p;
  p.arch_match = ArchMatch::exact;
  return p;
}

TEST(CudaDriverRule, SpecExampleMessageAndFix) {
  for (const RuleResult& r : {check(Md().cuda("12.4"), t4("535.129.03", "12.2")),
                              check(Md().cuda("12.4").require("cuda>=12.4", Source::registry),
                                    t4("535.129.03", "12.2"))}) {
    EXPECT_EQ(r.outcome, Outcome::incompatible);
    ASSERT_EQ(r.findings.size(), 1U);
    const Finding& f = r.findings[0];
    EXPECT_EQ(f.rule, "cuda-driver");
    EXPECT_EQ(f.container, "train");
    EXPECT_EQ(f.message, "needs CUDA 12.4; driver 535.129.03 supports up to CUDA 12.2");
    EXPECT_EQ(f.fix,
              "upgrade the driver to 550.54.14 or newer, or use an image built for CUDA 12.2 or "
              "older");
    EXPECT_FALSE(f.unknown);
  }
}

struct OutcomeCase {
  std::string name;
  ContainerMetadata md;
  GpuFacts node;
  Policy policy;
  Outcome outcome;
  std::string message;  // substring of the first finding, "" when none expected
};

void run(const std::vector<OutcomeCase>& cases) {
  for (const OutcomeCase& c : cases) {
    SCOPED_TRACE(c.name);
    const RuleResult r = check(c.md, c.node, c.policy);
    EXPECT_EQ(r.outcome, c.outcome);
    if (c.message.empty()) {
      EXPECT_TRUE(r.findings.empty()) << r.findings.front().message;
    } else {
      ASSERT_FALSE(r.findings.empty());
      EXPECT_THAT(r.findings.front().message, HasSubstr(c.message));
    }
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
  run({
      {"older CUDA runs", Md().cuda("12.1"), t4("535.129.03", "12.2"), {}, Outcome::compatible, ""},
      {"equal CUDA runs", Md().cuda("12.2"), t4("535.129.03", "12.2"), {}, Outcome::compatible, ""},
      {"minor version compatibility accepts a newer minor", Md().cuda("12.4"),
       t4("535.129.03", "12.2"), mvc(), Outcome::compatible, ""},
      {"but not a newer major", Md().cuda("13.0"), t4("535.129.03", "12.2"), mvc(),
       Outcome::incompatible, "needs CUDA 13.0; driver 535.129.03 supports up to CUDA 12.2"},
      {"the runtime's requirement still applies", Md().cuda("12.4").require("cuda>=12.4"),
       t4("535.129.03", "12.2"), mvc(), Outcome::incompatible, "needs CUDA 12.4"},
      {"unless disabled", Md().cuda("12.4").require("cuda>=12.4").disabled(),
       t4("535.129.03", "12.2"), mvc(), Outcome::compatible, ""},
      // Disabled, what remains is the CUDA runtime's own check, which has
      // minor version compatibility whatever the policy says.
      {"disabled: the runtime's minor version compatibility",
       Md().cuda("12.4").disabled(),
       t4("535.129.03", "12.2"),
       {},
       Outcome::compatible,
       ""},
      {"disabled: not across majors",
       Md().cuda("13.0").disabled(),
       t4("535.129.03", "12.2"),
       {},
       Outcome::incompatible,
       "needs CUDA 13.0; driver 535.129.03 supports up to CUDA 12.2 (NVIDIA_DISABLE_REQUIRE=true: "
       "the toolkit checks no requirement, and the CUDA runtime refuses a driver older than its "
       "release outside minor version compatibility)"},
      {"disabled: not below the major's minimum driver",
       Md().cuda("11.8").disabled(),
       t4("450.51.05", "11.0"),
       {},
       Outcome::incompatible,
       "needs CUDA 11.8"},
      {"minor version compatibility from the runtime label alone", Md().cuda("12.4"),
       node("", "12.2", "7.5", "Tesla-T4", "unknown"), mvc(), Outcome::compatible, ""},
      {"runtime label alone",
       Md().cuda("12.4"),
       node("", "12.2", "7.5", "Tesla-T4", "unknown"),
       {},
       Outcome::incompatible,
       "needs CUDA 12.4; the node's driver supports up to CUDA 12.2"},
      {"forward compatibility on a datacenter GPU",
       Md().cuda("12.8").require(kCuda1281Requirement),
       t4("535.129.03", "12.2"),
       {},
       Outcome::compatible,
       ""},
      {"no forward-compatible branch",
       Md().cuda("12.8").require(kCuda1281Requirement),
       t4("525.85.12", "12.0"),
       {},
       Outcome::incompatible,
       "needs CUDA 12.8; driver 525.85.12 supports up to CUDA 12.0 (NVIDIA_REQUIRE_CUDA: "
       "unsatisfied condition: cuda>=12.8)"},
      {"brand not offered",
       Md().cuda("12.8").require(kCuda1281Requirement),
       node("535.129.03", "12.2", "8.9", "NVIDIA-GeForce-RTX-4090", "geforce"),
       {},
       Outcome::incompatible,
       "needs CUDA 12.8"},
      {"forward compatibility the toolkit allows but the GPU cannot run",
       Md().cuda("12.4").require("cuda>=12.4 brand=geforce,driver>=535,driver<536"),
       node("535.129.03", "12.2", "8.9", "NVIDIA-GeForce-RTX-4090", "geforce"),
       {},
       Outcome::incompatible,
       "needs CUDA 12.4; driver 535.129.03 supports up to CUDA 12.2, and forward compatibility "
       "(cuda-compat) does not run on NVIDIA-GeForce-RTX-4090, which is not a datacenter GPU"},
      {"a driver term",
       Md().require("cuda>=13.0 driver>=580.95.05"),
       node("580.65.06", "13.0", "9.0", "NVIDIA-H100-80GB-HBM3", "unknown"),
       {},
       Outcome::compatible,
       ""},
      {"a failing driver term",
       Md().require("driver>=580.95.05"),
       node("575.57.08", "12.9", "9.0", "NVIDIA-H100-80GB-HBM3", "unknown"),
       {},
       Outcome::incompatible,
       "NVIDIA_REQUIRE_CUDA: unsatisfied condition: driver>=580.95.05; the node has driver "
       "575.57.08"},
      {"an arch term",
       Md().require("arch>=8.0"),
       t4("535.129.03", "12.2"),
       {},
       Outcome::incompatible,
       "NVIDIA_REQUIRE_CUDA: unsatisfied condition: arch>=8.0; the node has driver 535.129.03 "
       "(CUDA 12.2), compute capability 7.5, brand unknown"},
      {"unknown driver",
       Md().cuda("12.4"),
       node("", "", "7.5", "Tesla-T4", "unknown"),
       {},
       Outcome::unknown,
       "the node's driver version is unknown"},
      {"unknown driver for a requirement",
       Md().require("cuda>=12.4"),
       node("", "", "7.5", "Tesla-T4", "unknown"),
       {},
       Outcome::unknown,
       "cannot check NVIDIA_REQUIRE_CUDA: the node's driver version is unknown"},
      {"unknown brand",
       Md().cuda("12.8").require(kCuda1281Requirement),
       node("535.129.03", "12.2", "8.0", "NVIDIA-A100-SXM4-80GB", std::nullopt),
       {},
       Outcome::unknown,
       "cannot check NVIDIA_REQUIRE_CUDA: the brand of the node's GPU is unknown"},
      {"unknown image CUDA",
       Md(),
       t4("535.129.03", "12.2"),
       {},
       Outcome::unknown,
       "the image's CUDA version is unknown"},
  });
}

TEST(CudaDriverRule, RequirementsAsTheToolkitEvaluatesThem) {
  // libnvidia-container dsl.c dsl_evaluate: groups left to right, stopping
  // at the first satisfied one; an invalid term fails only where reached;
  // an empty group after a failed one ends the evaluation unsatisfied.
  const GpuFacts r535 = t4("535.129.03", "12.2");
  const GpuFacts r550 = t4("550.54.15", "12.4");
  run({
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
  const RuleResult r = check(Md().require("cuda>=12.4 jetpack>=5"), r535);
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
  const GpuFacts r535 = t4("535.129.03", "12.2");
  const GpuFacts geforce = node("535.129.03", "12.2", "8.9", "NVIDIA-GeForce-RTX-4090", "geforce");
  run({
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
       node("535.129.03", "12.2", "8.0", "NVIDIA-A100-SXM4-80GB", std::nullopt), cdi(),
       Outcome::unknown, "the brand of the node's GPU is unknown"},
      {"cdi: no requirement, the runtime still checks", Md().cuda("13.0"), r535, cdi(),
       Outcome::incompatible, "needs CUDA 13.0"},
  });
}

TEST(CudaDriverRule, UnknownFindingsSayHowToKnow) {
  const RuleResult node_unknown = check(Md().cuda("12.4"), node("", "", "", "", std::nullopt));
  ASSERT_FALSE(node_unknown.findings.empty());
  EXPECT_TRUE(node_unknown.findings[0].unknown);
  EXPECT_THAT(node_unknown.findings[0].fix, HasSubstr("cudagate.io/driver-version"));
  EXPECT_THAT(node_unknown.findings[0].fix, HasSubstr("GPU Feature Discovery"));
  const RuleResult image_unknown = check(Md(), t4("535.129.03", "12.2"));
  ASSERT_EQ(image_unknown.findings.size(), 1U);
  EXPECT_TRUE(image_unknown.findings[0].unknown);
  EXPECT_THAT(image_unknown.findings[0].fix, HasSubstr("cudagate.io/cuda-version"));
}

TEST(CudaDriverRule, FixNamesTheMinimumDriverOfTheRequiredCuda) {
  const RuleResult r = check(Md().require("cuda>=12.6"), t4("550.54.15", "12.4"));
  ASSERT_EQ(r.findings.size(), 1U);
  EXPECT_EQ(r.findings[0].fix,
            "upgrade the driver to 560.28.03 or newer, or use an image built for CUDA 12.4 or "
            "older");
}

// A driver of a branch newer than the matrix knows supports at least the
// newest CUDA it knows (a floor): what passes at the floor passes, what
// needs more is unknown, never a denial.
TEST(CudaDriverRule, ABranchNewerThanTheMatrixIsAFloorNotACeiling) {
  GpuFacts h100 = node("640.10.01", "13.5", "9.0", "NVIDIA-H100-80GB-HBM3", "nvidia");
  h100.max_cuda_floor = true;
  EXPECT_EQ(check(Md().cuda("13.4"), h100).outcome, Outcome::compatible);
  EXPECT_EQ(check(Md().cuda("13.5"), h100).outcome, Outcome::compatible);
  const RuleResult newer = check(Md().cuda("13.6"), h100);
  EXPECT_EQ(newer.outcome, Outcome::unknown);
  ASSERT_EQ(newer.findings.size(), 1U);
  EXPECT_TRUE(newer.findings[0].unknown);
  EXPECT_TRUE(newer.findings[0].matrix_gap());
  EXPECT_EQ(newer.findings[0].message,
            "needs CUDA 13.6; driver 640.10.01 is of branch 640, which " + db().describe() +
                " does not know: it supports at least CUDA 13.5 (inferred)");
  EXPECT_EQ(newer.findings[0].fix, "update cudagate or give --compat-db");
  // The toolkit's requirement, judged on the floor.
  EXPECT_EQ(check(Md().require("cuda>=13.2"), h100).outcome, Outcome::compatible);
  const RuleResult required = check(Md().require("cuda>=13.7"), h100);
  EXPECT_EQ(required.outcome, Outcome::unknown);
  ASSERT_EQ(required.findings.size(), 1U);
  EXPECT_THAT(required.findings[0].message, HasSubstr("supports at least CUDA 13.5 (inferred)"));
  EXPECT_TRUE(required.findings[0].matrix_gap());
  // Without the floor the same facts are a ceiling: R620's CUDA 13.5 is all it runs.
  h100.max_cuda_floor = false;
  EXPECT_EQ(check(Md().cuda("13.6"), h100).outcome, Outcome::incompatible);
}

// A node whose labels claim a driver newer than its GPU's last branch
// (Volta ends with R580) is judged by nothing: unknown, with the reason.
TEST(CudaDriverRule, InconsistentNodeFactsJudgeNothing) {
  GpuFacts v100 = node("590.48.01", "13.1", "7.0", "Tesla-V100-SXM2-16GB", "tesla");
  v100.inconsistency =
      "driver 590.48.01 is newer than R580, the last driver branch for volta GPUs (compute "
      "capability 7.0): the node's labels cannot all be true";
  const RuleResult r = check(Md().cuda("12.4").archs("7.0"), v100);
  EXPECT_EQ(r.outcome, Outcome::unknown);
  ASSERT_EQ(r.findings.size(), 1U);
  EXPECT_EQ(r.findings[0].message, v100.inconsistency);
  EXPECT_THAT(r.findings[0].fix, HasSubstr("correct the node's labels"));
}

// An upgrade to a CUDA the release notes give only a branch for names the
// branch; one the matrix does not know says so.
TEST(CudaDriverRule, FixNamesABranchWhereTheNotesGiveOnlyABranch) {
  const GpuFacts h100 = node("595.71.05", "13.2", "9.0", "NVIDIA-H100-80GB-HBM3", "nvidia");
  const RuleResult r134 = check(Md().require("cuda>=13.4"), h100);
  ASSERT_EQ(r134.findings.size(), 1U);
  EXPECT_EQ(r134.findings[0].fix,
            "upgrade the driver to branch R615 or newer, or use an image built for CUDA 13.2 or "
            "older");
  const RuleResult r139 = check(Md().cuda("13.9"), h100);
  ASSERT_EQ(r139.findings.size(), 1U);
  EXPECT_EQ(r139.findings[0].fix,
            "upgrade the driver to one that supports CUDA 13.9 (" + db().describe() +
                " does not know CUDA 13.9), or use an image built for CUDA 13.2 or older");
}

// A GPU product the matrix has no entry for, without compute capability
// labels: the unknown names the gap.
TEST(GpuArchRule, AnUnknownProductIsAGapInTheMatrix) {
  const GpuFacts next = node("620.70.06", "13.5", "", "NVIDIA-X300", std::nullopt);
  const RuleResult r = check(Md().cuda("13.4").archs("9.0"), next);
  EXPECT_EQ(r.outcome, Outcome::unknown);
  ASSERT_EQ(r.findings.size(), 1U);
  EXPECT_EQ(r.findings[0].message, "the node's GPU NVIDIA-X300 is a product " + db().describe() +
                                       " does not know, and no label gives its compute capability");
  EXPECT_TRUE(r.findings[0].matrix_gap());
}

TEST(GpuArchRule, SpecExampleMessageAndFix) {
  const RuleResult r = check(Md().cuda("12.1").archs("8.0"), t4("535.129.03", "12.2"));
  EXPECT_EQ(r.outcome, Outcome::incompatible);
  ASSERT_EQ(r.findings.size(), 1U);
  EXPECT_EQ(r.findings[0].rule, "gpu-arch");
  EXPECT_EQ(r.findings[0].message,
            "compiled for 8.0 (TORCH_CUDA_ARCH_LIST, env); no kernel image for compute "
            "capability 7.5 (Tesla-T4)");
  EXPECT_EQ(r.findings[0].fix,
            "add 7.5 to the arch list (TORCH_CUDA_ARCH_LIST=\"7.5;8.0\"), or add +PTX to an "
            "entry at or below 7.5");
}

TEST(GpuArchRule, CmakeListsGetACmakeFix) {
  const RuleResult r = check(Md().cuda("12.1").archs("80", "CUDAARCHS"), t4("535.129.03", "12.2"));
  ASSERT_EQ(r.findings.size(), 1U);
  EXPECT_EQ(r.findings[0].fix,
            "add 75 to the architectures (CUDAARCHS=\"75-real;80\"), or add a virtual (PTX) entry "
            "at or below 75");
}

TEST(GpuArchRule, Outcomes) {
  const GpuFacts a100 = node("535.129.03", "12.2", "8.0", "NVIDIA-A100-SXM4-80GB", std::nullopt);
  const GpuFacts a10g = node("535.129.03", "12.2", "8.6", "NVIDIA-A10G", std::nullopt);
  const GpuFacts h100 = node("535.129.03", "12.2", "9.0", "NVIDIA-H100-80GB-HBM3", "unknown");
  const GpuFacts v100 = node("535.129.03", "12.2", "7.0", "Tesla-V100-SXM2-16GB", "tesla");
  const GpuFacts b200 = node("570.124.06", "12.8", "10.0", "NVIDIA-B200", std::nullopt);
  const ContainerMetadata wide = Md().cuda("12.1").archs("7.5;8.0;8.6;9.0");
  run({
      {"wide list on T4", wide, t4("535.129.03", "12.2"), {}, Outcome::compatible, ""},
      {"wide list on A100", wide, a100, {}, Outcome::compatible, ""},
      {"wide list on A10G", wide, a10g, {}, Outcome::compatible, ""},
      {"wide list on H100", wide, h100, {}, Outcome::compatible, ""},
      {"8.0 SASS runs on 8.6", Md().cuda("12.1").archs("8.0"), a10g, {}, Outcome::compatible, ""},
      {"but not under archMatch exact", Md().cuda("12.1").archs("8.0"), a10g, exact(),
       Outcome::incompatible, "under archMatch: exact"},
      {"PTX runs on newer GPUs", Md().cuda("12.1").archs("8.0+PTX"), h100, exact(),
       Outcome::compatible, ""},
      {"SASS does not run across majors",
       Md().cuda("12.1").archs("8.0;8.6"),
       h100,
       {},
       Outcome::incompatible,
       "no kernel image for compute capability 9.0"},
      {"unknown compute capability",
       wide,
       node("535.129.03", "12.2", "", "", std::nullopt),
       {},
       Outcome::unknown,
       "the node's compute capability is unknown"},
      {"no list: CUDA 12.1 targets A100", Md().cuda("12.1"), a100, {}, Outcome::compatible, ""},
      {"no list: CUDA 13.0 cannot target V100",
       Md().cuda("13.0").require("cuda>=12.0"),
       v100,
       {},
       Outcome::incompatible,
       "built with CUDA 13.0 (CUDA_VERSION, env), which cannot target compute capability 7.0 "
       "(Tesla-V100-SXM2-16GB): its oldest target is 7.5"},
      {"no list: CUDA 12.4 on B200 needs PTX",
       Md().cuda("12.4"),
       b200,
       {},
       Outcome::unknown,
       "it runs there only if the image carries PTX"},
      {"nothing known: no arch finding",
       Md().require("driver>=500"),
       a100,
       {},
       Outcome::compatible,
       ""},
  });
}

TEST(GpuArchRule, TegraHasNoCubinCompatibility) {
  // CUDA Programming Guide, Binary Compatibility: "not supported for Tegra.
  // Also, the binary compatibility between desktop and Tegra is not
  // supported." (compat-db tegraCapabilities)
  const GpuFacts orin = node("540.4.0", "12.6", "8.7", "Jetson-AGX-Orin", std::nullopt);
  const GpuFacts l4 = node("550.54.15", "12.4", "8.9", "NVIDIA-L4", "nvidia");
  run({
      {"an 8.6 cubin on an Orin",
       Md().cuda("12.4").archs("8.0;8.6"),
       orin,
       {},
       Outcome::incompatible,
       "no kernel image for compute capability 8.7 (Jetson-AGX-Orin) (Tegra GPUs run only SASS "
       "built for exactly their capability, and no SASS of another kind)"},
      {"an Orin cubin on an L4",
       Md().cuda("12.4").archs("8.7"),
       l4,
       {},
       Outcome::incompatible,
       "no kernel image for compute capability 8.9"},
      {"an Orin cubin on an Orin",
       Md().cuda("12.4").archs("8.7"),
       orin,
       {},
       Outcome::compatible,
       ""},
      {"PTX still runs on an Orin",
       Md().cuda("12.4").archs("8.6+PTX"),
       orin,
       {},
       Outcome::compatible,
       ""},
      {"Ampere+Tegra for an Orin",
       Md().cuda("12.4").archs("Ampere Ampere+Tegra"),
       orin,
       {},
       Outcome::compatible,
       ""},
  });
}

TEST(GpuArchRule, AListTheImagesCudaCannotBuildIsNoPass) {
  // compat-db cudaTargets: Kepler left with CUDA 12.0, sm_110 came with 13.0.
  const GpuFacts a100 = node("575.57.08", "12.9", "8.0", "NVIDIA-A100-SXM4-80GB", "unknown");
  run({
      {"3.7 with CUDA 12.9",
       Md().cuda("12.9").archs("3.7;8.0"),
       a100,
       {},
       Outcome::unknown,
       "compiled for 3.7;8.0 (TORCH_CUDA_ARCH_LIST, env), but CUDA 12.9 (CUDA_VERSION, env) "
       "cannot build 3.7: no image built with that release carries it, so the list or the CUDA "
       "version is not the image's"},
      {"11.0 with CUDA 12",
       Md().cuda("12.8").archs("8.0;11.0"),
       a100,
       {},
       Outcome::unknown,
       "cannot build 11.0"},
      {"9.0a with CUDA 11.8",
       Md().cuda("11.8").archs("8.0;9.0a"),
       a100,
       {},
       Outcome::unknown,
       "cannot build 9.0a"},
      {"a CMake list too",
       Md().cuda("12.9").archs("37-real;80", "CUDAARCHS"),
       a100,
       {},
       Outcome::unknown,
       "cannot build 3.7"},
      {"what the release builds",
       Md().cuda("12.9").archs("8.0;12.1a"),
       a100,
       {},
       Outcome::compatible,
       ""},
  });
  const RuleResult r = check(Md().cuda("12.9").archs("3.7;8.0"), a100);
  ASSERT_EQ(r.findings.size(), 1U);
  EXPECT_TRUE(r.findings[0].unknown);
  EXPECT_THAT(r.findings[0].fix, HasSubstr("cudagate.io/arch-list and cudagate.io/cuda-version"));
}

TEST(GpuArchRule, NativeIsUnknownWithItsReason) {
  const GpuFacts a100 = node("535.129.03", "12.2", "8.0", "NVIDIA-A100-SXM4-80GB", std::nullopt);
  const GpuFacts v100 = node("580.65.06", "13.0", "7.0", "Tesla-V100-SXM2-16GB", "tesla");
  const std::string reason =
      "TORCH_CUDA_ARCH_LIST is \"native\": the image was built for the GPUs of the machine that "
      "built it, which the image does not record";
  run({
      {"native on a GPU the release targets",
       Md().cuda("12.1").native(),
       a100,
       {},
       Outcome::unknown,
       reason},
      {"native without a CUDA version",
       Md().require("driver>=500").native(),
       a100,
       {},
       Outcome::unknown,
       reason},
      {"native below the release's oldest target",
       Md().cuda("13.0").native(),
       v100,
       {},
       Outcome::incompatible,
       "which cannot target compute capability 7.0"},
  });
}

TEST(GpuArchRule, OlderCudaFixNamesTheLastReleaseThatTargetsTheGpu) {
  const GpuFacts v100 = node("580.65.06", "13.0", "7.0", "Tesla-V100-SXM2-16GB", "tesla");
  const RuleResult r = check(Md().cuda("13.0"), v100);
  ASSERT_EQ(r.findings.size(), 1U);
  EXPECT_EQ(r.findings[0].fix,
            "use an image built with CUDA 12.9 or older, or run on a GPU of compute capability "
            "7.5 or newer");
}

TEST(GpuFeatureRule, MinimumComputeCapability) {
  const RuleResult t4_result = check(Md().cuda("12.1").min_cc("8.0"), t4("535.129.03", "12.2"));
  EXPECT_EQ(t4_result.outcome, Outcome::incompatible);
  ASSERT_EQ(t4_result.findings.size(), 1U);
  EXPECT_EQ(t4_result.findings[0].rule, "gpu-feature");
  EXPECT_EQ(t4_result.findings[0].message,
            "needs compute capability 8.0 (cudagate.io/min-compute-capability); node has 7.5");
  EXPECT_EQ(t4_result.findings[0].fix, "run on a GPU of compute capability 8.0 or newer");
  run({
      {"A100 has 8.0",
       Md().cuda("12.1").min_cc("8.0"),
       node("535.129.03", "12.2", "8.0", "NVIDIA-A100-SXM4-80GB", std::nullopt),
       {},
       Outcome::compatible,
       ""},
      {"unknown capability",
       Md().require("driver>=500").min_cc("8.0"),
       node("535.129.03", "12.2", "", "", std::nullopt),
       {},
       Outcome::unknown,
       "the node's compute capability is unknown"},
  });
}

TEST(Rules, AFailureOutweighsAnUnknownAndBothAreReported) {
  // CUDA fails on the driver; the capability is unknown for the minimum.
  const RuleResult r =
      check(Md().cuda("12.4").min_cc("8.0"), node("535.129.03", "12.2", "", "", std::nullopt));
  EXPECT_EQ(r.outcome, Outcome::incompatible);
  ASSERT_EQ(r.findings.size(), 3U);
  EXPECT_FALSE(r.findings[0].unknown);
  EXPECT_TRUE(r.findings[1].unknown);
  EXPECT_EQ(r.findings[2].rule, "gpu-feature");
}

}  // namespace
}  // namespace cudagate

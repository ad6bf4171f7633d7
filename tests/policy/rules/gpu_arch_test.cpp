// The gpu-arch rule: outcomes, the example message and fix of
// docs/contract.md §7.1, CMake's spelling, Tegra, lists the image's CUDA
// cannot build, and "native".
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "policy/rules/rule.h"
#include "tests/support/rule_cases.h"
#include "tests/support/scan_facts.h"

namespace cudagate {
namespace {

using ::testing::HasSubstr;

using test_support::check_train;
using test_support::db;
using test_support::exact;
using test_support::gpu_facts;
using test_support::kTorchCudaLib;
using test_support::Md;
using test_support::run_cases;
using test_support::scan_of;
using test_support::scanned_code;
using test_support::t4_facts;

TEST(GpuArchRule, AnUnknownProductIsAGapInTheMatrix) {
  const GpuFacts next = gpu_facts("620.70.06", "13.5", "", "NVIDIA-X300", std::nullopt);
  const RuleResult r = check_train(Md().cuda("13.4").archs("9.0"), next);
  EXPECT_EQ(r.outcome, Outcome::unknown);
  ASSERT_EQ(r.findings.size(), 1U);
  EXPECT_EQ(r.findings[0].message, "the node's GPU NVIDIA-X300 is a product " + db().describe() +
                                       " does not know, and no label gives its compute capability");
  EXPECT_TRUE(r.findings[0].matrix_gap());
}

TEST(GpuArchRule, SpecExampleMessageAndFix) {
  const RuleResult r = check_train(Md().cuda("12.1").archs("8.0"), t4_facts("535.129.03", "12.2"));
  EXPECT_EQ(r.outcome, Outcome::incompatible);
  ASSERT_EQ(r.findings.size(), 1U);
  EXPECT_EQ(r.findings[0].rule, Rule::gpu_arch);
  EXPECT_EQ(r.findings[0].message,
            "compiled for 8.0 (TORCH_CUDA_ARCH_LIST, env); no kernel image for compute "
            "capability 7.5 (Tesla-T4)");
  EXPECT_EQ(r.findings[0].fix,
            "add 7.5 to the arch list (TORCH_CUDA_ARCH_LIST=\"7.5;8.0\"), or add +PTX to an "
            "entry at or below 7.5");
}

TEST(GpuArchRule, CmakeListsGetACmakeFix) {
  const RuleResult r =
      check_train(Md().cuda("12.1").archs("80", "CUDAARCHS"), t4_facts("535.129.03", "12.2"));
  ASSERT_EQ(r.findings.size(), 1U);
  EXPECT_EQ(r.findings[0].fix,
            "add 75 to the architectures (CUDAARCHS=\"75-real;80\"), or add a virtual (PTX) entry "
            "at or below 75");
}

TEST(GpuArchRule, Outcomes) {
  const GpuFacts a100 =
      gpu_facts("535.129.03", "12.2", "8.0", "NVIDIA-A100-SXM4-80GB", std::nullopt);
  const GpuFacts a10g = gpu_facts("535.129.03", "12.2", "8.6", "NVIDIA-A10G", std::nullopt);
  const GpuFacts h100 = gpu_facts("535.129.03", "12.2", "9.0", "NVIDIA-H100-80GB-HBM3", "unknown");
  const GpuFacts v100 = gpu_facts("535.129.03", "12.2", "7.0", "Tesla-V100-SXM2-16GB", "tesla");
  const GpuFacts b200 = gpu_facts("570.124.06", "12.8", "10.0", "NVIDIA-B200", std::nullopt);
  const ContainerMetadata wide = Md().cuda("12.1").archs("7.5;8.0;8.6;9.0");
  run_cases({
      {"wide list on T4", wide, t4_facts("535.129.03", "12.2"), {}, Outcome::compatible, ""},
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
       gpu_facts("535.129.03", "12.2", "", "", std::nullopt),
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
  const GpuFacts orin = gpu_facts("540.4.0", "12.6", "8.7", "Jetson-AGX-Orin", std::nullopt);
  const GpuFacts l4 = gpu_facts("550.54.15", "12.4", "8.9", "NVIDIA-L4", "nvidia");
  run_cases({
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
  const GpuFacts a100 = gpu_facts("575.57.08", "12.9", "8.0", "NVIDIA-A100-SXM4-80GB", "unknown");
  run_cases({
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
  const RuleResult r = check_train(Md().cuda("12.9").archs("3.7;8.0"), a100);
  ASSERT_EQ(r.findings.size(), 1U);
  EXPECT_TRUE(r.findings[0].unknown);
  EXPECT_THAT(r.findings[0].fix, HasSubstr("cudagate.io/arch-list and cudagate.io/cuda-version"));
}

TEST(GpuArchRule, NativeIsUnknownWithItsReason) {
  const GpuFacts a100 =
      gpu_facts("535.129.03", "12.2", "8.0", "NVIDIA-A100-SXM4-80GB", std::nullopt);
  const GpuFacts v100 = gpu_facts("580.65.06", "13.0", "7.0", "Tesla-V100-SXM2-16GB", "tesla");
  const std::string reason =
      "TORCH_CUDA_ARCH_LIST is \"native\": the image was built for the GPUs of the machine that "
      "built it, which the image does not record";
  run_cases({
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
  const GpuFacts v100 = gpu_facts("580.65.06", "13.0", "7.0", "Tesla-V100-SXM2-16GB", "tesla");
  const RuleResult r = check_train(Md().cuda("13.0"), v100);
  ASSERT_EQ(r.findings.size(), 1U);
  EXPECT_EQ(r.findings[0].fix,
            "use an image built with CUDA 12.9 or older, or run on a GPU of compute capability "
            "7.5 or newer");
}

// Metadata whose archs come from a scan: `counted` and `others` are the
// scan's files by index.
ContainerMetadata scanned_md(const ScanFacts& scan, std::vector<std::size_t> counted,
                             std::vector<std::size_t> others) {
  ContainerMetadata md;
  md.scan = std::make_shared<const ScanFacts>(scan);
  md.scan_files.counted = std::move(counted);
  md.scan_files.others = std::move(others);
  md.scan_files.why = "the PyTorch package";
  const ScannedCode& first = scan.files[md.scan_files.counted.front()];
  md.archs = Sourced<ArchSet>{first.archs, Source::scan, first.archs.str(), first.path};
  md.cuda = Sourced<CudaVersion>{CudaVersion(12, 4), Source::scan, "12.4.127",
                                 "/usr/local/cuda/lib64/libcudart.so.12.4.127"};
  return md;
}

TEST(GpuArchRule, AScannedFileWithoutTheNodesKernelFails) {
  const ScanFacts scan = scan_of({scanned_code(kTorchCudaLib, "8.0;9.0+PTX")});
  const RuleResult r = check_train(scanned_md(scan, {0}, {}), t4_facts("570.124.06", "12.8"));
  EXPECT_EQ(r.outcome, Outcome::incompatible);
  ASSERT_EQ(r.findings.size(), 1U);
  EXPECT_EQ(r.findings[0].message,
            "ships " + std::string(kTorchCudaLib) +
                ", which has kernels for 8.0, 9.0 and PTX 9.0 (scan); no kernel image for compute "
                "capability 7.5 (Tesla-T4)");
  EXPECT_THAT(r.findings[0].fix, HasSubstr("compiled for 7.5"));
  const GpuFacts h100 = gpu_facts("570.124.06", "12.8", "9.0", "NVIDIA-H100-80GB-HBM3", "");
  EXPECT_EQ(check_train(scanned_md(scan, {0}, {}), h100).outcome, Outcome::compatible);
  // PTX 9.0 is JIT-compiled on a newer GPU.
  const GpuFacts b200 = gpu_facts("570.124.06", "12.8", "10.0", "NVIDIA-B200", "");
  EXPECT_EQ(check_train(scanned_md(scan, {0}, {}), b200).outcome, Outcome::compatible);
}

TEST(GpuArchRule, EveryCountedFileMustRun) {
  const ScanFacts scan =
      scan_of({scanned_code("/opt/a.so", "7.5;8.0"), scanned_code("/opt/b.so", "8.0"),
               scanned_code("/opt/c.so", "8.0")});
  const RuleResult r = check_train(scanned_md(scan, {0, 1, 2}, {}), t4_facts("570.124.06", "12.8"));
  ASSERT_EQ(r.findings.size(), 1U);
  EXPECT_EQ(r.findings[0].message,
            "ships /opt/b.so, which has kernels for 8.0 (scan); no kernel image for compute "
            "capability 7.5 (Tesla-T4), nor in 1 more of the files counted");
}

TEST(GpuArchRule, AFileNotCountedIsANoteNeverAFailure) {
  const ScanFacts scan =
      scan_of({scanned_code("/opt/flash.so", "8.0;9.0"), scanned_code(kTorchCudaLib, "7.5;8.0")});
  const RuleResult r = check_train(scanned_md(scan, {1}, {0}), t4_facts("570.124.06", "12.8"));
  EXPECT_EQ(r.outcome, Outcome::compatible);
  EXPECT_TRUE(r.findings.empty());
  ASSERT_EQ(r.notes.size(), 1U);
  EXPECT_EQ(r.notes[0],
            "container \"train\": /opt/flash.so has kernels for 8.0, 9.0: no kernel image for "
            "compute capability 7.5 (Tesla-T4); it is not among the files counted (the PyTorch "
            "package), but a call into it would fail there");
}

TEST(GpuArchRule, AScanOnANodeOfUnknownCapabilityIsUnknown) {
  const ScanFacts scan = scan_of({scanned_code("/opt/a.so", "8.0")});
  const GpuFacts unknown_cc = gpu_facts("570.124.06", "12.8", "", "", std::nullopt);
  EXPECT_EQ(check_train(scanned_md(scan, {0}, {}), unknown_cc).outcome, Outcome::unknown);
}

}  // namespace
}  // namespace cudagate

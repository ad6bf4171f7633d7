// Which files of a scan count (docs/scan.md, "Which files count"), NVIDIA's
// own libraries, and how a file's code is said.
#include "policy/rules/scanned_files.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/scan_facts.h"

namespace cudagate {
namespace {

using test_support::kTorchCudaLib;
using test_support::scan_of;
using test_support::scanned_code;

std::vector<std::string> paths_at(const ScanFacts& scan, const std::vector<std::size_t>& at) {
  std::vector<std::string> out;
  for (const std::size_t i : at) out.push_back(scan.files[i].path);
  return out;
}

constexpr const char* kCublas =
    "/usr/local/lib/python3.12/site-packages/nvidia/cublas/lib/libcublasLt.so.12";
constexpr const char* kFlashAttn =
    "/usr/local/lib/python3.12/site-packages/flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so";

TEST(ScannedFiles, ThePyTorchPackageCountsWhereItIsFound) {
  const ScanFacts scan =
      scan_of({scanned_code(kCublas, "7.5;8.0;9.0+PTX"), scanned_code(kFlashAttn, "8.0;9.0"),
               scanned_code(kTorchCudaLib, "8.0;9.0+PTX")},
              "12.8.90", "2.7.0+cu128");
  const CountedFiles files = counted_files(scan, ScanSettings{});
  EXPECT_EQ(paths_at(scan, files.counted), std::vector<std::string>{kTorchCudaLib});
  EXPECT_EQ(paths_at(scan, files.others), (std::vector<std::string>{kCublas, kFlashAttn}));
  EXPECT_EQ(files.why, "the PyTorch package");
}

TEST(ScannedFiles, WithoutAFrameworkEveryLibraryButNvidiasCounts) {
  const ScanFacts scan =
      scan_of({scanned_code("/opt/app/lib/libkernels.so", "8.0;9.0"),
               scanned_code("/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcufft.so.11", "7.5"),
               scanned_code("/usr/lib/x86_64-linux-gnu/libnccl.so.2", "7.5"),
               scanned_code(kCublas, "7.5")});
  const CountedFiles files = counted_files(scan, ScanSettings{});
  EXPECT_EQ(paths_at(scan, files.counted), std::vector<std::string>{"/opt/app/lib/libkernels.so"});
  EXPECT_EQ(files.others.size(), 3U);
  EXPECT_EQ(files.why, "every CUDA library that is not NVIDIA's");
}

TEST(ScannedFiles, AFrameworkWithoutGpuCodeOfItsOwnCountsTheRest) {
  // A CPU build of PyTorch beside a team's own extension.
  const ScanFacts scan =
      scan_of({scanned_code("/opt/app/ext.so", "8.6")}, std::nullopt, "2.7.0+cpu");
  const CountedFiles files = counted_files(scan, ScanSettings{});
  EXPECT_EQ(paths_at(scan, files.counted), std::vector<std::string>{"/opt/app/ext.so"});
  EXPECT_EQ(files.why, "every CUDA library that is not NVIDIA's");
}

TEST(ScannedFiles, ThePolicysGlobsOverrideTheChoice) {
  const ScanFacts scan =
      scan_of({scanned_code(kFlashAttn, "8.0;9.0"), scanned_code(kTorchCudaLib, "7.5;8.0;9.0+PTX")},
              "12.8.90", "2.7.0+cu128");
  ScanSettings settings;
  settings.counted_files = {"*/site-packages/flash_attn*.so"};
  const CountedFiles files = counted_files(scan, settings);
  EXPECT_EQ(paths_at(scan, files.counted), std::vector<std::string>{kFlashAttn});
  EXPECT_EQ(paths_at(scan, files.others), std::vector<std::string>{kTorchCudaLib});
  EXPECT_EQ(files.why, "scan.countedFiles");
}

TEST(ScannedFiles, NvidiasOwnLibraries) {
  EXPECT_TRUE(nvidia_library(kCublas));
  EXPECT_TRUE(nvidia_library("/usr/local/cuda/lib64/libcudnn_engines_precompiled.so.9"));
  EXPECT_TRUE(nvidia_library("/usr/lib/x86_64-linux-gnu/libcudnn_ops.so.9.1.0"));
  EXPECT_TRUE(nvidia_library("/opt/conda/lib/libnvrtc.so.12"));
  EXPECT_FALSE(nvidia_library(kTorchCudaLib));
  EXPECT_FALSE(nvidia_library("/opt/nvidia-tools/libmine.so"));
  EXPECT_FALSE(nvidia_library("/usr/local/cudax/lib/libmine.so"));
}

TEST(ScannedFiles, KernelsAreSaidInTheArchListsSpelling) {
  EXPECT_EQ(kernels_text(scanned_code("/a.so", "8.0;9.0+PTX").archs),
            "has kernels for 8.0, 9.0 and PTX 9.0");
  EXPECT_EQ(kernels_text(scanned_code("/a.so", "7.5;8.0;9.0a;10.0f").archs),
            "has kernels for 7.5, 8.0, 9.0a, 10.0f");
  EXPECT_EQ(kernels_text(scanned_code("/a.so", "8.0(PTX)").archs), "has only PTX 8.0");
  EXPECT_EQ(kernels_text(ArchSet{}), "has no GPU code");
}

}  // namespace
}  // namespace cudagate

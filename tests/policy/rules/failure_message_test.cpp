// recognise_failures on messages as runtimes print them: the toolkit's
// refusal in a RunContainerError, PyTorch and vLLM tracebacks in
// termination messages, Triton's FP8 error; and text that is none of them.
#include "policy/rules/failure_message.h"

#include <gtest/gtest.h>

#include <string>

#include "policy/rules/decision.h"

namespace cudagate {
namespace {

constexpr const char* kHook =
    "failed to create containerd task: failed to create shim task: OCI runtime create failed: "
    "runc create failed: unable to start container process: error during container init: error "
    "running hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as "
    "'legacy'\nnvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please "
    "update your driver to a newer version, or use an earlier cuda container: unknown";

TEST(FailureMessage, ToolkitRequirement) {
  const auto f = recognise_failures(kHook);
  ASSERT_EQ(f.size(), 1U);
  EXPECT_EQ(f[0].kind, FailureKind::requirement_unsatisfied);
  EXPECT_EQ(f[0].rule, Rule::cuda_driver);
  EXPECT_EQ(f[0].condition, "cuda>=12.4");
  ASSERT_TRUE(f[0].cuda_needed);
  EXPECT_EQ(f[0].cuda_needed->str(), "12.4");
  EXPECT_EQ(f[0].excerpt.rfind("nvidia-container-cli: requirement error", 0), 0U);
}

TEST(FailureMessage, GoHookNamesTheNodeValueAndArchConditionsAreArchRule) {
  auto f = recognise_failures("unsatisfied condition: cuda>=12.8 (cuda=12.2)");
  ASSERT_EQ(f.size(), 1U);
  EXPECT_EQ(f[0].node_value, "cuda=12.2");
  f = recognise_failures("requirement error: unsatisfied condition: arch>=8.0");
  ASSERT_EQ(f.size(), 1U);
  EXPECT_EQ(f[0].rule, Rule::gpu_arch);
  EXPECT_FALSE(f[0].cuda_needed);
}

TEST(FailureMessage, RuntimeErrors) {
  struct Row {
    std::string text;
    FailureKind kind;
    Rule rule;
  };
  const Row rows[] = {
      {"RuntimeError: CUDA error: no kernel image is available for execution on the device",
       FailureKind::no_kernel_image, Rule::gpu_arch},
      {"cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version",
       FailureKind::driver_insufficient, Rule::cuda_driver},
      {"RuntimeError: The NVIDIA driver on your system is too old (found version 11040).",
       FailureKind::driver_too_old, Rule::cuda_driver},
      {"CUDA error: forward compatibility was attempted on non supported HW",
       FailureKind::forward_compat_unsupported, Rule::cuda_driver},
  };
  for (const Row& row : rows) {
    const auto f =
        recognise_failures("Traceback (most recent call last):\n  x\n" + row.text + "\n");
    ASSERT_EQ(f.size(), 1U) << row.text;
    EXPECT_EQ(f[0].kind, row.kind) << row.text;
    EXPECT_EQ(f[0].rule, row.rule) << row.text;
    EXPECT_EQ(f[0].excerpt, row.text);
  }
}

TEST(FailureMessage, Bf16AndFp8WithTheCapabilities) {
  auto f = recognise_failures(
      "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. "
      "Your Tesla T4 GPU has compute capability 7.5. You can use float16 instead");
  ASSERT_EQ(f.size(), 1U);
  EXPECT_EQ(f[0].kind, FailureKind::bf16_unsupported);
  EXPECT_EQ(f[0].rule, Rule::gpu_feature);
  EXPECT_EQ(f[0].cc_needed->str(), "8.0");
  EXPECT_EQ(f[0].cc_found->str(), "7.5");

  f = recognise_failures("AssertionError: fp8e4nv data type is not supported on CUDA arch < 89");
  ASSERT_EQ(f.size(), 1U);
  EXPECT_EQ(f[0].kind, FailureKind::fp8_unsupported);
  EXPECT_EQ(f[0].cc_needed->str(), "8.9");

  f = recognise_failures("Device compute capability 9.0 or higher required for FP8 execution.");
  ASSERT_EQ(f.size(), 1U);
  EXPECT_EQ(f[0].cc_needed->str(), "9.0");
}

TEST(FailureMessage, SeveralInOrderEachKindOnce) {
  const auto f = recognise_failures(
      "CUDA error: no kernel image is available for execution on the device\n"
      "again: no kernel image is available for execution on the device\n"
      "CUDA driver version is insufficient for CUDA runtime version");
  ASSERT_EQ(f.size(), 2U);
  EXPECT_EQ(f[0].kind, FailureKind::no_kernel_image);
  EXPECT_EQ(f[1].kind, FailureKind::driver_insufficient);
}

TEST(FailureMessage, OtherTextIsNoFailure) {
  for (const char* text :
       {"", "\n\n", "back-off 2m40s restarting failed container=main",
        "nvidia-container-cli: initialization error: nvml error: driver/library version mismatch",
        "bf16 training finished", "unsatisfied condition:", "unsatisfied"}) {
    const auto f = recognise_failures(text);
    if (std::string_view(text) == "unsatisfied condition:") {
      ASSERT_EQ(f.size(), 1U);
      EXPECT_EQ(f[0].condition, "");
      continue;
    }
    EXPECT_TRUE(f.empty()) << text;
  }
}

TEST(FailureMessage, LongLinesAreCutAtACharacterBoundary) {
  const std::string line =
      "no kernel image is available for execution " + std::string(400, 'x') + "\xC3\xA9tail";
  const auto f = recognise_failures(line);
  ASSERT_EQ(f.size(), 1U);
  EXPECT_LE(f[0].excerpt.size(), 303U);
  EXPECT_EQ(f[0].excerpt.substr(f[0].excerpt.size() - 3), "...");
}

}  // namespace
}  // namespace cudagate

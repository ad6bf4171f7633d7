#pragma once
// Recognising the failures cudagate exists to prevent in what a cluster
// reports after the fact: container termination messages, waiting
// messages and events (nvidia-container-cli's refusals, the CUDA runtime's
// errors as PyTorch, vLLM, Triton and Transformer Engine print them).
//
// A message is free text up to a few kilobytes (the kubelet keeps 4 KiB of
// a termination message); recognition is a scan of its lower-cased copy,
// linear in its length, and never fails: text that matches nothing gives
// no failure.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/rules/rule.h"
#include "types/version.h"

namespace cudagate {

enum class FailureKind : unsigned char {
  driver_insufficient,         // "CUDA driver version is insufficient for CUDA runtime version"
  driver_too_old,              // PyTorch: "The NVIDIA driver on your system is too old"
  no_kernel_image,             // "no kernel image is available for execution on the device"
  requirement_unsatisfied,     // nvidia-container-cli: "unsatisfied condition: cuda>=12.4"
  forward_compat_unsupported,  // "forward compatibility was attempted on non supported HW"
  bf16_unsupported,            // "Bfloat16 is only supported on GPUs with compute capability ..."
  fp8_unsupported,             // "FP8 ... not supported" / "fp8e4nv ... not supported on arch < 89"
};

[[nodiscard]] std::string_view to_string(FailureKind kind);  // "no-kernel-image"

struct RecognisedFailure {
  FailureKind kind = FailureKind::driver_insufficient;
  Rule rule = Rule::cuda_driver;  // the cudagate rule that covers it
  std::string excerpt;  // the line of the message that matched, trimmed, at most 300 bytes
  // requirement_unsatisfied: the condition ("cuda>=12.4", "arch>=8.0"), and
  // what the node had when the message says (the Go hook's "(cuda=12.2)").
  std::string condition;
  std::optional<CudaVersion> cuda_needed;  // cuda>=X
  std::string node_value;
  // bf16 / fp8: the compute capability the message says is needed (8.0 for
  // BF16, 8.9 for FP8 unless the message names another), and the device's
  // when it says ("Your Tesla T4 GPU has compute capability 7.5").
  std::optional<ComputeCapability> cc_needed;
  std::optional<ComputeCapability> cc_found;
};

// Every failure `text` reports, in the order they appear, each kind once.
[[nodiscard]] std::vector<RecognisedFailure> recognise_failures(std::string_view text);

}  // namespace cudagate

#pragma once
// Which files of an attached scan a decision counts (docs/scan.md, "Which
// files count"), and how a file's GPU code is said in findings.
//
// The counted files are the ones whose architectures decide where the pod
// can run; a node whose compute capability one of them has no kernel for
// is incompatible. They are, first that applies:
//   1. the files matching a glob of the policy's scan.countedFiles (the
//      path from the image's root, "/opt/app/lib/*.so");
//   2. the framework's own libraries, where the scan found a framework
//      and files with GPU code under its package folder (PyTorch: the
//      folder of torch/version.py, so torch/lib/libtorch_cuda.so);
//   3. every file that is not one of NVIDIA's own libraries.
// NVIDIA's own libraries (cuBLAS, cuDNN, NCCL, the runtime and the like,
// from the CUDA toolkit's folders or NVIDIA's pip wheels under
// site-packages/nvidia/) ship the kernels of every architecture their
// CUDA release supports: they say what the release supports, not what the
// image was built for. The other files are `others`: one of them that
// cannot run where the counted files can is a warning, never a denial.
//
// Pure.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "policy/config/policy.h"
#include "policy/image/scan_facts.h"

namespace cudagate {

struct CountedFiles {
  std::vector<std::size_t> counted;  // indexes into ScanFacts::files
  std::vector<std::size_t> others;
  // Why these count: "scan.countedFiles", "the PyTorch package", "every
  // CUDA library that is not NVIDIA's".
  std::string why;
};

[[nodiscard]] CountedFiles counted_files(const ScanFacts& scan, const ScanSettings& settings);

// Whether `path` is one of NVIDIA's own CUDA libraries.
[[nodiscard]] bool nvidia_library(std::string_view path);

// "has kernels for 8.0, 9.0 and PTX 9.0", "has kernels for 8.0, 9.0a",
// "has only PTX 9.0", in the arch list's spelling ("9.0a", "10.0f").
[[nodiscard]] std::string kernels_text(const ArchSet& archs);

}  // namespace cudagate

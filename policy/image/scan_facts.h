#pragma once
// What a scan of an image's files found (`cudagate scan`, docs/scan.md), as
// decisions read it: the CUDA runtime the image ships, its framework, and
// for each file with GPU code the architectures of its SASS and PTX. A scan
// is attached to an image manifest in its registry (an OCI referrer, see
// registry/scan_attachment.h) and found again by that manifest's digest.
//
// Plain values: built by the reader of an attached scan, read by
// resolve_metadata (policy/rules/metadata.h) and the gpu-arch rule.

#include <optional>
#include <string>
#include <vector>

#include "policy/image/arch_list.h"

namespace cudagate {

// One file with GPU code: its path in the image ("/usr/lib/libx.so") and
// what it holds, each target with `sass` and `ptx` as the file has them.
// A target whose suffix the scan could not read ("9.0?") is kept as the
// portable target of that capability.
struct ScannedCode {
  std::string path;
  ArchSet archs;
  friend bool operator==(const ScannedCode&, const ScannedCode&) = default;
};

struct ScanFacts {
  std::string digest;    // the image manifest's digest the scan was made of
  std::string platform;  // "linux/amd64", "" when unknown
  // The CUDA runtime that counts ("12.6.77"), and the file that says so.
  std::optional<std::string> cuda_runtime;
  std::string cuda_runtime_path;
  std::optional<std::string> cuda_compat;  // a cuda-compat driver version
  // The framework found ("pytorch"), its version, CUDA ("12.4", "" for a
  // CPU build) and the file that says so; name "" when none.
  std::string framework;
  std::string framework_version;
  std::string framework_cuda;
  std::string framework_path;
  std::vector<ScannedCode> files;  // by path
  friend bool operator==(const ScanFacts&, const ScanFacts&) = default;
};

}  // namespace cudagate

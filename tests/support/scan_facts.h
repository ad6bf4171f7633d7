#pragma once
// Scans as the registry's attached-scan reader gives them, for the policy
// tests: a file's code written as an arch list ("8.0;9.0+PTX", "9.0(PTX)"
// for PTX alone), read with the embedded matrix.

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "policy/image/arch_list.h"
#include "policy/image/scan_facts.h"
#include "policy/rules/metadata.h"
#include "tests/support/embedded_compat_db.h"

namespace cudagate::test_support {

inline ScannedCode scanned_code(std::string path, const std::string& arch_list) {
  auto archs = parse_torch_arch_list(arch_list, db());
  EXPECT_TRUE(archs) << archs.error().str();
  return ScannedCode{std::move(path), archs ? std::move(*archs) : ArchSet{}};
}

inline constexpr const char* kTorchVersionPy =
    "/usr/local/lib/python3.12/site-packages/torch/version.py";
inline constexpr const char* kTorchCudaLib =
    "/usr/local/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so";

// A scan of `files`; `runtime` the CUDA runtime found ("12.8.90"), in the
// runtime wheel's folder; `torch` the framework's version when PyTorch is
// found (torch/version.py in site-packages).
inline ScanFacts scan_of(std::vector<ScannedCode> files,
                         std::optional<std::string> runtime = std::nullopt,
                         const std::string& torch = "") {
  ScanFacts facts;
  facts.digest = "sha256:" + std::string(64, 'a');
  facts.platform = "linux/amd64";
  if (runtime) {
    facts.cuda_runtime = runtime;
    facts.cuda_runtime_path =
        "/usr/local/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12";
  }
  if (!torch.empty()) {
    facts.framework = "pytorch";
    facts.framework_version = torch;
    facts.framework_cuda = runtime ? runtime->substr(0, runtime->rfind('.')) : "";
    facts.framework_path = kTorchVersionPy;
  }
  facts.files = std::move(files);
  return facts;
}

// A registry config with `env` whose manifest carries `scan`.
inline std::shared_ptr<const ImageConfig> scanned_config(
    std::vector<std::pair<std::string, std::string>> env, ScanFacts scan) {
  ImageConfig config;
  config.env = std::move(env);
  config.scan = std::make_shared<const ScanFacts>(std::move(scan));
  return std::make_shared<const ImageConfig>(std::move(config));
}

}  // namespace cudagate::test_support

// Feeds arbitrary bytes to the manifest and image config readers, as a
// registry (or something posing as one) could send them: each either reads
// them or says why not, and what it reads is consistent. The readers of a
// pull (a manifest's layers, a config's platform) too.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "registry/image_layers.h"
#include "registry/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const std::string_view type :
       {std::string_view(), cudagate::kOciIndex, cudagate::kDockerManifest}) {
    auto manifest = cudagate::parse_manifest(text, type);
    if (!manifest) {
      if (manifest.error().message.empty()) __builtin_trap();
      continue;
    }
    if (manifest->kind == cudagate::Manifest::Kind::image &&
        !cudagate::is_sha256_digest(manifest->config_digest)) {
      __builtin_trap();
    }
    for (const auto& entry : manifest->entries) {
      if (!cudagate::is_sha256_digest(entry.digest)) __builtin_trap();
    }
    const auto* chosen = cudagate::select_platform(*manifest, cudagate::Platform{});
    if (chosen != nullptr && chosen->platform.architecture != "amd64") __builtin_trap();
  }
  auto layers = cudagate::parse_image_layers(text);
  if (!layers && layers.error().message.empty()) __builtin_trap();
  if (layers) {
    if (!cudagate::is_sha256_digest(layers->config.digest)) __builtin_trap();
    for (const auto& layer : layers->layers) {
      if (!cudagate::is_sha256_digest(layer.digest)) __builtin_trap();
    }
  }
  const std::string platform = cudagate::platform_of_config(text);
  if (!platform.empty() && platform.find('/') == std::string::npos) __builtin_trap();
  auto config = cudagate::parse_image_config(text, "sha256:x");
  if (!config && config.error().message.empty()) __builtin_trap();
  if (config) {
    for (const auto& [name, value] : config->env) {
      if (name.find('=') != std::string_view::npos) __builtin_trap();
    }
  }
  return 0;
}

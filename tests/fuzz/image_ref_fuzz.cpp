// Feeds arbitrary text to the image reference parser; whatever it accepts
// must be normalised (printing it and parsing again gives the same value).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "policy/image/image_ref.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto ref = cudagate::ImageRef::parse(text);
  if (!ref) {
    if (ref.error().message.empty()) __builtin_trap();
    return 0;
  }
  if (ref->registry.empty() || ref->repository.empty()) __builtin_trap();
  if (ref->tag.empty() && ref->digest.empty()) __builtin_trap();
  if (ref->registry == "index.docker.io" || ref->registry == "registry-1.docker.io") {
    __builtin_trap();
  }
  auto again = cudagate::ImageRef::parse(ref->str());
  if (!again || !(*again == *ref)) __builtin_trap();
  return 0;
}

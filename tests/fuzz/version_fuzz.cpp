// Feeds arbitrary text to the three version parsers and checks that what
// they accept prints back to text that parses to the same value.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "types/version.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  using cudagate::ComputeCapability;
  using cudagate::CudaVersion;
  using cudagate::DriverVersion;

  if (auto v = CudaVersion::parse(text)) {
    auto again = CudaVersion::parse(v->str());
    if (!again || *again != *v) __builtin_trap();
  }
  if (auto d = DriverVersion::parse(text)) {
    auto again = DriverVersion::parse(d->str());
    if (!again || *again != *d || again->part_count() != d->part_count()) __builtin_trap();
    if (d->part_count() < 2 || d->part_count() > 3) __builtin_trap();
  }
  if (auto cc = ComputeCapability::parse(text)) {
    auto again = ComputeCapability::parse(cc->str());
    if (!again || *again != *cc) __builtin_trap();
  }
  return 0;
}

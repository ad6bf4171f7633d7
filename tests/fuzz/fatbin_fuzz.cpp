// Feeds arbitrary bytes to the fatbin reader as one section's contents and
// checks what it gives back: every entry inside the section, each
// architecture a compute capability X.Y, and the entry limit kept.
#include <cstddef>
#include <cstdint>

#include "scan/fatbin.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cudagate::scan;
  const Bytes section(reinterpret_cast<const std::byte*>(data), size);

  ScanLimits limits;
  limits.max_entries = 64;
  const FatbinContents contents = read_fatbins(section, ".nv_fatbin", limits);
  if (contents.entries.size() > limits.max_entries) __builtin_trap();
  for (const FatbinEntry& entry : contents.entries) {
    if (entry.offset + 16 > size) __builtin_trap();
    if (entry.arch.capability.major() < 1 || entry.arch.capability.minor() > 9) __builtin_trap();
  }
  for (const cudagate::Error& error : contents.errors) {
    if (error.where.rfind(".nv_fatbin+0x", 0) != 0) __builtin_trap();
  }
  return 0;
}

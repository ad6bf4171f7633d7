#pragma once
// How much of a file the scan readers look at. Each limit refused is an Error
// naming the section and offset, never a crash and never a silent cut: the
// rest of the file is still read where it can be.

#include <cstdint>

namespace cudagate::scan {

struct ScanLimits {
  // Section headers read from one ELF file (the ELF format allows 2^32).
  std::uint32_t max_sections = 1U << 16;
  // Bytes of one fatbin section. The largest known (PyTorch's
  // libtorch_cuda.so, cuBLAS's libcublasLt.so) hold under 1.5 GiB.
  std::uint64_t max_section_bytes = std::uint64_t{2} << 30;
  // Fatbin entries read from one file (libcublasLt.so.13 holds about 5,400).
  std::uint32_t max_entries = 1U << 18;
};

}  // namespace cudagate::scan

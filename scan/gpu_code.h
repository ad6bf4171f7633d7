#pragma once
// What GPU code one file holds: the file's bytes in, one value out. This is
// what `cuobjdump --list-elf --list-ptx` lists for the file, as sets of
// architectures: the SASS of every cubin and the PTX of every fatbin the
// driver would load (scan/elf_file.h says which sections those are), or the
// file's own architecture where the file is itself a cubin.
//
// Nothing here throws or stops at bad input: a file that is not ELF is
// is_elf false and nothing else; a malformed ELF file or fatbin is an Error
// in `errors` naming the section and offset, and whatever else could be read
// is still returned.

#include <vector>

#include "scan/byte_reader.h"
#include "scan/gpu_arch.h"
#include "scan/scan_limits.h"
#include "types/expected.h"

namespace cudagate::scan {

struct GpuCode {
  bool is_elf = false;        // the file starts with the ELF magic (any class)
  std::vector<GpuArch> sass;  // sorted, unique
  std::vector<GpuArch> ptx;   // sorted, unique
  std::vector<Error> errors;  // in file order
};

[[nodiscard]] GpuCode read_gpu_code(Bytes file, const ScanLimits& limits = {});

}  // namespace cudagate::scan

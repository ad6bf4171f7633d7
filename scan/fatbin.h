#pragma once
// Fatbin containers: what GPU code each holds, read from the container's own
// headers without decompressing anything. A section (`.nv_fatbin`,
// `__nv_relfatbin`) holds one or more containers back to back; each is
//
//   header (16 bytes): u32 magic 0xBA55ED50, u16 version 1, u16 header size
//     16, u64 size of the entries that follow;
//   entries, each a header then its payload:
//     @0 u16 kind: 1 PTX, 2 ELF (a cubin: SASS), 0x100 several cubins
//        concatenated into one compressed payload (nvcc --concat);
//     @2 u16 0x0101; @4 u32 header size (64, or more: below);
//     @8 u64 payload size (padded to 8); @16 u32 payload size unpadded when
//     compressed; @24 u16 minor, @26 u16 major: the code version (ELF ABI
//     1.8 for CUDA 13 cubins, the PTX ISA, 9.5 for nvcc 13.5); @28 u32 the
//     architecture (75, 90, 100, 121); @40 u64 flags; @56 u64 the size
//     uncompressed.
//
// The flags (nvcc 13.5; the gencode sets and cuobjdump listings that show
// them are in tests/scan/gpu_code_test.cpp and docs/scan.md):
//   0x1 64-bit, 0x10 Linux host;
//   0x2000 payload compressed with LZ4 (`--compress-mode=speed` with
//   `-Xfatbin -compress-all`), 0x8000 with zstd (the default for PTX, for
//   `-rdc=true` cubins, `-compress-all` and `--compress-mode=size`);
//   0x100000 `a` (sm_90a, compute_90a), 0x200000 `f` (sm_100f, compute_100f),
//   on cubins and PTX alike, compressed or not;
//   0x1000000 the header carries a copy of the cubin's `.nv.compat` records
//   (sm_100 and newer): at @64 u32 its offset in the header, u32 its length,
//   the header then padded to 8 past a NUL.
//   A concatenated entry (0x100) has at @64 u32 the number of cubins and u32
//   the bytes of their headers (8 included); from @72 one header a cubin, in
//   the layout above (@4 is the cubin's offset in the uncompressed payload),
//   64 bytes or, with flag 0x1000000, as long as its `.nv.compat` copy needs.
//
// Where the architecture and its suffix come from:
// - PTX: the entry header (arch and flags), as cuobjdump lists it.
// - a cubin with an uncompressed payload: the cubin itself
//   (scan/elf_file.h's cubin_arch(), as cuobjdump and the driver read it),
//   plus `f` from the header flags, which the cubin does not record
//   (cuobjdump 13.4 lists an sm_100f cubin as sm_100). A header that
//   disagrees with its cubin is reported as an error; the cubin wins.
// - a compressed cubin: the header: its arch, its `a`/`f` flags, else the
//   `.nv.compat` copy in the header. Where neither says, the entry is ELF
//   ABI 1.7 or older (written before CUDA 12.9, whose fatbinary was not
//   checked here) and the architecture is 9.0 or newer (where `a` exists),
//   the suffix is kUnknown: only the decompressed cubin's `.nv.compat` or
//   e_flags would tell, and this reader does not decompress.

#include <cstdint>
#include <string_view>
#include <vector>

#include "scan/byte_reader.h"
#include "scan/gpu_arch.h"
#include "scan/scan_limits.h"
#include "types/expected.h"

namespace cudagate::scan {

inline constexpr std::uint32_t kFatbinMagic = 0xBA55ED50;

enum class CodeKind { kSass, kPtx };
enum class Compression { kNone, kLz4, kZstd };

struct FatbinEntry {
  CodeKind kind = CodeKind::kSass;
  GpuArch arch;
  Compression compression = Compression::kNone;
  std::uint64_t offset = 0;   // of the entry's header in the section
  bool concatenated = false;  // one cubin of a concatenated entry
};

struct FatbinContents {
  std::vector<FatbinEntry> entries;  // in section order
  // What could not be read, each with Error::where "<section>+0x<offset>".
  // A malformed container ends the reading of that container; a container
  // whose size cannot be trusted ends the reading of the section.
  std::vector<Error> errors;
};

// Every fatbin container in `section`, the bytes of the ELF section (or of a
// .fatbin file) called `section_name` in errors. Zero bytes between
// containers are skipped. `entries_before` entries of the same file were
// read already: with these, at most limits.max_entries are read (an error
// says where the limit was met). Never throws; never reads outside `section`.
[[nodiscard]] FatbinContents read_fatbins(Bytes section, std::string_view section_name,
                                          const ScanLimits& limits = {},
                                          std::uint64_t entries_before = 0);

}  // namespace cudagate::scan

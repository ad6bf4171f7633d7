#pragma once
// ELF files as far as GPU code is concerned: the 64-bit little-endian ELF
// header, the section headers and their names, read from bytes in memory and
// checked against the bytes' bounds at every step; which sections hold
// fatbins; and the architecture of a cubin (an ELF file of machine EM_CUDA).
//
// Where the fatbins are (nvcc 13.5, checked with cuobjdump 13.4):
// - executables and shared libraries: `.nv_fatbin`, often several fatbin
//   containers back to back (the device-link stub's, then one a translation
//   unit); `.nvFatBinSegment` holds only the registration wrappers.
// - relocatable objects (`-c`): `.nv_fatbin`, or `__nv_relfatbin` with
//   `-rdc=true`. A program linked with `-rdc=true` keeps the objects'
//   `__nv_relfatbin` beside its linked `.nv_fatbin`; that relocatable code is
//   not what the driver loads, so, as cuobjdump without `--all-fatbin`,
//   fatbin_sections() gives `__nv_relfatbin` only where no `.nv_fatbin` is.
//
// A cubin's architecture (nvcc -cubin, `readelf -h`, cuobjdump --list-elf):
// - e_ident[EI_ABIVERSION] 7 (ptxas before CUDA 12.9; 12.9 for sm_9x and
//   older): the SM number in e_flags bits 0-7 and 0x800 for `a`; sm_90a is
//   0x5a0d5a.
// - ABI version 8 (CUDA 13; 12.9 for sm_100 and newer): the SM number in
//   bits 8-15 (sm_90 0x6005a04, sm_100 0x6006402); ptxas 12.9 sets 0x8 for
//   `a` (sm_100a 0x600640a), ptxas 13.5 does not (sm_90a and sm_90 have the
//   same e_flags).
// - the `.nv.compat` section, attribute 0x09 (one-byte value), is 1 for `a`
//   and 0 otherwise (nvcc 13.5, every sm_90a/100a/103a/120a/121a cubin). It
//   outranks e_flags: cuobjdump lists a cubin whose e_flags say `a` and whose
//   `.nv.compat` says 0 without the `a`.
// - `f` is not in the cubin: an sm_100f cubin equals the sm_100 one but for
//   the ptxas command line in `.note.nv.tkinfo`, and cuobjdump lists it as
//   sm_100. The fatbin entry's header carries it (scan/fatbin.h).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scan/byte_reader.h"
#include "scan/gpu_arch.h"
#include "scan/scan_limits.h"
#include "types/expected.h"

namespace cudagate::scan {

inline constexpr std::uint16_t kMachineCuda = 190;  // EM_CUDA
inline constexpr std::uint32_t kSectionNoBits = 8;  // SHT_NOBITS

struct ElfSection {
  std::string name;
  std::uint32_t type = 0;
  std::uint64_t offset = 0;  // in the file
  std::uint64_t size = 0;
};

struct ElfFile {
  std::uint16_t machine = 0;  // e_machine
  std::uint32_t flags = 0;    // e_flags
  std::uint8_t abi_version = 0;
  std::vector<ElfSection> sections;  // in header order; the null section 0 included
};

// Whether `bytes` start with the ELF magic (any class or byte order).
[[nodiscard]] bool has_elf_magic(Bytes bytes);

// The header and section table of a 64-bit little-endian ELF file. Refused:
// a file without the magic, 32-bit or big-endian files, a header or section
// table that does not lie within `bytes`, more than limits.max_sections
// sections, a section name outside its string table. A section whose bytes
// lie outside the file is kept (its type and size as written) and refused by
// section_bytes(). Error::where is "ELF header" or "section header N".
[[nodiscard]] Expected<ElfFile> read_elf(Bytes bytes, const ScanLimits& limits = {});

// The bytes of `section` within `file`: empty for SHT_NOBITS, refused when
// they do not lie within `file` (where: the section's name).
[[nodiscard]] Expected<Bytes> section_bytes(Bytes file, const ElfSection& section);

// The sections that hold the fatbins the driver would load, in file order:
// every `.nv_fatbin`, else every `__nv_relfatbin` (see above).
[[nodiscard]] std::vector<const ElfSection*> fatbin_sections(const ElfFile& elf);

// `.nv.compat`'s answer to "is this cubin architecture-specific (`a`)?",
// or nothing where the records hold no attribute 0x09. The records are
// nv.info-style: a format byte, an attribute byte, then no value (format 1),
// one byte and a pad (2), two bytes (3), or a 16-bit size and that many
// bytes (4). A fatbin entry header may carry a copy (scan/fatbin.h).
[[nodiscard]] std::optional<bool> nv_compat_arch_specific(Bytes records);

// The architecture of a cubin as cuobjdump lists it: the SM number from
// e_flags, `a` from `.nv.compat` or else e_flags, never `f` (see above).
// Refused when `elf` is not of machine EM_CUDA or names no SM.
[[nodiscard]] Expected<GpuArch> cubin_arch(Bytes file, const ElfFile& elf);

}  // namespace cudagate::scan

#pragma once
// Files built byte by byte for the scan tests: 64-bit ELF files with the
// sections a test names, cubins with given e_flags and `.nv.compat` records,
// and fatbin containers in the layout scan/fatbin.h describes, so that each
// malformed case differs from a well-formed one in exactly one field.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "scan/byte_reader.h"

namespace cudagate::scan::testing {

using ByteVector = std::vector<std::byte>;

inline void put_le(ByteVector& out, std::uint64_t value, int size) {
  for (int i = 0; i < size; ++i) out.push_back(static_cast<std::byte>((value >> (8 * i)) & 0xff));
}

inline void set_le(ByteVector& out, std::size_t at, std::uint64_t value, int size) {
  for (int i = 0; i < size; ++i) out[at + i] = static_cast<std::byte>((value >> (8 * i)) & 0xff);
}

inline ByteVector text_bytes(const std::string& text) {
  ByteVector out;
  for (char c : text) out.push_back(static_cast<std::byte>(c));
  return out;
}

struct SectionSpec {
  std::string name = {};
  ByteVector bytes = {};
  std::uint32_t type = 1;  // SHT_PROGBITS
};

struct ElfSpec {
  std::uint16_t machine = 62;  // EM_X86_64
  std::uint32_t flags = 0;
  std::uint8_t abi_version = 0;
  std::vector<SectionSpec> sections = {};
};

// Header, section bytes, `.shstrtab`, then the section table (null section,
// the named sections, `.shstrtab` last).
inline ByteVector elf_bytes(const ElfSpec& spec) {
  ByteVector out = {std::byte{0x7f}, std::byte{'E'}, std::byte{'L'},
                    std::byte{'F'},  std::byte{2},   std::byte{1},
                    std::byte{1},    std::byte{0},   std::byte{spec.abi_version}};
  out.resize(16);
  put_le(out, 1, 2);  // e_type ET_REL
  put_le(out, spec.machine, 2);
  put_le(out, 1, 4);  // e_version
  put_le(out, 0, 8);  // e_entry
  put_le(out, 0, 8);  // e_phoff
  put_le(out, 0, 8);  // e_shoff, set below
  put_le(out, spec.flags, 4);
  put_le(out, 64, 2);  // e_ehsize
  put_le(out, 0, 2);   // e_phentsize
  put_le(out, 0, 2);   // e_phnum
  put_le(out, 64, 2);  // e_shentsize
  put_le(out, spec.sections.size() + 2, 2);
  put_le(out, spec.sections.size() + 1, 2);  // e_shstrndx
  struct Placed {
    std::uint32_t name;
    std::uint32_t type;
    std::uint64_t offset, size;
  };
  std::vector<Placed> placed;
  ByteVector names{std::byte{0}};
  for (const SectionSpec& section : spec.sections) {
    while (out.size() % 8 != 0) out.push_back(std::byte{0});
    placed.push_back(
        {static_cast<std::uint32_t>(names.size()), section.type, out.size(), section.bytes.size()});
    if (section.type != 8) out.insert(out.end(), section.bytes.begin(), section.bytes.end());
    for (char c : section.name) names.push_back(static_cast<std::byte>(c));
    names.push_back(std::byte{0});
  }
  placed.push_back({static_cast<std::uint32_t>(names.size()), 3, out.size(), 0});
  for (char c : std::string(".shstrtab")) names.push_back(static_cast<std::byte>(c));
  names.push_back(std::byte{0});
  placed.back().size = names.size();
  out.insert(out.end(), names.begin(), names.end());
  while (out.size() % 8 != 0) out.push_back(std::byte{0});
  set_le(out, 40, out.size(), 8);
  out.resize(out.size() + 64, std::byte{0});  // the null section
  for (const Placed& p : placed) {
    put_le(out, p.name, 4);
    put_le(out, p.type, 4);
    put_le(out, 0, 8);  // flags
    put_le(out, 0, 8);  // addr
    put_le(out, p.offset, 8);
    put_le(out, p.size, 8);
    put_le(out, 0, 4);  // link
    put_le(out, 0, 4);  // info
    put_le(out, 1, 8);  // addralign
    put_le(out, 0, 8);  // entsize
  }
  return out;
}

// `.nv.compat` records: attribute 0x09 (architecture-specific) with `value`,
// between two other records as nvcc 13.5 writes them.
inline ByteVector compat_records(int value) {
  return {std::byte{2},    std::byte{0x09}, static_cast<std::byte>(value),
          std::byte{0},    std::byte{2},    std::byte{0x0c},
          std::byte{0},    std::byte{0},    std::byte{4},
          std::byte{0x0b}, std::byte{4},    std::byte{0},
          std::byte{1},    std::byte{2},    std::byte{3},
          std::byte{4}};
}

// A cubin of ABI version 8 (the SM in e_flags bits 8-15, as CUDA 13 writes
// them) with `.nv.compat` records when `compat` is 0 or 1.
inline ByteVector cubin_bytes(unsigned sm, int compat = -1) {
  ElfSpec spec;
  spec.machine = 190;
  spec.abi_version = 8;
  spec.flags = 0x6000004U | (sm << 8);
  if (compat >= 0) spec.sections.push_back({".nv.compat", compat_records(compat)});
  spec.sections.push_back({".text._Z3addPff", ByteVector(32, std::byte{0})});
  return elf_bytes(spec);
}

struct EntrySpec {
  std::uint16_t kind = 2;  // 1 PTX, 2 ELF
  std::uint32_t sm = 80;
  std::uint64_t flags = 0x11;
  ByteVector payload = {};
  std::uint16_t version_major = 1;
  std::uint16_t version_minor = 8;
  ByteVector extension = {};  // header bytes past the first 64
};

// One entry: its header (64 bytes plus the extension) and its payload padded to 8.
inline ByteVector entry_bytes(const EntrySpec& e) {
  ByteVector payload = e.payload;
  while (payload.size() % 8 != 0) payload.push_back(std::byte{0});
  ByteVector out;
  put_le(out, e.kind, 2);
  put_le(out, 0x0101, 2);
  put_le(out, 64 + e.extension.size(), 4);
  put_le(out, payload.size(), 8);
  put_le(out, (e.flags & 0xa000) != 0 ? e.payload.size() : 0, 4);
  put_le(out, 0, 4);
  put_le(out, e.version_minor, 2);
  put_le(out, e.version_major, 2);
  put_le(out, e.sm, 4);
  put_le(out, 0, 4);
  put_le(out, 0, 4);
  put_le(out, e.flags, 8);
  put_le(out, 0, 8);
  put_le(out, 0, 8);
  out.insert(out.end(), e.extension.begin(), e.extension.end());
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

// A fatbin container holding `entries` (already laid out by entry_bytes()).
inline ByteVector fatbin_bytes(const std::vector<ByteVector>& entries) {
  ByteVector body;
  for (const ByteVector& e : entries) body.insert(body.end(), e.begin(), e.end());
  ByteVector out;
  put_le(out, 0xBA55ED50, 4);
  put_le(out, 1, 2);
  put_le(out, 16, 2);
  put_le(out, body.size(), 8);
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

// Bytes a zstd payload starts with: what the reader must not look into.
inline ByteVector zstd_payload() {
  return {std::byte{0x28}, std::byte{0xb5}, std::byte{0x2f}, std::byte{0xfd},
          std::byte{0x60}, std::byte{0x00}, std::byte{0x01}, std::byte{0x02}};
}

inline Bytes as_bytes(const ByteVector& v) {
  return Bytes(v.data(), v.size());
}

}  // namespace cudagate::scan::testing

// The ELF reader: the sections and names of well-formed files, each malformed
// header refused with its place, fatbin sections chosen as cuobjdump chooses
// them, and a cubin's architecture from e_flags and `.nv.compat`.
#include "scan/elf_file.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/scan/scan_bytes.h"

namespace cudagate::scan {
namespace {

using testing::as_bytes;
using testing::ByteVector;
using testing::cubin_bytes;
using testing::elf_bytes;
using testing::ElfSpec;
using testing::set_le;

TEST(ElfFile, ReadsSectionsAndTheirNames) {
  ElfSpec spec;
  spec.sections = {{".text", ByteVector(5, std::byte{1})},
                   {".nv_fatbin", ByteVector(24, std::byte{2})},
                   {".bss", ByteVector(100), 8}};
  const ByteVector file = elf_bytes(spec);
  auto elf = read_elf(as_bytes(file));
  ASSERT_TRUE(elf) << elf.error().str();
  EXPECT_EQ(elf->machine, 62);
  ASSERT_EQ(elf->sections.size(), 5U);
  EXPECT_EQ(elf->sections[1].name, ".text");
  EXPECT_EQ(elf->sections[2].name, ".nv_fatbin");
  EXPECT_EQ(elf->sections[4].name, ".shstrtab");
  auto fatbin = section_bytes(as_bytes(file), elf->sections[2]);
  ASSERT_TRUE(fatbin) << fatbin.error().str();
  EXPECT_EQ(fatbin->size(), 24U);
  EXPECT_EQ((*fatbin)[0], std::byte{2});
  auto bss = section_bytes(as_bytes(file), elf->sections[3]);
  ASSERT_TRUE(bss);
  EXPECT_TRUE(bss->empty()) << "SHT_NOBITS has no bytes in the file";
}

TEST(ElfFile, RefusesMalformedHeadersWithTheirPlace) {
  const ByteVector good = elf_bytes(ElfSpec{.sections = {{".nv_fatbin", ByteVector(8)}}});
  struct Row {
    std::string name;
    ByteVector bytes;
    std::string error;
  };
  auto with = [&](auto change) {
    ByteVector bytes = good;
    change(bytes);
    return bytes;
  };
  const std::vector<Row> rows = {
      {"not ELF", testing::text_bytes("#!/bin/sh\necho hello\n"),
       "ELF header: not an ELF file (no \\x7fELF magic)"},
      {"truncated header", ByteVector(good.begin(), good.begin() + 40),
       "ELF header: truncated: 40 bytes, the 64-bit header needs 64"},
      {"32-bit", with([](ByteVector& b) { b[4] = std::byte{1}; }),
       "ELF header: a 32-bit ELF file: only 64-bit files are read"},
      {"big-endian", with([](ByteVector& b) { b[5] = std::byte{2}; }),
       "ELF header: a big-endian ELF file: only little-endian is read"},
      {"section table beyond the file", with([](ByteVector& b) { set_le(b, 40, 1U << 20, 8); }),
       "ELF header: section table of 3 entries at 0x100000 runs past the file's "},
      {"odd section header size", with([](ByteVector& b) { set_le(b, 58, 40, 2); }),
       "ELF header: section header size 40, expected 64"},
      {"names index past the table", with([](ByteVector& b) { set_le(b, 62, 9, 2); }),
       "ELF header: section names index 9 is not below the section count 3"},
      {"too many sections", with([](ByteVector& b) { set_le(b, 60, 0xff00, 2); }),
       "ELF header: section table of 65280 entries at "},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    auto elf = read_elf(as_bytes(row.bytes));
    ASSERT_FALSE(elf);
    EXPECT_EQ(elf.error().str().substr(0, row.error.size()), row.error) << elf.error().str();
  }
}

TEST(ElfFile, LimitsTheSectionCount) {
  const ByteVector file = elf_bytes(ElfSpec{.sections = {{".a", {}}, {".b", {}}, {".c", {}}}});
  auto elf = read_elf(as_bytes(file), ScanLimits{.max_sections = 4});
  ASSERT_FALSE(elf);
  EXPECT_EQ(elf.error().str(), "ELF header: 5 sections, more than the limit of 4");
}

TEST(ElfFile, RefusesANameOutsideItsTable) {
  ByteVector file = elf_bytes(ElfSpec{.sections = {{".nv_fatbin", ByteVector(8)}}});
  const std::size_t shoff = static_cast<std::size_t>(*read_le<std::uint64_t>(as_bytes(file), 40));
  set_le(file, shoff + 64, 5000, 4);  // section 1's sh_name, after the null section
  auto elf = read_elf(as_bytes(file));
  ASSERT_FALSE(elf);
  EXPECT_EQ(elf.error().str(),
            "section header 1: name offset 5000 is outside the section names table of 22 bytes");
}

TEST(ElfFile, KeepsASectionBeyondTheFileAndRefusesItsBytes) {
  ByteVector file = elf_bytes(ElfSpec{.sections = {{".nv_fatbin", ByteVector(8)}}});
  const std::size_t shoff = static_cast<std::size_t>(*read_le<std::uint64_t>(as_bytes(file), 40));
  set_le(file, shoff + 64 + 24, 0x7fffffff00ULL, 8);  // section 1's sh_offset
  auto elf = read_elf(as_bytes(file));
  ASSERT_TRUE(elf) << elf.error().str();
  auto bytes = section_bytes(as_bytes(file), elf->sections[1]);
  ASSERT_FALSE(bytes);
  EXPECT_EQ(bytes.error().str(), ".nv_fatbin: 8 bytes at 0x7fffffff00 run past the file's " +
                                     std::to_string(file.size()) + " bytes");
}

TEST(ElfFile, ChoosesTheLoadedFatbinsOverTheRelocatableOnes) {
  struct Row {
    std::vector<std::string> sections;
    std::vector<std::string> chosen;
  };
  const std::vector<Row> rows = {
      {{".text", ".nv_fatbin", "__nv_relfatbin"}, {".nv_fatbin"}},
      {{"__nv_relfatbin", ".nvFatBinSegment"}, {"__nv_relfatbin"}},
      {{".nv_fatbin", ".data", ".nv_fatbin"}, {".nv_fatbin", ".nv_fatbin"}},
      {{".text", ".nvFatBinSegment"}, {}},
  };
  for (const Row& row : rows) {
    ElfSpec spec;
    for (const std::string& name : row.sections) spec.sections.push_back({name, ByteVector(8)});
    const ByteVector file = elf_bytes(spec);
    auto elf = read_elf(as_bytes(file));
    ASSERT_TRUE(elf) << elf.error().str();
    std::vector<std::string> chosen;
    for (const ElfSection* section : fatbin_sections(*elf)) chosen.push_back(section->name);
    EXPECT_EQ(chosen, row.chosen);
  }
}

TEST(ElfFile, ReadsACubinsArchitecture) {
  struct Row {
    std::string name;
    ByteVector cubin;
    std::string arch;
  };
  auto abi7 = [](std::uint32_t flags) {
    return elf_bytes(ElfSpec{.machine = 190, .flags = flags, .abi_version = 7});
  };
  auto abi8 = [](std::uint32_t flags, std::vector<testing::SectionSpec> sections = {}) {
    return elf_bytes(
        ElfSpec{.machine = 190, .flags = flags, .abi_version = 8, .sections = std::move(sections)});
  };
  const std::vector<Row> rows = {
      // e_flags as ptxas 12.9 wrote them for ABI version 7 and 8.
      {"ABI 7 sm_80", abi7(0x500550), "8.0"},
      {"ABI 7 sm_90a", abi7(0x5a0d5a), "9.0a"},
      {"ABI 8 sm_100a from e_flags", abi8(0x600640a), "10.0a"},
      // nvcc 13.5: the same e_flags for sm_90 and sm_90a; `.nv.compat` tells.
      {"ABI 8 sm_75", cubin_bytes(75), "7.5"},
      {"ABI 8 sm_90a from .nv.compat", cubin_bytes(90, 1), "9.0a"},
      {"ABI 8 sm_90 with .nv.compat 0", cubin_bytes(90, 0), "9.0"},
      {"ABI 8 sm_121a", cubin_bytes(121, 1), "12.1a"},
      {".nv.compat outranks e_flags", abi8(0x600640a, {{".nv.compat", testing::compat_records(0)}}),
       "10.0"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    auto elf = read_elf(as_bytes(row.cubin));
    ASSERT_TRUE(elf) << elf.error().str();
    auto arch = cubin_arch(as_bytes(row.cubin), *elf);
    ASSERT_TRUE(arch) << arch.error().str();
    EXPECT_EQ(arch->str(), row.arch);
  }
}

TEST(ElfFile, RefusesACubinArchitectureThatIsNotThere) {
  const ByteVector host = elf_bytes(ElfSpec{});
  auto elf = read_elf(as_bytes(host));
  ASSERT_TRUE(elf);
  auto arch = cubin_arch(as_bytes(host), *elf);
  ASSERT_FALSE(arch);
  EXPECT_EQ(arch.error().str(), "ELF header: machine 62 is not EM_CUDA (190): not a cubin");

  const ByteVector no_sm = elf_bytes(ElfSpec{.machine = 190, .flags = 0x6000004, .abi_version = 8});
  elf = read_elf(as_bytes(no_sm));
  ASSERT_TRUE(elf);
  arch = cubin_arch(as_bytes(no_sm), *elf);
  ASSERT_FALSE(arch);
  EXPECT_EQ(arch.error().str(), "ELF header: e_flags 0x6000004 name no SM architecture");
}

TEST(ElfFile, ReadsNvCompatRecordsOfEveryFormat) {
  struct Row {
    ByteVector records;
    std::optional<bool> specific;
  };
  const std::vector<Row> rows = {
      {testing::compat_records(1), true},
      {testing::compat_records(0), false},
      {{std::byte{1}, std::byte{5}, std::byte{3}, std::byte{0x0d}, std::byte{1}, std::byte{1},
        std::byte{2}, std::byte{9}, std::byte{1}, std::byte{0}},
       true},
      {{std::byte{2}, std::byte{0x0c}, std::byte{0}, std::byte{0}}, std::nullopt},
      {{std::byte{9}, std::byte{9}, std::byte{1}, std::byte{0}}, std::nullopt},  // unknown format
      {{std::byte{4}, std::byte{0x0b}, std::byte{0xff}, std::byte{0xff}}, std::nullopt},
      {{std::byte{2}, std::byte{9}}, std::nullopt},  // cut before the value
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(nv_compat_arch_specific(as_bytes(rows[i].records)), rows[i].specific);
  }
}

}  // namespace
}  // namespace cudagate::scan

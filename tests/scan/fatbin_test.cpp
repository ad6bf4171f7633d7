// The fatbin reader: entries' kinds, architectures, suffixes and compression
// from the header flags nvcc 13.5 writes; cubins read where uncompressed;
// several containers in one section; concatenated entries; every malformed
// container, entry and limit reported with the section and offset.
#include "scan/fatbin.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/scan/scan_bytes.h"

namespace cudagate::scan {
namespace {

using testing::as_bytes;
using testing::ByteVector;
using testing::cubin_bytes;
using testing::entry_bytes;
using testing::EntrySpec;
using testing::fatbin_bytes;
using testing::set_le;
using testing::zstd_payload;

std::vector<std::string> fatbin_listing(const FatbinContents& contents) {
  std::vector<std::string> out;
  for (const FatbinEntry& e : contents.entries) {
    std::string line = e.kind == CodeKind::kPtx ? "ptx " : "sass ";
    line += e.arch.str();
    if (e.compression == Compression::kZstd) line += " zstd";
    if (e.compression == Compression::kLz4) line += " lz4";
    if (e.concatenated) line += " concatenated";
    out.push_back(line);
  }
  return out;
}

std::vector<std::string> fatbin_errors(const FatbinContents& contents) {
  std::vector<std::string> out;
  for (const Error& e : contents.errors) out.push_back(e.str());
  return out;
}

TEST(Fatbin, ReadsEntriesAsNvccWritesThem) {
  // Flags as nvcc 13.5 writes them: 0x11 64-bit Linux, 0x100000 `a`,
  // 0x200000 `f`, 0x8000 zstd, 0x2000 LZ4.
  const ByteVector fatbin = fatbin_bytes({
      entry_bytes({.kind = 2, .sm = 80, .flags = 0x11, .payload = cubin_bytes(80)}),
      entry_bytes({.kind = 1,
                   .sm = 80,
                   .flags = 0x8011,
                   .payload = zstd_payload(),
                   .version_major = 9,
                   .version_minor = 5}),
      entry_bytes({.kind = 2, .sm = 90, .flags = 0x100011, .payload = cubin_bytes(90, 1)}),
      entry_bytes({.kind = 2, .sm = 90, .flags = 0x102011, .payload = zstd_payload()}),
      entry_bytes({.kind = 2, .sm = 100, .flags = 0x1200011, .payload = cubin_bytes(100, 0)}),
      entry_bytes({.kind = 1, .sm = 100, .flags = 0x208011, .payload = zstd_payload()}),
      entry_bytes({.kind = 2, .sm = 121, .flags = 0x208011, .payload = zstd_payload()}),
      entry_bytes({.kind = 2, .sm = 75, .flags = 0x8011, .payload = zstd_payload()}),
  });
  const FatbinContents contents = read_fatbins(as_bytes(fatbin), ".nv_fatbin");
  EXPECT_EQ(fatbin_errors(contents), std::vector<std::string>{});
  EXPECT_EQ(fatbin_listing(contents),
            (std::vector<std::string>{"sass 8.0", "ptx 8.0 zstd", "sass 9.0a", "sass 9.0a lz4",
                                      "sass 10.0f", "ptx 10.0f zstd", "sass 12.1f zstd",
                                      "sass 7.5 zstd"}));
  ASSERT_EQ(contents.entries.size(), 8U);
  EXPECT_EQ(contents.entries[0].offset, 16U);
}

TEST(Fatbin, TakesTheSuffixOfACompressedCubinFromItsHeader) {
  // With flag 0x1000000 the header carries the cubin's `.nv.compat` at the
  // offset and length written at @64 (72, 16 here), padded to 8 past a NUL.
  auto compat_copy = [](int value) {
    ByteVector ext;
    testing::put_le(ext, 72, 4);
    testing::put_le(ext, 16, 4);
    ByteVector records = testing::compat_records(value);
    ext.insert(ext.end(), records.begin(), records.end());
    ext.resize(ext.size() + 8, std::byte{0});
    return ext;
  };
  struct Row {
    std::string name;
    EntrySpec entry;
    std::string arch;
  };
  const std::vector<Row> rows = {
      {"flag a", {.sm = 100, .flags = 0x1108011, .payload = zstd_payload()}, "10.0a"},
      {"compat copy says a",
       {.sm = 100, .flags = 0x1008011, .payload = zstd_payload(), .extension = compat_copy(1)},
       "10.0a"},
      {"compat copy says plain",
       {.sm = 120, .flags = 0x1008011, .payload = zstd_payload(), .extension = compat_copy(0)},
       "12.0"},
      {"ABI 1.8 without flags", {.sm = 90, .flags = 0x8011, .payload = zstd_payload()}, "9.0"},
      {"ABI 1.7, 9.0 without flags: needs decompression",
       {.sm = 90, .flags = 0x8011, .payload = zstd_payload(), .version_minor = 7},
       "9.0?"},
      {"ABI 1.7, 8.6: no a exists",
       {.sm = 86, .flags = 0x2011, .payload = zstd_payload(), .version_minor = 7},
       "8.6"},
      {"ABI 1.7 with flag a",
       {.sm = 90, .flags = 0x108011, .payload = zstd_payload(), .version_minor = 7},
       "9.0a"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const ByteVector fatbin = fatbin_bytes({entry_bytes(row.entry)});
    const FatbinContents contents = read_fatbins(as_bytes(fatbin), ".nv_fatbin");
    EXPECT_EQ(fatbin_errors(contents), std::vector<std::string>{});
    ASSERT_EQ(contents.entries.size(), 1U);
    EXPECT_EQ(contents.entries[0].arch.str(), row.arch);
  }
}

TEST(Fatbin, TakesAnUncompressedCubinsOwnArchitecture) {
  // cuobjdump lists what the cubin says; a header that disagrees is reported.
  const ByteVector fatbin = fatbin_bytes({
      entry_bytes({.sm = 86, .flags = 0x11, .payload = cubin_bytes(90)}),
      entry_bytes({.sm = 90, .flags = 0x100011, .payload = cubin_bytes(90, 0)}),
      entry_bytes({.sm = 90, .flags = 0x11, .payload = cubin_bytes(90, 1)}),
      entry_bytes({.sm = 80, .flags = 0x11, .payload = testing::text_bytes("not a cubin")}),
  });
  const FatbinContents contents = read_fatbins(as_bytes(fatbin), ".nv_fatbin");
  EXPECT_EQ(fatbin_listing(contents),
            (std::vector<std::string>{"sass 9.0", "sass 9.0", "sass 9.0a", "sass 8.0"}));
  const std::vector<std::string> errors = fatbin_errors(contents);
  ASSERT_EQ(errors.size(), 4U);
  EXPECT_EQ(errors[0],
            ".nv_fatbin+0x10: the entry header says 8.6, its cubin 9.0: the cubin's "
            "is taken");
  EXPECT_NE(errors[1].find("the entry header says 9.0a, its cubin 9.0:"), std::string::npos)
      << errors[1];
  EXPECT_NE(errors[2].find("the entry header says 9.0, its cubin 9.0a:"), std::string::npos)
      << errors[2];
  EXPECT_NE(errors[3].find("its cubin: ELF header: not an ELF file"), std::string::npos)
      << errors[3];
}

TEST(Fatbin, ReadsContainersBackToBackAndSkipsZeroPadding) {
  ByteVector section = fatbin_bytes({entry_bytes({.sm = 80, .payload = cubin_bytes(80)})});
  section.resize(section.size() + 8, std::byte{0});
  const ByteVector second = fatbin_bytes(
      {entry_bytes({.kind = 1, .sm = 86, .flags = 0x8011, .payload = zstd_payload()})});
  const std::size_t second_at = section.size();
  section.insert(section.end(), second.begin(), second.end());
  section.resize(section.size() + 16, std::byte{0});
  const FatbinContents contents = read_fatbins(as_bytes(section), "__nv_relfatbin");
  EXPECT_EQ(fatbin_errors(contents), std::vector<std::string>{});
  EXPECT_EQ(fatbin_listing(contents), (std::vector<std::string>{"sass 8.0", "ptx 8.6 zstd"}));
  EXPECT_EQ(contents.entries[1].offset, second_at + 16);
}

TEST(Fatbin, ReadsConcatenatedEntries) {
  // nvcc --concat: one compressed payload, a table of the cubins' headers in
  // the entry header (as dumped from nvcc 13.5's output).
  ByteVector table;
  auto sub = [&](std::uint32_t sm, std::uint64_t flags, std::uint32_t offset, bool compat) {
    ByteVector header = entry_bytes({.sm = sm, .flags = flags});
    header.resize(64);
    set_le(header, 4, offset, 4);
    set_le(header, 8, 3112, 8);
    if (compat) {
      testing::put_le(header, 72, 4);
      testing::put_le(header, 16, 4);
      ByteVector records = testing::compat_records(0);
      header.insert(header.end(), records.begin(), records.end());
      header.resize(header.size() + 8, std::byte{0});  // 72 + 16 + NUL, padded to 8: 96
    }
    table.insert(table.end(), header.begin(), header.end());
  };
  sub(75, 0x11, 0, false);
  sub(90, 0x100011, 3112, false);
  sub(100, 0x1200011, 6224, true);
  ByteVector extension;
  testing::put_le(extension, 3, 4);
  testing::put_le(extension, table.size() + 8, 4);
  extension.insert(extension.end(), table.begin(), table.end());
  ByteVector concatenated = entry_bytes({.kind = 0x100,
                                         .sm = 0,
                                         .flags = 0x8011,
                                         .payload = zstd_payload(),
                                         .version_major = 0,
                                         .version_minor = 1,
                                         .extension = extension});
  const ByteVector fatbin = fatbin_bytes(
      {entry_bytes({.kind = 1, .sm = 90, .flags = 0x108011, .payload = zstd_payload()}),
       concatenated});
  const FatbinContents contents = read_fatbins(as_bytes(fatbin), ".nv_fatbin");
  EXPECT_EQ(fatbin_errors(contents), std::vector<std::string>{});
  EXPECT_EQ(
      fatbin_listing(contents),
      (std::vector<std::string>{"ptx 9.0a zstd", "sass 7.5 zstd concatenated",
                                "sass 9.0a zstd concatenated", "sass 10.0f zstd concatenated"}));

  // A table that claims a fourth cubin is cut where its bytes end.
  ByteVector short_table = concatenated;
  set_le(short_table, 64, 4, 4);
  const FatbinContents cut = read_fatbins(as_bytes(fatbin_bytes({short_table})), ".nv_fatbin");
  EXPECT_EQ(fatbin_listing(cut),
            (std::vector<std::string>{"sass 7.5 zstd concatenated", "sass 9.0a zstd concatenated",
                                      "sass 10.0f zstd concatenated"}));
  EXPECT_EQ(fatbin_errors(cut),
            std::vector<std::string>{
                ".nv_fatbin+0x138: truncated header of cubin 3 of 4 in a concatenated entry"});
}

TEST(Fatbin, ReportsMalformedContainersWithSectionAndOffset) {
  const ByteVector good = fatbin_bytes({entry_bytes({.sm = 80, .payload = cubin_bytes(80)})});
  auto with = [&](auto change) {
    ByteVector bytes = good;
    change(bytes);
    return bytes;
  };
  struct Row {
    std::string name;
    ByteVector bytes;
    std::string error;
  };
  const std::vector<Row> rows = {
      {"truncated container header", ByteVector(good.begin(), good.begin() + 10),
       ".nv_fatbin+0x0: truncated fatbin header: 10 bytes, 16 needed"},
      {"wrong magic", with([](ByteVector& b) { b[0] = std::byte{0x51}; }),
       ".nv_fatbin+0x0: expected the fatbin magic 0xba55ed50, found 0xba55ed51"},
      {"container past the section", with([](ByteVector& b) { set_le(b, 8, 1U << 30, 8); }),
       ".nv_fatbin+0x0: fatbin of 16+1073741824 bytes runs past the section's end"},
      {"container size overflowing", with([](ByteVector& b) { set_le(b, 8, ~0ULL, 8); }),
       ".nv_fatbin+0x0: fatbin of 16+18446744073709551615 bytes runs past the section's end"},
      {"container header size below 16", with([](ByteVector& b) { set_le(b, 6, 4, 2); }),
       ".nv_fatbin+0x0: fatbin of 4+"},
      {"entry payload past the container",
       with([](ByteVector& b) { set_le(b, 16 + 8, 1U << 20, 8); }),
       ".nv_fatbin+0x10: entry of 64+1048576 bytes runs past the fatbin's end"},
      {"entry header size below 64", with([](ByteVector& b) { set_le(b, 16 + 4, 8, 4); }),
       ".nv_fatbin+0x10: entry of 8+"},
      {"entry header size past the container",
       with([](ByteVector& b) { set_le(b, 16 + 4, 0xffffffff, 4); }),
       ".nv_fatbin+0x10: entry of 4294967295+"},
      {"truncated entry header", with([](ByteVector& b) {
         set_le(b, 8, 40, 8);
         b.resize(16 + 40);
       }),
       ".nv_fatbin+0x10: truncated entry header: 40 bytes left in the fatbin, 64 needed"},
      {"unknown kind", with([](ByteVector& b) { set_le(b, 16, 0x40, 2); }),
       ".nv_fatbin+0x10: entry of unknown kind 0x40 skipped"},
      {"architecture out of range", with([](ByteVector& b) { set_le(b, 16 + 28, 5000, 4); }),
       ".nv_fatbin+0x10: entry for architecture 5000 skipped"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const FatbinContents contents = read_fatbins(as_bytes(row.bytes), ".nv_fatbin");
    EXPECT_TRUE(contents.entries.empty());
    ASSERT_EQ(contents.errors.size(), 1U);
    const std::string error = contents.errors[0].str();
    EXPECT_EQ(error.substr(0, row.error.size()), row.error) << error;
  }
}

TEST(Fatbin, KeepsWhatWasReadBeforeAMalformedContainer) {
  ByteVector section = fatbin_bytes({entry_bytes({.sm = 80, .payload = cubin_bytes(80)})});
  const std::size_t bad_at = section.size();
  const ByteVector text = testing::text_bytes("garbage!");
  section.insert(section.end(), text.begin(), text.end());
  const FatbinContents contents = read_fatbins(as_bytes(section), "__nv_relfatbin");
  EXPECT_EQ(fatbin_listing(contents), std::vector<std::string>{"sass 8.0"});
  EXPECT_EQ(fatbin_errors(contents),
            std::vector<std::string>{"__nv_relfatbin+" + hex(bad_at) +
                                     ": truncated fatbin header: 8 bytes, 16 needed"});
}

TEST(Fatbin, StopsAtTheEntryLimit) {
  std::vector<ByteVector> entries;
  for (int i = 0; i < 5; ++i) {
    entries.push_back(
        entry_bytes({.kind = 1, .sm = 80, .flags = 0x8011, .payload = zstd_payload()}));
  }
  const ByteVector fatbin = fatbin_bytes(entries);
  const FatbinContents contents =
      read_fatbins(as_bytes(fatbin), ".nv_fatbin", ScanLimits{.max_entries = 3});
  EXPECT_EQ(contents.entries.size(), 3U);
  const std::uint64_t fourth = 16 + 3 * (64 + 8);
  EXPECT_EQ(fatbin_errors(contents),
            std::vector<std::string>{".nv_fatbin+" + hex(fourth) +
                                     ": more than the limit of 3 fatbin entries: the rest is not "
                                     "read"});
}

TEST(Fatbin, ReadsNothingFromAnEmptySection) {
  const FatbinContents contents = read_fatbins(Bytes{}, ".nv_fatbin");
  EXPECT_TRUE(contents.entries.empty());
  EXPECT_TRUE(contents.errors.empty());
}

}  // namespace
}  // namespace cudagate::scan

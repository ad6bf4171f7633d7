// The tar reader against GNU tar's own archives in the ustar, GNU and PAX
// formats (long names, links, directories, sizes around the block), read in
// pieces of any size, and against headers built byte by byte for what tar
// does not write: base-256 sizes, broken checksums, names that leave the
// root, streams cut short, limits.
#include "scan/tar_reader.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tests/support/layer_tools.h"

namespace cudagate::scan {
namespace {

using test_support::LayerWorkdir;
using test_support::pieces_of;

// What a visitor saw of a stream: each member as "type size [-> link]", its
// content, and the problems.
struct TarSeen : TarVisitor {
  std::map<std::string, std::string> members;
  std::map<std::string, std::string> contents;
  std::vector<std::string> problems;
  std::string current;
  bool want_content = true;

  bool on_entry(const TarEntry& entry) override {
    static constexpr const char* kTypes[] = {"file", "dir", "symlink", "hardlink", "other"};
    std::string line =
        std::string(kTypes[static_cast<int>(entry.type)]) + " " + std::to_string(entry.size);
    if (!entry.link.empty()) line += " -> " + entry.link;
    EXPECT_FALSE(members.contains(entry.path)) << entry.path;
    members[entry.path] = line;
    current = entry.path;
    if (want_content) contents[entry.path];
    return want_content;
  }
  void on_content(std::span<const std::byte> piece) override {
    contents[current].append(reinterpret_cast<const char*>(piece.data()), piece.size());
  }
  void on_entry_end() override { current.clear(); }
  void on_problem(const Error& problem) override { problems.push_back(problem.str()); }
};

std::optional<Error> read_tar(std::span<const std::byte> stream, std::size_t piece, TarSeen& seen,
                              TarLimits limits = {}) {
  TarReader reader(seen, limits);
  for (const auto part : pieces_of(stream, piece)) {
    if (auto error = reader.feed(part)) return error;
  }
  return reader.finish();
}

class TarFormats : public ::testing::Test {
 protected:
  void SetUp() override {
    work_.write("root/usr/lib/libcudart.so.12.4.127", std::string(513, 'x'));
    work_.write("root/usr/lib/empty", "");
    work_.write("root/usr/lib/block", std::string(512, 'b'));
    deep_ = "root/opt/" + std::string(60, 'd') + "/" + std::string(70, 'e') + "/" +
            std::string(40, 'f') + "/libflash_attn_cuda.so";
    work_.write(deep_, "flash");
    work_.run(
        "mkdir -p root/empty-dir && ln -s libcudart.so.12.4.127 root/usr/lib/libcudart.so.12"
        " && ln root/usr/lib/empty root/usr/lib/hard");
  }
  LayerWorkdir work_;
  std::string deep_;
};

TEST_F(TarFormats, EveryFormatReadsTheSameInAnyPieces) {
  const std::string deep = deep_.substr(5);  // without "root/"
  const std::map<std::string, std::string> want = {
      {"usr", "dir 0"},
      {"usr/lib", "dir 0"},
      {"usr/lib/libcudart.so.12.4.127", "file 513"},
      {"usr/lib/libcudart.so.12", "symlink 0 -> libcudart.so.12.4.127"},
      {"usr/lib/empty", "file 0"},
      {"usr/lib/hard", "hardlink 0 -> usr/lib/empty"},
      {"usr/lib/block", "file 512"},
      {"opt", "dir 0"},
      {"empty-dir", "dir 0"},
  };
  for (const char* format : {"gnu", "ustar", "pax"}) {
    // --sort and --hard-dereference off: tar writes the second name of the
    // inode as a hard link.
    work_.run(std::string("tar --format=") + format + " --sort=name -C root -cf " + format +
              ".tar usr opt empty-dir");
    const auto stream = work_.read(std::string(format) + ".tar");
    for (const std::size_t piece : {std::size_t{1}, std::size_t{511}, std::size_t{65536}}) {
      TarSeen seen;
      const auto error = read_tar(stream, piece, seen);
      ASSERT_FALSE(error) << format << ": " << error->str();
      for (const auto& [path, line] : want) {
        EXPECT_EQ(seen.members[path], line) << format << " " << path << " in pieces of " << piece;
      }
      EXPECT_EQ(seen.members[deep], "file 5") << format;
      EXPECT_EQ(seen.contents[deep], "flash") << format;
      EXPECT_EQ(seen.contents["usr/lib/libcudart.so.12.4.127"], std::string(513, 'x')) << format;
      EXPECT_EQ(seen.contents["usr/lib/block"], std::string(512, 'b')) << format;
      EXPECT_TRUE(seen.problems.empty()) << format;
    }
  }
}

TEST_F(TarFormats, LeadingDotSlashAndSkippedContent) {
  work_.run("tar --format=gnu -C root -cf dot.tar ./usr/lib/block ./usr/lib/empty");
  TarSeen seen;
  seen.want_content = false;
  ASSERT_FALSE(read_tar(work_.read("dot.tar"), 4096, seen));
  EXPECT_EQ(seen.members["usr/lib/block"], "file 512");
  EXPECT_TRUE(seen.contents.empty());
}

// A header built field by field, its checksum right unless told otherwise.
struct Header {
  std::string name = {};
  char type = '0';
  std::uint64_t size = 0;
  bool base256 = false;
  std::string link = {};
  bool break_checksum = false;
};

void append_header(std::vector<std::byte>& out, const Header& h) {
  std::byte block[512]{};
  const auto put = [&](std::size_t at, const std::string& text) {
    std::memcpy(block + at, text.data(), text.size());
  };
  put(0, h.name);
  put(100, "0000644");
  if (h.base256) {
    block[124] = std::byte{0x80};
    for (int i = 0; i < 8; ++i) block[135 - i] = static_cast<std::byte>((h.size >> (8 * i)) & 0xff);
  } else {
    char size[12];
    std::snprintf(size, sizeof size, "%011llo", static_cast<unsigned long long>(h.size));
    put(124, size);
  }
  block[156] = static_cast<std::byte>(h.type);
  put(157, h.link);
  put(257, std::string("ustar\0"
                       "00",
                       8));
  std::memset(block + 148, ' ', 8);
  unsigned sum = 0;
  for (const std::byte b : block) sum += std::to_integer<unsigned>(b);
  if (h.break_checksum) ++sum;
  char checksum[8];
  std::snprintf(checksum, sizeof checksum, "%06o", sum);
  std::memcpy(block + 148, checksum, 7);
  out.insert(out.end(), block, block + 512);
}

void append_content(std::vector<std::byte>& out, const std::string& content) {
  for (const char c : content) out.push_back(static_cast<std::byte>(c));
  out.resize(out.size() + (512 - content.size() % 512) % 512);
}

void append_end(std::vector<std::byte>& out) {
  out.resize(out.size() + 1024);
}

TEST(TarReader, Base256SizesAndPaxRecords) {
  std::vector<std::byte> tar;
  append_header(tar, {.name = "big", .size = 5, .base256 = true});
  append_content(tar, "12345");
  const std::string long_path = "usr/lib/" + std::string(200, 'p') + "/libtorch_cuda.so";
  const std::string record = " path=" + long_path + "\n";
  // The record's length counts its own digits.
  std::string pax = std::to_string(record.size() + 3) + record;
  ASSERT_EQ(pax.size(), std::stoul(pax));
  pax += "10 size=3\n";
  append_header(tar, {.name = "PaxHeaders/x", .type = 'x', .size = pax.size()});
  append_content(tar, pax);
  append_header(tar, {.name = "short-name", .size = 999});  // PAX's size wins
  append_content(tar, "abc");
  append_header(tar, {.name = "pax_global_header", .type = 'g', .size = 11});
  append_content(tar, "11 path=zz\n");
  append_header(tar, {.name = "after-global", .size = 0});
  append_end(tar);
  TarSeen seen;
  const auto error = read_tar(tar, 100, seen);
  ASSERT_FALSE(error) << error->str();
  EXPECT_EQ(seen.contents["big"], "12345");
  EXPECT_EQ(seen.members[long_path], "file 3");
  EXPECT_EQ(seen.contents[long_path], "abc");
  EXPECT_EQ(seen.members["after-global"], "file 0");
  EXPECT_EQ(seen.members.size(), 3U);
}

TEST(TarReader, NamesLeavingTheRootAreLeftOutAndTheStreamGoesOn) {
  std::vector<std::byte> tar;
  append_header(tar, {.name = "../etc/ld.so.preload", .size = 4});
  append_content(tar, "evil");
  append_header(tar, {.name = "usr/../../x", .size = 0});
  append_header(tar, {.name = "./", .type = '5'});  // the root: silently no member
  append_header(tar, {.name = "./usr//lib/./libcuda.so.1/", .size = 1});
  append_content(tar, "c");
  append_end(tar);
  TarSeen seen;
  ASSERT_FALSE(read_tar(tar, 512, seen));
  ASSERT_EQ(seen.problems.size(), 2U);
  EXPECT_EQ(seen.problems[0],
            "tar member at offset 0x0: the name \"../etc/ld.so.preload\" leaves the image's "
            "root; left out");
  EXPECT_TRUE(seen.problems[1].starts_with("tar member at offset 0x400: "));
  EXPECT_EQ(seen.contents["usr/lib/libcuda.so.1"], "c");
  EXPECT_EQ(seen.members.size(), 1U);
}

TEST(TarReader, BrokenStreamsAreErrorsAtTheirOffset) {
  struct Row {
    std::string name;
    std::vector<std::byte> tar;
    std::string error;
    TarLimits limits = {};
  };
  std::vector<Row> rows;
  {
    Row row{"checksum",
            {},
            "tar member at offset 0x400: not a tar header (its checksum does not "
            "match)"};
    append_header(row.tar, {.name = "a", .size = 1});
    append_content(row.tar, "a");
    append_header(row.tar, {.name = "b", .break_checksum = true});
    rows.push_back(row);
  }
  {
    Row row{"cut in a member", {}, "tar member at offset 0x0: the stream ends inside the member"};
    append_header(row.tar, {.name = "a", .size = 1000});
    row.tar.resize(row.tar.size() + 600);
    rows.push_back(row);
  }
  {
    Row row{"cut in a header", {}, "tar member at offset 0x200: the stream ends inside a header"};
    append_header(row.tar, {.name = "a"});
    row.tar.resize(row.tar.size() + 100, std::byte{'x'});
    rows.push_back(row);
  }
  {
    Row row{"member after a zero block",
            {},
            "tar member at offset 0x400: a member follows a zero block"};
    append_header(row.tar, {.name = "a"});
    row.tar.resize(row.tar.size() + 512);
    append_header(row.tar, {.name = "b"});
    rows.push_back(row);
  }
  {
    Row row{"too many members", {}, "tar member at offset 0x400: more than 2 members"};
    for (const char* name : {"a", "b", "c"}) append_header(row.tar, {.name = name});
    row.limits.max_entries = 2;
    rows.push_back(row);
  }
  {
    Row row{"long name over the limit",
            {},
            "tar member at offset 0x0: a long name or PAX header of 600 bytes, over the limit of "
            "512"};
    append_header(row.tar, {.name = "././@LongLink", .type = 'L', .size = 600});
    row.limits.max_meta_bytes = 512;
    rows.push_back(row);
  }
  {
    Row row{"long name without its member",
            {},
            "tar member at offset 0x0: the stream ends after a long name or PAX header, before its "
            "member"};
    append_header(row.tar, {.name = "././@LongLink", .type = 'L', .size = 4});
    append_content(row.tar, "abc");
    rows.push_back(row);
  }
  {
    Row row{"size not a number", {}, "tar member at offset 0x0: the size field is not a number"};
    append_header(row.tar, {.name = "a"});
    row.tar[124] = std::byte{'9'};
    // Checksum made right again for the changed byte.
    std::memset(row.tar.data() + 148, ' ', 8);
    unsigned sum = 0;
    for (std::size_t i = 0; i < 512; ++i) sum += std::to_integer<unsigned>(row.tar[i]);
    char checksum[8];
    std::snprintf(checksum, sizeof checksum, "%06o", sum);
    std::memcpy(row.tar.data() + 148, checksum, 7);
    rows.push_back(row);
  }
  for (const Row& row : rows) {
    TarSeen seen;
    const auto error = read_tar(row.tar, 512, seen, row.limits);
    ASSERT_TRUE(error) << row.name;
    EXPECT_EQ(error->str(), row.error) << row.name;
  }
}

TEST(TarReader, EndsAtTwoZeroBlocksAndIgnoresThePadding) {
  std::vector<std::byte> tar;
  append_header(tar, {.name = "a", .size = 1});
  append_content(tar, "a");
  append_end(tar);
  tar.resize(tar.size() + 10240, std::byte{0x5a});  // not zero: past the end, never read
  TarSeen seen;
  EXPECT_FALSE(read_tar(tar, 1000, seen));
  EXPECT_EQ(seen.members.size(), 1U);
  // Input that ends on a member boundary without the end blocks is whole too.
  std::vector<std::byte> short_tar;
  append_header(short_tar, {.name = "b"});
  TarSeen seen_short;
  EXPECT_FALSE(read_tar(short_tar, 512, seen_short));
  EXPECT_EQ(seen_short.members["b"], "file 0");
}

TEST(TarReader, NormalisesMemberNames) {
  EXPECT_EQ(normalise_member_name("./usr/lib/"), "usr/lib");
  EXPECT_EQ(normalise_member_name("/usr//lib/./x"), "usr/lib/x");
  EXPECT_EQ(normalise_member_name("usr/local/../lib"), "usr/lib");
  EXPECT_EQ(normalise_member_name("./"), "");
  EXPECT_EQ(normalise_member_name(""), "");
  EXPECT_EQ(normalise_member_name("a/../.."), std::nullopt);
  EXPECT_EQ(normalise_member_name(".wh..wh..opq"), ".wh..wh..opq");
}

}  // namespace
}  // namespace cudagate::scan

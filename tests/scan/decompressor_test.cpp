// Layer decompression against the gzip and zstd tools' own output: any
// piece size gives the original bytes, members and frames run on, and a
// stream cut, corrupted or followed by garbage is an error naming the format.
#include "scan/decompressor.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tests/support/layer_tools.h"

namespace cudagate::scan {
namespace {

using test_support::compressible_text;
using test_support::LayerWorkdir;
using test_support::pieces_of;

std::span<const std::byte> bytes_of(const std::string& text) {
  return {reinterpret_cast<const std::byte*>(text.data()), text.size()};
}

struct Decoded {
  std::string out;
  std::optional<Error> error;
};

Decoded decode(LayerCompression compression, std::span<const std::byte> stream, std::size_t piece) {
  Decompressor decompressor(compression);
  Decoded decoded;
  const auto sink = [&](std::span<const std::byte> bytes) -> std::optional<Error> {
    EXPECT_LE(bytes.size(), Decompressor::kPieceBytes);
    decoded.out.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return std::nullopt;
  };
  for (const auto part : pieces_of(stream, piece)) {
    if ((decoded.error = decompressor.feed(part, sink))) return decoded;
  }
  decoded.error = decompressor.finish();
  if (!decoded.error) {
    EXPECT_EQ(decompressor.bytes_in(), stream.size());
    EXPECT_EQ(decompressor.bytes_out(), decoded.out.size());
  }
  return decoded;
}

TEST(Decompressor, SniffsTheMagicNumbers) {
  EXPECT_EQ(sniff_compression(bytes_of(std::string("\x1f\x8b\x08", 3))), LayerCompression::gzip);
  EXPECT_EQ(sniff_compression(bytes_of("\x28\xb5\x2f\xfd\x00")), LayerCompression::zstd);
  EXPECT_EQ(sniff_compression(bytes_of("usr/lib/libcudart.so")), LayerCompression::none);
  EXPECT_EQ(sniff_compression(bytes_of("\x1f")), LayerCompression::none);  // too short to tell
  EXPECT_EQ(sniff_compression({}), LayerCompression::none);
  EXPECT_EQ(to_string(LayerCompression::zstd), "zstd");
}

class DecompressorTools : public ::testing::Test {
 protected:
  void SetUp() override {
    original_ = compressible_text(3 * 1024 * 1024 + 17);
    work_.write("layer.tar", original_);
    work_.run("gzip -c -6 layer.tar > layer.tar.gz && zstd -q -c -3 layer.tar > layer.tar.zst");
  }
  LayerWorkdir work_;
  std::string original_;
};

TEST_F(DecompressorTools, AnyPieceSizeGivesTheOriginal) {
  for (const auto& [compression, file] : {std::pair{LayerCompression::gzip, "layer.tar.gz"},
                                          std::pair{LayerCompression::zstd, "layer.tar.zst"},
                                          std::pair{LayerCompression::none, "layer.tar"}}) {
    const auto stream = work_.read(file);
    EXPECT_EQ(sniff_compression(stream), compression) << file;
    for (const std::size_t piece : {std::size_t{1} << 20, std::size_t{4096}, std::size_t{7}}) {
      if (piece == 7 && compression != LayerCompression::none && stream.size() > 200'000) {
        // Seven-byte pieces over the whole stream: the first 200 KB suffice
        // to cross many inflate and zstd block boundaries.
        const Decoded head = decode(compression, std::span(stream).first(200'000), piece);
        ASSERT_TRUE(head.error) << file;  // cut, so it ends early
        EXPECT_EQ(head.out, original_.substr(0, head.out.size())) << file;
        continue;
      }
      const Decoded decoded = decode(compression, stream, piece);
      ASSERT_FALSE(decoded.error) << file << ": " << decoded.error->str();
      EXPECT_EQ(decoded.out.size(), original_.size()) << file << " in pieces of " << piece;
      EXPECT_TRUE(decoded.out == original_) << file << " in pieces of " << piece;
    }
  }
}

TEST_F(DecompressorTools, MembersAndFramesRunOn) {
  work_.write("second", "and a second member\n");
  work_.run("gzip -c second > second.gz && cat layer.tar.gz second.gz > two.gz");
  work_.run("zstd -q -c second > second.zst && cat layer.tar.zst second.zst > two.zst");
  for (const auto& [compression, file] : {std::pair{LayerCompression::gzip, "two.gz"},
                                          std::pair{LayerCompression::zstd, "two.zst"}}) {
    const Decoded decoded = decode(compression, work_.read(file), 65536);
    ASSERT_FALSE(decoded.error) << file << ": " << decoded.error->str();
    EXPECT_TRUE(decoded.out == original_ + "and a second member\n") << file;
  }
}

TEST_F(DecompressorTools, BrokenStreamsAreErrorsNamingTheFormat) {
  auto gz = work_.read("layer.tar.gz");
  auto zst = work_.read("layer.tar.zst");
  struct Row {
    std::string name;
    LayerCompression compression;
    std::vector<std::byte> stream;
    std::string error;
  };
  std::vector<Row> rows;
  rows.push_back({"gzip cut",
                  LayerCompression::gzip,
                  {gz.begin(), gz.end() - 9},
                  "gzip: the stream ends early"});
  rows.push_back({"zstd cut",
                  LayerCompression::zstd,
                  {zst.begin(), zst.end() - 9},
                  "zstd: the stream ends early"});
  auto garbage = gz;
  for (const char c : std::string("not gzip")) garbage.push_back(static_cast<std::byte>(c));
  rows.push_back({"gzip garbage after", LayerCompression::gzip, garbage,
                  "gzip: bytes after the last member are not another member"});
  rows.push_back({"gzip empty", LayerCompression::gzip, {}, "gzip: the stream is empty"});
  rows.push_back({"zstd empty", LayerCompression::zstd, {}, "zstd: the stream is empty"});
  auto bad_header = gz;
  bad_header[2] = std::byte{0x07};  // compression method 7: not deflate
  rows.push_back(
      {"gzip method", LayerCompression::gzip, bad_header, "gzip: unknown compression method"});
  auto bad_frame = zst;
  bad_frame[4] = std::byte{0xff};  // reserved frame header bits set
  rows.push_back({"zstd header", LayerCompression::zstd, bad_frame, "zstd: "});
  for (const Row& row : rows) {
    const Decoded decoded = decode(row.compression, row.stream, 4096);
    ASSERT_TRUE(decoded.error) << row.name;
    EXPECT_TRUE(decoded.error->str().starts_with(row.error))
        << row.name << ": " << decoded.error->str();
  }
}

TEST(Decompressor, ASinkErrorStopsTheStream) {
  Decompressor decompressor(LayerCompression::none);
  int calls = 0;
  const auto sink = [&](std::span<const std::byte>) -> std::optional<Error> {
    ++calls;
    return Error{"layer 2", "over the byte budget"};
  };
  const std::string text = "abc";
  auto error = decompressor.feed(bytes_of(text), sink);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->str(), "layer 2: over the byte budget");
  // Dead after it: the error again, the sink not called again.
  error = decompressor.feed(bytes_of(text), sink);
  ASSERT_TRUE(error);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(decompressor.finish());
}

}  // namespace
}  // namespace cudagate::scan

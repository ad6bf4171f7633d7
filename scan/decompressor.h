#pragma once
// Undoing a layer's compression as its bytes arrive: an image layer is a tar,
// uncompressed, gzip- or zstd-compressed (the OCI image spec's layer media
// types), and a scan reads it once, front to back, never whole. Each chunk
// fed in comes out as decompressed pieces handed to a sink, in order, with a
// fixed buffer in between (kPieceBytes), so memory does not grow with the
// layer.
//
// gzip as Go's compress/gzip reads it in its default multistream mode:
// members one after another are one stream, and bytes after the last member
// that do not begin another are an error. zstd: frames one after another,
// skippable frames skipped (libzstd's streaming decoder).
//
// Compression is sniffed from the first bytes rather than taken from the
// media type, as containerd does: registries and `docker save` archives name
// layers loosely.
//
// A Decompressor is one stream's, used from one thread at a time.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "types/expected.h"

namespace cudagate::scan {

enum class LayerCompression : unsigned char { none, gzip, zstd };

// "none", "gzip", "zstd".
[[nodiscard]] std::string_view to_string(LayerCompression compression);

// gzip (1f 8b) or zstd (28 b5 2f fd) by the magic number `first` starts
// with; anything else, a short prefix included, is none.
[[nodiscard]] LayerCompression sniff_compression(std::span<const std::byte> first);

class Decompressor {
 public:
  // The most bytes one piece handed to a sink holds.
  static constexpr std::size_t kPieceBytes = 64 * 1024;
  // Receives each decompressed piece; an Error stops the stream and is
  // returned by feed().
  using Sink = std::function<std::optional<Error>(std::span<const std::byte>)>;

  explicit Decompressor(LayerCompression compression);
  ~Decompressor();
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;

  // Decompresses `chunk` (any size, empty included), handing the output to
  // `sink`. An Error names the format and what is wrong ("gzip: invalid
  // block type"); after an error the stream is dead and feed() returns it
  // again.
  std::optional<Error> feed(std::span<const std::byte> chunk, const Sink& sink);

  // The input has ended: an Error when it ended inside a member or frame
  // ("gzip: the stream ends early").
  std::optional<Error> finish();

  // Bytes fed in and handed out so far.
  [[nodiscard]] std::uint64_t bytes_in() const { return bytes_in_; }
  [[nodiscard]] std::uint64_t bytes_out() const { return bytes_out_; }

 private:
  struct Codec;
  LayerCompression compression_;
  std::unique_ptr<Codec> codec_;
  std::optional<Error> failed_;
  std::uint64_t bytes_in_ = 0;
  std::uint64_t bytes_out_ = 0;
};

}  // namespace cudagate::scan

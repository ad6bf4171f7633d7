// gzip through zlib's inflate, zstd through libzstd's streaming decoder, each
// into one fixed output buffer.
#include "scan/decompressor.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <string>

namespace cudagate::scan {

struct Decompressor::Codec {
  std::array<std::byte, kPieceBytes> out{};
  // gzip
  z_stream z{};
  bool z_ready = false;
  bool in_member = false;  // inside a gzip member (or a zstd frame)
  std::uint64_t members = 0;
  // zstd
  ZSTD_DCtx* zstd = nullptr;
};

namespace {

constexpr unsigned char kGzipMagic[] = {0x1f, 0x8b};
constexpr unsigned char kZstdMagic[] = {0x28, 0xb5, 0x2f, 0xfd};

template <std::size_t N>
bool starts_with(std::span<const std::byte> bytes, const unsigned char (&magic)[N]) {
  if (bytes.size() < N) return false;
  for (std::size_t i = 0; i < N; ++i) {
    if (std::to_integer<unsigned char>(bytes[i]) != magic[i]) return false;
  }
  return true;
}

}  // namespace

std::string_view to_string(LayerCompression compression) {
  switch (compression) {
    case LayerCompression::none:
      return "none";
    case LayerCompression::gzip:
      return "gzip";
    case LayerCompression::zstd:
      return "zstd";
  }
  return "none";
}

LayerCompression sniff_compression(std::span<const std::byte> first) {
  if (starts_with(first, kGzipMagic)) return LayerCompression::gzip;
  if (starts_with(first, kZstdMagic)) return LayerCompression::zstd;
  return LayerCompression::none;
}

Decompressor::Decompressor(LayerCompression compression)
    : compression_(compression), codec_(std::make_unique<Codec>()) {
  if (compression_ == LayerCompression::gzip) {
    // 16 + MAX_WBITS: a gzip wrapper, not zlib's.
    if (inflateInit2(&codec_->z, 16 + MAX_WBITS) == Z_OK) {
      codec_->z_ready = true;
    } else {
      failed_ = Error{"gzip", "cannot start the decoder"};
    }
  } else if (compression_ == LayerCompression::zstd) {
    codec_->zstd = ZSTD_createDCtx();
    if (codec_->zstd == nullptr) failed_ = Error{"zstd", "cannot start the decoder"};
  }
}

Decompressor::~Decompressor() {
  if (codec_->z_ready) inflateEnd(&codec_->z);
  if (codec_->zstd != nullptr) ZSTD_freeDCtx(codec_->zstd);
}

std::optional<Error> Decompressor::feed(std::span<const std::byte> chunk, const Sink& sink) {
  if (failed_) return failed_;
  // zlib counts its input in a 32-bit uInt: a larger chunk goes in slices.
  constexpr std::size_t kMaxSlice = std::size_t{1} << 30;
  if (chunk.size() > kMaxSlice) {
    for (; !chunk.empty(); chunk = chunk.subspan(std::min(chunk.size(), kMaxSlice))) {
      if (auto error = feed(chunk.first(std::min(chunk.size(), kMaxSlice)), sink)) return error;
    }
    return std::nullopt;
  }
  bytes_in_ += chunk.size();
  const auto hand_out = [&](std::span<const std::byte> piece) -> std::optional<Error> {
    if (piece.empty()) return std::nullopt;
    bytes_out_ += piece.size();
    if (auto error = sink(piece)) failed_ = std::move(error);
    return failed_;
  };

  if (compression_ == LayerCompression::none) {
    while (!chunk.empty()) {
      const std::size_t n = std::min(chunk.size(), kPieceBytes);
      if (auto error = hand_out(chunk.first(n))) return error;
      chunk = chunk.subspan(n);
    }
    return std::nullopt;
  }

  Codec& c = *codec_;
  if (compression_ == LayerCompression::gzip) {
    // zlib's z_stream takes a non-const pointer but never writes the input.
    c.z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(chunk.data()));
    c.z.avail_in = static_cast<uInt>(chunk.size());
    // Until the input is used up and the last call left no output behind
    // (a full buffer may mean more is pending inside zlib).
    bool full = false;
    while (c.z.avail_in > 0 || full) {
      if (!c.in_member) {
        if (c.z.avail_in == 0) break;  // a member ended with the buffer full
        // Another member follows the last one (or this is the first).
        if (c.members > 0) inflateReset(&c.z);
        c.in_member = true;
      }
      c.z.next_out = reinterpret_cast<Bytef*>(c.out.data());
      c.z.avail_out = static_cast<uInt>(c.out.size());
      const int ret = inflate(&c.z, Z_NO_FLUSH);
      const std::size_t produced = c.out.size() - c.z.avail_out;
      full = c.z.avail_out == 0;
      if (ret != Z_OK && ret != Z_STREAM_END && ret != Z_BUF_ERROR) {
        const std::string why = c.z.msg != nullptr ? c.z.msg : "corrupt data";
        failed_ = Error{"gzip", c.members > 0 && why == "incorrect header check"
                                    ? "bytes after the last member are not another member"
                                    : why};
        return failed_;
      }
      if (auto error = hand_out(std::span(c.out).first(produced))) return error;
      if (ret == Z_STREAM_END) {
        c.in_member = false;
        ++c.members;
      } else if (ret == Z_BUF_ERROR && produced == 0) {
        break;  // needs more input than this chunk holds
      }
    }
    return std::nullopt;
  }

  ZSTD_inBuffer in{chunk.data(), chunk.size(), 0};
  bool full = true;
  while (in.pos < in.size || full) {
    ZSTD_outBuffer out{c.out.data(), c.out.size(), 0};
    const std::size_t ret = ZSTD_decompressStream(c.zstd, &out, &in);
    if (ZSTD_isError(ret) != 0U) {
      failed_ = Error{"zstd", ZSTD_getErrorName(ret)};
      return failed_;
    }
    if (in.size > 0) c.members = std::max<std::uint64_t>(c.members, 1);
    // 0: a frame is whole and flushed; more input may start another.
    c.in_member = ret != 0;
    full = out.pos == out.size;
    if (auto error = hand_out(std::span(c.out).first(out.pos))) return error;
    if (in.pos == in.size && !full) break;
  }
  return std::nullopt;
}

std::optional<Error> Decompressor::finish() {
  if (failed_) return failed_;
  if (compression_ == LayerCompression::none) return std::nullopt;
  const std::string format(to_string(compression_));
  if (codec_->members == 0 && !codec_->in_member) return Error{format, "the stream is empty"};
  if (codec_->in_member) return Error{format, "the stream ends early"};
  return std::nullopt;
}

}  // namespace cudagate::scan

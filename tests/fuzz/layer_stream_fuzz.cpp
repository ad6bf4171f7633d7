// Feeds arbitrary bytes to a layer's path: decompression (sniffed, as a scan
// does), the tar reader and the layered files, in pieces whose size the
// input's first byte chooses. Whatever the bytes, each member's content
// adds up to the size it announced, no path is empty or leaves the root,
// and the readers end with a value or an Error, never a crash.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "scan/decompressor.h"
#include "scan/layered_files.h"
#include "scan/tar_reader.h"

namespace {

using namespace cudagate;
using namespace cudagate::scan;

struct Checked : TarVisitor {
  LayeredFiles<std::uint64_t>& files;
  std::string path;
  std::uint64_t expected = 0;
  std::uint64_t got = 0;
  explicit Checked(LayeredFiles<std::uint64_t>& f) : files(f) {}
  bool on_entry(const TarEntry& entry) override {
    if (entry.path.empty() || entry.path.starts_with("/") || entry.path.starts_with("../")) {
      __builtin_trap();
    }
    path = entry.path;
    expected = entry.size;
    got = 0;
    return files.entry(entry.path, entry.type == TarEntry::Type::directory) &&
           entry.type == TarEntry::Type::file;
  }
  void on_content(std::span<const std::byte> piece) override { got += piece.size(); }
  void on_entry_end() override {
    if (got != expected) __builtin_trap();
    files.put(path, got);
  }
  void on_problem(const Error& problem) override {
    if (problem.message.empty()) __builtin_trap();
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t piece = 1 + data[0] % 97;
  const std::span<const std::byte> stream(reinterpret_cast<const std::byte*>(data + 1), size - 1);
  LayeredFiles<std::uint64_t> files;
  files.begin_layer();
  Checked visitor(files);
  TarLimits limits;
  limits.max_entries = 4096;
  limits.max_meta_bytes = 64 * 1024;
  TarReader tar(visitor, limits);
  Decompressor decompressor(sniff_compression(stream));
  const auto to_tar = [&](std::span<const std::byte> bytes) { return tar.feed(bytes); };
  std::optional<Error> error;
  for (std::size_t at = 0; at < stream.size() && !error; at += piece) {
    error = decompressor.feed(stream.subspan(at, std::min(piece, stream.size() - at)), to_tar);
  }
  if (!error) error = decompressor.finish();
  if (!error) error = tar.finish();
  if (error && error->message.empty()) __builtin_trap();
  files.end_layer();
  for (const auto& [path, bytes] : files.files()) {
    if (path.empty()) __builtin_trap();
  }
  return 0;
}

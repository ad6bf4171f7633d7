#pragma once
// Layers built the way image builders build them, for the scan tests: a
// directory tree in a temporary folder, packed with GNU tar in a format the
// test names, compressed with the gzip and zstd command-line tools, and read
// back as bytes. The tools are the machine's (scripts/install-deps.sh
// installs tar, gzip and zstd); a test that finds one missing fails with the
// command that failed.

#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace cudagate::test_support {

// A temporary folder, removed with everything in it when this goes.
class LayerWorkdir {
 public:
  LayerWorkdir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "cudagate-layer-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~LayerWorkdir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  LayerWorkdir(const LayerWorkdir&) = delete;
  LayerWorkdir& operator=(const LayerWorkdir&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

  // Writes `content` to `relative` (folders made as needed).
  void write(const std::string& relative, const std::string& content) const {
    const auto file = path_ / relative;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream out(file, std::ios::binary);
    out << content;
    if (!out) throw std::runtime_error("cannot write " + file.string());
  }

  // Runs `command` in this folder; throws with the command when it fails.
  void run(const std::string& command) const {
    const std::string line = "cd '" + path_.string() + "' && " + command;
    if (std::system(line.c_str()) != 0) throw std::runtime_error("failed: " + command);
  }

  // The bytes of `relative`.
  [[nodiscard]] std::vector<std::byte> read(const std::string& relative) const {
    std::ifstream in(path_ / relative, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + (path_ / relative).string());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto* begin = reinterpret_cast<const std::byte*>(text.data());
    return {begin, begin + text.size()};
  }

 private:
  std::filesystem::path path_;
};

// `bytes` cut into pieces of `piece` bytes (the last one shorter), as a
// stream arrives from a socket.
inline std::vector<std::span<const std::byte>> pieces_of(std::span<const std::byte> bytes,
                                                         std::size_t piece) {
  std::vector<std::span<const std::byte>> out;
  for (std::size_t at = 0; at < bytes.size(); at += piece) {
    out.push_back(bytes.subspan(at, std::min(piece, bytes.size() - at)));
  }
  return out;
}

// Text of `n` bytes that compresses as real files do: repeated words with a
// counter woven in, so no two kilobytes are alike.
inline std::string compressible_text(std::size_t n) {
  std::string out;
  out.reserve(n + 32);
  for (std::size_t i = 0; out.size() < n; ++i) {
    out += "libcudart.so.12 sm_" + std::to_string(70 + (i * 7) % 60) + " kernel_" +
           std::to_string(i) + (i % 5 == 0 ? "\n" : " ");
  }
  out.resize(n);
  return out;
}

}  // namespace cudagate::test_support

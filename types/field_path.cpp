// Field paths and places, joined piece by piece.
#include "types/field_path.h"

#include <string>

namespace cudagate {

std::string field_path(std::string_view path, std::string_view key) {
  std::string out(path);
  if (!out.empty()) out += '.';
  out += key;
  return out;
}

std::string index_path(std::string_view path, std::size_t index) {
  std::string out(path);
  out += '[';
  out += std::to_string(index);
  out += ']';
  return out;
}

std::string place(std::string_view source, int line, std::string_view path) {
  // Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, a false
  // positive) on `":" + std::to_string(line)`.
  std::string out(source);
  if (line > 0) {
    out += ':';
    out += std::to_string(line);
  }
  if (!path.empty()) {
    if (!out.empty()) out += ": ";
    out += path;
  }
  return out;
}

}  // namespace cudagate

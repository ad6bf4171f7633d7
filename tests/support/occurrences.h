#pragma once
// How many times a piece of text occurs in a rendered report, for the report
// tests that count rows, cells and escapes.

#include <cstddef>
#include <string>

namespace cudagate::test_support {

// Occurrences of `what` in `text`, overlapping ones included.
inline std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace cudagate::test_support

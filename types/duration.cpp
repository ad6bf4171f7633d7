// Go-style durations, read digit by digit.
#include "types/duration.h"

#include <cmath>
#include <cstddef>

namespace cudagate {

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  if (text == "0") return std::chrono::milliseconds{0};
  if (text.empty()) return std::nullopt;
  constexpr auto kMaxMs = static_cast<double>(kMaxDuration.count());
  double total = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t start = i;
    double whole = 0;
    int digits = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      whole = whole * 10 + (text[i] - '0');
      ++i;
      if (++digits > 12) return std::nullopt;
    }
    double fraction = 0;
    if (i < text.size() && text[i] == '.') {
      ++i;
      double scale = 0.1;
      int fdigits = 0;
      while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
        fraction += (text[i] - '0') * scale;
        scale /= 10;
        ++i;
        if (++fdigits > 9) return std::nullopt;
      }
      if (digits == 0 && fdigits == 0) return std::nullopt;
    } else if (digits == 0) {
      return std::nullopt;
    }
    if (i == start) return std::nullopt;
    double unit_ms = 0;
    if (text.substr(i, 2) == "ms") {
      unit_ms = 1;
      i += 2;
    } else if (i < text.size() && text[i] == 's') {
      unit_ms = 1000;
      ++i;
    } else if (i < text.size() && text[i] == 'm') {
      unit_ms = 60 * 1000;
      ++i;
    } else if (i < text.size() && text[i] == 'h') {
      unit_ms = 3600 * 1000;
      ++i;
    } else {
      return std::nullopt;
    }
    total += (whole + fraction) * unit_ms;
    if (total > kMaxMs) return std::nullopt;
  }
  return std::chrono::milliseconds{std::llround(total)};
}

}  // namespace cudagate

#pragma once
// Sums of counts that input chooses (resource requests, device counts):
// held at the ends of the int64 range rather than overflowing.

#include <cstdint>
#include <limits>

namespace cudagate {

// a + b, or INT64_MAX / INT64_MIN where the sum leaves the range. A pod that
// asks for more than any node has matches no node either way.
[[nodiscard]] constexpr std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<std::int64_t>::max()
               : std::numeric_limits<std::int64_t>::min();
}

}  // namespace cudagate

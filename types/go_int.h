#pragma once
// Decimal integers as Go's strconv.ParseInt(s, 10, 64) reads them, which is
// how Kubernetes reads the operands of the Gt and Lt operators of a label
// selector (k8s.io/apimachinery pkg/labels/selector.go) and of a node
// selector requirement (k8s.io/component-helpers
// scheduling/corev1/nodeaffinity): an optional sign, then one or more
// ASCII digits, within the int64 range. Nothing else: no spaces, no
// prefixes, no underscores.

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

namespace cudagate {

[[nodiscard]] constexpr std::optional<std::int64_t> parse_go_int64(std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  std::uint64_t magnitude = 0;
  constexpr std::uint64_t kLimit = std::uint64_t{1} << 63;  // |INT64_MIN|
  for (const char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (magnitude > (kLimit - digit) / 10) return std::nullopt;
    magnitude = magnitude * 10 + digit;
  }
  if (negative) {
    if (magnitude == kLimit) return std::numeric_limits<std::int64_t>::min();
    return -static_cast<std::int64_t>(magnitude);
  }
  if (magnitude == kLimit) return std::nullopt;
  return static_cast<std::int64_t>(magnitude);
}

}  // namespace cudagate

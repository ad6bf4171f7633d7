#pragma once
// Little-endian integers read from a byte span, bounds-checked: a read that
// would cross the span's end gives nothing instead of reading past it. Offsets
// and sizes come from the file itself, so every sum is checked for overflow.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace cudagate::scan {

using Bytes = std::span<const std::byte>;

// The `size` bytes at `offset`, or nothing when they do not all lie in `bytes`.
[[nodiscard]] inline std::optional<Bytes> sub_span(Bytes bytes, std::uint64_t offset,
                                                   std::uint64_t size) {
  if (offset > bytes.size() || size > bytes.size() - offset) return std::nullopt;
  return bytes.subspan(static_cast<std::size_t>(offset), static_cast<std::size_t>(size));
}

// The unsigned little-endian integer of type T at `offset`, or nothing.
template <class T>
[[nodiscard]] std::optional<T> read_le(Bytes bytes, std::uint64_t offset) {
  auto field = sub_span(bytes, offset, sizeof(T));
  if (!field) return std::nullopt;
  T value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    value |= static_cast<T>(static_cast<T>(std::to_integer<unsigned>((*field)[i])) << (8 * i));
  }
  return value;
}

// `value` rounded up to a multiple of 8, or nothing on overflow.
[[nodiscard]] inline std::optional<std::uint64_t> align8(std::uint64_t value) {
  if (value > UINT64_MAX - 7) return std::nullopt;
  return (value + 7) & ~std::uint64_t{7};
}

// `value` in hexadecimal with a 0x prefix, as offsets are shown in errors.
[[nodiscard]] inline std::string hex(std::uint64_t value) {
  static constexpr std::string_view kDigits = "0123456789abcdef";
  std::string text;
  do {
    text.insert(text.begin(), kDigits[value % 16]);
    value /= 16;
  } while (value != 0);
  return "0x" + text;
}

}  // namespace cudagate::scan

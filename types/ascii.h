#pragma once
// ASCII character classes and case folding, as the C library answers them
// in the "C" locale but without reading the locale: what Kubernetes names,
// image references, HTTP headers, YAML scalars and CUDA arch lists are made
// of. A byte above 0x7F is in no class and folds to itself.

#include <string>
#include <string_view>

namespace cudagate::ascii {

[[nodiscard]] constexpr bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
[[nodiscard]] constexpr bool is_lower(char c) {
  return c >= 'a' && c <= 'z';
}
[[nodiscard]] constexpr bool is_upper(char c) {
  return c >= 'A' && c <= 'Z';
}
[[nodiscard]] constexpr bool is_alpha(char c) {
  return is_lower(c) || is_upper(c);
}
[[nodiscard]] constexpr bool is_alnum(char c) {
  return is_alpha(c) || is_digit(c);
}
// [a-z0-9]: what DNS-1123 names and image repository paths are made of.
[[nodiscard]] constexpr bool is_lower_alnum(char c) {
  return is_lower(c) || is_digit(c);
}
[[nodiscard]] constexpr bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
[[nodiscard]] constexpr bool is_lower_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f');
}
// ' ', '\t', '\n', '\v', '\f', '\r' (isspace).
[[nodiscard]] constexpr bool is_space(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r');
}
// ' ' and '\t' (isblank): HTTP's optional whitespace.
[[nodiscard]] constexpr bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

[[nodiscard]] constexpr char to_lower(char c) {
  return is_upper(c) ? static_cast<char>(c - 'A' + 'a') : c;
}
[[nodiscard]] constexpr char to_upper(char c) {
  return is_lower(c) ? static_cast<char>(c - 'a' + 'A') : c;
}

[[nodiscard]] inline std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = to_lower(c);
  return out;
}
[[nodiscard]] inline std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = to_upper(c);
  return out;
}

// Equal but for the case of ASCII letters.
[[nodiscard]] constexpr bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (to_lower(a[i]) != to_lower(b[i])) return false;
  }
  return true;
}

}  // namespace cudagate::ascii

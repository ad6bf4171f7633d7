// One escaping for every message that shows input text, so that the same
// bad byte reads the same wherever it is reported.
#include "types/quote.h"

namespace cudagate {
namespace {

std::string escaped(std::string_view text, std::size_t max_bytes, bool escape_quotes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < max_bytes; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (escape_quotes && (c == '"' || c == '\\')) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > max_bytes) out += "...";
  return out;
}

}  // namespace

std::string printable(std::string_view text, std::size_t max_bytes) {
  return escaped(text, max_bytes, /*escape_quotes=*/false);
}

std::string quote(std::string_view text, std::size_t max_bytes) {
  return "\"" + escaped(text, max_bytes, /*escape_quotes=*/true) + "\"";
}

}  // namespace cudagate

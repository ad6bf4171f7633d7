#pragma once
// Writing JSON text straight into a string, for the responses and log lines
// of the request path: no intermediate document. Strings are escaped as
// nlohmann::json::dump() escapes them (ensure_ascii off): the two-character
// escapes for " \ \b \f \n \r \t, \u00XX (lower-case hex) for the other
// control characters, everything else as is. The caller passes valid UTF-8
// (valid_utf8() in admission_response.h makes it so).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cudagate {

inline void append_json_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  std::size_t run = 0;  // start of the bytes not yet copied
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(text.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += "\\u00";
        out += kHex[c >> 4U];
        out += kHex[c & 15U];
        break;
    }
  }
  out.append(text.data() + run, text.size() - run);
  out += '"';
}

inline void append_json_int(std::string& out, std::int64_t value) {
  out += std::to_string(value);
}

}  // namespace cudagate

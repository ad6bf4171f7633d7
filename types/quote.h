#pragma once
// Input text made safe to show in a one-line error message. Errors name what
// they found ("got \"12.x\""), and what they found may be anything: bytes
// that would garble a log line or a terminal are shown escaped, and a
// runaway value is cut.

#include <cstddef>
#include <string>
#include <string_view>

namespace cudagate {

// `text` with control and non-ASCII bytes written as \xHH, cut after
// `max_bytes` bytes with "..." appended.
[[nodiscard]] std::string printable(std::string_view text, std::size_t max_bytes = 64);

// `"text"`: printable(), with `"` and `\` escaped as well, in double quotes.
[[nodiscard]] std::string quote(std::string_view text, std::size_t max_bytes = 64);

}  // namespace cudagate

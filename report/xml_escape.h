#pragma once
// Escaping text for XML (JUnit) and HTML reports.

#include <string>
#include <string_view>

namespace cudagate {

// `text` with &, <, >, " and ' escaped, and what XML 1.0 does not allow
// (control characters other than tab and line breaks, invalid UTF-8,
// U+FFFE and U+FFFF) replaced by U+FFFD, so that it is safe both as
// element text and inside a quoted attribute.
[[nodiscard]] std::string xml_escape(std::string_view text);

}  // namespace cudagate

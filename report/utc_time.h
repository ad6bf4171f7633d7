#pragma once
// Unix time as text for the reports that print when they were made; the
// caller reads the clock, so that the reports stay pure values.

#include <cstdint>
#include <string>

namespace cudagate {

// ISO 8601 in UTC, to the second: 1764584444 -> "2025-12-01T10:20:44".
[[nodiscard]] std::string utc_time_text(std::int64_t seconds);

}  // namespace cudagate

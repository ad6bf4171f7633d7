#pragma once
// Durations as Kubernetes' and cudagate's own settings write them: Go's
// time.ParseDuration restricted to the units a setting needs, one or more
// <number><unit> with unit ms, s, m or h, the number possibly decimal
// ("1.5s", "1h30m", "500ms"); "0" alone is zero, as in Go. The policy file
// (coalescing, registry timeouts) and the command line's flags read
// durations here.
//
// Pure: no state, safe from any thread.

#include <chrono>
#include <optional>
#include <string_view>

namespace cudagate {

// Up to 100 days; anything longer is a typo, not a setting.
inline constexpr std::chrono::milliseconds kMaxDuration{100LL * 24 * 3600 * 1000};

// The duration `text` spells, rounded to the millisecond; nullopt when it
// is not one (no unit, an unknown unit, a sign, more than 12 whole or 9
// fractional digits in a number) or is longer than kMaxDuration.
[[nodiscard]] std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

}  // namespace cudagate

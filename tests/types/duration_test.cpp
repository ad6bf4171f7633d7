// Go-style durations: what Go's time.ParseDuration reads in the units a
// setting needs (src/time/format.go's ParseDuration cases), and what is
// refused.
#include "types/duration.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>

namespace cudagate {
namespace {

using std::chrono::milliseconds;

TEST(Duration, ReadsGoDurations) {
  struct Row {
    std::string text;
    long long ms;
  };
  const Row rows[] = {
      {"0", 0},
      {"0s", 0},
      {"500ms", 500},
      {"10s", 10'000},
      {"2m", 120'000},
      {"1h", 3'600'000},
      {"1h30m", 5'400'000},
      {"1m30s", 90'000},
      {"1.5s", 1'500},
      {".5s", 500},
      {"5.s", 5'000},
      {"1.0005s", 1'001},
      {"100ms1s", 1'100},  // units in any order, as Go allows
      {"2400h", 2400LL * 3'600'000},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(parse_duration(row.text), std::optional<milliseconds>(milliseconds(row.ms)))
        << row.text;
  }
}

TEST(Duration, RefusesWhatIsNoDuration) {
  for (const char* text : {"", "10", "s", "1x", "-1s", "+1s", "1 s", "1.s5", ".s", "1us", "1d",
                           "1234567890123s", "1.1234567890s", "2401h"}) {
    EXPECT_EQ(parse_duration(text), std::nullopt) << text;
  }
}

}  // namespace
}  // namespace cudagate

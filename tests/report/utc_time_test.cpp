// Unix seconds as UTC text, across leap years and the epoch.
#include "report/utc_time.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cudagate {
namespace {

TEST(UtcTime, Table) {
  const std::vector<std::pair<std::int64_t, std::string>> rows = {
      {0, "1970-01-01T00:00:00"},          {1764584444, "2025-12-01T10:20:44"},
      {951782400, "2000-02-29T00:00:00"},  {4107542399, "2100-02-28T23:59:59"},
      {4107542400, "2100-03-01T00:00:00"}, {-1, "1969-12-31T23:59:59"},
  };
  for (const auto& [seconds, text] : rows) EXPECT_EQ(utc_time_text(seconds), text) << seconds;
}

}  // namespace
}  // namespace cudagate

// Civil date and time from Unix seconds (Howard Hinnant's days-to-civil
// algorithm), with no time zone and no clock read.
#include "report/utc_time.h"

namespace cudagate {

std::string utc_time_text(std::int64_t seconds) {
  std::int64_t days = seconds / 86400;
  std::int64_t rest = seconds % 86400;
  if (rest < 0) {
    rest += 86400;
    --days;
  }
  days += 719468;
  const std::int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const std::int64_t doe = days - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  const std::int64_t day = doy - (153 * mp + 2) / 5 + 1;
  const std::int64_t month = mp < 10 ? mp + 3 : mp - 9;
  const std::int64_t year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  auto two = [](std::int64_t v) { return std::string(v < 10 ? "0" : "") + std::to_string(v); };
  return std::to_string(year) + "-" + two(month) + "-" + two(day) + "T" + two(rest / 3600) + ":" +
         two(rest % 3600 / 60) + ":" + two(rest % 60);
}

}  // namespace cudagate

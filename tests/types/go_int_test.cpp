// parse_go_int64 against what Go's strconv.ParseInt(s, 10, 64) gives
// (strconv/atoi.go): a sign, digits, the int64 range, and nothing else.
#include "types/go_int.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace cudagate {
namespace {

TEST(GoInt, SignedDecimalDigitsWithinInt64) {
  EXPECT_EQ(parse_go_int64("0"), 0);
  EXPECT_EQ(parse_go_int64("42"), 42);
  EXPECT_EQ(parse_go_int64("+42"), 42);
  EXPECT_EQ(parse_go_int64("-42"), -42);
  EXPECT_EQ(parse_go_int64("007"), 7);
  EXPECT_EQ(parse_go_int64("9223372036854775807"), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(parse_go_int64("-9223372036854775808"), std::numeric_limits<std::int64_t>::min());
}

TEST(GoInt, AnythingElseIsRefused) {
  for (const char* text : {"", "+", "-", " 1", "1 ", "1_000", "0x10", "1e3", "1.0", "--1",
                           "9223372036854775808", "-9223372036854775809", "99999999999999999999"}) {
    EXPECT_EQ(parse_go_int64(text), std::nullopt) << text;
  }
}

}  // namespace
}  // namespace cudagate

// Sums of input-chosen counts held at the ends of the int64 range.
#include "types/saturating.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace cudagate {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

TEST(SaturatingAdd, SumsInRangeAndHoldsAtTheEnds) {
  struct Row {
    std::int64_t a;
    std::int64_t b;
    std::int64_t sum;
  };
  for (const Row& row :
       {Row{1, 2, 3}, Row{0, 0, 0}, Row{-4, 1, -3}, Row{kMax - 1, 1, kMax}, Row{kMax, 1, kMax},
        Row{kMax, kMax, kMax}, Row{1, kMax, kMax}, Row{kMin, -1, kMin}, Row{-1, kMin, kMin},
        Row{kMin, kMax, -1}, Row{kMax, -1, kMax - 1}}) {
    EXPECT_EQ(saturating_add(row.a, row.b), row.sum) << row.a << " + " << row.b;
  }
}

}  // namespace
}  // namespace cudagate

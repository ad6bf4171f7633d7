// The command line's shared pieces: requirement summaries and terminal colour.
#include "cli/common.h"

#include <gtest/gtest.h>

#include <string>

namespace cudagate::cli {
namespace {

TEST(SummariseRequirement, Table) {
  struct Row {
    std::string in;
    std::string out;
  };
  const Row rows[] = {
      // Plain requirements stay as written.
      {"cuda>=12.4", "cuda>=12.4"},
      {"cuda>=12.4 driver>=550", "cuda>=12.4 driver>=550"},
      // A few brand clauses are readable as they are.
      {"cuda>=12.3 brand=tesla,driver>=470,driver<471",
       "cuda>=12.3 brand=tesla,driver>=470,driver<471"},
      // The nvidia/cuda pattern: one clause per brand and branch.
      {"cuda>=12.3 brand=tesla,driver>=470.57,driver<471 brand=unknown,driver>=470.57,driver<471 "
       "brand=tesla,driver>=535.86,driver<536 brand=unknown,driver>=535.86,driver<536",
       "cuda>=12.3, or forward compatibility on drivers 470.57+, 535.86+ (brands tesla, unknown)"},
      {"cuda>=12.8 brand=a,driver>=565,driver<566 brand=b,driver>=470,driver<471 "
       "brand=c,driver>=535,driver<536 brand=d,driver>=470,driver<471 "
       "brand=e,driver>=470,driver<471",
       "cuda>=12.8, or forward compatibility on drivers 470+, 535+, 565+ (brands a, b and 3 more)"},
      // Variables joined by "; " are summarised one by one.
      {"cuda>=12.0; driver>=525", "cuda>=12.0; driver>=525"},
  };
  for (const auto& row : rows) EXPECT_EQ(summarise_requirement(row.in), row.out) << row.in;
}

TEST(Paint, NoEscapesWhenDisabled) {
  EXPECT_EQ(Paint(false).red("FAIL"), "FAIL");
  EXPECT_EQ(Paint(true).red("FAIL"), "\x1b[1;31mFAIL\x1b[0m");
  EXPECT_EQ(Paint(true).bold(""), "");
}

}  // namespace
}  // namespace cudagate::cli

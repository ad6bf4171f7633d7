// The nesting scan every JSON reader runs first: where text nests too deep, and what does not
// count.
#include "types/json_depth.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace cudagate {
namespace {

constexpr auto npos = std::string_view::npos;

TEST(JsonDepth, Table) {
  struct Row {
    std::string text;
    std::size_t limit;
    std::size_t at;
  };
  const Row rows[] = {
      {"", 1, npos},
      {"{}", 1, npos},
      {"{}", 0, 0},
      {"[[1]]", 2, npos},
      {"[[1]]", 1, 1},
      {R"({"a":{"b":[1]}})", 2, 10},
      {R"({"a":{"b":[1]}})", 3, npos},
      // Brackets inside strings, escaped quotes included, do not count.
      {R"(["[[[[", "{{"])", 1, npos},
      {R"(["\"[[[", [1]])", 1, 10},
      {R"(["\\", [1]])", 1, 7},
      // Siblings do not add up; closing first never goes below zero.
      {"[[],[],[]]", 2, npos},
      {"]]][[", 1, 4},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(json_too_deep_at(row.text, row.limit), row.at) << row.text << " limit " << row.limit;
  }
}

TEST(JsonDepth, DeepTextIsFoundWithoutRecursion) {
  const std::string text(1'000'000, '[');
  EXPECT_EQ(json_too_deep_at(text, 512), 512u);
  EXPECT_EQ(json_too_deep_at(text, text.size()), npos);
}

}  // namespace
}  // namespace cudagate

// Aligned terminal columns: each as wide as its widest cell, two spaces between, no trailing
// spaces, rows of any length, and a style on the first cell that does not move the columns.
#include "report/text_table.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

namespace cudagate {
namespace {

using TextRows = std::vector<std::vector<std::string>>;

TEST(TextTable, Columns) {
  struct Row {
    const char* what;
    TextRows rows;
    std::string text;
  };
  const std::vector<Row> rows = {
      {"each column as wide as its widest cell",
       {{"NAME", "GPU", "NODES"}, {"train", "T4", "2"}, {"a", "A100-80GB", "10"}},
       "NAME   GPU        NODES\n"
       "train  T4         2\n"
       "a      A100-80GB  10\n"},
      {"no spaces after the last cell",
       {{"A", "B"}, {"long cell", "x"}},
       "A          B\nlong cell  x\n"},
      {"an empty last cell leaves no padding",
       {{"NAME", "REASON"}, {"a", ""}},
       "NAME  REASON\na\n"},
      {"an empty cell in the middle keeps the columns",
       {{"a", "", "c"}, {"dd", "ee", "f"}},
       "a       c\ndd  ee  f\n"},
      {"shorter rows", {{"a", "b", "c"}, {"dd"}, {}}, "a   b  c\ndd\n\n"},
      {"one column", {{"x"}, {"yyy"}}, "x\nyyy\n"},
      {"nothing", {}, ""},
  };
  for (const Row& row : rows) EXPECT_EQ(text_table(row.rows), row.text) << row.what;
}

// The style sees each row's first cell with its row index (the header is
// row 0); the columns are as wide as the plain text.
TEST(TextTable, StyleWrapsTheFirstCellWithoutMovingColumns) {
  const TextRows rows = {{"CHANGE", "WORKLOAD"}, {"breaks", "a"}, {"heals", "b"}};
  std::vector<std::size_t> seen;
  const std::string text = text_table(rows, [&seen](std::size_t row, const std::string& cell) {
    seen.push_back(row);
    return row == 0 ? cell : "\x1b[1m" + cell + "\x1b[0m";
  });
  EXPECT_EQ(text,
            "CHANGE  WORKLOAD\n"
            "\x1b[1mbreaks\x1b[0m  a\n"
            "\x1b[1mheals\x1b[0m   b\n");
  EXPECT_EQ(seen, (std::vector<std::size_t>{0, 1, 2}));
  // A first cell that is also the last is styled and not padded.
  EXPECT_EQ(text_table({{"a"}, {"bb"}},
                       [](std::size_t, const std::string& cell) { return "<" + cell + ">"; }),
            "<a>\n<bb>\n");
}

}  // namespace
}  // namespace cudagate

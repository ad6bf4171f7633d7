// Input text in error messages: escaped, quoted and cut the same way everywhere.
#include "types/quote.h"

#include <gtest/gtest.h>

#include <string>

namespace cudagate {
namespace {

TEST(Quote, CutsLongText) {
  EXPECT_EQ(quote("12.x"), "\"12.x\"");
  EXPECT_EQ(quote(std::string(70, 'a')), "\"" + std::string(64, 'a') + "...\"");
  EXPECT_EQ(quote(std::string(130, 'a'), 128), "\"" + std::string(128, 'a') + "...\"");
  EXPECT_EQ(quote(std::string(64, 'a')), "\"" + std::string(64, 'a') + "\"");
}

TEST(Quote, EscapesWhatWouldGarbleALine) {
  struct Row {
    std::string text;
    std::string quoted;
    std::string printable;
  };
  const Row rows[] = {
      {"", "\"\"", ""},
      {"a\"b", "\"a\\\"b\"", "a\"b"},
      {"a\\b", "\"a\\\\b\"", "a\\b"},
      {"line\nbreak", "\"line\\x0abreak\"", "line\\x0abreak"},
      {std::string("nul\0", 4), "\"nul\\x00\"", "nul\\x00"},
      {"caf\xc3\xa9", "\"caf\\xc3\\xa9\"", "caf\\xc3\\xa9"},
      {"\x7f", "\"\\x7f\"", "\\x7f"},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(quote(row.text), row.quoted) << row.text;
    EXPECT_EQ(printable(row.text), row.printable) << row.text;
  }
}

TEST(Quote, CutCountsInputBytesNotEscapes) {
  const std::string text(70, '\n');
  std::string want = "\"";
  for (int i = 0; i < 64; ++i) want += "\\x0a";
  want += "...\"";
  EXPECT_EQ(quote(text), want);
}

}  // namespace
}  // namespace cudagate

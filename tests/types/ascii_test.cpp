// The ASCII classes and case folding answer for every byte what the C
// library answers in the "C" locale (<cctype>), which they replace so that
// no answer depends on the process's locale.
#include "types/ascii.h"

#include <gtest/gtest.h>

#include <cctype>
#include <clocale>

namespace cudagate {
namespace {

TEST(Ascii, EveryByteAsTheCLibraryInTheCLocale) {
  ASSERT_NE(std::setlocale(LC_CTYPE, "C"), nullptr);
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    SCOPED_TRACE(b);
    EXPECT_EQ(ascii::is_digit(c), std::isdigit(b) != 0);
    EXPECT_EQ(ascii::is_lower(c), std::islower(b) != 0);
    EXPECT_EQ(ascii::is_upper(c), std::isupper(b) != 0);
    EXPECT_EQ(ascii::is_alpha(c), std::isalpha(b) != 0);
    EXPECT_EQ(ascii::is_alnum(c), std::isalnum(b) != 0);
    EXPECT_EQ(ascii::is_hex(c), std::isxdigit(b) != 0);
    EXPECT_EQ(ascii::is_space(c), std::isspace(b) != 0);
    EXPECT_EQ(ascii::is_blank(c), std::isblank(b) != 0);
    EXPECT_EQ(ascii::is_lower_alnum(c), std::islower(b) != 0 || std::isdigit(b) != 0);
    EXPECT_EQ(ascii::is_lower_hex(c), std::isxdigit(b) != 0 && std::isupper(b) == 0);
    EXPECT_EQ(ascii::to_lower(c), static_cast<char>(std::tolower(b)));
    EXPECT_EQ(ascii::to_upper(c), static_cast<char>(std::toupper(b)));
  }
}

TEST(Ascii, StringsFoldOnlyAsciiLetters) {
  EXPECT_EQ(ascii::lower("Tesla-T4 \xC3\x89"), "tesla-t4 \xC3\x89");
  EXPECT_EQ(ascii::upper("fail"), "FAIL");
  EXPECT_TRUE(ascii::iequals("Bearer", "bEARER"));
  EXPECT_FALSE(ascii::iequals("Bearer", "Bearers"));
  EXPECT_FALSE(ascii::iequals("a\xC3\x89", "a\xC3\xA9"));
  static_assert(ascii::iequals("SM_90", "sm_90"));
}

}  // namespace
}  // namespace cudagate

// Escaping for XML and HTML: markup characters, and what XML 1.0 cannot hold.
#include "report/xml_escape.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cudagate {
namespace {

TEST(XmlEscape, Table) {
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"plain", "plain"},
      {"a<b>&\"c'", "a&lt;b&gt;&amp;&quot;c&apos;"},
      {"tab\tline\nreturn\r", "tab\tline\nreturn\r"},
      {std::string("nul\0x", 5), "nul\xEF\xBF\xBDx"},
      {"\x1b[31m", "\xEF\xBF\xBD[31m"},
      {"caf\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x98\x80", "caf\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x98\x80"},
      {"bad \xC3 end", "bad \xEF\xBF\xBD end"},
      {"overlong \xC0\xAF", "overlong \xEF\xBF\xBD\xEF\xBF\xBD"},
      {"surrogate \xED\xA0\x80", "surrogate \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
      {"noncharacter \xEF\xBF\xBE", "noncharacter \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
      {"cut \xE2\x9C", "cut \xEF\xBF\xBD\xEF\xBF\xBD"},
  };
  for (const auto& [in, expected] : rows) EXPECT_EQ(xml_escape(in), expected) << in;
}

}  // namespace
}  // namespace cudagate

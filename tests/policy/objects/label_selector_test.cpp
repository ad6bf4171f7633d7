// LabelSelector: the grammar kubectl and the scheduler read, table-driven:
// each text parsed, printed back canonically and matched against label
// sets; bad texts rejected with the column and what was expected.
#include "policy/objects/label_selector.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cudagate {
namespace {

const KeyValues kT4 = {{"nvidia.com/gpu.product", "Tesla-T4"}, {"pool", "t4"}, {"tier", "3"}};
const KeyValues kA100 = {
    {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}, {"pool", "a100"}, {"spot", "true"}};

struct LabelSelectorRow {
  std::string text;
  std::string canonical;
  bool t4;
  bool a100;
};

TEST(LabelSelector, ParsesAndMatches) {
  const std::vector<LabelSelectorRow> rows = {
      {"pool=t4", "pool=t4", true, false},
      {"pool==t4", "pool=t4", true, false},
      {"pool!=t4", "pool!=t4", false, true},
      {"pool in (t4,a100)", "pool in (a100,t4)", true, true},
      {"pool in(t4)", "pool in (t4)", true, false},
      {"pool notin (t4)", "pool notin (t4)", false, true},
      {"spot", "spot", false, true},
      {"!spot", "!spot", true, false},
      {"! spot", "!spot", true, false},
      {"tier>2", "tier>2", true, false},
      {"tier<3", "tier<3", false, false},
      {"pool=t4,!spot,tier>1", "pool=t4,!spot,tier>1", true, false},
      {" pool = a100 , spot ", "pool=a100,spot", false, true},
      {"nvidia.com/gpu.product=Tesla-T4", "nvidia.com/gpu.product=Tesla-T4", true, false},
      {"missing!=x", "missing!=x", true, true},
      {"missing notin (x)", "missing notin (x)", true, true},
      {"pool=", "pool=", false, false},
      {"in=1", "in=1", false, false},
  };
  for (const LabelSelectorRow& row : rows) {
    auto s = LabelSelector::parse(row.text);
    ASSERT_TRUE(s) << row.text << ": " << s.error().str();
    EXPECT_EQ(s->str(), row.canonical) << row.text;
    EXPECT_EQ(s->matches(kT4), row.t4) << row.text;
    EXPECT_EQ(s->matches(kA100), row.a100) << row.text;
    auto again = LabelSelector::parse(s->str());
    ASSERT_TRUE(again) << s->str();
    EXPECT_EQ(again->requirements(), s->requirements()) << row.text;
  }
}

TEST(LabelSelector, RejectsWithThePlaceAndWhatWasExpected) {
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"", "column 1: an empty selector would select every node"},
      {"   ", "column 4: an empty selector"},
      {"pool=t4,", "column 9: expected a requirement after ','"},
      {"pool=t4 spot", "column 9: expected ',' between requirements"},
      {"pool in t4", "column 9: expected '(' to open the set of values"},
      {"pool in (t4", "column 12: expected ')' to close the set of values"},
      {"pool in (t4;a)", "column 10: invalid label value"},
      {"tier>x", "column 6: expected an integer after >"},
      // strconv.ParseInt takes "+2", but NewRequirement (k8s.io/apimachinery
      // pkg/labels/selector.go) also checks the operand as a label value.
      {"tier>+2", "column 6: invalid label value \"+2\""},
      {"tier<99999999999999999999", "column 6: expected an integer after <"},
      {"-pool=t4", "column 1: a label key is at most 63 characters"},
      {"Example.com/pool=t4", "column 1: a label key's prefix is a DNS subdomain"},
      // Each dot-separated label of the prefix starts and ends alphanumeric
      // (IsDNS1123Subdomain), as labels.Parse checks it.
      {"example.-com/pool=t4", "column 1: a label key's prefix is a DNS subdomain"},
      {"example..com/pool=t4", "column 1: a label key's prefix is a DNS subdomain"},
      {"example.com/=t4", "column 1: a label key's name is at most 63"},
      {"pool=-t4", "column 6: invalid label value \"-t4\""},
      {"=t4", "column 1: expected a label key"},
      {"!", "column 2: expected a label key"},
      {"pool)", "column 5: expected =, ==, !=, in, notin, >, < or ','"},
      {std::string(64, 'a') + "=x", "column 1: a label key is at most 63"},
  };
  for (const auto& [text, expected] : rows) {
    auto s = LabelSelector::parse(text);
    ASSERT_FALSE(s) << text;
    EXPECT_NE(s.error().str().find(expected), std::string::npos)
        << text << " -> " << s.error().str();
  }
}

}  // namespace
}  // namespace cudagate

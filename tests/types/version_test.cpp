// CUDA, driver and compute capability versions: the forms each parser accepts and refuses,
// error quoting of long text, and ordering.
#include "types/version.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cudagate {
namespace {

TEST(CudaVersion, ParsesValidForms) {
  struct Row {
    std::string text;
    int major, minor, update;
    std::string str;
  };
  const std::vector<Row> rows = {
      {"12", 12, 0, -1, "12.0"},     {"12.4", 12, 4, -1, "12.4"},
      {"12.4.1", 12, 4, 1, "12.4"},  {"11.8.0", 11, 8, 0, "11.8"},
      {"13.0.2", 13, 0, 2, "13.0"},  {"12.10", 12, 10, -1, "12.10"},
      {"0.0", 0, 0, -1, "0.0"},      {"999.999.999", 999, 999, 999, "999.999"},
      {"012.04", 12, 4, -1, "12.4"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.text);
    auto v = CudaVersion::parse(row.text);
    ASSERT_TRUE(v) << v.error().str();
    EXPECT_EQ(v->major(), row.major);
    EXPECT_EQ(v->minor(), row.minor);
    EXPECT_EQ(v->update(), row.update);
    EXPECT_EQ(v->str(), row.str);
    auto again = CudaVersion::parse(v->str());
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, *v);
  }
}

TEST(CudaVersion, RejectsMalformedText) {
  const std::vector<std::string> rows = {
      "",   "12.", ".4",   "12.x",    "v12.4",     "12.4.1.2", " 12.4",    "12.4 ", "12..4",
      "-1", "+12", "1000", "12.1000", "12.4.1000", "12,4",     "cuda12.4", "123456"};
  for (const std::string& text : rows) {
    SCOPED_TRACE(text);
    auto v = CudaVersion::parse(text);
    ASSERT_FALSE(v);
    EXPECT_EQ(v.error().message,
              "expected a CUDA version like 12.4 or 12.4.1, got \"" + text + "\"");
    EXPECT_EQ(v.error().where, "");
  }
}

TEST(CudaVersion, ErrorQuotesOnlyTheStartOfLongText) {
  auto v = CudaVersion::parse(std::string(100, 'x'));
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().message,
            "expected a CUDA version like 12.4 or 12.4.1, got \"" + std::string(64, 'x') + "...\"");
}

TEST(CudaVersion, ComparesMajorThenMinorIgnoringUpdate) {
  struct Row {
    CudaVersion a, b;
    std::strong_ordering order;
  };
  const std::vector<Row> rows = {
      {{12, 4}, {12, 10}, std::strong_ordering::less},
      {{11, 8}, {12, 0}, std::strong_ordering::less},
      {{12, 2}, {12, 2}, std::strong_ordering::equal},
      {{13, 0}, {12, 9}, std::strong_ordering::greater},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.a.str() + " vs " + row.b.str());
    EXPECT_EQ(row.a <=> row.b, row.order);
  }
  EXPECT_EQ(*CudaVersion::parse("12.4.1"), *CudaVersion::parse("12.4"));
}

TEST(DriverVersion, ParsesTwoAndThreeParts) {
  struct Row {
    std::string text;
    int parts[3];
    int count;
  };
  const std::vector<Row> rows = {
      {"535.129.03", {535, 129, 3}, 3},
      {"570.26", {570, 26, 0}, 2},
      {"470.57.02", {470, 57, 2}, 3},
      {"580.95.05", {580, 95, 5}, 3},
      {"99999.99999.99999", {99999, 99999, 99999}, 3},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.text);
    auto v = DriverVersion::parse(row.text);
    ASSERT_TRUE(v) << v.error().str();
    EXPECT_EQ(v->branch(), row.parts[0]);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(v->part(i), row.parts[i]);
    EXPECT_EQ(v->part_count(), row.count);
    EXPECT_EQ(v->str(), row.text);  // kept as written, leading zeros included
  }
}

TEST(DriverVersion, RejectsMalformedText) {
  const std::vector<std::string> rows = {"",
                                         "535",
                                         "535.",
                                         ".129",
                                         "535.x",
                                         "535.129.03.1",
                                         "535..129",
                                         "R535.129",
                                         "535.129 ",
                                         "100000.1",
                                         "unknown.unknown.unknown"};
  for (const std::string& text : rows) {
    SCOPED_TRACE(text);
    auto v = DriverVersion::parse(text);
    ASSERT_FALSE(v);
    EXPECT_EQ(v.error().message,
              "expected a driver version like 535.129.03 or 570.26, got \"" + text + "\"");
  }
}

TEST(DriverVersion, ComparesPartsNumerically) {
  const auto d = [](const char* text) { return *DriverVersion::parse(text); };
  EXPECT_LT(d("535.129.03"), d("535.129.10"));
  EXPECT_LT(d("535.129.03"), d("535.154.05"));
  EXPECT_LT(d("470.239.06"), d("535.54.03"));
  EXPECT_EQ(d("570.26"), d("570.26.0"));
  EXPECT_EQ(d("535.129.03"), d("535.129.3"));
  EXPECT_GT(d("570.26.1"), d("570.26"));
}

TEST(ComputeCapability, ParsesValidForms) {
  struct Row {
    std::string text;
    int major, minor;
    std::string str;
  };
  const std::vector<Row> rows = {
      {"8.0", 8, 0, "8.0"}, {"8.6", 8, 6, "8.6"}, {"10.3", 10, 3, "10.3"}, {"12.1", 12, 1, "12.1"},
      {"9", 9, 0, "9.0"},   {"3.5", 3, 5, "3.5"}, {"99.9", 99, 9, "99.9"}, {"1.0", 1, 0, "1.0"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.text);
    auto cc = ComputeCapability::parse(row.text);
    ASSERT_TRUE(cc) << cc.error().str();
    EXPECT_EQ(cc->major(), row.major);
    EXPECT_EQ(cc->minor(), row.minor);
    EXPECT_EQ(cc->str(), row.str);
    EXPECT_EQ(*ComputeCapability::parse(cc->str()), *cc);
  }
}

TEST(ComputeCapability, RejectsMalformedText) {
  const std::vector<std::string> rows = {"",      "0.5", "8.10", "100.0", "8.x", "sm_80",
                                         "8.0.0", "8.",  ".8",   "8.0a",  "-8.0"};
  for (const std::string& text : rows) {
    SCOPED_TRACE(text);
    auto cc = ComputeCapability::parse(text);
    ASSERT_FALSE(cc);
    EXPECT_EQ(cc.error().message,
              "expected a compute capability like 8.0 or 9.0, got \"" + text + "\"");
  }
}

TEST(ComputeCapability, OrdersByMajorThenMinor) {
  EXPECT_LT(ComputeCapability(7, 5), ComputeCapability(8, 0));
  EXPECT_LT(ComputeCapability(8, 9), ComputeCapability(9, 0));
  EXPECT_LT(ComputeCapability(9, 0), ComputeCapability(10, 0));
  EXPECT_LT(ComputeCapability(10, 3), ComputeCapability(12, 0));
  EXPECT_EQ(ComputeCapability(8, 6), *ComputeCapability::parse("8.6"));
}

}  // namespace
}  // namespace cudagate

// NodeSet: full and empty sets at word boundaries, membership, set algebra, ranges, iteration
// that stops when asked, and reuse of its storage.
#include "policy/inventory/node_set.h"

#include <gtest/gtest.h>

#include <vector>

namespace cudagate {
namespace {

std::vector<std::size_t> members(const NodeSet& s) {
  std::vector<std::size_t> out;
  s.for_each([&](std::size_t i) {
    out.push_back(i);
    return true;
  });
  return out;
}

NodeSet of(std::size_t universe, const std::vector<std::size_t>& items) {
  NodeSet s(universe);
  for (std::size_t i : items) s.insert(i);
  return s;
}

TEST(NodeSet, FullAndEmptyAtWordBoundaries) {
  for (std::size_t n : {0U, 1U, 63U, 64U, 65U, 128U, 130U}) {
    const NodeSet empty(n);
    EXPECT_EQ(empty.universe(), n);
    EXPECT_EQ(empty.count(), 0U) << n;
    EXPECT_TRUE(empty.empty()) << n;
    const NodeSet full(n, true);
    EXPECT_EQ(full.count(), n) << n;
    EXPECT_EQ(full.empty(), n == 0) << n;
    NodeSet flipped = empty;
    flipped.complement();
    EXPECT_EQ(flipped, full) << n;
    flipped.complement();
    EXPECT_EQ(flipped, empty) << n;
    if (n > 0) {
      EXPECT_TRUE(full.contains(n - 1));
      EXPECT_EQ(members(full).back(), n - 1);
    }
  }
}

TEST(NodeSet, InsertEraseContains) {
  NodeSet s(130);
  s.insert(0);
  s.insert(64);
  s.insert(129);
  s.insert(64);
  EXPECT_EQ(s.count(), 3U);
  EXPECT_TRUE(s.contains(64));
  EXPECT_FALSE(s.contains(63));
  s.erase(64);
  s.erase(5);
  EXPECT_EQ(members(s), (std::vector<std::size_t>{0, 129}));
}

TEST(NodeSet, Algebra) {
  const NodeSet a = of(100, {1, 2, 3, 64, 99});
  const NodeSet b = of(100, {2, 3, 4, 65, 99});
  NodeSet x = a;
  x &= b;
  EXPECT_EQ(members(x), (std::vector<std::size_t>{2, 3, 99}));
  EXPECT_EQ(a.count_and(b), 3U);
  NodeSet u = a;
  u |= b;
  EXPECT_EQ(members(u), (std::vector<std::size_t>{1, 2, 3, 4, 64, 65, 99}));
  NodeSet d = a;
  d.subtract(b);
  EXPECT_EQ(members(d), (std::vector<std::size_t>{1, 64}));
  NodeSet c = a;
  c.complement();
  EXPECT_EQ(c.count(), 95U);
  EXPECT_FALSE(c.contains(64));
  EXPECT_TRUE(c.contains(0));
  EXPECT_EQ(c.count_and(a), 0U);
  EXPECT_NE(a, b);
  EXPECT_EQ(a, of(100, {99, 64, 3, 2, 1}));
}

TEST(NodeSet, ForEachStopsWhenAsked) {
  const NodeSet s = of(300, {5, 70, 140, 299});
  std::vector<std::size_t> seen;
  s.for_each([&](std::size_t i) {
    seen.push_back(i);
    return seen.size() < 2;
  });
  EXPECT_EQ(seen, (std::vector<std::size_t>{5, 70}));
}

TEST(NodeSet, Ranges) {
  const NodeSet s = of(300, {0, 5, 63, 64, 70, 127, 128, 140, 299});
  struct Row {
    std::size_t begin;
    std::size_t end;
    std::vector<std::size_t> expected;
  };
  const std::vector<Row> rows = {
      {0, 300, {0, 5, 63, 64, 70, 127, 128, 140, 299}},
      {0, 0, {}},
      {5, 5, {}},
      {6, 5, {}},
      {5, 6, {5}},
      {1, 64, {5, 63}},
      {63, 65, {63, 64}},
      {64, 128, {64, 70, 127}},
      {65, 299, {70, 127, 128, 140}},
      {141, 299, {}},
      {299, 300, {299}},
  };
  for (const auto& row : rows) {
    std::vector<std::size_t> seen;
    s.for_each_in_range(row.begin, row.end, [&](std::size_t i) {
      seen.push_back(i);
      return true;
    });
    EXPECT_EQ(seen, row.expected) << row.begin << ".." << row.end;
    EXPECT_EQ(s.count_range(row.begin, row.end), row.expected.size())
        << row.begin << ".." << row.end;
  }
  std::vector<std::size_t> first_two;
  s.for_each_in_range(0, 300, [&](std::size_t i) {
    first_two.push_back(i);
    return first_two.size() < 2;
  });
  EXPECT_EQ(first_two, (std::vector<std::size_t>{0, 5}));
}

TEST(NodeSet, ReusedStorage) {
  NodeSet s = of(100, {1, 2});
  s.assign(130, true);
  EXPECT_EQ(s.universe(), 130U);
  EXPECT_EQ(s.count(), 130U);
  s.assign(10);
  EXPECT_EQ(s.universe(), 10U);
  EXPECT_TRUE(s.empty());
  s.insert(3);
  s.clear();
  EXPECT_TRUE(s.empty());
  NodeSet both;
  both.assign_and(of(200, {1, 64, 150, 199}), of(200, {64, 150, 151}));
  EXPECT_EQ(members(both), (std::vector<std::size_t>{64, 150}));
  EXPECT_EQ(both.universe(), 200U);
}

}  // namespace
}  // namespace cudagate

// Building the inventory: nodes grouped and counted by their GPU facts (derived, or given for
// a node copied from another inventory), the label indexes whatever the number of values a
// key has, ten thousand nodes with a label value each, and a name added twice refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "policy/inventory/inventory.h"
#include "tests/support/inventory_cluster.h"

namespace cudagate {
namespace {

using test_support::inventory_affinity;
using test_support::inventory_cluster;
using test_support::inventory_facts_db;
using test_support::inventory_names;
using test_support::inventory_spec_of;
using test_support::InventoryNames;
using test_support::kTolerateAll;

TEST(Inventory, GroupsAndCounts) {
  const CompatDb db = inventory_facts_db();
  const Inventory inv = Inventory::build(inventory_cluster(), db);
  ASSERT_EQ(inv.size(), 8U);
  EXPECT_EQ(inv.gpu_nodes(), 6U);          // t4 x2, a100 x2 (MIG included), h100 x2
  EXPECT_EQ(inv.unknown_gpu_nodes(), 4U);  // only the T4s have a driver label
  // The T4s differ by driver; the H100s and a100-1 have equal facts (no labels
  // but GPUs); a100-mig too; cpu-1 and odd have no GPU.
  EXPECT_EQ(inv.groups().size(), 4U);
  EXPECT_NE(inv.group_of(1), inv.group_of(2));
  EXPECT_EQ(inv.group_of(0), inv.group_of(7));
  EXPECT_EQ(inv.group_of(3), inv.group_of(5));
  EXPECT_EQ(inv.group_of(3), inv.group_of(4));
  std::size_t members = 0;
  for (std::size_t g = 0; g < inv.groups().size(); ++g) {
    members += inv.groups()[g].members.count();
    inv.groups()[g].members.for_each([&](std::size_t i) {
      EXPECT_EQ(inv.group_of(i), g);
      return true;
    });
  }
  EXPECT_EQ(members, inv.size());
  const GpuFacts& t4 = inv.groups()[inv.group_of(1)].facts;
  EXPECT_EQ(t4.driver->str(), "535.129.03");
  EXPECT_EQ(t4.max_cuda, (CudaVersion{12, 2}));

  EXPECT_TRUE(inv.has_label_key("pool"));
  EXPECT_TRUE(inv.has_label_key("cudagate.io/driver-version"));
  EXPECT_FALSE(inv.has_label_key("nvidia.com/cuda.driver-version.full"));
  EXPECT_EQ(inventory_names(inv, inv.with_label("pool", "h100")),
            (InventoryNames{"h100-1", "h100-2"}));
  EXPECT_TRUE(inv.with_label("pool", "v100").empty());
  EXPECT_TRUE(inv.with_label("rack", "1").empty());

  const Inventory empty = Inventory::build({}, db);
  EXPECT_EQ(empty.size(), 0U);
  EXPECT_TRUE(empty.groups().empty());
  EXPECT_TRUE(empty.candidates(inventory_spec_of(kTolerateAll)).empty());
}

// Ten thousand nodes with a hostname each: the index stays correct when
// label values are unique per node.
TEST(Inventory, TenThousandNodes) {
  std::vector<Node> nodes;
  const std::size_t n = 10000;
  for (std::size_t i = 0; i < n; ++i) {
    Node node;
    node.name = "node-" + std::to_string(i);
    node.labels = {{"kubernetes.io/hostname", node.name},
                   {"pool", i % 10 == 0 ? "h100" : "t4"},
                   {"rank", std::to_string(i % 100)}};
    std::sort(node.labels.begin(), node.labels.end());
    node.allocatable = {{"nvidia.com/gpu", i % 10 == 0 ? 8 : 1}};
    if (i % 1000 == 1) node.unschedulable = true;
    nodes.push_back(std::move(node));
  }
  const Inventory inv = Inventory::build(nodes, inventory_facts_db());
  EXPECT_EQ(inv.candidates(inventory_spec_of("  nodeSelector: {pool: h100}\n")).count(), 1000U);
  EXPECT_EQ(
      inv.candidates(inventory_spec_of("  nodeSelector: {kubernetes.io/hostname: node-4242}\n"))
          .count(),
      1U);
  EXPECT_EQ(inv.candidates(inventory_spec_of("")).count(), n - 10);
  EXPECT_EQ(
      inv.candidates(inventory_spec_of(inventory_affinity(
                         "[{matchExpressions: [{key: rank, operator: Lt, values: [\"5\"]}, "
                         "{key: kubernetes.io/hostname, operator: NotIn, values: [node-0]}]}]")))
          .count(),
      489U);  // 500 ranks below 5, less node-0 and the 10 cordoned nodes
  EXPECT_EQ(
      inv.candidates(inventory_spec_of(
                         "  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 2}}}]\n"))
          .count(),
      1000U);
}

// A label key with a few values and one with more than the builder keeps
// at hand: every value selects exactly its nodes, whether it was first seen
// before or after the key had many.
TEST(Inventory, KeysWithFewAndManyValues) {
  std::vector<Node> nodes;
  for (int i = 0; i < 60; ++i) {
    Node node;
    node.name = "node-" + std::to_string(i);
    node.labels = {{"few", i % 3 == 0 ? "a" : "b"}, {"many", "v" + std::to_string(i % 20)}};
    // Every fourth node has one more key, so that key lists differ.
    if (i % 4 == 0) node.labels.emplace_back("other", "x");
    std::sort(node.labels.begin(), node.labels.end());
    nodes.push_back(std::move(node));
  }
  const Inventory inv = Inventory::build(nodes, inventory_facts_db());
  for (int v = 0; v < 20; ++v) {
    const NodeSet set = inv.with_label("many", "v" + std::to_string(v));
    EXPECT_EQ(set.count(), 3U) << v;
    for (int i = v; i < 60; i += 20) EXPECT_TRUE(set.contains(static_cast<std::size_t>(i))) << i;
  }
  EXPECT_EQ(inv.with_label("few", "a").count(), 20U);
  EXPECT_EQ(inv.with_label("few", "b").count(), 40U);
  EXPECT_EQ(inv.with_label("other", "x").count(), 15U);
  EXPECT_EQ(inv.with_label("many", "v20").count(), 0U);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    EXPECT_EQ(inv.node(i).labels, nodes[i].labels) << i;
  }
}

// A name added twice is refused, and the second node leaves no trace.
TEST(Inventory, BuilderRefusesANameTwice) {
  const CompatDb db = inventory_facts_db();
  InventoryBuilder builder(db);
  Node a;
  a.name = "a";
  a.labels = {{"pool", "t4"}};
  Node b;
  b.name = "b";
  Node again = a;
  again.labels = {{"pool", "h100"}};
  EXPECT_TRUE(builder.add(a));
  EXPECT_TRUE(builder.add(b));
  EXPECT_FALSE(builder.add(again));
  EXPECT_EQ(builder.size(), 2U);
  const Inventory inv = builder.finish();
  ASSERT_EQ(inv.size(), 2U);
  EXPECT_EQ(inv.with_label("pool", "h100").count(), 0U);
  EXPECT_EQ(inv.node(0).labels, a.labels);
}

// A node copied from another inventory keeps the facts it is given rather
// than those its labels would give; nodes without given facts derive theirs.
TEST(InventoryBuilder, GivenFactsAreKept) {
  const CompatDb db = inventory_facts_db();
  const std::vector<Node> nodes = inventory_cluster();
  GpuFacts given;
  given.has_gpu = true;
  given.driver = *DriverVersion::parse("570.124.06");
  given.max_cuda = CudaVersion(12, 8);
  given.product = "NVIDIA-H100-80GB-HBM3";
  InventoryBuilder builder(db);
  EXPECT_TRUE(builder.add(nodes[0], &given));  // cpu-1: no GPU by its labels
  EXPECT_TRUE(builder.add(nodes[1]));          // t4-1: derived
  EXPECT_TRUE(builder.add(nodes[5], &given));  // h100-1, with the same facts as cpu-1
  const Inventory inv = builder.finish();
  ASSERT_EQ(inv.size(), 3U);
  EXPECT_EQ(inv.groups()[inv.group_of(0)].facts, given);
  EXPECT_EQ(inv.group_of(0), inv.group_of(2));
  EXPECT_NE(inv.group_of(0), inv.group_of(1));
  const GpuFacts& t4 = inv.groups()[inv.group_of(1)].facts;
  ASSERT_TRUE(t4.driver);
  EXPECT_EQ(t4.driver->str(), "535.129.03");
  EXPECT_EQ(inv.gpu_nodes(), 3U);
  EXPECT_EQ(inv.unknown_gpu_nodes(), 0U);
  // The node is otherwise as given: its labels stay indexed.
  EXPECT_EQ(inventory_names(inv, inv.with_label("pool", "cpu")), (InventoryNames{"cpu-1"}));
}

}  // namespace
}  // namespace cudagate

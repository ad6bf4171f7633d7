// The node inventory itself: nodes read back as they were given from its compact storage,
// found by name, and grouped by a key on which driver versions equal by number agree. Its
// build is tested in inventory_builder_test.cpp, a pod's candidates in
// inventory_match_test.cpp.
#include "policy/inventory/inventory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/support/inventory_cluster.h"

namespace cudagate {
namespace {

using test_support::inventory_cluster;
using test_support::inventory_facts_db;

// Node i reads back as it was given: names, labels, taints, cordon and
// resources survive the compact storage.
TEST(Inventory, NodesReadBackAsGiven) {
  std::vector<Node> nodes = inventory_cluster();
  // Labels out of order are put in order.
  nodes[0].labels = {{"zone", "b"}, {"pool", "t4"}, {"arch", "amd64"}};
  nodes[1].taints.push_back(Taint{"soft", "x", "PreferNoSchedule"});
  const Inventory inv = Inventory::build(nodes, inventory_facts_db());
  ASSERT_EQ(inv.size(), nodes.size());
  std::sort(nodes[0].labels.begin(), nodes[0].labels.end());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const Node got = inv.node(i);
    EXPECT_EQ(got.name, nodes[i].name);
    EXPECT_EQ(inv.node_name(i), nodes[i].name);
    EXPECT_EQ(got.labels, nodes[i].labels) << nodes[i].name;
    EXPECT_EQ(got.taints, nodes[i].taints) << nodes[i].name;
    EXPECT_EQ(got.unschedulable, nodes[i].unschedulable) << nodes[i].name;
    EXPECT_EQ(got.allocatable, nodes[i].allocatable) << nodes[i].name;
    for (const auto& [key, value] : nodes[i].labels) {
      const std::string* found = inv.node_label(i, key);
      ASSERT_NE(found, nullptr) << key;
      EXPECT_EQ(*found, value);
    }
    EXPECT_EQ(inv.node_label(i, "no-such-label"), nullptr);
    EXPECT_EQ(inv.node_label(i, ""), nullptr);
  }
}

TEST(Inventory, DriverVersionsEqualByNumberShareAGroup) {
  std::vector<Node> nodes = inventory_cluster();
  nodes[2].labels = {
      {"cudagate.io/driver-version", "535.129.3"}, {"gpu.count", "1"}, {"pool", "t4"}};
  const Inventory inv = Inventory::build(nodes, inventory_facts_db());
  EXPECT_EQ(inv.group_of(1), inv.group_of(2));
}

// index_of() finds a node by its exact name; node_into() fills a Node the
// caller reuses, leaving nothing of the node it held before.
TEST(Inventory, FindsNodesByNameAndReadsThemIntoStorage) {
  const std::vector<Node> nodes = inventory_cluster();
  const Inventory inv = Inventory::build(nodes, inventory_facts_db());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    ASSERT_EQ(inv.index_of(nodes[i].name), i) << nodes[i].name;
    EXPECT_FALSE(inv.is_pool(i)) << nodes[i].name;
    EXPECT_EQ(inv.pool_info(i), nullptr) << nodes[i].name;
  }
  EXPECT_EQ(inv.index_of("T4-1"), std::nullopt);
  EXPECT_EQ(inv.index_of("t4"), std::nullopt);
  EXPECT_EQ(inv.index_of(""), std::nullopt);
  EXPECT_EQ(inv.pool_nodes(), 0U);

  Node reused;
  inv.node_into(5, reused);  // h100-1: cordoned, with GPUs
  inv.node_into(0, reused);  // cpu-1: neither
  EXPECT_EQ(reused.name, "cpu-1");
  EXPECT_EQ(reused.labels, nodes[0].labels);
  EXPECT_TRUE(reused.taints.empty());
  EXPECT_FALSE(reused.unschedulable);
  EXPECT_TRUE(reused.allocatable.empty());
  EXPECT_TRUE(reused.devices.empty());
  EXPECT_EQ(reused.pool, nullptr);
}

}  // namespace
}  // namespace cudagate

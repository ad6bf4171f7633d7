// The nodes that stand for node pools in an inventory: candidates beside the
// cluster's nodes, kept through patches, added by with_pools and counted by
// pool_member_count.
#include "policy/inventory/inventory_pools.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/inventory/inventory.h"
#include "policy/objects/node_pool.h"
#include "tests/support/embedded_compat_db.h"
#include "tests/support/karpenter_pool.h"

namespace cudagate {
namespace {

using test_support::db;
using test_support::karpenter_gpu_pool;

// A node the NodePool "gpu" launched, and the pool's two GPU kinds.
Inventory pools_fleet() {
  Node old;
  old.name = "gpu-node-1";
  old.labels = {{"karpenter.sh/nodepool", "gpu"}, {"nvidia.com/cuda.driver.major", "535"}};
  old.allocatable = {{"nvidia.com/gpu", 1}};
  std::vector<Node> nodes = {old};
  for (Node& n : pool_nodes(std::make_shared<const NodePool>(karpenter_gpu_pool()), db(), 0))
    nodes.push_back(std::move(n));
  return Inventory::build(nodes, db());
}

std::set<std::string> pools_node_names(const Inventory& inv, const NodeSet& set) {
  std::set<std::string> out;
  set.for_each([&](std::size_t i) {
    out.insert(inv.node_name(i));
    return true;
  });
  return out;
}

PodSpec pools_gpu_pod(std::vector<std::pair<std::string, std::string>> selector = {}) {
  PodSpec spec;
  spec.node_selector = std::move(selector);
  spec.tolerations = {{"nvidia.com/gpu", "Exists", "", ""}};
  ContainerSpec c;
  c.name = "train";
  c.resources = {{"nvidia.com/gpu", 1}};
  spec.containers.push_back(c);
  return spec;
}

TEST(InventoryPools, PoolsAreCandidatesBesideNodes) {
  const Inventory inv = pools_fleet();
  EXPECT_EQ(inv.pool_nodes(), 2U);
  EXPECT_EQ(pools_node_names(inv, inv.candidates(pools_gpu_pod())),
            (std::set<std::string>{"gpu-node-1", "NodePool gpu (a100, 0 nodes now)",
                                   "NodePool gpu (t4, 0 nodes now)"}));
  // A zone no node carries yet: only the pools can launch one there.
  EXPECT_EQ(
      pools_node_names(
          inv, inv.candidates(pools_gpu_pod({{"topology.kubernetes.io/zone", "us-east-1a"}}))),
      (std::set<std::string>{"NodePool gpu (a100, 0 nodes now)",
                             "NodePool gpu (t4, 0 nodes now)"}));
  EXPECT_EQ(pools_node_names(
                inv, inv.candidates(pools_gpu_pod({{"nvidia.com/cuda.driver.major", "535"}}))),
            (std::set<std::string>{"gpu-node-1"}));
  // Devices from resource claims: a node that does not exist publishes none.
  const std::vector<std::pair<std::string, std::int64_t>> devices = {{"gpu.nvidia.com", 1}};
  EXPECT_EQ(pools_node_names(inv, inv.candidates(pools_gpu_pod(), AddedRequests{devices, 0})),
            (std::set<std::string>{}));
}

TEST(InventoryPools, PatchesKeepPoolsFound) {
  const Inventory inv = pools_fleet();
  Node joined;
  joined.name = "gpu-node-2";
  joined.labels = {{"nvidia.com/gpu.compute.major", "9"}, {"nvidia.com/gpu.compute.minor", "0"}};
  joined.allocatable = {{"nvidia.com/gpu", 8}};
  const Inventory next =
      inv.patched({{joined.name, &joined}, {"NodePool gpu (t4, 0 nodes now)", nullptr}}, db());
  EXPECT_EQ(next.pool_nodes(), 1U);
  EXPECT_EQ(
      pools_node_names(
          next, next.candidates(pools_gpu_pod({{"topology.kubernetes.io/zone", "us-east-1a"}}))),
      (std::set<std::string>{"NodePool gpu (a100, 0 nodes now)"}));
}

TEST(InventoryPools, PoolsJoinTheInventory) {
  auto base = std::make_shared<const Inventory>(pools_fleet());
  NodePool gke;
  gke.source = NodePool::Source::policy;
  gke.name = "gke-t4";
  gke.labels = {{"cloud.google.com/gke-nodepool", "gpu-t4"}};
  gke.product = "Tesla-T4";
  EXPECT_EQ(with_pools(base, {}, db()), base);
  const auto with = with_pools(base, {gke}, db());
  EXPECT_EQ(with->pool_nodes(), 3U);  // the NodePool's two stay
  ASSERT_TRUE(with->index_of("node pool gke-t4 (0 nodes now)"));
  EXPECT_EQ(base->pool_nodes(), 2U);
  // Named with the nodes that are the pool's now: those with all its labels.
  Node member;
  member.name = "gke-node-1";
  member.labels = {{"cloud.google.com/gke-nodepool", "gpu-t4"}};
  const auto grown = std::make_shared<const Inventory>(
      base->patched({{member.name, &member}, {"gpu-node-1", nullptr}}, db()));
  EXPECT_TRUE(with_pools(grown, {gke}, db())->index_of("node pool gke-t4 (1 node now)"));
  EXPECT_EQ(pool_member_count(gke, *grown), 1U);
  // A NodePool's: those its karpenter.sh/nodepool label names, pool nodes aside.
  EXPECT_EQ(pool_member_count(karpenter_gpu_pool(), *base), 1U);
  EXPECT_EQ(pool_member_count(karpenter_gpu_pool(), *grown), 0U);
  // A pool that launches no GPU node adds nothing.
  NodePool cpu;
  cpu.name = "general";
  cpu.labels = {{"workload", "web"}};
  EXPECT_EQ(with_pools(base, {cpu}, db()), base);
}

}  // namespace
}  // namespace cudagate

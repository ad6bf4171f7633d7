// The inventory's pool nodes: counted by pool, and added as a patch.
#include "policy/inventory/inventory_pools.h"

#include <utility>

#include "policy/inventory/node_set.h"

namespace cudagate {

std::size_t pool_member_count(const NodePool& pool, const Inventory& inventory) {
  NodeSet members;
  if (pool.source == NodePool::Source::karpenter) {
    members = inventory.with_label(kNodePoolLabel, pool.name);
  } else {
    if (pool.labels.empty()) return 0;
    members = inventory.with_label(pool.labels.front().first, pool.labels.front().second);
    for (std::size_t i = 1; i < pool.labels.size() && !members.empty(); ++i) {
      members &= inventory.with_label(pool.labels[i].first, pool.labels[i].second);
    }
  }
  std::size_t count = 0;
  members.for_each([&](std::size_t i) {
    if (!inventory.is_pool(i)) ++count;
    return true;
  });
  return count;
}

std::shared_ptr<const Inventory> with_pools(std::shared_ptr<const Inventory> inventory,
                                            const std::vector<NodePool>& pools,
                                            const CompatDb& db) {
  std::vector<Node> added;
  for (const NodePool& pool : pools) {
    const std::size_t now = pool_member_count(pool, *inventory);
    for (Node& node : pool_nodes(std::make_shared<const NodePool>(pool), db, now)) {
      added.push_back(std::move(node));
    }
  }
  std::vector<NodeEdit> edits;
  edits.reserve(added.size());
  for (const Node& node : added) {
    const auto at = inventory->index_of(node.name);
    if (at && !inventory->is_pool(*at)) continue;
    edits.push_back(NodeEdit{node.name, &node});
  }
  if (edits.empty()) return inventory;
  return std::make_shared<const Inventory>(inventory->patched(edits, db));
}

}  // namespace cudagate

#pragma once
// The inventory with the nodes that stand for node pools (docs/node-pools.md):
// how many of an inventory's nodes a pool has now, and the inventory with
// each pool's next node added, as a patch of it. Pure: values in, a new
// inventory out; the inventory given is never changed.

#include <cstddef>
#include <memory>
#include <vector>

#include "compat-db/compat_db.h"
#include "policy/inventory/inventory.h"
#include "policy/objects/node_pool.h"

namespace cudagate {

// The nodes of `inventory` that are `pool`'s (pool nodes do not count).
[[nodiscard]] std::size_t pool_member_count(const NodePool& pool, const Inventory& inventory);

// `inventory` with the nodes of `pools` added (the policy's nodePools, and
// the NodePools `serve` watches on the API server), each named with the
// number of `inventory`'s nodes that are its own, made as a patch of it;
// the same pointer when `pools` stand for no node. A pool node of the same
// name that `inventory` holds is replaced; a node of the cluster never is
// (their names cannot meet).
[[nodiscard]] std::shared_ptr<const Inventory> with_pools(
    std::shared_ptr<const Inventory> inventory, const std::vector<NodePool>& pools,
    const CompatDb& db);

}  // namespace cudagate

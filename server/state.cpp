// Publishing a new policy or inventory as a fresh snapshot with one pointer swap, so that
// requests in flight keep the facts they started with.
#include "server/state.h"

#include <utility>
#include <vector>

#include "policy/inventory/inventory_pools.h"
#include "policy/rules/images_wanted.h"

namespace cudagate {

ServerState::ServerState(std::shared_ptr<const CompatDb> db, std::shared_ptr<const Policy> policy,
                         std::shared_ptr<const Inventory> inventory) {
  const std::lock_guard updating(update_mutex_);
  publish(std::move(db), std::move(policy), std::move(inventory), nullptr);
}

std::shared_ptr<const Snapshot> ServerState::snapshot() const {
  const std::lock_guard lock(mutex_);
  return current_;
}

void ServerState::publish(std::shared_ptr<const CompatDb> db, std::shared_ptr<const Policy> policy,
                          std::shared_ptr<const Inventory> cluster,
                          std::shared_ptr<const ClaimCatalog> claims) {
  cluster_inventory_ = cluster;
  std::shared_ptr<const Inventory> inventory = std::move(cluster);
  if (!cluster_pools_.empty() || !policy->node_pools.empty()) {
    std::vector<NodePool> pools = cluster_pools_;
    pools.insert(pools.end(), policy->node_pools.begin(), policy->node_pools.end());
    inventory = with_pools(std::move(inventory), pools, *db);
  }
  std::string platform = fleet_platform(*inventory);
  // The old snapshot may hold the last reference to a large inventory: release
  // it after the lock, so that freeing it never delays a reader.
  std::shared_ptr<const Snapshot> old;
  {
    const std::lock_guard lock(mutex_);
    old = std::exchange(current_, std::make_shared<const Snapshot>(Snapshot{
                                      std::move(db), std::move(policy), std::move(inventory),
                                      std::move(platform), std::move(claims)}));
  }
}

void ServerState::set_policy(std::shared_ptr<const Policy> policy) {
  const std::lock_guard updating(update_mutex_);
  const auto now = snapshot();
  publish(now->db, std::move(policy), cluster_inventory_, now->claims);
}

void ServerState::set_cluster_pools(std::vector<NodePool> pools) {
  const std::lock_guard updating(update_mutex_);
  cluster_pools_ = std::move(pools);
  const auto now = snapshot();
  publish(now->db, now->policy, cluster_inventory_, now->claims);
}

void ServerState::set_claims(std::shared_ptr<const ClaimCatalog> claims) {
  const std::lock_guard updating(update_mutex_);
  std::shared_ptr<const Snapshot> old;
  {
    const std::lock_guard lock(mutex_);
    old = std::exchange(current_, std::make_shared<const Snapshot>(
                                      Snapshot{current_->db, current_->policy, current_->inventory,
                                               current_->fleet_platform, std::move(claims)}));
  }
}

void ServerState::set_inventory(std::shared_ptr<const Inventory> inventory,
                                std::shared_ptr<const CompatDb> db) {
  const std::lock_guard updating(update_mutex_);
  const auto now = snapshot();
  if (!db) db = now->db;
  publish(std::move(db), now->policy, std::move(inventory), now->claims);
}

}  // namespace cudagate

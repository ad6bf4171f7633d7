// Publishing a new policy or inventory as a fresh snapshot with one pointer swap, so that
// requests in flight keep the facts they started with.
#include "server/state.h"

#include <utility>

#include "admission/admission.h"

namespace cudagate {

namespace {

std::shared_ptr<const Snapshot> first_snapshot(std::shared_ptr<const CompatDb> db,
                                               std::shared_ptr<const Policy> policy,
                                               std::shared_ptr<const Inventory> inventory) {
  auto platform = fleet_platform(*inventory);
  return std::make_shared<const Snapshot>(Snapshot{
      std::move(db), std::move(policy), std::move(inventory), std::move(platform), nullptr});
}

}  // namespace

ServerState::ServerState(std::shared_ptr<const CompatDb> db, std::shared_ptr<const Policy> policy,
                         std::shared_ptr<const Inventory> inventory)
    : current_(first_snapshot(std::move(db), std::move(policy), std::move(inventory))) {}

std::shared_ptr<const Snapshot> ServerState::snapshot() const {
  const std::lock_guard lock(mutex_);
  return current_;
}

void ServerState::set_policy(std::shared_ptr<const Policy> policy) {
  std::shared_ptr<const Snapshot> old;
  {
    const std::lock_guard lock(mutex_);
    old = std::exchange(current_, std::make_shared<const Snapshot>(
                                      Snapshot{current_->db, std::move(policy), current_->inventory,
                                               current_->fleet_platform, current_->claims}));
  }
}

void ServerState::set_claims(std::shared_ptr<const ClaimCatalog> claims) {
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
  // The old snapshot may hold the last reference to a large inventory: release
  // it after the lock, so that freeing it never delays a reader.
  std::shared_ptr<const Snapshot> old;
  std::string platform = fleet_platform(*inventory);
  {
    const std::lock_guard lock(mutex_);
    if (!db) db = current_->db;
    old = std::exchange(current_, std::make_shared<const Snapshot>(Snapshot{
                                      std::move(db), current_->policy, std::move(inventory),
                                      std::move(platform), current_->claims}));
  }
}

}  // namespace cudagate

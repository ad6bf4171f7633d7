#pragma once
// The facts the server judges admissions against, swapped whole while
// requests are served.
//
// A Snapshot is immutable: one compatibility matrix, one policy and one node
// inventory that belong together. A request takes the current snapshot once
// (a shared_ptr copy under a short lock) and uses it to the end, so a reload
// in the middle of a request never mixes old and new facts, and the old
// snapshot is freed when its last request finishes. Updates build the new
// pieces first, off the lock, and publish them with one pointer swap.
//
// ServerState also carries readiness (docs/contract.md §5: ready once the
// certificate is loaded and the inventory synced, and not from the moment
// shutdown begins). Every member is safe to call from any thread.

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "compat-db/compat_db.h"
#include "policy/config/policy.h"
#include "policy/inventory/inventory.h"
#include "policy/objects/dra.h"
#include "policy/objects/node_pool.h"
#include "server/report_store.h"

namespace cudagate {

struct Snapshot {
  std::shared_ptr<const CompatDb> db;
  std::shared_ptr<const Policy> policy;
  std::shared_ptr<const Inventory> inventory;
  // The inventory's GPU nodes' one platform, "" when mixed (fleet_platform()).
  std::string fleet_platform;
  // The ResourceClaims and ResourceClaimTemplates pods may name; null when
  // none are known (a pod that names one is then judged unknown).
  std::shared_ptr<const ClaimCatalog> claims;
};

class ServerState {
 public:
  ServerState(std::shared_ptr<const CompatDb> db, std::shared_ptr<const Policy> policy,
              std::shared_ptr<const Inventory> inventory);

  // Never null.
  [[nodiscard]] std::shared_ptr<const Snapshot> snapshot() const;

  // The inventory published is the cluster's (set_inventory) with the
  // nodes of its watched NodePools (set_cluster_pools) and of the policy's
  // node pools (with_pools), remade on any of these changes.
  void set_policy(std::shared_ptr<const Policy> policy);
  // The cluster's Karpenter NodePools, as watched on the API server.
  void set_cluster_pools(std::vector<NodePool> pools);
  // `db`, when given, is the matrix the inventory's facts were derived with
  // (a reloaded --compat-db): both are published in one swap.
  void set_inventory(std::shared_ptr<const Inventory> inventory,
                     std::shared_ptr<const CompatDb> db = nullptr);
  void set_claims(std::shared_ptr<const ClaimCatalog> claims);

  void set_certificate_loaded() { certificate_loaded_.store(true); }
  void set_inventory_synced() { inventory_synced_.store(true); }
  void begin_shutdown() { shutting_down_.store(true); }

  [[nodiscard]] bool shutting_down() const { return shutting_down_.load(); }
  // The latest decision per workload (GET /reports); thread-safe itself.
  [[nodiscard]] ReportStore& reports() const { return reports_; }
  [[nodiscard]] bool ready() const {
    return certificate_loaded_.load() && inventory_synced_.load() && !shutting_down_.load();
  }

 private:
  // Publishes a snapshot of these; the inventory is `cluster` with the
  // cluster's watched pools and the policy's. Called with update_mutex_ held.
  void publish(std::shared_ptr<const CompatDb> db, std::shared_ptr<const Policy> policy,
               std::shared_ptr<const Inventory> cluster,
               std::shared_ptr<const ClaimCatalog> claims);

  std::mutex update_mutex_;  // one update at a time; readers never take it
  std::shared_ptr<const Inventory> cluster_inventory_;  // guarded by update_mutex_
  std::vector<NodePool> cluster_pools_;                 // guarded by update_mutex_
  mutable std::mutex mutex_;
  std::shared_ptr<const Snapshot> current_;
  std::atomic<bool> certificate_loaded_{false};
  std::atomic<bool> inventory_synced_{false};
  std::atomic<bool> shutting_down_{false};
  mutable ReportStore reports_;
};

}  // namespace cudagate

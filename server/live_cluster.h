#pragma once
// The cluster `serve` watches (--in-cluster, --kubeconfig): its Nodes and
// their ResourceSlices (the live inventory), its ResourceClaims and
// ResourceClaimTemplates (the claim catalog) and Karpenter's NodePools, each
// listed and watched on the I/O threads and folded into the server's state
// on the thread of `fold`; a cluster that serves no DRA or no NodePools runs
// without them. The inventory counts as synced once each collection has been
// listed whole, or found not served (docs/operations.md, readiness).
//
// Make one, start() it once, stop() it before the executors stop; it is
// destroyed after them.

#include <boost/asio/any_io_executor.hpp>
#include <functional>
#include <memory>
#include <optional>

#include "compat-db/compat_db.h"
#include "kube/cluster_config.h"
#include "kube/node_watcher.h"
#include "kube/object_watcher.h"
#include "policy/inventory/inventory.h"
#include "server/live_claims.h"
#include "server/live_inventory.h"
#include "server/live_pools.h"
#include "server/metrics.h"
#include "server/state.h"

namespace cudagate {

class LiveCluster {
 public:
  struct Handlers {
    // A new inventory of the cluster's nodes, before the state serves it
    // (the inventory's metrics and the matrix's gaps).
    std::function<void(const Inventory& inventory, const CompatDb& db)> publish;
    // The nodes or the pools changed (the background audit runs again).
    std::function<void()> changed;
  };

  // `io` runs the watchers' requests; `fold` the folding of their events.
  LiveCluster(const boost::asio::any_io_executor& io, const boost::asio::any_io_executor& fold,
              const kube::ClusterConfig& cluster, std::shared_ptr<const CompatDb> db,
              ServerState& state, WebhookMetrics& metrics, Handlers handlers);
  LiveCluster(const LiveCluster&) = delete;
  LiveCluster& operator=(const LiveCluster&) = delete;

  // Begins every list. Call once.
  void start();
  // Ends the watches and drops events not yet folded in.
  void stop();
  // The matrix changed: every node's facts are derived again and the
  // inventory published with it.
  void set_db(std::shared_ptr<const CompatDb> db);

 private:
  // The parts the inventory waits for before it counts as synced.
  enum Part : unsigned { nodes = 1, slices = 2, templates = 4, claims = 8, pools = 16, all = 31 };
  void done(Part part);
  void on_step(const kube::WatchAction& action);
  kube::ObjectWatcherHandlers<ClaimSpec> claim_handlers(LiveClaims::Source source, Part part);

  ServerState& state_;
  WebhookMetrics& metrics_;
  Handlers handlers_;
  std::atomic<unsigned> done_{0};
  LiveInventory inventory_;
  LiveClaims claims_;
  LivePools pools_;
  std::optional<kube::NodeWatcher> node_watcher_;
  std::optional<kube::ObjectWatcher<ResourceSlice>> slice_watcher_;
  std::optional<kube::ObjectWatcher<ClaimSpec>> template_watcher_;
  std::optional<kube::ObjectWatcher<ClaimSpec>> claim_watcher_;
  std::optional<kube::ObjectWatcher<NodePool>> pool_watcher_;
};

}  // namespace cudagate

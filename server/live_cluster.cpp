// The watched cluster's collections, each from its watcher to the state.
#include "server/live_cluster.h"

#include <spdlog/spdlog.h>

#include <boost/asio/strand.hpp>
#include <chrono>
#include <random>
#include <utility>
#include <vector>

#include "kube/api_calls.h"
#include "kube/api_credentials.h"

namespace cudagate {
namespace {

// How long watch events gather before they are published as one inventory.
constexpr std::chrono::milliseconds kCoalesceEvents{100};

}  // namespace

LiveCluster::LiveCluster(const boost::asio::any_io_executor& io,
                         const boost::asio::any_io_executor& fold,
                         const kube::ClusterConfig& cluster, std::shared_ptr<const CompatDb> db,
                         ServerState& state, WebhookMetrics& metrics, Handlers handlers)
    : state_(state),
      metrics_(metrics),
      handlers_(std::move(handlers)),
      inventory_(fold, std::move(db), kCoalesceEvents,
                 [this](const LiveInventory::Update& update) {
                   handlers_.publish(*update.inventory, *update.db);
                   if (update.from_list) {
                     spdlog::info(
                         "inventory listed from the API server: {} nodes, {} with GPUs, {} with "
                         "an unknown driver",
                         update.inventory->size(), update.inventory->gpu_nodes(),
                         update.inventory->unknown_gpu_nodes());
                   } else {
                     spdlog::debug("inventory updated by {} watch events: {} nodes", update.events,
                                   update.inventory->size());
                   }
                   state_.set_inventory(update.inventory, update.db);
                   if (update.from_list) done(nodes);
                   if (update.slices_from_list) done(slices);
                   handlers_.changed();
                 }),
      claims_(fold, kCoalesceEvents,
              [this](const LiveClaims::Update& update) {
                spdlog::debug("claims updated: {} ResourceClaims and ResourceClaimTemplates known",
                              update.catalog->size());
                state_.set_claims(update.catalog);
                if (update.templates_listed) done(templates);
                if (update.claims_listed) done(claims);
              }),
      // Karpenter's NodePools: GPU pools that may have no node now.
      pools_(fold, [this](std::vector<NodePool> listed_pools, bool listed) {
        spdlog::log(listed ? spdlog::level::info : spdlog::level::debug,
                    "NodePools {} from the API server: {}", listed ? "listed" : "updated",
                    listed_pools.size());
        state_.set_cluster_pools(std::move(listed_pools));
        if (listed) done(pools);
        handlers_.changed();
      }) {
  kube::WatchOptions options;
  // Replicas (and restarts) retry at different moments.
  options.seed = std::random_device{}();
  // One credential source (and one exec plugin run) for every watcher.
  auto credentials = std::make_shared<kube::ApiCredentials>(boost::asio::make_strand(io), cluster);

  kube::NodeWatcherHandlers node_handlers;
  node_handlers.on_page = [this](std::vector<Node> page, bool first, bool last) {
    inventory_.add_page(std::move(page), first, last);
  };
  node_handlers.on_changes = [this](std::vector<kube::NodeChange> changes) {
    inventory_.apply(std::move(changes));
  };
  node_handlers.on_step = [this](const kube::WatchAction& action) { on_step(action); };
  node_watcher_.emplace(credentials, std::move(node_handlers), options);

  // Dynamic Resource Allocation: ResourceSlices as node facts, claims and
  // templates as what pods ask for.
  kube::ObjectWatcherHandlers<ResourceSlice> slice_handlers;
  slice_handlers.on_page = [this](std::vector<ResourceSlice> page, bool first, bool last) {
    inventory_.add_slice_page(std::move(page), first, last);
  };
  slice_handlers.on_changes = [this](std::vector<kube::SliceChange> changes) {
    inventory_.apply_slices(std::move(changes));
  };
  slice_handlers.on_step = [this](const kube::WatchAction& action) { on_step(action); };
  slice_handlers.on_absent = [this] { done(slices); };
  slice_watcher_.emplace(credentials, std::move(slice_handlers), options,
                         kube::ApiCallId::inventory_list_resourceslices,
                         kube::ApiCallId::inventory_watch_resourceslices, kube::kDraVersions);
  template_watcher_.emplace(credentials, claim_handlers(LiveClaims::Source::templates, templates),
                            options, kube::ApiCallId::inventory_list_resourceclaimtemplates,
                            kube::ApiCallId::inventory_watch_resourceclaimtemplates,
                            kube::kDraVersions);
  claim_watcher_.emplace(credentials, claim_handlers(LiveClaims::Source::claims, claims), options,
                         kube::ApiCallId::inventory_list_resourceclaims,
                         kube::ApiCallId::inventory_watch_resourceclaims, kube::kDraVersions);

  kube::ObjectWatcherHandlers<NodePool> pool_handlers;
  pool_handlers.on_page = [this](std::vector<NodePool> page, bool first, bool last) {
    pools_.add_page(std::move(page), first, last);
  };
  pool_handlers.on_changes = [this](std::vector<kube::NodePoolChange> changes) {
    pools_.apply(std::move(changes));
  };
  pool_handlers.on_step = [this](const kube::WatchAction& action) { on_step(action); };
  pool_handlers.on_absent = [this] { done(pools); };
  pool_watcher_.emplace(credentials, std::move(pool_handlers), options,
                        kube::ApiCallId::inventory_list_nodepools,
                        kube::ApiCallId::inventory_watch_nodepools, kube::kKarpenterVersions);
}

kube::ObjectWatcherHandlers<ClaimSpec> LiveCluster::claim_handlers(LiveClaims::Source source,
                                                                   Part part) {
  kube::ObjectWatcherHandlers<ClaimSpec> out;
  out.on_page = [this, source](std::vector<ClaimSpec> page, bool first, bool last) {
    claims_.add_page(source, std::move(page), first, last);
  };
  out.on_changes = [this, source](std::vector<kube::ClaimChange> changes) {
    claims_.apply(source, std::move(changes));
  };
  out.on_step = [this](const kube::WatchAction& action) { on_step(action); };
  out.on_absent = [this, part] { done(part); };
  return out;
}

void LiveCluster::start() {
  node_watcher_->start();
  slice_watcher_->start();
  template_watcher_->start();
  claim_watcher_->start();
  pool_watcher_->start();
}

void LiveCluster::stop() {
  node_watcher_->stop();
  slice_watcher_->stop();
  template_watcher_->stop();
  claim_watcher_->stop();
  pool_watcher_->stop();
  inventory_.stop();
  claims_.stop();
}

void LiveCluster::set_db(std::shared_ptr<const CompatDb> db) {
  inventory_.set_db(std::move(db));
}

void LiveCluster::done(Part part) {
  if ((done_.fetch_or(part) | part) == all) state_.set_inventory_synced();
}

void LiveCluster::on_step(const kube::WatchAction& action) {
  using Kind = kube::WatchAction::Kind;
  const bool first = action.reason == "initial" || action.reason == "page";
  if (action.kind == Kind::list && !first) metrics_.inventory_relist(action.reason);
  if (action.kind == Kind::watch && !first) metrics_.inventory_watch_restart(action.reason);
  if (action.kind == Kind::wait) {
    spdlog::info("API server: retrying in {} ms ({})", action.delay.count(), action.reason);
  }
}

}  // namespace cudagate

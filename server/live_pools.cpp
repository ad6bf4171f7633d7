// Karpenter NodePool lists and watch events folded into the cluster's pools.
#include "server/live_pools.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <optional>
#include <string_view>
#include <utility>

#include "kube/object_events.h"

namespace cudagate {
namespace {

// The NodePool of `object`, or nullopt, logged, when it cannot be read.
std::optional<NodePool> read_pool(const nlohmann::json& object, std::string_view name) {
  auto pool = node_pool_from_json(object, "nodepools " + std::string(name));
  if (!pool) {
    spdlog::warn("API server: NodePool left out: {}", pool.error().str());
    return std::nullopt;
  }
  return std::move(*pool);
}

}  // namespace

LivePools::LivePools(boost::asio::any_io_executor executor, Publish publish)
    : executor_(std::move(executor)), publish_(std::move(publish)) {}

void LivePools::add_page(const std::vector<nlohmann::json>& items, bool first, bool last) {
  if (first) listing_.clear();
  for (const nlohmann::json& item : items) {
    const std::string name = kube::object_name(item);
    if (auto pool = read_pool(item, name)) listing_.insert_or_assign(name, std::move(*pool));
  }
  if (!last) return;
  pools_ = std::exchange(listing_, {});
  publish(true);
}

void LivePools::apply(const std::vector<kube::ObjectChange>& changes) {
  bool changed = false;
  for (const kube::ObjectChange& change : changes) {
    std::optional<NodePool> pool;
    if (change.kind == kube::ObjectChange::Kind::upsert) {
      pool = read_pool(change.object, change.name);
    }
    if (!pool) {
      changed = pools_.erase(change.name) > 0 || changed;
      continue;
    }
    const auto it = pools_.find(change.name);
    if (it != pools_.end() && it->second == *pool) continue;  // its status, say
    pools_.insert_or_assign(change.name, std::move(*pool));
    changed = true;
  }
  if (changed) publish(false);
}

void LivePools::publish(bool from_list) {
  std::vector<NodePool> pools;
  pools.reserve(pools_.size());
  for (const auto& [name, pool] : pools_) pools.push_back(pool);
  boost::asio::post(executor_, [this, pools = std::move(pools), from_list]() mutable {
    publish_(std::move(pools), from_list);
  });
}

}  // namespace cudagate

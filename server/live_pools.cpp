// Karpenter NodePool lists and watch events folded into the cluster's pools.
#include "server/live_pools.h"

#include <boost/asio/post.hpp>
#include <optional>
#include <string>
#include <utility>

namespace cudagate {

LivePools::LivePools(boost::asio::any_io_executor executor, Publish publish)
    : executor_(std::move(executor)), publish_(std::move(publish)) {}

void LivePools::add_page(std::vector<NodePool> pools, bool first, bool last) {
  if (first) listing_.clear();
  for (NodePool& pool : pools) {
    std::string name = pool.name;
    listing_.insert_or_assign(std::move(name), std::move(pool));
  }
  if (!last) return;
  pools_ = std::exchange(listing_, {});
  publish(true);
}

void LivePools::apply(std::vector<kube::NodePoolChange> changes) {
  bool changed = false;
  for (kube::NodePoolChange& change : changes) {
    std::optional<NodePool>& pool = change.object;
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

#pragma once
// The Karpenter NodePools of a watched cluster (karpenter.sh/v1), as the
// pools the published inventory holds beside the cluster's nodes
// (ServerState::set_cluster_pools): lists and watch events, read by the
// watcher (kube/object_watcher.h), folded into the set of NodePools by
// name, handed on whole after each list and each batch of events.
//
// NodePools change seldom (an operator edits one), so nothing is
// coalesced: each batch that changes what cudagate reads of them publishes
// (Karpenter's own status updates do not). A NodePool that cannot be read
// (logged by the watcher with its name and field) is left out of its page,
// and a change with no object drops the NodePool of its name, so that no
// decision is made on a pool as it was before an edit cudagate cannot read.
//
// add_page() and apply() are called by one watcher, one call at a time;
// the publish runs on `executor` (the server's reload thread), in order.

#include <boost/asio/any_io_executor.hpp>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kube/object_watcher.h"
#include "policy/objects/node_pool.h"

namespace cudagate {

class LivePools {
 public:
  // The NodePools, in name order, and whether a whole list went into them.
  using Publish = std::function<void(std::vector<NodePool> pools, bool from_list)>;

  LivePools(boost::asio::any_io_executor executor, Publish publish);

  // A page of a list: `first` begins it, `last` ends it, and then its
  // NodePools replace every one known.
  void add_page(std::vector<NodePool> pools, bool first, bool last);
  // Watch events, in order.
  void apply(std::vector<kube::NodePoolChange> changes);

 private:
  void publish(bool from_list);

  boost::asio::any_io_executor executor_;
  Publish publish_;
  std::map<std::string, NodePool> pools_;    // by name
  std::map<std::string, NodePool> listing_;  // the list being received
};

}  // namespace cudagate

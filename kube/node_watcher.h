#pragma once
// Keeping up with the cluster's Nodes (GET /api/v1/nodes, list and watch)
// with a CollectionWatcher: Nodes read as --nodes files are read, a page
// at a time (on_page), so that the fleet is never held as Node objects
// whole, and watch events as NodeChanges (on_changes). The handlers are
// called on the watcher's strand and must not block it for long; on_step
// reports each list and watch started and each wait, for metrics and logs.
//
// Lifetime as CollectionWatcher's (collection_watcher.h).

#include <boost/asio/any_io_executor.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kube/cluster_config.h"
#include "kube/collection_watcher.h"
#include "kube/watch_protocol.h"
#include "policy/objects/node.h"

namespace cudagate::kube {

struct NodeChange {
  enum class Kind : unsigned char { upsert, remove };
  Kind kind = Kind::upsert;
  std::string name;
  Node node;  // upsert
};

struct NodeWatcherHandlers {
  std::function<void(std::vector<Node> nodes, bool first, bool last)> on_page;
  std::function<void(std::vector<NodeChange> changes)> on_changes;
  std::function<void(const WatchAction& action)> on_step;
};

// The Nodes of a NodeWatcher: NodeList pages and Node watch events read
// into Nodes and NodeChanges.
class NodeCollection final : public WatchedCollection {
 public:
  using Handlers = NodeWatcherHandlers;
  explicit NodeCollection(Handlers& handlers) : handlers_(handlers) {}
  [[nodiscard]] std::string_view name() const override { return "nodes"; }
  [[nodiscard]] std::string target(const WatchAction& action,
                                   const WatchOptions& options) const override;
  [[nodiscard]] Expected<PageMeta> read_page(std::string body) override;
  void deliver_page(bool first, bool last) override;
  [[nodiscard]] Expected<EventEnvelope> read_event(std::string_view text) override;
  void flush_events() override;

 private:
  Handlers& handlers_;
  std::vector<Node> page_;
  std::vector<NodeChange> changes_;
};

// NodeWatcher(credentials, handlers, options).
using NodeWatcher = Watcher<NodeCollection>;

}  // namespace cudagate::kube

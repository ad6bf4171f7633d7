#pragma once
// The inventory of a watched cluster: Node lists and watch events from the
// API server (kube/node_watcher.h) folded into the inventory that decisions
// read, published whole through a callback (ServerState::set_inventory).
//
// Events are coalesced: the first change after a publish arms a short
// timer, and every change that arrives before it fires goes into the same
// new inventory, so a rollout that relabels hundreds of nodes in a second
// costs a few builds, not hundreds, and a decision sees either the
// inventory before a batch or the one after it, never part of one.
//
// The new inventory is built from the published one: unchanged nodes are
// copied over from its compact form and only the nodes named by events
// are read anew, so no second copy of the fleet's Node objects is kept.
//
// replace_all() and apply() may be called from any thread; they only queue.
// Building and publish run on `executor` (one thread: the server's reload
// thread), never on an I/O thread.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "compat-db/compat_db.h"
#include "kube/node_watcher.h"
#include "policy/inventory.h"
#include "policy/node.h"

namespace cudagate {

class LiveInventory {
 public:
  // What one publish carries: the inventory, whether it came from a whole
  // list, and how many watch events went into it since the last one.
  struct Update {
    std::shared_ptr<const Inventory> inventory;
    bool from_list = false;
    std::size_t events = 0;
  };
  using Publish = std::function<void(const Update&)>;

  LiveInventory(boost::asio::any_io_executor executor, std::shared_ptr<const CompatDb> db,
                std::chrono::milliseconds coalesce, Publish publish);

  // A whole list: the next inventory holds exactly these nodes.
  void replace_all(std::vector<Node> nodes);
  // Watch events, in order; folded in after any list queued before them.
  void apply(std::vector<kube::NodeChange> changes);

  // Stops the timer; nothing is published after the executor ran it.
  void stop();

 private:
  void schedule(std::chrono::milliseconds delay);
  void rebuild();

  boost::asio::any_io_executor executor_;
  std::shared_ptr<const CompatDb> db_;
  std::chrono::milliseconds coalesce_;
  Publish publish_;
  boost::asio::steady_timer timer_;

  std::mutex mutex_;  // guards what follows
  std::optional<std::vector<Node>> pending_list_;
  std::vector<kube::NodeChange> pending_changes_;
  bool scheduled_ = false;
  bool stopped_ = false;

  // On the executor only: the last inventory published.
  std::shared_ptr<const Inventory> current_ = std::make_shared<const Inventory>();
};

}  // namespace cudagate

#pragma once
// The inventory of a watched cluster: Node lists and watch events from the
// API server (kube/node_watcher.h) folded into the inventory that decisions
// read, published whole through a callback (ServerState::set_inventory).
//
// Events are coalesced: the first change after a publish arms a timer (the
// coalescing delay, or as long as the last patch took if that was longer,
// so that patching never takes more than about half a core however fast
// events come), and every change that arrives before it fires goes into the
// same new inventory, so a rollout that relabels hundreds of nodes in a second
// costs a few patches, not hundreds, and a decision sees either the
// inventory before a batch or the one after it, never part of one.
//
// The new inventory is the published one patched (Inventory::patched): only
// the nodes named by events are read anew and indexed again, in time
// proportional to them, and everything else is shared with the published
// inventory, which decisions in flight keep reading unchanged. A list (the
// first one, and a relist after 410 Gone) builds a whole new inventory.
//
// ResourceSlices (Dynamic Resource Allocation, read by the watcher:
// kube/object_watcher.h) are node facts too, those of NVIDIA's driver on a
// node (is_nvidia_node_slice): the slices are kept by name, and each node's
// device kinds are those of its current slices (device_kinds_by_node over
// them, attach_devices). A batch of slice changes patches the nodes whose
// slices changed; a Node event keeps the node's devices; a Node list
// attaches them as it is indexed. A slice list (the first one, a relist)
// replaces every slice.
//
// add_page(), replace_all(), apply(), add_slice_page() and apply_slices()
// may be called from any thread; they only queue.
// Building and publish run on `executor` (one thread: the server's reload
// thread), never on an I/O thread.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "compat-db/compat_db.h"
#include "kube/node_watcher.h"
#include "kube/object_watcher.h"
#include "policy/inventory/inventory.h"
#include "policy/objects/dra.h"
#include "policy/objects/node.h"

namespace cudagate {

// `changes` without those that change nothing a decision reads: a MODIFIED
// node whose labels, taints, cordon, extended resources and DRA devices are
// as `current` has them (most Node updates are status: conditions, images,
// heartbeats), and the removal of a node it does not have.
[[nodiscard]] std::vector<kube::NodeChange> relevant_changes(std::vector<kube::NodeChange> changes,
                                                             const Inventory& current);

// `old` with `changes` applied, in order (the last change of a node wins),
// as a patch of `old` (Inventory::patched): only the changed nodes' facts
// are derived and only their index entries change.
[[nodiscard]] Inventory apply_node_changes(const Inventory& old,
                                           const std::vector<kube::NodeChange>& changes,
                                           const CompatDb& db);

// The same inventory built anew: unchanged nodes copied from `old`'s
// compact form with the GPU facts of their group, then the changed ones.
// What a patch is measured and checked against.
[[nodiscard]] Inventory rebuild_with_node_changes(const Inventory& old,
                                                  const std::vector<kube::NodeChange>& changes,
                                                  const CompatDb& db);

// Whether `slice` is a node fact: a slice of NVIDIA's driver
// (kNvidiaDraDriver) on a node. The inventory keeps those only.
[[nodiscard]] bool is_nvidia_node_slice(const ResourceSlice& slice);
// The slices of a list page that are node facts.
[[nodiscard]] std::vector<ResourceSlice> nvidia_slices(std::vector<ResourceSlice> slices);
// `changes` with the object of every upsert of a slice that is no node
// fact (another driver's, or of no node) taken away: its removal, as an
// upsert of a slice that could not be read is (a node is judged by no
// devices rather than by stale ones).
[[nodiscard]] std::vector<kube::SliceChange> nvidia_slice_changes(
    std::vector<kube::SliceChange> changes);

// `old`'s nodes with their facts derived anew with `db` (another matrix).
[[nodiscard]] Inventory rederived(const Inventory& old, const CompatDb& db);

class LiveInventory {
 public:
  // What one publish carries: the inventory, whether it came from a whole
  // list, and how many watch events went into it since the last one. Events
  // that change nothing a decision reads are dropped, and a batch of only
  // those publishes nothing.
  struct Update {
    std::shared_ptr<const Inventory> inventory;
    bool from_list = false;
    std::size_t events = 0;
    bool slices_from_list = false;  // a whole ResourceSlice list went into it
    // The matrix the inventory's facts were derived with (set_db).
    std::shared_ptr<const CompatDb> db = nullptr;
  };
  using Publish = std::function<void(const Update&)>;

  LiveInventory(boost::asio::any_io_executor executor, std::shared_ptr<const CompatDb> db,
                std::chrono::milliseconds coalesce, Publish publish);

  // A page of a list: `first` begins it (dropping a list begun before and
  // the events queued before it), `last` ends it, and the next inventory
  // holds exactly the nodes of its pages. Pages are indexed as they come,
  // so a large list is never held as Node objects.
  void add_page(std::vector<Node> nodes, bool first, bool last);
  // A whole list in one page.
  void replace_all(std::vector<Node> nodes) { add_page(std::move(nodes), true, true); }
  // Watch events, in order; folded in after any list queued before them.
  void apply(std::vector<kube::NodeChange> changes);

  // A page of a ResourceSlice list (`first` begins it, dropping slice
  // events queued before; `last` ends it); the node facts among its slices
  // (nvidia_slices) replace every slice known, in the next inventory.
  void add_slice_page(std::vector<ResourceSlice> slices, bool first, bool last);
  // ResourceSlice watch events, in order: a change with no object, or
  // with a slice that is no node fact, drops the slice of its name.
  void apply_slices(std::vector<kube::SliceChange> changes);

  // Another compatibility matrix: every node's facts are derived again with
  // it, and the next inventory published (at once, or when a list being
  // received ends) carries it.
  void set_db(std::shared_ptr<const CompatDb> db);

  // Stops the timer; nothing is published after the executor ran it.
  void stop();

 private:
  void schedule(std::chrono::milliseconds delay);
  void rebuild();
  // On the executor: `slice` in, replacing the one of its name; its node
  // and the node it had before go to `affected`.
  void put_slice(ResourceSlice slice, std::vector<std::string>& affected);
  void drop_slice(const std::string& name, std::vector<std::string>& affected);
  // `node` with the device kinds of its current slices.
  void attach_node_devices(Node& node) const;
  // An upsert of inventory node `name` with the device kinds of its current
  // slices; nullopt when the inventory does not hold it.
  std::optional<kube::NodeChange> device_patch(const std::string& name) const;

  boost::asio::any_io_executor executor_;
  std::shared_ptr<const CompatDb> db_;
  std::chrono::milliseconds coalesce_;
  Publish publish_;
  boost::asio::steady_timer timer_;

  std::mutex mutex_;  // guards what follows
  std::vector<kube::NodeChange> pending_changes_;
  std::vector<ResourceSlice> slice_list_;  // the slice list being received
  bool slice_list_done_ = false;           // slice_list_ is whole, not yet applied
  std::vector<kube::SliceChange> pending_slices_;
  bool scheduled_ = false;
  bool stopped_ = false;

  // On the executor only: the last inventory published.
  std::shared_ptr<const Inventory> current_ = std::make_shared<const Inventory>();
  std::unique_ptr<InventoryBuilder> listing_;   // the list being received
  std::shared_ptr<const CompatDb> listing_db_;  // the matrix listing_ derives facts with
  // The ResourceSlices of NVIDIA's driver, by node and by name.
  std::map<std::string, std::map<std::string, ResourceSlice>, std::less<>> slices_by_node_;
  std::map<std::string, std::string, std::less<>> node_of_slice_;
  std::chrono::milliseconds last_build_{0};  // guarded by mutex_
};

}  // namespace cudagate

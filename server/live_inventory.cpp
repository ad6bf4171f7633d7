// Folding API-server Node lists and watch events into a new inventory, a
// coalesced batch at a time, patched from the one last published.
#include "server/live_inventory.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace cudagate {

std::vector<kube::NodeChange> relevant_changes(std::vector<kube::NodeChange> changes,
                                               const Inventory& current) {
  // A batch applies each node's last change (apply_node_changes), so a node
  // counts when its last change makes it differ from `current`.
  std::unordered_map<std::string, const kube::NodeChange*> last;
  for (const auto& change : changes) last[change.name] = &change;
  std::unordered_map<std::string, bool> counts;
  Node now;
  for (const auto& [name, change] : last) {
    const auto index = current.index_of(name);
    bool differs = true;
    if (change->kind == kube::NodeChange::Kind::remove) {
      differs = index.has_value();
    } else if (index) {
      current.node_into(*index, now);
      const Node& next = change->node;
      differs = !(now.labels == next.labels && now.taints == next.taints &&
                  now.unschedulable == next.unschedulable && now.allocatable == next.allocatable &&
                  now.devices == next.devices);
    }
    counts.emplace(name, differs);
  }
  std::vector<kube::NodeChange> out;
  for (auto& change : changes) {
    if (counts.at(change.name)) out.push_back(std::move(change));
  }
  return out;
}

Inventory apply_node_changes(const Inventory& old, const std::vector<kube::NodeChange>& changes,
                             const CompatDb& db) {
  std::vector<NodeEdit> edits;
  edits.reserve(changes.size());
  for (const auto& change : changes) {
    const bool upsert = change.kind == kube::NodeChange::Kind::upsert;
    edits.push_back({change.name, upsert ? &change.node : nullptr});
  }
  return old.patched(edits, db);
}

Inventory rebuild_with_node_changes(const Inventory& old,
                                    const std::vector<kube::NodeChange>& changes,
                                    const CompatDb& db) {
  // The last word on each node named by an event: its new form, or removed.
  std::unordered_map<std::string_view, const kube::NodeChange*> last;
  last.reserve(changes.size());
  for (const auto& change : changes) last[change.name] = &change;

  InventoryBuilder builder(db);
  Node node;
  for (std::size_t i = 0; i < old.size(); ++i) {
    if (last.contains(old.node_name(i))) continue;
    old.node_into(i, node);
    builder.add(node, &old.groups()[old.group_of(i)].facts);
  }
  for (const auto& change : changes) {
    // Each node once, in event order, as its last change left it.
    const auto it = last.find(change.name);
    if (it == last.end() || it->second != &change) continue;
    if (change.kind == kube::NodeChange::Kind::upsert) builder.add(change.node);
  }
  return builder.finish();
}

bool is_nvidia_node_slice(const ResourceSlice& slice) {
  return slice.driver == kNvidiaDraDriver && !slice.node_name.empty();
}

std::vector<ResourceSlice> nvidia_slices(std::vector<ResourceSlice> slices) {
  std::erase_if(slices, [](const ResourceSlice& slice) { return !is_nvidia_node_slice(slice); });
  return slices;
}

std::vector<kube::SliceChange> nvidia_slice_changes(std::vector<kube::SliceChange> changes) {
  for (kube::SliceChange& change : changes) {
    if (change.object && !is_nvidia_node_slice(*change.object)) change.object.reset();
  }
  return changes;
}

Inventory rederived(const Inventory& old, const CompatDb& db) {
  InventoryBuilder builder(db);
  Node node;
  for (std::size_t i = 0; i < old.size(); ++i) {
    old.node_into(i, node);
    builder.add(node);
  }
  return builder.finish();
}

LiveInventory::LiveInventory(boost::asio::any_io_executor executor,
                             std::shared_ptr<const CompatDb> db, std::chrono::milliseconds coalesce,
                             Publish publish)
    : executor_(std::move(executor)),
      db_(std::move(db)),
      coalesce_(coalesce),
      publish_(std::move(publish)),
      timer_(executor_) {}

void LiveInventory::set_db(std::shared_ptr<const CompatDb> db) {
  boost::asio::post(executor_, [this, db = std::move(db)]() mutable {
    db_ = std::move(db);
    // A list being received ends with its inventory derived again.
    if (listing_) return;
    current_ = std::make_shared<const Inventory>(rederived(*current_, *db_));
    {
      const std::lock_guard lock(mutex_);
      if (stopped_) return;
    }
    publish_(Update{current_, false, 0, false, db_});
  });
}

void LiveInventory::add_page(std::vector<Node> nodes, bool first, bool last) {
  {
    const std::lock_guard lock(mutex_);
    if (stopped_) return;
    // The list supersedes the events before it (the watch that sent them ended).
    if (first) pending_changes_.clear();
  }
  boost::asio::post(executor_, [this, nodes = std::move(nodes), first, last]() mutable {
    if (first || !listing_) {
      listing_db_ = db_;
      listing_ = std::make_unique<InventoryBuilder>(*listing_db_);
    }
    for (Node& node : nodes) {
      attach_node_devices(node);
      listing_->add(node);
    }
    if (!last) return;
    current_ = std::make_shared<const Inventory>(listing_->finish());
    listing_.reset();
    if (listing_db_ != db_)
      current_ = std::make_shared<const Inventory>(rederived(*current_, *db_));
    listing_db_.reset();
    // Slices that arrived while the list was read: the nodes of its earlier
    // pages were added without them, and the slices' patch skipped nodes
    // the inventory did not hold yet.
    std::vector<kube::NodeChange> late;
    for (const auto& entry : slices_by_node_) {
      if (auto change = device_patch(entry.first)) late.push_back(std::move(*change));
    }
    late = relevant_changes(std::move(late), *current_);
    if (!late.empty()) {
      current_ = std::make_shared<const Inventory>(apply_node_changes(*current_, late, *db_));
    }
    {
      const std::lock_guard lock(mutex_);
      if (stopped_) return;
    }
    publish_(Update{current_, true, 0, false, db_});
  });
}

void LiveInventory::apply(std::vector<kube::NodeChange> changes) {
  const std::lock_guard lock(mutex_);
  for (auto& change : changes) pending_changes_.push_back(std::move(change));
  schedule(std::max(coalesce_, last_build_));
}

void LiveInventory::add_slice_page(std::vector<ResourceSlice> slices, bool first, bool last) {
  slices = nvidia_slices(std::move(slices));
  const std::lock_guard lock(mutex_);
  if (first) {
    // The list supersedes the slice events before it (the watch that sent them ended).
    slice_list_.clear();
    pending_slices_.clear();
    slice_list_done_ = false;
  }
  for (ResourceSlice& slice : slices) slice_list_.push_back(std::move(slice));
  if (!last) return;
  slice_list_done_ = true;
  schedule(coalesce_);
}

void LiveInventory::apply_slices(std::vector<kube::SliceChange> changes) {
  changes = nvidia_slice_changes(std::move(changes));
  const std::lock_guard lock(mutex_);
  for (auto& change : changes) pending_slices_.push_back(std::move(change));
  schedule(std::max(coalesce_, last_build_));
}

void LiveInventory::put_slice(ResourceSlice slice, std::vector<std::string>& affected) {
  drop_slice(slice.name, affected);
  affected.push_back(slice.node_name);
  node_of_slice_.emplace(slice.name, slice.node_name);
  std::string name = slice.name;
  slices_by_node_[slice.node_name].insert_or_assign(std::move(name), std::move(slice));
}

void LiveInventory::drop_slice(const std::string& name, std::vector<std::string>& affected) {
  const auto it = node_of_slice_.find(name);
  if (it == node_of_slice_.end()) return;
  affected.push_back(it->second);
  if (const auto node = slices_by_node_.find(it->second); node != slices_by_node_.end()) {
    node->second.erase(name);
    if (node->second.empty()) slices_by_node_.erase(node);
  }
  node_of_slice_.erase(it);
}

std::optional<kube::NodeChange> LiveInventory::device_patch(const std::string& name) const {
  const auto index = current_->index_of(name);
  if (!index) return std::nullopt;
  kube::NodeChange change{kube::NodeChange::Kind::upsert, name, current_->node(*index)};
  attach_node_devices(change.node);
  return change;
}

void LiveInventory::attach_node_devices(Node& node) const {
  const auto it = slices_by_node_.find(node.name);
  if (it == slices_by_node_.end()) {
    if (!node.devices.empty() ||
        std::any_of(node.allocatable.begin(), node.allocatable.end(),
                    [](const auto& entry) { return is_dra_resource(entry.first); })) {
      attach_devices(node, {});
    }
    return;
  }
  std::vector<ResourceSlice> slices;
  slices.reserve(it->second.size());
  for (const auto& [name, slice] : it->second) slices.push_back(slice);
  auto kinds = device_kinds_by_node(slices);
  const auto own = kinds.find(node.name);
  attach_devices(node, own != kinds.end() ? std::move(own->second) : std::vector<DeviceKind>{});
}

void LiveInventory::stop() {
  {
    const std::lock_guard lock(mutex_);
    stopped_ = true;
  }
  boost::asio::post(executor_, [this] { timer_.cancel(); });
}

// Under mutex_.
void LiveInventory::schedule(std::chrono::milliseconds delay) {
  if (scheduled_ || stopped_) return;
  scheduled_ = true;
  boost::asio::post(executor_, [this, delay] {
    timer_.expires_after(delay);
    timer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) rebuild();
    });
  });
}

void LiveInventory::rebuild() {
  std::vector<kube::NodeChange> changes;
  std::vector<kube::SliceChange> slice_events;
  std::optional<std::vector<ResourceSlice>> slice_list;
  {
    const std::lock_guard lock(mutex_);
    scheduled_ = false;
    if (stopped_) return;
    changes = std::exchange(pending_changes_, {});
    slice_events = std::exchange(pending_slices_, {});
    if (slice_list_done_) {
      slice_list = std::exchange(slice_list_, {});
      slice_list_done_ = false;
    }
  }
  const std::size_t received = changes.size() + slice_events.size();

  // Slices first: the nodes whose slices changed are patched with their new
  // device kinds, and Node events carry the devices their slices give.
  std::vector<std::string> affected;
  if (slice_list) {
    for (const auto& [node, slices] : slices_by_node_) affected.push_back(node);
    slices_by_node_.clear();
    node_of_slice_.clear();
    for (ResourceSlice& slice : *slice_list) put_slice(std::move(slice), affected);
  }
  for (kube::SliceChange& change : slice_events) {
    if (change.object) {
      put_slice(std::move(*change.object), affected);
    } else {
      drop_slice(change.name, affected);
    }
  }
  std::sort(affected.begin(), affected.end());
  affected.erase(std::unique(affected.begin(), affected.end()), affected.end());
  // Views of the names of `changes`, which grows no further than reserved.
  changes.reserve(changes.size() + affected.size());
  std::unordered_set<std::string_view> named;
  for (kube::NodeChange& change : changes) {
    named.insert(change.name);
    if (change.kind == kube::NodeChange::Kind::upsert) attach_node_devices(change.node);
  }
  for (const std::string& name : affected) {
    if (named.contains(name)) continue;
    if (auto change = device_patch(name)) changes.push_back(std::move(*change));
  }
  changes = relevant_changes(std::move(changes), *current_);
  if (changes.empty() && slice_list) {
    publish_(Update{current_, false, received, true, db_});
    return;
  }
  if (changes.empty()) return;
  const auto start = std::chrono::steady_clock::now();
  current_ = std::make_shared<const Inventory>(apply_node_changes(*current_, changes, *db_));
  {
    const std::lock_guard lock(mutex_);
    last_build_ = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
  }
  publish_(Update{current_, false, received, slice_list.has_value(), db_});
}

}  // namespace cudagate

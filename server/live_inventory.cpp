// Folding API-server Node lists and watch events into a new inventory, a
// coalesced batch at a time, patched from the one last published.
#include "server/live_inventory.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
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
                  now.unschedulable == next.unschedulable && now.allocatable == next.allocatable);
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

LiveInventory::LiveInventory(boost::asio::any_io_executor executor,
                             std::shared_ptr<const CompatDb> db, std::chrono::milliseconds coalesce,
                             Publish publish)
    : executor_(std::move(executor)),
      db_(std::move(db)),
      coalesce_(coalesce),
      publish_(std::move(publish)),
      timer_(executor_) {}

void LiveInventory::add_page(std::vector<Node> nodes, bool first, bool last) {
  {
    const std::lock_guard lock(mutex_);
    if (stopped_) return;
    // The list supersedes the events before it (the watch that sent them ended).
    if (first) pending_changes_.clear();
  }
  boost::asio::post(executor_, [this, nodes = std::move(nodes), first, last] {
    if (first || !listing_) listing_ = std::make_unique<InventoryBuilder>(*db_);
    for (const Node& node : nodes) listing_->add(node);
    if (!last) return;
    current_ = std::make_shared<const Inventory>(listing_->finish());
    listing_.reset();
    {
      const std::lock_guard lock(mutex_);
      if (stopped_) return;
    }
    publish_(Update{current_, true, 0});
  });
}

void LiveInventory::apply(std::vector<kube::NodeChange> changes) {
  const std::lock_guard lock(mutex_);
  for (auto& change : changes) pending_changes_.push_back(std::move(change));
  schedule(std::max(coalesce_, last_build_));
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
  {
    const std::lock_guard lock(mutex_);
    scheduled_ = false;
    if (stopped_) return;
    changes = std::exchange(pending_changes_, {});
  }
  const std::size_t received = changes.size();
  changes = relevant_changes(std::move(changes), *current_);
  if (changes.empty()) return;
  const auto start = std::chrono::steady_clock::now();
  current_ = std::make_shared<const Inventory>(apply_node_changes(*current_, changes, *db_));
  {
    const std::lock_guard lock(mutex_);
    last_build_ = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
  }
  publish_(Update{current_, false, received});
}

}  // namespace cudagate

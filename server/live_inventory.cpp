// Folding API-server Node lists and watch events into a new inventory, a
// coalesced batch at a time, built from the one last published.
#include "server/live_inventory.h"

#include <boost/asio/post.hpp>
#include <string>
#include <unordered_map>
#include <utility>

namespace cudagate {

LiveInventory::LiveInventory(boost::asio::any_io_executor executor,
                             std::shared_ptr<const CompatDb> db, std::chrono::milliseconds coalesce,
                             Publish publish)
    : executor_(executor),
      db_(std::move(db)),
      coalesce_(coalesce),
      publish_(std::move(publish)),
      timer_(executor) {}

void LiveInventory::replace_all(std::vector<Node> nodes) {
  const std::lock_guard lock(mutex_);
  pending_list_ = std::move(nodes);
  pending_changes_.clear();  // the list supersedes what came before it
  // A list is the first sync or a relist: publish it without waiting.
  schedule(std::chrono::milliseconds(0));
}

void LiveInventory::apply(std::vector<kube::NodeChange> changes) {
  const std::lock_guard lock(mutex_);
  for (auto& change : changes) pending_changes_.push_back(std::move(change));
  schedule(coalesce_);
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
  std::optional<std::vector<Node>> list;
  std::vector<kube::NodeChange> changes;
  {
    const std::lock_guard lock(mutex_);
    scheduled_ = false;
    if (stopped_) return;
    list = std::move(pending_list_);
    pending_list_.reset();
    changes = std::exchange(pending_changes_, {});
  }
  if (!list && changes.empty()) return;
  const bool from_list = list.has_value();

  // The last word on each node named by an event: its new form, or removed.
  std::unordered_map<std::string, const kube::NodeChange*> last;
  last.reserve(changes.size());
  for (const auto& change : changes) last[change.name] = &change;

  InventoryBuilder builder(*db_);
  auto add_unless_changed = [&](const Node& node) {
    if (!last.contains(node.name)) builder.add(node);
  };
  if (list) {
    for (const Node& node : *list) add_unless_changed(node);
    list.reset();
  } else {
    const Inventory& old = *current_;
    for (std::size_t i = 0; i < old.size(); ++i) {
      if (!last.contains(old.node_name(i))) builder.add(old.node(i));
    }
  }
  for (const auto& [name, change] : last) {
    if (change->kind == kube::NodeChange::Kind::upsert) builder.add(change->node);
  }
  current_ = std::make_shared<const Inventory>(builder.finish());
  publish_(Update{current_, from_list, changes.size()});
}

}  // namespace cudagate

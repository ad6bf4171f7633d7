// The bounded most-recent decision per workload behind GET /reports.
#include "server/report_store.h"

#include <utility>

namespace cudagate {
namespace {

// Gives `decision` its own copies of its node names, so that it no longer
// holds the inventory it was made against.
void detach(Decision& decision) {
  if (!decision.node_name_storage) return;
  for (GroupDecision& group : decision.groups) {
    std::vector<std::string> names(group.nodes.begin(), group.nodes.end());
    group.nodes = NodeNames(std::move(names));
  }
  decision.node_name_storage.reset();
}

}  // namespace

ReportStore::ReportStore(std::size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

void ReportStore::record(Decision decision) {
  if (decision.resource.name.empty()) return;
  Key key{decision.resource.namespace_, decision.resource.kind, decision.resource.name};
  std::lock_guard lock(mutex_);
  if (decision.node_name_storage != current_storage_ && decision.node_name_storage) {
    // Another inventory: those of earlier ones are let go (once per change).
    for (Entry& entry : entries_) {
      if (entry.decision.node_name_storage != decision.node_name_storage) {
        detach(entry.decision);
      }
    }
    current_storage_ = decision.node_name_storage;
  }
  if (const auto it = index_.find(key); it != index_.end()) {
    it->second->decision = std::move(decision);
    entries_.splice(entries_.begin(), entries_, it->second);
    return;
  }
  entries_.push_front(Entry{key, std::move(decision)});
  index_.emplace(std::move(key), entries_.begin());
  while (entries_.size() > capacity_) {
    index_.erase(entries_.back().key);
    entries_.pop_back();
  }
}

void ReportStore::forget(const ResourceRef& workload) {
  std::lock_guard lock(mutex_);
  const auto it = index_.find(Key{workload.namespace_, workload.kind, workload.name});
  if (it == index_.end()) return;
  entries_.erase(it->second);
  index_.erase(it);
}

std::vector<Decision> ReportStore::latest(std::string_view namespace_) const {
  std::vector<Decision> out;
  std::lock_guard lock(mutex_);
  for (const auto& [key, it] : index_) {
    if (!namespace_.empty() && std::get<0>(key) != namespace_) continue;
    out.push_back(it->decision);
  }
  return out;
}

std::size_t ReportStore::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

}  // namespace cudagate

#pragma once
// The latest decision per workload that the webhook judged, for GET /reports
// (docs/contract.md §7.2): bounded, the least recently judged workload
// dropped first.
//
// A workload is its kind, namespace and name; a Pod admitted without a name
// (a controller's, named by generateName) is not kept: its controller's
// template is. Recording is on every admission's path, so a decision is
// kept as it is, its node names viewing the inventory it was made against
// (Decision::node_name_storage); when a decision of another inventory
// comes, the kept ones of earlier inventories get copies of their names,
// so that the store holds at most the inventory in use alive.
//
// Thread-safe: record() and latest() may be called from any thread.

#include <cstddef>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "policy/rules/decision.h"

namespace cudagate {

inline constexpr std::size_t kDefaultReportCapacity = 10000;

class ReportStore {
 public:
  explicit ReportStore(std::size_t capacity = kDefaultReportCapacity);

  // Keeps `decision` as the latest of its workload.
  void record(Decision decision);

  // Drops the kept decision of a workload, if any (one that no longer
  // exists in the cluster).
  void forget(const ResourceRef& workload);

  // The kept decisions, of `namespace_` only unless it is empty, ordered by
  // namespace, kind and name.
  [[nodiscard]] std::vector<Decision> latest(std::string_view namespace_ = {}) const;

  [[nodiscard]] std::size_t size() const;
  [[nodiscard]] std::size_t capacity() const { return capacity_; }

 private:
  using Key = std::tuple<std::string, std::string, std::string>;  // namespace, kind, name
  struct Entry {
    Key key;
    Decision decision;
  };

  std::size_t capacity_;
  mutable std::mutex mutex_;
  std::list<Entry> entries_;  // most recently recorded first
  std::map<Key, std::list<Entry>::iterator> index_;
  // The node-name storage of the latest decision recorded: kept decisions
  // view only this one.
  std::shared_ptr<const void> current_storage_;
};

}  // namespace cudagate

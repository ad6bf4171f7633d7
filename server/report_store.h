#pragma once
// The latest decision per workload that the webhook judged, for GET /reports
// (SPEC 7.2): bounded, the least recently judged workload dropped first.
//
// A workload is its kind, namespace and name; a Pod admitted without a name
// (a controller's, named by generateName) is not kept: its controller's
// template is. Decisions are kept with their own copies of the node names,
// so that a kept decision does not hold an old inventory alive.
//
// Thread-safe: record() and latest() may be called from any thread.

#include <cstddef>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "policy/decision.h"

namespace cudagate {

inline constexpr std::size_t kDefaultReportCapacity = 10000;

class ReportStore {
 public:
  explicit ReportStore(std::size_t capacity = kDefaultReportCapacity);

  // Keeps `decision` as the latest of its workload.
  void record(const Decision& decision);

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
};

}  // namespace cudagate

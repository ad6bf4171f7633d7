#pragma once
// The ResourceClaims and ResourceClaimTemplates of a watched cluster, as the
// catalog decisions read (EvaluationInputs::claims): lists and watch events
// of both collections, read by their watchers (kube/object_watcher.h),
// folded into a ClaimCatalog, published whole through a callback
// (ServerState::set_claims) as an immutable snapshot, so that a decision
// sees the catalog before a batch or after it, never part of one.
//
// Events are coalesced as the inventory's are (live_inventory.h): the
// first change after a publish arms a timer and every change before it
// fires goes into the same catalog. A list of one collection replaces that
// collection's objects only.
//
// ResourceClaims made from a pod's template (kube::made_for_pod) and
// objects that cannot be read (logged with their name) never reach it: the
// watcher leaves them out of its pages, and a change with no object drops
// the claim of its name.
//
// add_page() and apply() may be called from any thread; they only queue.
// Building and publishing run on `executor`.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kube/object_watcher.h"
#include "policy/objects/dra.h"

namespace cudagate {

class LiveClaims {
 public:
  enum class Source : unsigned char { templates, claims };
  struct Update {
    std::shared_ptr<const ClaimCatalog> catalog;
    // Whole lists went into it, of templates and of claims.
    bool templates_listed = false;
    bool claims_listed = false;
  };
  using Publish = std::function<void(const Update&)>;

  LiveClaims(const boost::asio::any_io_executor& executor, std::chrono::milliseconds coalesce,
             Publish publish);

  // A page of a list of `source`: `first` begins it (dropping its events
  // queued before), `last` ends it, and then its objects replace those of
  // `source` in the next catalog.
  void add_page(Source source, std::vector<ClaimSpec> claims, bool first, bool last);
  // Watch events of `source`, in order.
  void apply(Source source, std::vector<kube::ClaimChange> changes);
  // Stops the timer; nothing is published after the executor ran it.
  void stop();

 private:
  struct Pending {
    std::vector<ClaimSpec> list;  // the list being received
    bool list_done = false;
    std::vector<kube::ClaimChange> changes;
  };
  void schedule();
  void rebuild();

  boost::asio::any_io_executor executor_;
  std::chrono::milliseconds coalesce_;
  Publish publish_;
  boost::asio::steady_timer timer_;

  std::mutex mutex_;  // guards what follows
  Pending pending_[2];
  bool scheduled_ = false;
  bool stopped_ = false;

  // On the executor only: each source's objects, by "namespace/name".
  std::map<std::string, ClaimSpec> known_[2];
};

}  // namespace cudagate

#pragma once
// Keeping up with a collection of objects other than Nodes (the Dynamic
// Resource Allocation collections: ResourceSlices, ResourceClaims,
// ResourceClaimTemplates; Karpenter's NodePools) with a CollectionWatcher,
// of every namespace: its objects read in kube/ (kube/watched_objects.h)
// and handed on as values of type T, list pages as vectors of T and watch
// events as ObjectChange<T>s, as NodeWatcher hands on Nodes.
//
// An object that cannot be read is logged (watched_object) and, like an
// object that is none of cudagate's (a ResourceClaim made for a pod), is
// left out of its page and is no object in its change: the handler then
// drops the object of that name, so that nothing is judged by a form of it
// cudagate could not read.
//
// The collection is asked for at the first of `versions` of its group the
// server serves: a 404 moves to the next one (logged), and when none is
// served the watcher gives up without an error (on_absent), as a cluster
// without the API is an ordinary cluster. Handlers run on the watcher's
// strand and must not block it for long.
//
// T is ResourceSlice, ClaimSpec or NodePool (the instantiations in
// object_watcher.cpp). Lifetime as CollectionWatcher's
// (collection_watcher.h).

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kube/api_calls.h"
#include "kube/collection_watcher.h"
#include "kube/watch_protocol.h"
#include "kube/watched_objects.h"

namespace cudagate::kube {

template <typename T>
struct ObjectChange {
  enum class Kind : unsigned char { upsert, remove };
  Kind kind = Kind::upsert;  // ADDED and MODIFIED: upsert; DELETED: remove
  std::string namespace_;    // "" for cluster-scoped objects
  std::string name;
  // An upsert's object, read. None for a removal, and for an upsert of an
  // object that could not be read or is none of cudagate's: either way the
  // one of this name is dropped.
  std::optional<T> object;
};

using SliceChange = ObjectChange<ResourceSlice>;
using ClaimChange = ObjectChange<ClaimSpec>;
using NodePoolChange = ObjectChange<NodePool>;

template <typename T>
struct ObjectWatcherHandlers {
  // A list page's objects that could be read and are cudagate's: `first`
  // begins a list, `last` ends it.
  std::function<void(std::vector<T> objects, bool first, bool last)> on_page;
  std::function<void(std::vector<ObjectChange<T>> changes)> on_changes;
  std::function<void(const WatchAction& action)> on_step;
  // No version of the collection is served; nothing more will come. Also
  // called, once, when a list is forbidden (403: the ClusterRole lacks the
  // collection), so that the server does not wait for it to be ready; the
  // list is still retried, and its objects count once it is allowed.
  std::function<void()> on_absent;
};

// The objects of an ObjectWatcher: `list` and `watch` are rows of the API
// call table; `versions` (newest first, e.g. kDraVersions) the versions to
// try, the rows' own if empty.
template <typename T>
class ObjectCollection final : public WatchedCollection {
 public:
  using Handlers = ObjectWatcherHandlers<T>;
  ObjectCollection(Handlers& handlers, ApiCallId list, ApiCallId watch,
                   std::span<const std::string_view> versions);
  [[nodiscard]] std::string_view name() const override;
  [[nodiscard]] std::string target(const WatchAction& action,
                                   const WatchOptions& options) const override;
  [[nodiscard]] Expected<PageMeta> read_page(std::string body) override;
  void deliver_page(bool first, bool last) override;
  [[nodiscard]] Expected<EventEnvelope> read_event(std::string_view text) override;
  void flush_events() override;
  [[nodiscard]] NotFound on_not_found() override;
  void on_refused(int status) override;

 private:
  [[nodiscard]] std::string_view version() const;
  ApiCallId list_;
  ApiCallId watch_;
  std::vector<std::string_view> versions_;
  std::size_t at_ = 0;  // the version asked for
  bool forbidden_told_ = false;
  Handlers& handlers_;
  std::vector<T> page_;
  std::vector<ObjectChange<T>> changes_;
};

extern template class ObjectCollection<ResourceSlice>;
extern template class ObjectCollection<ClaimSpec>;
extern template class ObjectCollection<NodePool>;

// ObjectWatcher<T>(credentials, handlers, options, list, watch, versions).
template <typename T>
using ObjectWatcher = Watcher<ObjectCollection<T>>;

}  // namespace cudagate::kube

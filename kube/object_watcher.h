#pragma once
// Keeping up with a collection whose objects are read elsewhere (the
// Dynamic Resource Allocation collections: ResourceSlices, ResourceClaims,
// ResourceClaimTemplates; Karpenter's NodePools) with a CollectionWatcher: list pages handed on
// as JSON objects with kind and apiVersion filled in, watch events as
// ObjectChanges, of every namespace.
//
// The collection is asked for at the first of `versions` of its group the
// server serves: a 404 moves to the next one (logged), and when none is
// served the watcher gives up without an error (on_absent), as a cluster
// without the API is an ordinary cluster. Handlers run on the watcher's
// strand and must not block it for long.
//
// Lifetime as CollectionWatcher's (collection_watcher.h).

#include <boost/asio/any_io_executor.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kube/api_calls.h"
#include "kube/cluster_config.h"
#include "kube/collection_watcher.h"
#include "kube/watch_protocol.h"

namespace cudagate::kube {

struct ObjectChange {
  enum class Kind : unsigned char { upsert, remove };
  Kind kind = Kind::upsert;
  std::string namespace_;  // "" for cluster-scoped objects
  std::string name;
  nlohmann::json object;  // with kind and apiVersion
};

struct ObjectWatcherHandlers {
  std::function<void(std::vector<nlohmann::json> items, bool first, bool last)> on_page;
  std::function<void(std::vector<ObjectChange> changes)> on_changes;
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
class ObjectCollection final : public WatchedCollection {
 public:
  using Handlers = ObjectWatcherHandlers;
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
  std::vector<nlohmann::json> page_;
  std::vector<ObjectChange> changes_;
};

// ObjectWatcher(credentials, handlers, options, list, watch, versions).
using ObjectWatcher = Watcher<ObjectCollection>;

}  // namespace cudagate::kube

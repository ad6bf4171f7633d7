// A collection listed and watched at the newest version of its group that
// the API server serves, its objects read into values as they arrive.
#include "kube/object_watcher.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "kube/object_events.h"

namespace cudagate::kube {

template <typename T>
ObjectCollection<T>::ObjectCollection(Handlers& handlers, ApiCallId list, ApiCallId watch,
                                      std::span<const std::string_view> versions)
    : list_(list), watch_(watch), versions_(versions.begin(), versions.end()), handlers_(handlers) {
  if (versions_.empty()) versions_.push_back(api_call(list).version);
}

template <typename T>
std::string_view ObjectCollection<T>::name() const {
  return api_call(list_).resource;
}

template <typename T>
std::string_view ObjectCollection<T>::version() const {
  return versions_[at_];
}

template <typename T>
std::string ObjectCollection<T>::target(const WatchAction& action,
                                        const WatchOptions& options) const {
  const ApiCall call =
      api_call(action.kind == WatchAction::Kind::watch ? watch_ : list_).at_version(version());
  return action.target(call.collection_path(""), options);
}

template <typename T>
Expected<WatchedCollection::PageMeta> ObjectCollection<T>::read_page(std::string body) {
  auto page = parse_object_page(body, api_call(list_).kind);
  if (!page) return page.error();
  page_.clear();
  page_.reserve(page->items.size());
  for (const nlohmann::json& item : page->items) {
    auto object = watched_object<T>(item, object_name(item));
    if (object) page_.push_back(std::move(*object));
  }
  return PageMeta{std::move(page->continue_token), std::move(page->resource_version)};
}

template <typename T>
void ObjectCollection<T>::deliver_page(bool first, bool last) {
  if (handlers_.on_page) handlers_.on_page(std::exchange(page_, {}), first, last);
}

template <typename T>
Expected<EventEnvelope> ObjectCollection<T>::read_event(std::string_view text) {
  auto envelope = parse_event_envelope(text);
  if (!envelope) return envelope.error();
  using Type = EventEnvelope::Type;
  using Kind = typename ObjectChange<T>::Kind;
  if (envelope->type == Type::added || envelope->type == Type::modified ||
      envelope->type == Type::deleted) {
    ObjectChange<T> change;
    change.namespace_ = envelope->namespace_;
    change.name = envelope->name;
    if (envelope->type == Type::deleted) {
      change.kind = Kind::remove;
    } else {
      change.kind = Kind::upsert;
      change.object = watched_object<T>(envelope->object, envelope->name);
    }
    changes_.push_back(std::move(change));
  }
  envelope->object = nullptr;
  return envelope;
}

template <typename T>
void ObjectCollection<T>::flush_events() {
  if (!changes_.empty() && handlers_.on_changes) handlers_.on_changes(std::exchange(changes_, {}));
}

template <typename T>
void ObjectCollection<T>::on_refused(int status) {
  if (status != 403 || forbidden_told_) return;
  forbidden_told_ = true;
  const ApiCall& call = api_call(list_);
  spdlog::error(
      "API server forbids listing {} of {} (403): running without them until it allows it; "
      "the ClusterRole needs list and watch on them (cudagate api-calls)",
      call.resource, call.group);
  if (handlers_.on_absent) handlers_.on_absent();
}

template <typename T>
WatchedCollection::NotFound ObjectCollection<T>::on_not_found() {
  const ApiCall& call = api_call(list_);
  if (at_ + 1 < versions_.size()) {
    ++at_;
    spdlog::info("API server serves no {}/{} {} (404): reading {}/{} instead", call.group,
                 versions_[at_ - 1], call.resource, call.group, versions_[at_]);
    return NotFound::relist;
  }
  spdlog::info("API server serves no {} of {} (404 for every version): running without them",
               call.resource, call.group);
  if (handlers_.on_absent) handlers_.on_absent();
  return NotFound::absent;
}

template class ObjectCollection<ResourceSlice>;
template class ObjectCollection<ClaimSpec>;
template class ObjectCollection<NodePool>;

}  // namespace cudagate::kube

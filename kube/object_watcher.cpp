// A collection listed and watched as JSON objects, at the newest version of
// its group that the API server serves.
#include "kube/object_watcher.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "kube/object_events.h"

namespace cudagate::kube {

ObjectCollection::ObjectCollection(Handlers& handlers, ApiCallId list, ApiCallId watch,
                                   std::span<const std::string_view> versions)
    : list_(list), watch_(watch), versions_(versions.begin(), versions.end()), handlers_(handlers) {
  if (versions_.empty()) versions_.push_back(api_call(list).version);
}

std::string_view ObjectCollection::name() const {
  return api_call(list_).resource;
}

std::string_view ObjectCollection::version() const {
  return versions_[at_];
}

std::string ObjectCollection::target(const WatchAction& action, const WatchOptions& options) const {
  const ApiCall call =
      api_call(action.kind == WatchAction::Kind::watch ? watch_ : list_).at_version(version());
  return action.target(call.collection_path(""), options);
}

Expected<WatchedCollection::PageMeta> ObjectCollection::read_page(std::string body) {
  auto page = parse_object_page(body, api_call(list_).kind);
  if (!page) return page.error();
  page_ = std::move(page->items);
  return PageMeta{std::move(page->continue_token), std::move(page->resource_version)};
}

void ObjectCollection::deliver_page(bool first, bool last) {
  if (handlers_.on_page) handlers_.on_page(std::exchange(page_, {}), first, last);
}

Expected<EventEnvelope> ObjectCollection::read_event(std::string_view text) {
  auto envelope = parse_event_envelope(text);
  if (!envelope) return envelope.error();
  using Type = EventEnvelope::Type;
  if (envelope->type == Type::added || envelope->type == Type::modified ||
      envelope->type == Type::deleted) {
    ObjectChange change;
    change.kind =
        envelope->type == Type::deleted ? ObjectChange::Kind::remove : ObjectChange::Kind::upsert;
    change.namespace_ = envelope->namespace_;
    change.name = envelope->name;
    change.object = std::move(envelope->object);
    envelope->object = nullptr;
    changes_.push_back(std::move(change));
  }
  return envelope;
}

void ObjectCollection::flush_events() {
  if (!changes_.empty() && handlers_.on_changes) handlers_.on_changes(std::exchange(changes_, {}));
}

void ObjectCollection::on_refused(int status) {
  if (status != 403 || forbidden_told_) return;
  forbidden_told_ = true;
  const ApiCall& call = api_call(list_);
  spdlog::error(
      "API server forbids listing {} of {} (403): running without them until it allows it; "
      "the ClusterRole needs list and watch on them (cudagate api-calls)",
      call.resource, call.group);
  if (handlers_.on_absent) handlers_.on_absent();
}

WatchedCollection::NotFound ObjectCollection::on_not_found() {
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

}  // namespace cudagate::kube

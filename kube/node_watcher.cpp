// The Node collection of the inventory: NodeList pages and Node watch
// events read into Nodes and NodeChanges.
#include "kube/node_watcher.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "kube/api_calls.h"
#include "kube/node_events.h"

namespace cudagate::kube {

std::string NodeCollection::target(const WatchAction& action, const WatchOptions& options) const {
  const ApiCall& call =
      api_call(action.kind == WatchAction::Kind::watch ? ApiCallId::inventory_watch_nodes
                                                       : ApiCallId::inventory_list_nodes);
  return action.target(call.collection_path(""), options);
}

Expected<WatchedCollection::PageMeta> NodeCollection::read_page(std::string body) {
  auto page = parse_node_page(body);
  if (!page) return page.error();
  for (const Error& skipped : page->skipped) {
    spdlog::warn("API server: node list: left out {}", skipped.str());
  }
  page_ = std::move(page->nodes);
  return PageMeta{std::move(page->continue_token), std::move(page->resource_version)};
}

void NodeCollection::deliver_page(bool first, bool last) {
  if (handlers_.on_page) handlers_.on_page(std::exchange(page_, {}), first, last);
}

Expected<EventEnvelope> NodeCollection::read_event(std::string_view text) {
  auto envelope = parse_event_envelope(text);
  if (!envelope) return envelope.error();
  using Type = EventEnvelope::Type;
  if (envelope->type == Type::deleted) {
    changes_.push_back(NodeChange{NodeChange::Kind::remove, envelope->name, Node{}});
  } else if (envelope->type == Type::added || envelope->type == Type::modified) {
    auto node = node_from_json(envelope->object, "object");
    if (node) {
      changes_.push_back(NodeChange{NodeChange::Kind::upsert, envelope->name, std::move(*node)});
    } else {
      // A Node that cannot be read is judged by nothing rather than by stale facts.
      spdlog::warn("API server: node {} left out: {}", envelope->name, node.error().str());
      changes_.push_back(NodeChange{NodeChange::Kind::remove, envelope->name, Node{}});
    }
  }
  envelope->object = nullptr;
  return envelope;
}

void NodeCollection::flush_events() {
  if (!changes_.empty() && handlers_.on_changes) handlers_.on_changes(std::exchange(changes_, {}));
}

}  // namespace cudagate::kube

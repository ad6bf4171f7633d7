// Decoding NodeList pages and Node watch events with nlohmann::json.
#include "kube/node_events.h"

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace cudagate::kube {

Expected<NodePage> parse_node_page(std::string_view text) {
  auto objects = parse_object_page(text, "Node");
  if (!objects) return objects.error();
  NodePage page;
  page.continue_token = std::move(objects->continue_token);
  page.resource_version = std::move(objects->resource_version);
  page.nodes.reserve(objects->items.size());
  for (std::size_t i = 0; i < objects->items.size(); ++i) {
    auto node = node_from_json(objects->items[i], "items[" + std::to_string(i) + "]");
    if (node) {
      page.nodes.push_back(std::move(*node));
    } else {
      page.skipped.push_back(node.error());
    }
  }
  return page;
}

Expected<WatchEvent> parse_watch_event(std::string_view text) {
  auto envelope = parse_event_envelope(text);
  if (!envelope) return envelope.error();
  WatchEvent event;
  event.type = envelope->type;
  event.resource_version = std::move(envelope->resource_version);
  event.name = std::move(envelope->name);
  event.code = envelope->code;
  event.message = std::move(envelope->message);
  if (event.type == WatchEvent::Type::added || event.type == WatchEvent::Type::modified) {
    auto node = node_from_json(envelope->object, "object");
    if (node) {
      event.node = std::move(*node);
    } else {
      event.node_error = node.error();
    }
  }
  return event;
}

}  // namespace cudagate::kube

// Decoding NodeList pages and Node watch events with nlohmann::json.
#include "kube/node_events.h"

#include <nlohmann/json.hpp>
#include <utility>

namespace cudagate::kube {
using json = nlohmann::json;

Expected<NodePage> parse_node_page(std::string_view text) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Error{"node list", "the response is not a JSON object"};
  }
  const std::string kind = string_member(doc, "kind");
  if (kind != "NodeList") {
    return Error{"node list: kind", "expected NodeList, got \"" + kind + "\""};
  }
  NodePage page;
  if (const json* metadata = object_member(doc, "metadata")) {
    page.continue_token = string_member(*metadata, "continue");
    page.resource_version = string_member(*metadata, "resourceVersion");
  }
  const auto items = doc.find("items");
  if (items == doc.end() || items->is_null()) return page;
  if (!items->is_array()) return Error{"node list: items", "expected a list"};
  page.nodes.reserve(items->size());
  for (std::size_t i = 0; i < items->size(); ++i) {
    auto node = node_from_json((*items)[i], "items[" + std::to_string(i) + "]");
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

// Decoding list pages and watch events of any collection with nlohmann::json.
#include "kube/object_events.h"

#include <utility>

#include "types/quote.h"

namespace cudagate::kube {
using json = nlohmann::json;

Expected<ObjectPage> parse_object_page(std::string_view text, std::string_view kind) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  const std::string list_kind = std::string(kind) + "List";
  if (doc.is_discarded() || !doc.is_object()) {
    return Error{list_kind, "the response is not a JSON object"};
  }
  const std::string got = string_member(doc, "kind");
  if (got != list_kind) {
    return Error{list_kind + ": kind", "expected " + list_kind + ", got " + quote(got)};
  }
  ObjectPage page;
  if (const json* metadata = object_member(doc, "metadata")) {
    page.continue_token = string_member(*metadata, "continue");
    page.resource_version = string_member(*metadata, "resourceVersion");
  }
  const std::string api_version = string_member(doc, "apiVersion");
  const auto items = doc.find("items");
  if (items == doc.end() || items->is_null()) return page;
  if (!items->is_array()) return Error{list_kind + ": items", "expected a list"};
  page.items.reserve(items->size());
  for (json& item : *items) {
    if (item.is_object()) {
      if (!item.contains("kind")) item["kind"] = kind;
      if (!item.contains("apiVersion")) item["apiVersion"] = api_version;
    }
    page.items.push_back(std::move(item));
  }
  return page;
}

Expected<EventEnvelope> parse_event_envelope(std::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Error{"watch event", "not a JSON object"};
  }
  const std::string type = string_member(doc, "type");
  if (object_member(doc, "object") == nullptr) return Error{"watch event: object", "is required"};
  EventEnvelope event;
  event.object = std::move(doc["object"]);
  const json& object = event.object;
  if (type == "ADDED") {
    event.type = EventEnvelope::Type::added;
  } else if (type == "MODIFIED") {
    event.type = EventEnvelope::Type::modified;
  } else if (type == "DELETED") {
    event.type = EventEnvelope::Type::deleted;
  } else if (type == "BOOKMARK") {
    event.type = EventEnvelope::Type::bookmark;
  } else if (type == "ERROR") {
    event.type = EventEnvelope::Type::error;
    if (const auto code = object.find("code"); code != object.end() && code->is_number_integer()) {
      event.code = code->get<int>();
    }
    event.message = string_member(object, "message");
    return event;
  } else {
    return Error{"watch event: type",
                 "expected ADDED, MODIFIED, DELETED, BOOKMARK or ERROR, got \"" + type + "\""};
  }
  if (const json* metadata = object_member(object, "metadata")) {
    event.resource_version = string_member(*metadata, "resourceVersion");
    event.name = string_member(*metadata, "name");
    event.namespace_ = string_member(*metadata, "namespace");
  }
  if (event.type == EventEnvelope::Type::bookmark) return event;
  if (event.name.empty()) return Error{"watch event: object.metadata.name", "is required"};
  return event;
}

}  // namespace cudagate::kube

#pragma once
// What the API server sends about a collection, before its objects are
// read: a list page's items and metadata, and a watch event's type, object
// and metadata. The Node inventory (node_events.h) and the Dynamic
// Resource Allocation collections (ResourceSlices, ResourceClaims,
// ResourceClaimTemplates) read their objects from these.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "types/expected.h"

namespace cudagate::kube {

// A list page: `items` with the kind and apiVersion the list gives them
// (the API server leaves both out of list items; `kind` is the items' kind,
// the list's apiVersion theirs).
struct ObjectPage {
  std::vector<nlohmann::json> items;
  std::string continue_token;    // metadata.continue; empty on the last page
  std::string resource_version;  // metadata.resourceVersion
};

// The member `key` of `object` when it is a string ("" otherwise), and when
// it is an object (nullptr otherwise): what the list and event readers of
// every collection read the API server's envelopes with.
[[nodiscard]] inline std::string string_member(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return {};
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}
[[nodiscard]] inline const nlohmann::json* object_member(const nlohmann::json& object,
                                                         const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it != object.end() && it->is_object() ? &*it : nullptr;
}

// metadata.name of an object, "" when it has none.
[[nodiscard]] inline std::string object_name(const nlohmann::json& object) {
  const nlohmann::json* meta = object_member(object, "metadata");
  return meta != nullptr ? string_member(*meta, "name") : std::string();
}

// A page of a list of `kind` objects ("ResourceSlice": a ResourceSliceList);
// an Error when the text is not one.
[[nodiscard]] Expected<ObjectPage> parse_object_page(std::string_view text, std::string_view kind);

struct EventEnvelope {
  enum class Type : unsigned char { added, modified, deleted, bookmark, error };
  Type type = Type::added;
  std::string resource_version;  // object.metadata.resourceVersion
  std::string name;              // object.metadata.name (not for bookmark, error)
  std::string namespace_;        // object.metadata.namespace, "" when cluster-scoped
  nlohmann::json object;         // the event's object
  int code = 0;                  // error: the Status code (410: expired)
  std::string message;           // error: the Status message
};

// One watch event object; an Error when it is not one (no object, an
// unknown type, an ADDED, MODIFIED or DELETED object without a name).
[[nodiscard]] Expected<EventEnvelope> parse_event_envelope(std::string_view text);

}  // namespace cudagate::kube

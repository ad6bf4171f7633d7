#pragma once
// What the API server sends about Nodes, decoded: a page of a list
// (GET /api/v1/nodes?limit=N) and one watch event. The Node objects are
// read by the same mapping as --nodes files (policy/objects/node_reader.h), which
// keeps only what decisions need (name, labels, taints, unschedulable,
// extended resources); managedFields, status conditions, images and the
// rest are skipped.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/object_events.h"
#include "policy/objects/node.h"
#include "types/expected.h"

namespace cudagate::kube {

struct NodePage {
  std::vector<Node> nodes;
  std::string continue_token;    // metadata.continue; empty on the last page
  std::string resource_version;  // metadata.resourceVersion
  // Items that could not be read, as "items[3]: metadata.labels.x: ..." (they
  // are left out, not fatal: one odd Node must not blind the webhook).
  std::vector<Error> skipped;
};

// A NodeList page; an Error when the text is not one.
[[nodiscard]] Expected<NodePage> parse_node_page(std::string_view text);

struct WatchEvent {
  using Type = EventEnvelope::Type;
  Type type = Type::added;
  std::string resource_version;     // object.metadata.resourceVersion
  std::string name;                 // object.metadata.name (not for bookmark, error)
  std::optional<Node> node;         // added and modified, when the Node could be read
  std::optional<Error> node_error;  // why it could not
  int code = 0;                     // error: the Status code (410: expired)
  std::string message;              // error: the Status message
};

// One watch event object; an Error when it is not one.
[[nodiscard]] Expected<WatchEvent> parse_watch_event(std::string_view text);

}  // namespace cudagate::kube

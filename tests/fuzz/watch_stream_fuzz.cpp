// Feeds arbitrary bytes, cut into arbitrary chunks, to the watch stream
// splitter, and every object it yields to the watch event readers (Nodes,
// and the envelope of any collection); the whole input also to the
// NodeList page reader and to the list page reader of any collection. The splitter yields whole
// bracketed objects starting with '{' (with the whitespace around them) in
// order, however the bytes were cut.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kube/event_stream.h"
#include "kube/node_events.h"
#include "kube/object_events.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t chunk = 1 + data[0] % 64;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  cudagate::kube::EventStream stream(1 << 16);
  std::string seen;
  for (std::size_t at = 0; at < text.size(); at += chunk) {
    auto objects = stream.feed(text.substr(at, chunk));
    if (!objects) {
      if (objects.error().message.empty()) __builtin_trap();
      break;
    }
    for (const std::string_view object : *objects) {
      // Whitespace between objects may ride along with one.
      const auto first = object.find_first_not_of(" \t\r\n");
      const auto last = object.find_last_not_of(" \t\r\n");
      // The splitter counts brackets, not their kinds: "{]" is split off
      // whole and refused by the event reader.
      if (first == std::string_view::npos || object[first] != '{' ||
          (object[last] != '}' && object[last] != ']')) {
        __builtin_trap();
      }
      seen.append(object);
      auto event = cudagate::kube::parse_watch_event(object);
      if (!event && event.error().message.empty()) __builtin_trap();
      auto envelope = cudagate::kube::parse_event_envelope(object);
      if (!envelope && envelope.error().message.empty()) __builtin_trap();
      // Both read the same envelope.
      if (static_cast<bool>(event) != static_cast<bool>(envelope)) __builtin_trap();
    }
  }
  if (seen.size() > text.size()) __builtin_trap();
  auto page = cudagate::kube::parse_node_page(text);
  if (!page && page.error().message.empty()) __builtin_trap();
  auto objects = cudagate::kube::parse_object_page(text, "ResourceSlice");
  if (!objects && objects.error().message.empty()) __builtin_trap();
  return 0;
}

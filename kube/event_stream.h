#pragma once
// The watch response body as it arrives: a stream of JSON objects, one
// watch event each ({"type": "ADDED", "object": {...}}), which the API
// server separates with newlines. The body comes in pieces of any size
// (TLS records, HTTP chunks); EventStream finds where each object ends by
// counting braces outside strings, so it neither waits for a newline nor
// rescans what it has seen, and hands each whole object on.
//
// Not thread-safe; one per stream.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "types/expected.h"

namespace cudagate::kube {

class EventStream {
 public:
  // An object larger than this is an error (a Node is a few kilobytes).
  explicit EventStream(std::size_t max_object_bytes = 16u << 20);

  // Appends `bytes`; returns the objects they complete (views into this
  // EventStream, valid until the next feed()), or an Error when the stream
  // is not a sequence of JSON objects.
  [[nodiscard]] Expected<std::vector<std::string_view>> feed(std::string_view bytes);

  // Bytes of an object begun but not finished.
  [[nodiscard]] std::size_t pending() const { return buffer_.size() - consumed_; }

 private:
  std::size_t max_object_bytes_;
  std::string buffer_;
  std::size_t consumed_ = 0;  // bytes of whole objects already returned
  std::size_t scanned_ = 0;   // bytes of buffer_ already scanned
  std::size_t depth_ = 0;
  bool in_string_ = false;
  bool escaped_ = false;
};

}  // namespace cudagate::kube

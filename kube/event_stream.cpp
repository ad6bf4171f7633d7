// Splitting the watch stream into its JSON objects as bytes arrive.
#include "kube/event_stream.h"

namespace cudagate::kube {

EventStream::EventStream(std::size_t max_object_bytes) : max_object_bytes_(max_object_bytes) {}

Expected<std::vector<std::string_view>> EventStream::feed(std::string_view bytes) {
  // What was returned last time is no longer referenced: drop it.
  if (consumed_ > 0) {
    buffer_.erase(0, consumed_);
    scanned_ -= consumed_;
    consumed_ = 0;
  }
  buffer_.append(bytes);
  std::vector<std::size_t> ends;
  for (; scanned_ < buffer_.size(); ++scanned_) {
    const char c = buffer_[scanned_];
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      continue;
    }
    if (depth_ == 0) {
      if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
      if (c != '{') {
        return Error{"watch stream", "expected a JSON object, got byte " +
                                         std::to_string(static_cast<unsigned char>(c))};
      }
    }
    if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if (c == '}' || c == ']') {
      if (depth_ == 0) return Error{"watch stream", "unbalanced brackets"};
      if (--depth_ == 0) ends.push_back(scanned_ + 1);
    }
  }
  std::vector<std::string_view> objects;
  const std::string_view all(buffer_);
  std::size_t from = consumed_;
  for (const std::size_t end : ends) {
    while (from < end && all[from] != '{') ++from;
    objects.push_back(all.substr(from, end - from));
    from = end;
  }
  if (!ends.empty()) consumed_ = ends.back();
  // Between objects only whitespace is left: nothing is pending.
  if (depth_ == 0) consumed_ = buffer_.size();
  if (pending() > max_object_bytes_) {
    return Error{"watch stream",
                 "an event larger than " + std::to_string(max_object_bytes_) + " bytes"};
  }
  return objects;
}

}  // namespace cudagate::kube

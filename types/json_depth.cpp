// One nesting scan for every reader of JSON text (the matrix, manifests,
// AdmissionReviews), so that each refuses the same depths the same way.
#include "types/json_depth.h"

namespace cudagate {

std::size_t json_too_deep_at(std::string_view text, std::size_t limit) {
  std::size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  const char* const begin = text.data();
  const char* const end = begin + text.size();
  for (const char* p = begin; p != end; ++p) {
    const char c = *p;
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '{':
      case '[':
        if (++depth > limit) return static_cast<std::size_t>(p - begin);
        break;
      case '}':
      case ']':
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return std::string_view::npos;
}

}  // namespace cudagate

// Label key and value syntax, as k8s.io/apimachinery/pkg/util/validation
// checks it.
#include "policy/objects/k8s_names.h"

#include <algorithm>

#include "types/ascii.h"

namespace cudagate {

bool is_qualified_name_part(std::string_view text) {
  if (text.empty() || text.size() > 63 || !ascii::is_alnum(text.front()) ||
      !ascii::is_alnum(text.back())) {
    return false;
  }
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return ascii::is_alnum(c) || c == '-' || c == '_' || c == '.'; });
}

bool is_dns1123_subdomain(std::string_view text) {
  if (text.empty() || text.size() > 253) return false;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = text.find('.', start);
    const std::string_view label =
        text.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty() || !ascii::is_lower_alnum(label.front()) ||
        !ascii::is_lower_alnum(label.back())) {
      return false;
    }
    if (!std::all_of(label.begin(), label.end(),
                     [](char c) { return ascii::is_lower_alnum(c) || c == '-'; })) {
      return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

bool is_label_key(std::string_view key) {
  const std::size_t slash = key.find('/');
  if (slash == std::string_view::npos) return is_qualified_name_part(key);
  if (key.find('/', slash + 1) != std::string_view::npos) return false;
  return is_dns1123_subdomain(key.substr(0, slash)) &&
         is_qualified_name_part(key.substr(slash + 1));
}

bool is_label_value(std::string_view value) {
  return value.empty() || is_qualified_name_part(value);
}

}  // namespace cudagate

#pragma once
// Labels and annotations as the core keeps them: (key, value) pairs sorted
// by key, so that a lookup is a binary search and two copies compare equal
// when they hold the same entries.

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cudagate {

using KeyValues = std::vector<std::pair<std::string, std::string>>;

// The value of `key` in `entries` (sorted by key), or nullptr.
[[nodiscard]] inline const std::string* find_value(const KeyValues& entries, std::string_view key) {
  const auto it =
      std::lower_bound(entries.begin(), entries.end(), key,
                       [](const auto& entry, std::string_view k) { return entry.first < k; });
  if (it == entries.end() || it->first != key) return nullptr;
  return &it->second;
}

}  // namespace cudagate

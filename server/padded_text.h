#pragma once
// Text that the review parser (simdjson, which reads in wide blocks) may
// take where it lies: its buffer goes on, readable, for kBodyPadding bytes
// after its end. server/padded_body.h keeps request bodies that way.

#include <cstddef>
#include <string_view>

namespace cudagate {

inline constexpr std::size_t kBodyPadding = 64;

// `text` is followed in memory by at least kBodyPadding readable bytes.
struct PaddedText {
  std::string_view text;
};

}  // namespace cudagate

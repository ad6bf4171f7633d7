#pragma once
// An AdmissionReview's text parsed for the hot path, without building
// metadata.managedFields.
//
// Server-side apply's managedFields is about half of a typical review and
// more than half of simdjson's work on it (3.8 of 6.7 us for the 13 KB
// gpu-pod), and nothing in cudagate reads it. The parse runs simdjson's two
// stages itself: after the first (which checks UTF-8, finds every string's
// end and refuses control characters inside strings), the structurals of
// request.object.metadata.managedFields' value are checked here against
// the JSON grammar and then dropped, so that the second stage builds an
// empty list in their place.
//
// The check is strict and narrow: objects, arrays, strings with the short
// escapes, true, false and null, nested at most kMaxSkippedDepth. Anything
// else (a number, a \u escape, an error) leaves the structurals in place,
// and simdjson parses the whole text as usual, giving the same result or
// error as before. A review is therefore accepted exactly when the whole
// text is valid JSON, as with an ordinary parse.

#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "admission/padded_text.h"
#include "admission/simd_json_view.h"

namespace cudagate {

namespace review_text {

inline constexpr std::uint32_t kMaxSkippedDepth = 64;

// Where a value's structurals end: `first` is the index of its '[' or '{'
// in `structurals` (byte offsets into `text`, as simdjson's first stage
// leaves them); the index of the matching close when the value is within
// the subset above, nullopt otherwise.
std::optional<std::uint32_t> plain_value_end(const std::uint8_t* text,
                                             const std::uint32_t* structurals, std::uint32_t count,
                                             std::uint32_t first);

// The structural index of the '[' that opens request.object.metadata's
// managedFields (or request.oldObject's, whichever comes first); nullopt
// when there is none before the first such metadata object ends.
std::optional<std::uint32_t> managed_fields_start(const std::uint8_t* text,
                                                  const std::uint32_t* structurals,
                                                  std::uint32_t count);

}  // namespace review_text

// simdjson's DOM parser for review bodies, with a padded copy of the text
// (unless it comes padded), kept and reused from one parse to the next (one
// per admission workspace; not shared between threads).
class ReviewTextParser {
 public:
  ReviewTextParser(std::size_t initial_capacity, std::size_t max_depth)
      : initial_capacity_(initial_capacity), max_depth_(max_depth) {}

  // The text's root, or nullopt when simdjson does not take it. The view is
  // valid until the next parse. `skipped` tells whether managedFields was
  // left out (for tests).
  std::optional<SimdJsonView> parse(std::string_view text, bool* skipped = nullptr);
  // The same for text followed by its padding, read where it lies (no copy).
  std::optional<SimdJsonView> parse(PaddedText text, bool* skipped = nullptr);

 private:
  std::optional<SimdJsonView> parse_bytes(const std::uint8_t* bytes, std::size_t size,
                                          bool* skipped);

  std::size_t initial_capacity_;
  std::size_t max_depth_;
  simdjson::dom::parser parser_;
  std::vector<char> padded_;
};

}  // namespace cudagate

#pragma once
// How deeply JSON text nests, found before a parser sees it: the parsers
// (and the recursive walks of what they build) must never run out of stack
// on input someone else wrote.

#include <cstddef>
#include <string_view>

namespace cudagate {

// The byte offset of the first `[` or `{` that opens more than `limit`
// arrays and objects at once (brackets inside strings do not count), or
// npos. A linear scan: cheaper than a parser callback on every token.
[[nodiscard]] std::size_t json_too_deep_at(std::string_view text, std::size_t limit);

}  // namespace cudagate

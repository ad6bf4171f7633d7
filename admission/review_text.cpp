// The hot-path review parse that leaves out metadata.managedFields, which cudagate never reads:
// the strict grammar check of that field's text and the two simdjson stages around it.
#include "admission/review_text.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace cudagate {
namespace review_text {
namespace {

bool ends_atom(std::uint8_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == '}' || c == ']';
}

// true, false or null, followed by whitespace or a closing character.
bool plain_atom(const std::uint8_t* at) {
  const auto is = [at](std::string_view word) {
    return std::memcmp(at, word.data(), word.size()) == 0 && ends_atom(at[word.size()]);
  };
  switch (at[0]) {
    case 't':
      return is("true");
    case 'f':
      return is("false");
    case 'n':
      return is("null");
    default:
      return false;
  }
}

bool short_escape(std::uint8_t c) {
  switch (c) {
    case '"':
    case '\\':
    case '/':
    case 'b':
    case 'f':
    case 'n':
    case 'r':
    case 't':
      return true;
    default:
      return false;
  }
}

// Every backslash in [begin, end) starts one of the short escapes. The first
// stage found where strings end, so a backslash is either inside a string or
// in a token plain_atom() has already refused. Sixteen bytes at a time where
// SSE2 is there: a managedFields holds hundreds of escaped quotes
// ("k:{\"name\":...}").
bool plain_escapes(const std::uint8_t* begin, const std::uint8_t* end) {
  const std::uint8_t* at = begin;
#if defined(__SSE2__)
  const __m128i backslash = _mm_set1_epi8('\\');
  std::uint32_t escaped_first = 0;  // 1: the block's first byte is escaped
  while (end - at >= 16) {
    const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
    std::uint32_t found =
        static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(block, backslash)));
    found &= ~escaped_first;
    escaped_first = 0;
    while (found != 0) {
      const int bit = std::countr_zero(found);
      const std::uint8_t next = at[bit + 1];
      if (!short_escape(next)) return false;
      found &= found - 1;
      if (next == '\\') {
        // An escaped backslash: the next one is not an escape of its own.
        if (bit == 15) {
          escaped_first = 1;
        } else {
          found &= ~(1U << (bit + 1));
        }
      }
    }
    at += 16;
  }
  at += escaped_first;
#endif
  for (; at < end; ++at) {
    if (*at != '\\') continue;
    if (!short_escape(at[1])) return false;
    ++at;
  }
  return true;
}

// The key string starting at `at` (its opening quote) is exactly `name`.
bool key_is(const std::uint8_t* at, std::string_view name) {
  return std::memcmp(at + 1, name.data(), name.size()) == 0 && at[name.size() + 1] == '"';
}

}  // namespace

std::optional<std::uint32_t> plain_value_end(const std::uint8_t* text,
                                             const std::uint32_t* structurals, std::uint32_t count,
                                             std::uint32_t first) {
  enum class Want { value, value_or_close, key, key_or_close, colon, comma_or_close };
  std::array<std::uint8_t, kMaxSkippedDepth> open{};  // '{' or '[' at each depth
  std::uint32_t depth = 0;
  Want want = Want::value;
  for (std::uint32_t i = first; i < count; ++i) {
    const std::uint8_t c = text[structurals[i]];
    bool close = false;
    switch (want) {
      case Want::key_or_close:
        if (c == '}') {
          close = true;
          break;
        }
        [[fallthrough]];
      case Want::key:
        if (c != '"') return std::nullopt;
        want = Want::colon;
        continue;
      case Want::colon:
        if (c != ':') return std::nullopt;
        // Most of a fieldsV1 is leaves, "f:name":{}: take the empty object
        // whole.
        if (i + 2 < count && text[structurals[i + 1]] == '{' && text[structurals[i + 2]] == '}') {
          i += 2;
          want = Want::comma_or_close;
          continue;
        }
        want = Want::value;
        continue;
      case Want::value_or_close:
        if (c == ']') {
          close = true;
          break;
        }
        [[fallthrough]];
      case Want::value:
        if (c == '{' || c == '[') {
          if (depth == open.size()) return std::nullopt;
          open[depth++] = c;
          want = c == '{' ? Want::key_or_close : Want::value_or_close;
        } else if (c == '"' || plain_atom(text + structurals[i])) {
          want = Want::comma_or_close;
        } else {
          return std::nullopt;
        }
        if (depth == 0) return std::nullopt;  // `first` was not a container
        continue;
      case Want::comma_or_close:
        if (c == ',') {
          want = open[depth - 1] == '{' ? Want::key : Want::value;
          continue;
        }
        if (c != '}' && c != ']') return std::nullopt;
        close = true;
        break;
    }
    if (!close) return std::nullopt;
    const std::uint8_t opener = c == '}' ? '{' : '[';
    if (open[depth - 1] != opener) return std::nullopt;
    if (--depth == 0) {
      if (!plain_escapes(text + structurals[first], text + structurals[i])) return std::nullopt;
      return i;
    }
    want = Want::comma_or_close;
  }
  return std::nullopt;
}

std::optional<std::uint32_t> managed_fields_start(const std::uint8_t* text,
                                                  const std::uint32_t* structurals,
                                                  std::uint32_t count) {
  // on_path[d]: the object open at depth d is the root (1), request (2),
  // request.object or request.oldObject (3), or its metadata (4).
  std::array<bool, 5> on_path{};
  std::uint32_t depth = 0;
  bool key_on_path = false;  // the last key names the next step of the path
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint8_t* at = text + structurals[i];
    switch (*at) {
      case '{':
      case '[': {
        const bool step = depth == 0 || (key_on_path && depth < on_path.size() && on_path[depth]);
        if (depth == 4 && step) return *at == '[' ? std::optional<std::uint32_t>(i) : std::nullopt;
        ++depth;
        if (depth < on_path.size()) on_path[depth] = step && *at == '{';
        key_on_path = false;
        break;
      }
      case '}':
      case ']':
        if (depth == 0) return std::nullopt;
        // The first metadata (or request, or the root) is over; an object
        // without metadata (depth 3) leaves the walk to the next one.
        if (depth <= 4 && depth != 3 && on_path[depth]) return std::nullopt;
        --depth;
        key_on_path = false;
        break;
      case '"': {
        key_on_path = false;
        if (depth == 0 || depth >= on_path.size() || !on_path[depth]) break;
        if (i + 1 >= count || text[structurals[i + 1]] != ':') break;
        switch (depth) {
          case 1:
            key_on_path = key_is(at, "request");
            break;
          case 2:
            key_on_path = key_is(at, "object") || key_is(at, "oldObject");
            break;
          case 3:
            key_on_path = key_is(at, "metadata");
            break;
          case 4:
            key_on_path = key_is(at, "managedFields");
            break;
          default:
            break;
        }
        break;
      }
      case ':':
        break;
      default:
        key_on_path = false;
        break;
    }
  }
  return std::nullopt;
}

}  // namespace review_text

static_assert(kBodyPadding >= simdjson::SIMDJSON_PADDING);

std::optional<SimdJsonView> ReviewTextParser::parse(std::string_view text, bool* skipped) {
  if (text.size() + simdjson::SIMDJSON_PADDING > padded_.size()) {
    padded_.resize(std::max(initial_capacity_, text.size()) + simdjson::SIMDJSON_PADDING);
  }
  std::memcpy(padded_.data(), text.data(), text.size());
  std::memset(padded_.data() + text.size(), 0, simdjson::SIMDJSON_PADDING);
  return parse_bytes(reinterpret_cast<const std::uint8_t*>(padded_.data()), text.size(), skipped);
}

std::optional<SimdJsonView> ReviewTextParser::parse(PaddedText text, bool* skipped) {
  return parse_bytes(reinterpret_cast<const std::uint8_t*>(text.text.data()), text.text.size(),
                     skipped);
}

std::optional<SimdJsonView> ReviewTextParser::parse_bytes(const std::uint8_t* bytes,
                                                          std::size_t size, bool* skipped) {
  if (skipped != nullptr) *skipped = false;
  const std::size_t capacity = std::max(initial_capacity_, size);
  if (parser_.capacity() < size || parser_.implementation == nullptr) {
    if (parser_.allocate(capacity, max_depth_) != simdjson::SUCCESS) return std::nullopt;
  }
  if (parser_.doc.capacity() < size || parser_.doc.capacity() == 0) {
    if (parser_.doc.allocate(capacity) != simdjson::SUCCESS) return std::nullopt;
  }

  auto& stages = *parser_.implementation;
  if (stages.stage1(bytes, size, simdjson::stage1_mode::regular) != simdjson::SUCCESS) {
    return std::nullopt;
  }
  std::uint32_t* structurals = stages.structural_indexes.get();
  const std::uint32_t count = stages.n_structural_indexes;
  if (const auto first = review_text::managed_fields_start(bytes, structurals, count)) {
    if (const auto last = review_text::plain_value_end(bytes, structurals, count, *first)) {
      // Keep the brackets, drop what is between them; the first stage's
      // three closing entries after the last structural move along.
      const std::uint32_t dropped = *last - *first - 1;
      std::memmove(structurals + *first + 1, structurals + *last,
                   (count + 3 - *last) * sizeof(std::uint32_t));
      stages.n_structural_indexes = count - dropped;
      if (skipped != nullptr) *skipped = true;
    }
  }
  if (stages.stage2(parser_.doc) != simdjson::SUCCESS) return std::nullopt;
  return SimdJsonView(parser_.doc);
}

}  // namespace cudagate

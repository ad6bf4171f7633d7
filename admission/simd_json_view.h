#pragma once
// simdjson's DOM seen through policy/objects/json_view.h's interface: the webhook's
// hot path parses a review body with simdjson (a few microseconds for
// 13 KB, against a few hundred for nlohmann::json) and reads it with the
// same mapping code as the reference parser.
//
// Where the two parsers differ, the view answers as nlohmann::json would:
// a repeated key yields its last value, members are visited in key order,
// a non-negative integer is "unsigned". Inputs simdjson refuses that
// nlohmann accepts (integers beyond 64 bits, a byte order mark) are the
// caller's to route to the reference parser.
//
// The view walks the document's tape (the layout simdjson documents in
// docs/tape.md) itself rather than through simdjson::dom::element, so that
// stepping over a member and comparing a key are a few inlined loads: the
// workload reader does both a few hundred times per review.
// tests/admission/simd_json_view_test.cpp and the fuzz target hold the view
// to nlohmann::json's answers on the same text.

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "policy/objects/json_view.h"

namespace cudagate {

// A view that remembers key orders (kRemembersKeyOrders) reuses the sorted
// order of a large object's keys for the next object of the same keys in
// the same written order: node lists that tools write without sorting hold
// thousands such label maps. A review's maps come from the API server,
// whose JSON has their keys sorted already, so its view (SimdJsonView)
// carries no memo and stays three words: views are made for every member
// visited.
template <bool kRemembersKeyOrders>
class BasicSimdJsonView {
  struct KeyOrder;
  struct NoKeyOrders {};

 public:
  // The key orders of large objects met in a parser's documents
  // (PaddedDomParser keeps one).
  using KeyOrders = std::array<KeyOrder, 8>;

  BasicSimdJsonView() = default;
  // The root of a document simdjson has parsed; valid while the document
  // is neither parsed into again nor destroyed.
  explicit BasicSimdJsonView(const simdjson::dom::document& doc)
      : tape_(doc.tape.get()), strings_(doc.string_buf.get()), index_(1) {}
  // The same, remembering key orders in `orders`, which every view of the
  // document reads and writes (one thread at a time) and which must outlive
  // them.
  BasicSimdJsonView(const simdjson::dom::document& doc,
                    KeyOrders* orders) requires kRemembersKeyOrders
      : tape_(doc.tape.get()),
        strings_(doc.string_buf.get()),
        orders_(orders),
        index_(1) {}

  [[nodiscard]] bool valid() const { return tape_ != nullptr; }
  [[nodiscard]] bool is_null() const { return type() == 'n'; }
  [[nodiscard]] bool is_boolean() const { return type() == 't' || type() == 'f'; }
  [[nodiscard]] bool is_string() const { return type() == '"'; }
  [[nodiscard]] bool is_object() const { return type() == '{'; }
  [[nodiscard]] bool is_array() const { return type() == '['; }
  [[nodiscard]] bool is_number_unsigned() const {
    const char t = type();
    return t == 'u' || (t == 'l' && as_integer() >= 0);
  }
  [[nodiscard]] bool is_number_integer() const {
    const char t = type();
    return t == 'u' || t == 'l';
  }
  [[nodiscard]] bool is_number_float() const { return type() == 'd'; }
  [[nodiscard]] bool boolean() const { return type() == 't'; }
  [[nodiscard]] std::string_view string() const { return string_at(index_); }
  [[nodiscard]] std::uint64_t as_unsigned() const { return tape_[index_ + 1]; }
  [[nodiscard]] std::int64_t as_integer() const {
    return static_cast<std::int64_t>(tape_[index_ + 1]);
  }
  [[nodiscard]] double as_float() const { return std::bit_cast<double>(tape_[index_ + 1]); }

  [[nodiscard]] BasicSimdJsonView find(std::string_view key) const {
    if (!is_object()) return {};
    BasicSimdJsonView found;
    // The last of repeated keys, as nlohmann::json keeps it.
    const std::uint32_t end = scope_end();
    for (std::uint32_t i = index_ + 1; i < end; i = after(i + 1)) {
      if (key_is(i, key)) found = at(i + 1);
    }
    return found;
  }

  // find() of each key in one pass over the members.
  template <std::size_t N>
  void find_each(const std::array<std::string_view, N>& keys,
                 std::array<BasicSimdJsonView, N>& out) const {
    out.fill(BasicSimdJsonView());
    if (!is_object()) return;
    const std::uint32_t end = scope_end();
    for (std::uint32_t i = index_ + 1; i < end; i = after(i + 1)) {
      for (std::size_t k = 0; k < N; ++k) {
        if (key_is(i, keys[k])) {
          out[k] = at(i + 1);  // the last of repeated keys wins
          break;
        }
      }
    }
  }

  [[nodiscard]] std::size_t size() const {
    if (is_array()) {
      const std::uint32_t count = scope_count();
      if (count < kCountSaturated) return count;
      std::size_t n = 0;
      for_each_element([&n](std::size_t, BasicSimdJsonView) { ++n; });
      return n;
    }
    if (is_null()) return 0;
    if (is_object()) {
      // Distinct keys, as nlohmann::json counts them.
      std::size_t n = 0;
      for_each_member([&n](std::string_view, BasicSimdJsonView) { ++n; });
      return n;
    }
    return 1;
  }

  template <class F>
  void for_each_member(F&& f) const {
    if (!is_object()) return;
    // Sort the members by key in a local buffer (ties by position), then
    // visit the last member of each run of equal keys.
    // Trivially constructible, so that the inline buffer is not cleared.
    struct Member {
      const char* key_data;
      std::uint32_t key_size;
      std::uint32_t position;
      std::uint32_t value;  // tape index
      [[nodiscard]] std::string_view key() const { return {key_data, key_size}; }
    };
    constexpr std::size_t kInline = 64;
    // Not value-initialised (NOLINT): clearing 64 members per object would cost
    // the hot path; each of the first n is written before it is read.
    std::array<Member, kInline> inline_members;  // NOLINT(cppcoreguidelines-pro-type-member-init)
    std::vector<Member> heap_members;
    Member* members = inline_members.data();
    std::uint32_t n = 0;
    const std::uint32_t end = scope_end();
    for (std::uint32_t i = index_ + 1; i < end; i = after(i + 1)) {
      if (n == kInline) heap_members.assign(inline_members.begin(), inline_members.end());
      const std::string_view key = string_at(i);
      const Member member{key.data(), static_cast<std::uint32_t>(key.size()), n, i + 1};
      if (n >= kInline) {
        heap_members.push_back(member);
        members = heap_members.data();
      } else {
        inline_members[n] = member;
      }
      ++n;
    }
    const auto before = [](const Member& a, const Member& b) {
      const int order = a.key().compare(b.key());
      return order < 0 || (order == 0 && a.position < b.position);
    };
    // Go (kubectl, the API server) writes map keys sorted: often no sort.
    // Otherwise large objects (the labels of a node list's items) tend to
    // repeat an earlier one's keys in the same order: its order is reused.
    if (!std::is_sorted(members, members + n, before)) {
      bool sorted = false;
      if constexpr (kRemembersKeyOrders) {
        if (n >= kRememberedOrder && orders_ != nullptr) {
          // A few shapes (a CPU pool's labels, a GPU pool's...), told apart by size.
          KeyOrder& order = (*orders_)[n % orders_->size()];
          sorted = order.apply(members, n);
          if (!sorted) {
            std::sort(members, members + n, before);
            order.remember(members, n);
            sorted = true;
          }
        }
      }
      if (!sorted) std::sort(members, members + n, before);
    }
    for (std::uint32_t i = 0; i < n; ++i) {
      if (i + 1 < n && members[i + 1].key() == members[i].key()) continue;
      f(members[i].key(), at(members[i].value));
    }
  }

  template <class F>
  void for_each_element(F&& f) const {
    if (!is_array()) return;
    std::size_t n = 0;
    const std::uint32_t end = scope_end();
    for (std::uint32_t i = index_ + 1; i < end; i = after(i)) f(n++, at(i));
  }

  [[nodiscard]] const char* type_name() const {
    switch (type()) {
      case '[':
        return "array";
      case '{':
        return "object";
      case '"':
        return "string";
      case 't':
      case 'f':
        return "boolean";
      case 'l':
      case 'u':
      case 'd':
        return "number";
      default:
        return "null";
    }
  }

 private:
  static constexpr std::uint32_t kRememberedOrder = 16;

  // The sorted order of the last large object's keys, as it was written.
  struct KeyOrder {
    std::vector<std::string> keys;           // as written
    std::vector<std::uint32_t> permutation;  // sorted position -> written position

    // Sorts `members` (written order) as the remembered object was, when it
    // has the same keys in the same order.
    template <class Member>
    bool apply(Member* members, std::uint32_t n) const {
      if (n != keys.size()) return false;
      for (std::uint32_t i = 0; i < n; ++i) {
        if (members[i].key() != keys[i]) return false;
      }
      // Left uninitialised like the inline members it reorders: each of the
      // first n is written before it is read.
      std::array<Member, 64> sorted;  // NOLINT(cppcoreguidelines-pro-type-member-init)
      std::vector<Member> heap;
      Member* out = sorted.data();
      if (n > sorted.size()) {
        heap.resize(n);
        out = heap.data();
      }
      for (std::uint32_t i = 0; i < n; ++i) out[i] = members[permutation[i]];
      std::copy(out, out + n, members);
      return true;
    }

    // Remembers the order of `members`, sorted, each with its written position.
    template <class Member>
    void remember(const Member* members, std::uint32_t n) {
      keys.resize(n);
      permutation.resize(n);
      for (std::uint32_t i = 0; i < n; ++i) {
        keys[members[i].position].assign(members[i].key());
        permutation[i] = members[i].position;
      }
    }
  };

  // simdjson's tape (its docs/tape.md): one 64-bit word per value, the type
  // as a character in the top byte. '{' and '[' hold the index just past
  // their closing word and, above it, a count that saturates at 2^24 - 1;
  // '"' holds the offset of a 32-bit length and the bytes in the string
  // buffer; 'l', 'u' and 'd' are followed by a word with the number.
  static constexpr std::uint64_t kPayloadMask = 0x00FF'FFFF'FFFF'FFFF;
  static constexpr std::uint32_t kCountSaturated = 0xFF'FFFF;

  [[nodiscard]] char type() const { return static_cast<char>(tape_[index_] >> 56); }
  [[nodiscard]] std::uint32_t scope_end() const {
    // The closing word sits just before the index the opening one holds.
    return static_cast<std::uint32_t>(tape_[index_]) - 1;
  }
  [[nodiscard]] std::uint32_t scope_count() const {
    return static_cast<std::uint32_t>(tape_[index_] >> 32) & kCountSaturated;
  }
  // The index of the value after the one at `i`.
  [[nodiscard]] std::uint32_t after(std::uint32_t i) const {
    const std::uint64_t word = tape_[i];
    switch (static_cast<char>(word >> 56)) {
      case '{':
      case '[':
        return static_cast<std::uint32_t>(word);
      case 'l':
      case 'u':
      case 'd':
        return i + 2;
      default:
        return i + 1;
    }
  }
  [[nodiscard]] std::string_view string_at(std::uint32_t i) const {
    const std::uint8_t* at = strings_ + (tape_[i] & kPayloadMask);
    std::uint32_t length;
    std::memcpy(&length, at, sizeof length);
    return {reinterpret_cast<const char*>(at + sizeof length), length};
  }
  // Whether the key (a string) at `i` is `key`.
  [[nodiscard]] bool key_is(std::uint32_t i, std::string_view key) const {
    const std::uint8_t* at = strings_ + (tape_[i] & kPayloadMask);
    std::uint32_t length;
    std::memcpy(&length, at, sizeof length);
    if (length != key.size()) return false;
    // Keys are short: compared here, in words, not by a call; the last word
    // overlaps the one before it rather than going byte by byte.
    const char* text = reinterpret_cast<const char*>(at + sizeof length);
    const char* want = key.data();
    const auto same = [text, want]<class Word>(std::uint32_t offset, Word) {
      Word a;
      Word b;
      std::memcpy(&a, text + offset, sizeof a);
      std::memcpy(&b, want + offset, sizeof b);
      return a == b;
    };
    if (length >= 8) {
      for (std::uint32_t k = 0; k + 8 <= length; k += 8) {
        if (!same(k, std::uint64_t{})) return false;
      }
      return same(length - 8, std::uint64_t{});
    }
    if (length >= 4) return same(0, std::uint32_t{}) && same(length - 4, std::uint32_t{});
    for (std::uint32_t k = 0; k < length; ++k) {
      if (text[k] != want[k]) return false;
    }
    return true;
  }
  [[nodiscard]] BasicSimdJsonView at(std::uint32_t i) const {
    BasicSimdJsonView v;
    v.tape_ = tape_;
    v.strings_ = strings_;
    v.orders_ = orders_;
    v.index_ = i;
    return v;
  }

  const std::uint64_t* tape_ = nullptr;
  const std::uint8_t* strings_ = nullptr;
  [[no_unique_address]] std::conditional_t<kRemembersKeyOrders, KeyOrders*, NoKeyOrders> orders_{};
  std::uint32_t index_ = 0;
};

// A review body's view.
using SimdJsonView = BasicSimdJsonView<false>;
// A view that remembers key orders, for node lists.
using KeyOrderSimdJsonView = BasicSimdJsonView<true>;

// simdjson's DOM parser with a padded copy of the text and the key orders
// its documents' views remember, all kept and reused from one parse to the
// next (one per admission workspace, or per reader; not shared between
// threads). The view a parse returns is valid until the next parse.
class PaddedDomParser {
 public:
  // `max_depth` bounds nesting as the reference parser's check does, so
  // that deeper documents fail here and get that parser's error.
  PaddedDomParser(std::size_t initial_capacity, std::size_t max_depth)
      : initial_capacity_(initial_capacity), max_depth_(max_depth) {}

  // The text's root, or nullopt when simdjson does not take it.
  std::optional<KeyOrderSimdJsonView> parse(std::string_view text) {
    if (!allocated_) {
      if (parser_.allocate(initial_capacity_, max_depth_) != simdjson::SUCCESS) {
        return std::nullopt;
      }
      allocated_ = true;
    }
    if (text.size() + simdjson::SIMDJSON_PADDING > padded_.size()) {
      padded_.resize(std::max(initial_capacity_, text.size()) + simdjson::SIMDJSON_PADDING);
    }
    std::memcpy(padded_.data(), text.data(), text.size());
    std::memset(padded_.data() + text.size(), 0, simdjson::SIMDJSON_PADDING);
    simdjson::dom::element root;
    if (parser_.parse(padded_.data(), text.size(), false).get(root) != simdjson::SUCCESS) {
      return std::nullopt;
    }
    return KeyOrderSimdJsonView(parser_.doc, &orders_);
  }

 private:
  std::size_t initial_capacity_;
  std::size_t max_depth_;
  simdjson::dom::parser parser_;
  bool allocated_ = false;
  std::vector<char> padded_;
  KeyOrderSimdJsonView::KeyOrders orders_;
};

// A document value as nlohmann::json, with nlohmann's own number types
// (non-negative integers are unsigned), each key once (the last of repeated
// ones), as the reference parser would have given it. `skip_member`, when
// not empty, is left out of this value's own members (not deeper ones).
template <bool kRemembersKeyOrders>
nlohmann::json to_nlohmann(const BasicSimdJsonView<kRemembersKeyOrders>& value,
                           std::string_view skip_member = {}) {
  if (value.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    value.for_each_member(
        [&](std::string_view key, const BasicSimdJsonView<kRemembersKeyOrders>& member) {
          if (!skip_member.empty() && key == skip_member) return;
          out[std::string(key)] = to_nlohmann(member);
        });
    return out;
  }
  if (value.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    value.for_each_element([&](std::size_t, const BasicSimdJsonView<kRemembersKeyOrders>& item) {
      out.push_back(to_nlohmann(item));
    });
    return out;
  }
  if (value.is_string()) return std::string(value.string());
  if (value.is_number_unsigned()) return value.as_unsigned();
  if (value.is_number_integer()) return value.as_integer();
  if (value.is_number_float()) return value.as_float();
  if (value.is_boolean()) return value.boolean();
  return nullptr;
}

static_assert(JsonView<SimdJsonView>);
static_assert(JsonView<KeyOrderSimdJsonView>);
// Three words, as before key orders were remembered: a review makes one for
// every member it visits.
static_assert(sizeof(SimdJsonView) == 2 * sizeof(void*) + 8);
static_assert(JsonView<NlohmannView>);

}  // namespace cudagate

#pragma once
// simdjson's DOM seen through policy/json_view.h's interface: the webhook's
// hot path parses a review body with simdjson (a few microseconds for
// 13 KB, against a few hundred for nlohmann::json) and reads it with the
// same mapping code as the reference parser.
//
// Where the two parsers differ, the view answers as nlohmann::json would:
// a repeated key yields its last value, members are visited in key order,
// a non-negative integer is "unsigned". Inputs simdjson refuses that
// nlohmann accepts (integers beyond 64 bits, a byte order mark) are the
// caller's to route to the reference parser.

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/json_view.h"

namespace cudagate {

class SimdJsonView {
 public:
  SimdJsonView() = default;
  explicit SimdJsonView(simdjson::dom::element value) : value_(value), valid_(true) {}

  [[nodiscard]] bool valid() const { return valid_; }
  [[nodiscard]] bool is_null() const { return type() == simdjson::dom::element_type::NULL_VALUE; }
  [[nodiscard]] bool is_boolean() const { return type() == simdjson::dom::element_type::BOOL; }
  [[nodiscard]] bool is_string() const { return type() == simdjson::dom::element_type::STRING; }
  [[nodiscard]] bool is_object() const { return type() == simdjson::dom::element_type::OBJECT; }
  [[nodiscard]] bool is_array() const { return type() == simdjson::dom::element_type::ARRAY; }
  [[nodiscard]] bool is_number_unsigned() const {
    const auto t = type();
    return t == simdjson::dom::element_type::UINT64 ||
           (t == simdjson::dom::element_type::INT64 && as_integer() >= 0);
  }
  [[nodiscard]] bool is_number_integer() const {
    const auto t = type();
    return t == simdjson::dom::element_type::UINT64 || t == simdjson::dom::element_type::INT64;
  }
  [[nodiscard]] bool is_number_float() const {
    return type() == simdjson::dom::element_type::DOUBLE;
  }
  [[nodiscard]] bool boolean() const { return value_.get_bool().value_unsafe(); }
  [[nodiscard]] std::string_view string() const { return value_.get_string().value_unsafe(); }
  [[nodiscard]] std::uint64_t as_unsigned() const {
    if (type() == simdjson::dom::element_type::INT64) {
      return static_cast<std::uint64_t>(value_.get_int64().value_unsafe());
    }
    return value_.get_uint64().value_unsafe();
  }
  [[nodiscard]] std::int64_t as_integer() const {
    if (type() == simdjson::dom::element_type::UINT64) {
      return static_cast<std::int64_t>(value_.get_uint64().value_unsafe());
    }
    return value_.get_int64().value_unsafe();
  }
  [[nodiscard]] double as_float() const { return value_.get_double().value_unsafe(); }

  [[nodiscard]] SimdJsonView find(std::string_view key) const {
    if (!is_object()) return {};
    SimdJsonView found;
    const simdjson::dom::object object = value_.get_object().value_unsafe();
    // The last of repeated keys, as nlohmann::json keeps it.
    for (const auto field : object) {
      if (field.key == key) found = SimdJsonView(field.value);
    }
    return found;
  }

  // find() of each key in one pass over the members.
  template <std::size_t N>
  void find_each(const std::array<std::string_view, N>& keys,
                 std::array<SimdJsonView, N>& out) const {
    out.fill(SimdJsonView());
    if (!is_object()) return;
    const simdjson::dom::object object = value_.get_object().value_unsafe();
    for (const auto field : object) {
      for (std::size_t i = 0; i < N; ++i) {
        if (field.key.size() == keys[i].size() && field.key == keys[i]) {
          out[i] = SimdJsonView(field.value);  // the last of repeated keys wins
          break;
        }
      }
    }
  }

  [[nodiscard]] std::size_t size() const {
    if (is_array()) {
      const simdjson::dom::array array = value_.get_array().value_unsafe();
      return array.size();
    }
    if (is_null()) return 0;
    if (is_object()) {
      // Distinct keys, as nlohmann::json counts them.
      std::size_t n = 0;
      for_each_member([&n](std::string_view, SimdJsonView) { ++n; });
      return n;
    }
    return 1;
  }

  template <class F>
  void for_each_member(F&& f) const {
    if (!is_object()) return;
    // Sort the members by key in a local buffer (ties by position), then
    // visit the last member of each run of equal keys.
    struct Member {
      std::string_view key;
      std::uint32_t position;
      simdjson::dom::element value;
    };
    constexpr std::size_t kInline = 64;
    std::array<Member, kInline> inline_members;
    std::vector<Member> heap_members;
    Member* members = inline_members.data();
    std::uint32_t n = 0;
    const simdjson::dom::object object = value_.get_object().value_unsafe();
    for (const auto field : object) {
      if (n == kInline) heap_members.assign(inline_members.begin(), inline_members.end());
      if (n >= kInline) {
        heap_members.push_back(Member{field.key, n, field.value});
        members = heap_members.data();
      } else {
        inline_members[n] = Member{field.key, n, field.value};
      }
      ++n;
    }
    const auto before = [](const Member& a, const Member& b) {
      return a.key < b.key || (a.key == b.key && a.position < b.position);
    };
    // Go (kubectl, the API server) writes map keys sorted: often no sort.
    // Otherwise large objects (the labels of a node list's items) tend to
    // repeat an earlier one's keys in the same order: its order is reused.
    if (!std::is_sorted(members, members + n, before)) {
      // A few shapes (a CPU pool's labels, a GPU pool's...), told apart by size.
      thread_local std::array<KeyOrder, 8> orders;
      KeyOrder& order = orders[n % orders.size()];
      if (n < kRememberedOrder || !order.apply(members, n)) {
        std::sort(members, members + n, before);
        if (n >= kRememberedOrder) order.remember(members, n);
      }
    }
    for (std::uint32_t i = 0; i < n; ++i) {
      if (i + 1 < n && members[i + 1].key == members[i].key) continue;
      f(members[i].key, SimdJsonView(members[i].value));
    }
  }

  template <class F>
  void for_each_element(F&& f) const {
    if (!is_array()) return;
    std::size_t i = 0;
    const simdjson::dom::array array = value_.get_array().value_unsafe();
    for (const simdjson::dom::element e : array) {
      f(i++, SimdJsonView(e));
    }
  }

  [[nodiscard]] const char* type_name() const {
    switch (type()) {
      case simdjson::dom::element_type::ARRAY:
        return "array";
      case simdjson::dom::element_type::OBJECT:
        return "object";
      case simdjson::dom::element_type::STRING:
        return "string";
      case simdjson::dom::element_type::BOOL:
        return "boolean";
      case simdjson::dom::element_type::NULL_VALUE:
        return "null";
      case simdjson::dom::element_type::INT64:
      case simdjson::dom::element_type::UINT64:
      case simdjson::dom::element_type::DOUBLE:
        return "number";
    }
    return "null";
  }

  [[nodiscard]] simdjson::dom::element element() const { return value_; }

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
        if (members[i].key != keys[i]) return false;
      }
      std::array<Member, 64> sorted;
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
        keys[members[i].position].assign(members[i].key);
        permutation[i] = members[i].position;
      }
    }
  };

  [[nodiscard]] simdjson::dom::element_type type() const { return value_.type(); }

  simdjson::dom::element value_;
  bool valid_ = false;
};

// simdjson's DOM parser with a padded copy of the text, both kept and reused
// from one parse to the next (one per thread, or per reader). The view a
// parse returns is valid until the next parse.
class PaddedDomParser {
 public:
  // `max_depth` bounds nesting as the reference parser's check does, so
  // that deeper documents fail here and get that parser's error.
  PaddedDomParser(std::size_t initial_capacity, std::size_t max_depth)
      : initial_capacity_(initial_capacity), max_depth_(max_depth) {}

  // The text's root, or nullopt when simdjson does not take it.
  std::optional<SimdJsonView> parse(std::string_view text) {
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
    return SimdJsonView(root);
  }

 private:
  std::size_t initial_capacity_;
  std::size_t max_depth_;
  simdjson::dom::parser parser_;
  bool allocated_ = false;
  std::vector<char> padded_;
};

static_assert(JsonView<SimdJsonView>);
static_assert(JsonView<NlohmannView>);

}  // namespace cudagate

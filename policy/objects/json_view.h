#pragma once
// A read-only view of a parsed JSON value, so that the code that maps
// Kubernetes objects to facts is written once and runs over any parser:
// nlohmann::json (files, YAML documents, the CLI) and the webhook's fast
// parser (admission/simd_json_view.h) alike, with the same field semantics and
// the same errors.
//
// A view type V is a small value (a pointer or two) that models JsonView:
//   V()                          an absent value: valid() is false
//   valid()                      a value is present (it may be JSON null)
//   is_null() is_boolean() is_string() is_object() is_array()
//   is_number_unsigned()         a non-negative integer (as nlohmann types it)
//   is_number_integer()          any integer, unsigned ones included
//   is_number_float()            a number with a fraction or an exponent
//   boolean() string()           the value; string() is a view into the parse
//   as_unsigned() as_integer() as_float()
//   find(key)                    the member `key` of an object, the last one
//                                when the key is repeated (as nlohmann keeps
//                                it); absent when missing or not an object
//   find_each(keys, out)         find() of several keys (std::array), which a
//                                parser may answer in one pass
//   for_each_member(f)           f(std::string_view key, V value) for each
//                                member in key order (bytewise), each key once
//   size()                       elements of an array, members of an object
//   for_each_element(f)          f(std::size_t index, V value) in order
//   type_name()                  "null", "boolean", "number", "string",
//                                "array", "object" (nlohmann's names)
//
// The helpers below are the generic forms of document.h's field readers;
// their errors are word for word the same.

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/objects/document.h"
#include "types/expected.h"

namespace cudagate {

template <class V>
concept JsonView = std::default_initializable<V> && std::copyable<V> && requires(const V v) {
  { v.valid() } -> std::same_as<bool>;
  { v.is_null() } -> std::same_as<bool>;
  { v.is_boolean() } -> std::same_as<bool>;
  { v.is_string() } -> std::same_as<bool>;
  { v.is_object() } -> std::same_as<bool>;
  { v.is_array() } -> std::same_as<bool>;
  { v.is_number_unsigned() } -> std::same_as<bool>;
  { v.is_number_integer() } -> std::same_as<bool>;
  { v.is_number_float() } -> std::same_as<bool>;
  { v.boolean() } -> std::same_as<bool>;
  { v.string() } -> std::same_as<std::string_view>;
  { v.as_unsigned() } -> std::same_as<std::uint64_t>;
  { v.as_integer() } -> std::same_as<std::int64_t>;
  { v.as_float() } -> std::same_as<double>;
  { v.find(std::string_view{}) } -> std::same_as<V>;
  { v.size() } -> std::same_as<std::size_t>;
  { v.type_name() } -> std::convertible_to<std::string_view>;
};

// nlohmann::json seen through the interface: the reference parser.
class NlohmannView {
 public:
  NlohmannView() = default;
  explicit NlohmannView(const nlohmann::json& value) : value_(&value) {}

  [[nodiscard]] bool valid() const { return value_ != nullptr; }
  [[nodiscard]] bool is_null() const { return value_->is_null(); }
  [[nodiscard]] bool is_boolean() const { return value_->is_boolean(); }
  [[nodiscard]] bool is_string() const { return value_->is_string(); }
  [[nodiscard]] bool is_object() const { return value_->is_object(); }
  [[nodiscard]] bool is_array() const { return value_->is_array(); }
  [[nodiscard]] bool is_number_unsigned() const { return value_->is_number_unsigned(); }
  [[nodiscard]] bool is_number_integer() const { return value_->is_number_integer(); }
  [[nodiscard]] bool is_number_float() const { return value_->is_number_float(); }
  [[nodiscard]] bool boolean() const { return value_->get<bool>(); }
  [[nodiscard]] std::string_view string() const { return value_->get_ref<const std::string&>(); }
  [[nodiscard]] std::uint64_t as_unsigned() const { return value_->get<std::uint64_t>(); }
  [[nodiscard]] std::int64_t as_integer() const { return value_->get<std::int64_t>(); }
  [[nodiscard]] double as_float() const { return value_->get<double>(); }
  [[nodiscard]] NlohmannView find(std::string_view key) const {
    if (!value_->is_object()) return {};
    const auto it = value_->find(key);
    return it == value_->end() ? NlohmannView() : NlohmannView(*it);
  }
  [[nodiscard]] std::size_t size() const { return value_->size(); }
  // find() of each key, into `out`.
  template <std::size_t N>
  void find_each(const std::array<std::string_view, N>& keys,
                 std::array<NlohmannView, N>& out) const {
    for (std::size_t i = 0; i < N; ++i) out[i] = find(keys[i]);
  }
  template <class F>
  void for_each_member(F&& f) const {
    for (const auto& [key, value] : value_->items()) f(std::string_view(key), NlohmannView(value));
  }
  template <class F>
  void for_each_element(F&& f) const {
    for (std::size_t i = 0; i < value_->size(); ++i) f(i, NlohmannView((*value_)[i]));
  }
  [[nodiscard]] const char* type_name() const { return value_->type_name(); }
  [[nodiscard]] const nlohmann::json& json() const { return *value_; }

 private:
  const nlohmann::json* value_ = nullptr;
};

// "expected a string, got number", as document.h's type_error().
template <JsonView V>
std::string view_type_error(std::string_view expected, const V& got) {
  std::string out = "expected ";
  out += expected;
  out += ", got ";
  out += got.type_name();
  return out;
}

// A number as nlohmann::json prints it, for errors that quote one.
template <JsonView V>
std::string view_dump_number(const V& value) {
  if (value.is_number_unsigned()) return std::to_string(value.as_unsigned());
  if (value.is_number_integer()) return std::to_string(value.as_integer());
  return nlohmann::json(value.as_float()).dump();
}

// document.h's string_field, with the value as a view into the parse.
// Absent or null: "" (or "is required"); another type: an error.
template <JsonView V>
Expected<std::string_view> view_string_field(const V& object, std::string_view key,
                                             std::string_view path, bool required) {
  if (!object.is_object()) return Error{std::string(path), view_type_error("an object", object)};
  const V v = object.find(key);
  if (!v.valid() || v.is_null()) {
    if (required) return Error{field_path(path, key), "is required"};
    return std::string_view();
  }
  if (!v.is_string()) return Error{field_path(path, key), view_type_error("a string", v)};
  return v.string();
}

// document.h's object_field and array_field: an absent view when the member
// is absent or null.
template <JsonView V>
Expected<V> view_typed_field(const V& object, std::string_view key, std::string_view path,
                             bool want_object) {
  if (!object.is_object()) return Error{std::string(path), view_type_error("an object", object)};
  const V v = object.find(key);
  if (!v.valid() || v.is_null()) return V();
  if (want_object ? !v.is_object() : !v.is_array()) {
    return Error{field_path(path, key), view_type_error(want_object ? "an object" : "a list", v)};
  }
  return v;
}
template <JsonView V>
Expected<V> view_object_field(const V& object, std::string_view key, std::string_view path) {
  return view_typed_field(object, key, path, true);
}
template <JsonView V>
Expected<V> view_array_field(const V& object, std::string_view key, std::string_view path) {
  return view_typed_field(object, key, path, false);
}

}  // namespace cudagate

#pragma once
// Expected<T>: a value or the Error that explains why there is none.
//
// Every parser in the core returns Expected instead of throwing, so that bad
// input on the request path is answered with a message and never unwinds
// through the server. Error::where names the place (file, line, field,
// container); Error::message says what was found and what was expected.

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace cudagate {

struct Error {
  std::string where;    // "pod.yaml:12: spec.containers[0].env[3].value", may be empty
  std::string message;  // "expected a CUDA version like 12.4, got \"12.x\""

  // "where: message", or the message alone when there is no place.
  [[nodiscard]] std::string str() const { return where.empty() ? message : where + ": " + message; }

  // A copy with `outer` prepended to the place: "file.yaml" + "spec.x" -> "file.yaml: spec.x".
  [[nodiscard]] Error within(const std::string& outer) const {
    if (outer.empty()) return *this;
    return Error{where.empty() ? outer : outer + ": " + where, message};
  }
};

template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Expected(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  [[nodiscard]] bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  T& value() & {
    assert(has_value());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(has_value());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(has_value());
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  [[nodiscard]] const Error& error() const {
    assert(!has_value());
    return std::get<1>(v_);
  }

 private:
  std::variant<T, Error> v_;
};

}  // namespace cudagate

#pragma once
// The CEL selectors of a DRA device request (spec.devices.requests[].
// selectors[].cel.expression), evaluated on the kinds of devices a node
// publishes (DeviceKind, policy/objects/node.h), so that a request's selectors
// narrow the devices it is judged against (policy/objects/dra.h).
//
// The subset read: `&&`, `||`, `!`, parentheses, `true` and `false`;
// `device.driver`; attributes as `device.attributes["domain"].name` or
// `device.attributes["domain"]["name"]`, compared with == or != to a string
// (quoted with " or ', no escapes), integer or boolean literal; and version
// attributes through `.compareTo(semver("x.y.z")) <op> n`,
// `.isGreaterThan(semver(..))`, `.isLessThan(semver(..))`, or == / !=
// against semver(..). Nesting deeper than 64 is refused. Anything else
// (device.capacity, `in`, string methods, macros) is outside the subset.
//
// Inside the subset the result is CEL's, as Kubernetes evaluates a DRA
// selector (k8s.io/dynamic-resource-allocation/cel, with the semver library
// of k8s.io/apiserver/pkg/cel/library: compareTo gives -1, 0 or 1): an
// attribute the device does not have, or a comparison of values of other
// types, is an error, and && and || are commutative over errors (a false
// operand decides &&, a true one decides ||, whatever the others are).
//
// parse() gives nullopt, with the reason in `why` (which may be null), for
// text outside the subset, text that is not CEL included: the selector is
// then not read at all, and is not false (claim_use() in policy/objects/dra.h
// judges such a request as able to take any device of its class).
// matches() gives nullopt where CEL would stop with an error; may_take()
// does not exclude a kind on it.
//
// A DraSelector is an immutable value: copies share the parsed expression,
// and one may be evaluated from several threads at once.

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "policy/objects/node.h"

namespace cudagate {

// A CEL selector in the subset cudagate evaluates: `&&`, `||`, `!`,
// parentheses, `device.driver`, attributes as
// `device.attributes["domain"].name` compared with ==, != to string,
// integer and boolean literals, and version attributes through
// `.compareTo(semver("x.y.z")) <op> n`, `.isGreaterThan(semver(..))`,
// `.isLessThan(semver(..))`, or == / != against semver(..).
class DraSelector {
 public:
  // nullopt, with the reason in `why`, when the text is outside the subset.
  static std::optional<DraSelector> parse(std::string_view text, std::string* why);
  // True or false on a kind; nullopt where CEL would stop with an error
  // (an attribute the device does not have, a comparison of other types).
  [[nodiscard]] std::optional<bool> matches(const DeviceKind& kind) const;

  struct Node;

 private:
  std::shared_ptr<const Node> root_;
};

}  // namespace cudagate

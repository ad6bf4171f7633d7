#pragma once
// Label selectors as kubectl and the scheduler read them
// (k8s.io/apimachinery/pkg/labels): comma-separated requirements, each
// `key=value`, `key==value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`,
// `key` (exists), `!key` (does not exist), `key>N`, `key<N` (integer
// comparison, as node affinity's Gt and Lt). Every requirement must hold.
// Keys are qualified names (an optional DNS subdomain prefix and a name of
// at most 63 characters), values at most 63 characters of [A-Za-z0-9-_.],
// as the API server validates them.

#include <string>
#include <string_view>
#include <vector>

#include "policy/objects/key_values.h"
#include "types/expected.h"

namespace cudagate {

enum class LabelOp : unsigned char { equals, not_equals, in, not_in, exists, not_exists, gt, lt };

struct LabelRequirement {
  std::string key;
  LabelOp op = LabelOp::exists;
  std::vector<std::string> values;  // one for equals, not_equals, gt, lt; sorted for in, not_in

  [[nodiscard]] bool matches(const KeyValues& labels) const;
  friend bool operator==(const LabelRequirement&, const LabelRequirement&) = default;
};

class LabelSelector {
 public:
  // An empty `text` is an error: a selector that selects every node is
  // never what a rollout plan means.
  [[nodiscard]] static Expected<LabelSelector> parse(std::string_view text);

  [[nodiscard]] bool matches(const KeyValues& labels) const;
  [[nodiscard]] const std::vector<LabelRequirement>& requirements() const { return requirements_; }
  // The canonical text: requirements in the order given, `a=b,c notin (x,y),!d`.
  [[nodiscard]] std::string str() const;

 private:
  std::vector<LabelRequirement> requirements_;
};

}  // namespace cudagate

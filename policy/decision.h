#pragma once
// The decision record (SPEC 7.1): the verdict over a workload's candidate
// nodes, the metadata used with its sources, and per group of nodes with
// equal GPU facts the outcome and the findings, each with a fix.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "policy/node.h"
#include "policy/pod.h"

namespace cudagate {

enum class Verdict : unsigned char { pass, partial, fail, unknown, no_candidates, skip };
enum class Outcome : unsigned char { compatible, incompatible, unknown };

[[nodiscard]] std::string_view to_string(Verdict verdict);  // "no-candidates"
[[nodiscard]] std::string_view to_string(Outcome outcome);

// Rule names as reports carry them.
inline constexpr std::string_view kRuleCudaDriver = "cuda-driver";
inline constexpr std::string_view kRuleGpuArch = "gpu-arch";
inline constexpr std::string_view kRuleGpuFeature = "gpu-feature";

struct Finding {
  std::string rule;       // kRule*
  std::string container;  // container name
  std::string message;    // "needs CUDA 12.4; driver 535.129.03 supports up to CUDA 12.2"
  std::string fix;        // "upgrade the driver to 550.54.14 or newer, or ..."
  bool unknown = false;   // true when the finding says a value is missing, not that a rule failed
};

struct SourcedValue {
  std::string value;  // "" when unknown
  std::string source = "unknown";
};

struct ContainerDecision {
  std::string name;
  std::string image;
  bool gpu = false;
  SourcedValue cuda;
  SourcedValue archs;
  SourcedValue require;
  SourcedValue min_cc;
};

struct GroupDecision {
  std::size_t group = 0;           // index into Inventory::groups()
  std::size_t count = 0;           // candidate members of the group
  std::vector<std::string> nodes;  // at most kMaxGroupNodeNames names
  GpuFacts facts;
  Outcome outcome = Outcome::compatible;
  std::vector<Finding> findings;
};

inline constexpr std::size_t kMaxGroupNodeNames = 20;

struct Decision {
  ResourceRef resource;
  Verdict verdict = Verdict::skip;
  std::string reason;  // for skip and no-candidates: why
  std::vector<ContainerDecision> containers;
  std::size_t candidates = 0;
  std::size_t compatible = 0;
  std::vector<GroupDecision> groups;  // incompatible and unknown first, then compatible
  bool unknown_image = false;         // a GPU container has neither cuda, archs nor require
  bool unknown_node = false;          // a candidate GPU node's driver is unknown
};

// The JSON decision record: {"apiVersion": "cudagate.io/v1alpha1", "kind": "Decision", ...}.
[[nodiscard]] nlohmann::json to_json(const Decision& decision);

}  // namespace cudagate

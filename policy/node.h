#pragma once
// Kubernetes nodes as cudagate sees them, and the GPU facts derived from
// their labels (SPEC 2.3): GPU Feature Discovery labels first, then
// cudagate.io/* labels, then cloud accelerator labels, then the product name
// through compat-db.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compat-db/compat_db.h"
#include "policy/key_values.h"
#include "types/expected.h"
#include "types/version.h"

namespace cudagate {

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule, PreferNoSchedule, NoExecute
  friend bool operator==(const Taint&, const Taint&) = default;
};

// The parts of a Node object that scheduling and compatibility depend on.
struct Node {
  std::string name;
  KeyValues labels;  // sorted by key
  std::vector<Taint> taints;
  bool unschedulable = false;
  // status.allocatable entries that are extended resources ("nvidia.com/gpu": 8).
  std::vector<std::pair<std::string, std::int64_t>> allocatable;

  [[nodiscard]] const std::string* label(std::string_view key) const;
};

// Reads a `kubectl get nodes -o json|yaml` output: a NodeList, a List, one
// Node, or several YAML documents. Errors name the source, the item and the field.
Expected<std::vector<Node>> parse_nodes(std::string_view text, std::string_view source);
Expected<Node> node_from_json(const nlohmann::json& object, std::string_view where);

// Where a node fact came from; the label keys are what /mutate pins on.
enum class NodeFactSource : unsigned char { none, gfd, cudagate, cloud, product };

struct GpuFacts {
  bool has_gpu = false;  // allocatable nvidia.com/gpu or nvidia.com/mig-* > 0
  std::optional<DriverVersion> driver;
  std::optional<CudaVersion> max_cuda;
  std::optional<ComputeCapability> cc;
  std::string product;  // label value as found ("Tesla-T4") or compat-db name
  std::string family;
  std::optional<std::string> brand;  // from the product, lower-case
  NodeFactSource driver_source = NodeFactSource::none;
  NodeFactSource cc_source = NodeFactSource::none;

  friend bool operator==(const GpuFacts&, const GpuFacts&) = default;
};

[[nodiscard]] GpuFacts derive_gpu_facts(const Node& node, const CompatDb& db);

// Extended resources that count as GPUs: nvidia.com/mig-* always, and
// `gpu_resources` (policy, default nvidia.com/gpu).
[[nodiscard]] bool is_gpu_resource(std::string_view name,
                                   const std::vector<std::string>& gpu_resources);

}  // namespace cudagate

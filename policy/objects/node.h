#pragma once
// Kubernetes nodes as cudagate sees them, and the GPU facts derived from
// their labels (docs/contract.md §2.3): GPU Feature Discovery labels first,
// then cudagate.io/* labels, then cloud accelerator labels, then the product
// name through compat-db.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compat-db/compat_db.h"
#include "policy/objects/key_values.h"
#include "policy/objects/pod.h"
#include "types/expected.h"
#include "types/version.h"

namespace cudagate {

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule, PreferNoSchedule, NoExecute
  friend bool operator==(const Taint&, const Taint&) = default;
};

// One attribute of a device published through Dynamic Resource Allocation,
// by its fully qualified name ("gpu.nvidia.com/productName") and type.
struct DeviceAttribute {
  enum class Type : unsigned char { string, integer, boolean, version };
  std::string name;
  Type type = Type::string;
  std::string value;  // as written: "NVIDIA H100 80GB HBM3", "0", "true", "13.0.0"
  friend bool operator==(const DeviceAttribute&, const DeviceAttribute&) = default;
};

// A kind of device a node publishes in its ResourceSlices (policy/objects/dra.h):
// the devices of one driver whose attributes are equal once those that name
// one device (uuid, PCI addresses) are left out, and how many there are.
struct DeviceKind {
  std::string driver;  // "gpu.nvidia.com"
  std::string type;    // the driver's "type" attribute: "gpu", "mig", "vfio"; "" without
  std::int64_t count = 0;
  std::vector<DeviceAttribute> attributes;  // sorted by name
  [[nodiscard]] const DeviceAttribute* attribute(std::string_view name) const;
  friend bool operator==(const DeviceKind&, const DeviceKind&) = default;
};

struct PoolNodeInfo;  // policy/objects/node_pool.h

// The parts of a Node object that scheduling and compatibility depend on.
struct Node {
  std::string name;
  KeyValues labels;  // sorted by key
  std::vector<Taint> taints;
  bool unschedulable = false;
  // status.allocatable entries that are extended resources ("nvidia.com/gpu": 8).
  std::vector<std::pair<std::string, std::int64_t>> allocatable;
  // The GPU devices of NVIDIA's DRA driver the node's ResourceSlices
  // publish (attach_devices() in policy/objects/dra.h sets them, and for each kind
  // an allocatable entry named by dra_resource_name()).
  std::vector<DeviceKind> devices;
  // Set on the nodes that stand for a node pool's next node
  // (policy/objects/node_pool.h), which are not Node objects of the cluster.
  std::shared_ptr<const PoolNodeInfo> pool;

  [[nodiscard]] const std::string* label(std::string_view key) const;
};

// Toleration.ToleratesTaint (k8s.io/api/core/v1/toleration.go).
[[nodiscard]] bool tolerates(const Toleration& t, const Taint& taint);

// Reads a `kubectl get nodes -o json|yaml` output: a NodeList, a List, one
// Node, or several YAML documents. Errors name the source, the item and the field.
// ResourceSlices among them give their nodes' DRA devices. Karpenter
// NodePools among them become the nodes that stand for each pool's next
// node (pool_nodes() in policy/objects/node_pool.h, with `db`); without `db`, a
// NodePool is an error.
Expected<std::vector<Node>> parse_nodes(std::string_view text, std::string_view source,
                                        const CompatDb* db = nullptr);
Expected<Node> node_from_json(const nlohmann::json& object, std::string_view where);

// Where a node fact came from; the label keys are what /mutate pins on.
// `pool`: a node pool's declared facts (its driver annotation, the policy's
// product), which its nodes carry as no label.
enum class NodeFactSource : unsigned char { none, gfd, cudagate, cloud, product, dra, pool };

struct GpuFacts {
  bool has_gpu = false;  // allocatable nvidia.com/gpu or nvidia.com/mig-* > 0
  std::optional<DriverVersion> driver;
  std::optional<CudaVersion> max_cuda;
  // max_cuda is a floor: the matrix's answer for a driver of a branch newer
  // than any it knows (the driver supports at least that CUDA). Set only when
  // the node reports no CUDA version of its own (GFD's runtime labels win).
  bool max_cuda_floor = false;
  std::optional<ComputeCapability> cc;
  std::string product;  // label value as found ("Tesla-T4") or compat-db name
  std::string family;
  std::optional<std::string> brand;  // from the product, lower-case
  NodeFactSource driver_source = NodeFactSource::none;
  NodeFactSource cc_source = NodeFactSource::none;
  // The node's kinds of DRA GPU devices (Node::devices of NVIDIA's driver).
  // A pod that claims devices is judged on each kind it can be given; the
  // facts above are those of the first kind where no label gives them.
  std::vector<DeviceKind> devices;
  // Why the facts cannot all be true ("driver 590.48.01 is newer than R580,
  // the last branch for Volta GPUs"), or "": such a node is not judged as if
  // it were fine.
  std::string inconsistency;

  friend bool operator==(const GpuFacts&, const GpuFacts&) = default;
};

// The node's maximum CUDA as reports print it: "13.5", "at least 13.5
// (inferred)" for a floor, "unknown".
[[nodiscard]] std::string max_cuda_text(const GpuFacts& facts);

// What a node's facts name that the matrix does not know: a driver branch
// newer than every known one, a product name found in no entry, a compute
// capability newer than every known one. Each as (kind, value), kind one of
// "driver_branch", "product", "compute_capability".
[[nodiscard]] std::vector<std::pair<std::string, std::string>> matrix_gaps(const GpuFacts& facts,
                                                                           const CompatDb& db);

[[nodiscard]] GpuFacts derive_gpu_facts(const Node& node, const CompatDb& db);

// The GPU facts of one kind of DRA device: its driverVersion,
// cudaDriverVersion and cudaComputeCapability attributes (versions written
// as semantic versions: 580.105.8 is the driver nvidia-smi prints as
// 580.105.08), its productName through compat-db for the family and brand.
[[nodiscard]] GpuFacts device_gpu_facts(const DeviceKind& kind, const CompatDb& db);

// The DRA driver of NVIDIA GPUs, which names its attributes' domain.
inline constexpr std::string_view kNvidiaDraDriver = "gpu.nvidia.com";

// Extended resources that count as GPUs: nvidia.com/mig-* always, and
// `gpu_resources` (policy, default nvidia.com/gpu).
[[nodiscard]] bool is_gpu_resource(std::string_view name,
                                   const std::vector<std::string>& gpu_resources);

}  // namespace cudagate

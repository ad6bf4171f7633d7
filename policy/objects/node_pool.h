#pragma once
// Node pools: groups of nodes an autoscaler launches when pods need them,
// judged before their nodes exist (docs/contract.md §2.7).
//
// A pool comes from a Karpenter NodePool (karpenter.sh/v1), read from a
// node list file or watched on the API server, or from the policy file's
// `nodePools` (cluster-autoscaler node groups, GKE and AKS node pools and
// anything else). Each pool stands for its next node: pool_nodes() makes
// one Node per GPU kind it may launch, which the inventory holds beside the
// real nodes, named so that no real node can have the name and with the
// nodes the pool has now ("NodePool gpu-t4 (0 nodes now)", "NodePool
// gpu-mixed (a100, 2 nodes now)", "node pool gpu-l4 (1 node now)"). The
// nodes a pool already has are real nodes, judged as such.
//
// A pool node carries as labels only what every node of the pool will
// carry: the template's labels, karpenter.sh/nodepool, and each requirement
// that allows one value (the value that tells its GPU kind included), so
// that a pin written on a pool node's labels is one the autoscaler can act
// on. Its other requirements (several values, NotIn, Exists, Gt, Lt) stay
// requirements, and pool_admits() decides whether a pod fits the pool the
// way Karpenter's scheduler does.
//
// Pure: no I/O; errors name the place (file, document, field).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compat-db/compat_db.h"
#include "policy/objects/key_values.h"
#include "policy/objects/node.h"
#include "policy/objects/pod.h"
#include "types/expected.h"

namespace cudagate {

// The label Karpenter puts on the nodes of a NodePool, and on every node
// it launches, with the pool's name.
inline constexpr std::string_view kNodePoolLabel = "karpenter.sh/nodepool";
// A pool's driver, as the annotation of a NodePool or a template label.
inline constexpr std::string_view kDriverVersionKey = "cudagate.io/driver-version";

// The requirement keys that name the GPU kind of the nodes a pool launches,
// in the order they are read: the first the pool constrains to a list of
// values makes one pool node per value.
inline constexpr std::string_view kPoolGpuKeys[] = {
    "karpenter.k8s.aws/instance-gpu-name",  // Karpenter's AWS provider
    "karpenter.azure.com/sku-gpu-name",     // Karpenter's Azure provider
    "cloud.google.com/gke-accelerator",     // GKE node pools
    "node.kubernetes.io/instance-type",     // any provider, through the matrix
};

struct NodePool {
  enum class Source : unsigned char { karpenter, policy };
  Source source = Source::karpenter;
  std::string name;
  // Labels every node of the pool carries (Karpenter's
  // spec.template.metadata.labels; the policy entry's labels).
  KeyValues labels;
  // Karpenter's spec.template.spec.requirements (minValues left out: it
  // asks for variety, not for a label).
  std::vector<NodeSelectorRequirement> requirements;
  // The taints of its nodes (Karpenter's spec.template.spec.taints;
  // startupTaints are lifted before pods are scheduled, so they do not count).
  std::vector<Taint> taints;
  // The driver its nodes run, as written, when no template label says it:
  // the NodePool's cudagate.io/driver-version annotation or the policy's
  // driverVersion. "" when unknown.
  std::string driver;
  // Policy pools: the GPU product (a matrix name, GFD's or the cloud's),
  // the GPUs per node (0: as the matrix's instance type says, else without
  // bound) and the extended resource that offers them.
  std::string product;
  std::int64_t gpus = 0;
  std::string gpu_resource = "nvidia.com/gpu";
  // Where it was read, for errors and messages.
  std::string where;

  friend bool operator==(const NodePool&, const NodePool&) = default;
};

// What a pool node stands for: its pool and, for a pool of several GPU
// kinds, which one. Node::pool holds it.
struct PoolNodeInfo {
  std::shared_ptr<const NodePool> pool;
  // The requirements a node of this kind meets beyond its labels (the
  // pool's requirements that allow more than one value, or none).
  std::vector<NodeSelectorRequirement> requirements;
  // The GPU kind's key and value ("karpenter.k8s.aws/instance-gpu-name",
  // "a100"), empty when the pool names one kind or none.
  std::string kind_key;
  std::string kind_value;

  friend bool operator==(const PoolNodeInfo& a, const PoolNodeInfo& b) {
    return (a.pool == b.pool || (a.pool && b.pool && *a.pool == *b.pool)) &&
           a.requirements == b.requirements && a.kind_key == b.kind_key &&
           a.kind_value == b.kind_value;
  }
};

// A Karpenter NodePool (apiVersion karpenter.sh/v1, kind NodePool).
// Errors name `where` and the field.
Expected<NodePool> node_pool_from_json(const nlohmann::json& object, std::string_view where);

// Whether `pool` may launch GPU nodes at all: its labels give GPU facts, it
// names a GPU kind (kPoolGpuKeys), a GPU count or a driver, or it is a
// policy pool. A NodePool with none of these (a pool for CPU work) stands
// for no GPU node.
[[nodiscard]] bool is_gpu_pool(const NodePool& pool);

// The name of the pool nodes of `pool`, with the number of nodes it has
// now: "NodePool gpu-t4 (0 nodes now)", "node pool gpu-l4 (1 node now)",
// and for a pool of several GPU kinds its `kind_value`: "NodePool gpu
// (a100, 2 nodes now)".
[[nodiscard]] std::string pool_node_name(const NodePool& pool, std::string_view kind_value,
                                         std::size_t nodes_now);

// Whether a node with `labels` is one of `pool`'s: its karpenter.sh/nodepool
// label names a NodePool; it carries every label of a policy pool.
[[nodiscard]] bool is_pool_member(const NodePool& pool, const KeyValues& labels);
// The nodes of the cluster that are `pool`'s (pool nodes do not count).
[[nodiscard]] std::size_t pool_member_count(const NodePool& pool, std::span<const Node> nodes);

// The nodes that stand for the next node of `pool`, one per GPU kind it may
// launch (kPoolGpuKeys); none for a pool that is not a GPU pool. Each
// offers the pool's GPU resource: as many as the pool's gpus, else as the
// matrix's instance type has (`db`), else without bound (kUnboundedGpus).
// `nodes_now`, the nodes the pool has now (pool_member_count), goes into
// their names.
[[nodiscard]] std::vector<Node> pool_nodes(const std::shared_ptr<const NodePool>& pool,
                                           const CompatDb& db, std::size_t nodes_now);

// The GPUs a pool node offers when nothing says how many.
inline constexpr std::int64_t kUnboundedGpus = 1 << 30;

// Whether Karpenter could launch a node of this pool node's kind for a pod
// of `spec` (sigs.k8s.io/karpenter pkg/scheduling/requirements.go,
// Requirements.Compatible with AllowUndefinedWellKnownLabels, and
// Taints.ToleratesPod): for some required node affinity term (or the node
// selector alone), every key the pod constrains intersects the values the
// pool allows; a key the pool does not define is allowed when it is a
// well-known label (its value is chosen at launch) or the pod asks for
// NotIn or DoesNotExist. A term that matches metadata.name In a name never
// matches a node that does not exist yet; metadata.name NotIn does. The pod must tolerate the
// pool's NoSchedule and NoExecute taints, and the node must offer every extended resource the pod
// requests (`requests`: resource and the pod's effective amount): the GPU resource up to the pool's
// GPUs per node; other extended resources are assumed offered, the pool's instance types not being
// known here. A pod bound to a node by name never fits a pool.
[[nodiscard]] bool pool_admits(const Node& pool_node,
                               std::span<const std::pair<std::string_view, std::int64_t>> requests,
                               const PodSpec& spec);

// Karpenter's well-known labels (sigs.k8s.io/karpenter pkg/apis/v1/labels.go,
// WellKnownLabels, and the labels its AWS and Azure providers register): a
// pod may constrain them on a pool that does not.
[[nodiscard]] bool is_well_known_pool_label(std::string_view key);

}  // namespace cudagate

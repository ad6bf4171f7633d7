#pragma once
// The node inventory: built once from a node list, indexed so that a
// decision never walks every node.
//
// Nodes with equal GPU facts form a group; a decision checks each group once
// and counts the candidate members of each with a bitset intersection.
// Candidate nodes (SPEC 2.4) come from label, field, taint and resource
// indexes combined as bitsets.
//
// An Inventory is immutable after build() and safe to read from many
// threads; the server swaps whole inventories (shared_ptr) to update it.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "compat-db/compat_db.h"
#include "policy/node.h"
#include "policy/node_set.h"
#include "policy/pod.h"

namespace cudagate {

struct NodeGroup {
  GpuFacts facts;
  NodeSet members;
};

class Inventory {
 public:
  Inventory() = default;
  static Inventory build(std::vector<Node> nodes, const CompatDb& db);

  [[nodiscard]] std::size_t size() const { return nodes_.size(); }
  [[nodiscard]] const Node& node(std::size_t i) const { return nodes_[i]; }
  [[nodiscard]] const std::vector<NodeGroup>& groups() const { return groups_; }
  // Index of the group of node i.
  [[nodiscard]] std::size_t group_of(std::size_t i) const { return group_of_[i]; }
  // Nodes with GPUs whose driver stayed unknown.
  [[nodiscard]] std::size_t unknown_gpu_nodes() const { return unknown_gpu_nodes_; }
  [[nodiscard]] std::size_t gpu_nodes() const { return gpu_nodes_; }

  // The nodes `spec` may be scheduled to, with Kubernetes' semantics:
  // nodeName, nodeSelector, required node affinity (matchExpressions and
  // matchFields on metadata.name), NoSchedule/NoExecute taints (cordoned
  // nodes tainted node.kubernetes.io/unschedulable:NoSchedule) against
  // tolerations, and every extended resource the pod requests available.
  [[nodiscard]] NodeSet candidates(const PodSpec& spec) const;

  // Whether some node carries label `key` (mutation pins only on labels
  // the inventory has).
  [[nodiscard]] bool has_label_key(std::string_view key) const;

  // The nodes whose label `key` equals `value` (nodeSelector), as a new set.
  [[nodiscard]] NodeSet with_label(std::string_view key, std::string_view value) const;

 private:
  // Lookups by string_view without building a std::string.
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  template <class V>
  using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

  // The nodes of one label key or value: a sorted index list while that is
  // smaller than a bitset, else a bitset. Labels with a value per node
  // (hostnames, instance ids) then cost memory per node, not per node squared.
  struct Members {
    std::vector<std::uint32_t> sparse;
    NodeSet dense;  // used when `is_dense`
    bool is_dense = false;

    void add_to(NodeSet& set) const;
    void intersect(NodeSet& set) const;
  };
  struct LabelIndex {
    Members has_key;
    StringMap<Members> by_value;
  };

  [[nodiscard]] NodeSet match_term(const NodeSelectorTerm& term) const;
  [[nodiscard]] NodeSet match_requirement(const NodeSelectorRequirement& r) const;
  [[nodiscard]] NodeSet match_field(const NodeSelectorRequirement& r) const;
  [[nodiscard]] const LabelIndex* label_index(std::string_view key) const;

  std::vector<Node> nodes_;
  std::vector<NodeGroup> groups_;
  std::vector<std::size_t> group_of_;
  StringMap<LabelIndex> labels_;
  StringMap<std::size_t> by_name_;
  // Distinct NoSchedule/NoExecute taints (cordon included) and their nodes.
  std::vector<std::pair<Taint, NodeSet>> taints_;
  // Extended resource -> (amount -> nodes with exactly that allocatable amount).
  std::unordered_map<std::string, std::map<std::int64_t, NodeSet>> resources_;
  std::size_t unknown_gpu_nodes_ = 0;
  std::size_t gpu_nodes_ = 0;
};

}  // namespace cudagate

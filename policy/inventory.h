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
// It keeps each distinct string once (a 10,000-node fleet repeats the same
// few dozen label keys and values), so its size is about that of its
// indexes, not of the node list it was read from.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
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

// Reusable storage for Inventory::candidate_slots(): a caller that keeps one
// per thread decides without allocating.
struct CandidateScratch {
  struct Request {
    std::string_view resource;
    std::int64_t app = 0;   // sum over the app containers
    std::int64_t init = 0;  // largest of the init containers
  };
  NodeSet result;
  NodeSet any;   // the union of the required node affinity terms
  NodeSet term;  // one term
  NodeSet part;  // one requirement, or the nodes with enough of a resource
  NodeSet kept;  // an intersection with an index list
  std::vector<Request> requests;
};

class InventoryBuilder;

class Inventory {
 public:
  Inventory() = default;
  static Inventory build(const std::vector<Node>& nodes, const CompatDb& db);

  [[nodiscard]] std::size_t size() const { return node_name_.size(); }
  // Node i as read (a copy: the inventory keeps nodes compactly, each label
  // string once for all nodes). Prefer node_name() and node_label().
  [[nodiscard]] Node node(std::size_t i) const;
  // The same into `out`, reusing its storage (a rebuild copies every node).
  void node_into(std::size_t i, Node& out) const;
  // The index of the node named `name`, or nullopt.
  [[nodiscard]] std::optional<std::size_t> index_of(std::string_view name) const;
  [[nodiscard]] const std::string& node_name(std::size_t i) const {
    return (*strings_)[node_name_[i]];
  }
  // The value of label `key` of node i; nullptr when it has none. Stays
  // valid as long as the inventory.
  [[nodiscard]] const std::string* node_label(std::size_t i, std::string_view key) const;
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

  // The same candidates, for decisions: as a set of slots, the inventory's
  // internal order in which every group's members are one contiguous range
  // (the nodes of a group in file order), so that counting the candidates
  // of a group is one range count, whatever the fleet's size. The result
  // lives in `scratch`.
  [[nodiscard]] const NodeSet& candidate_slots(const PodSpec& spec,
                                               CandidateScratch& scratch) const;
  // The slots of group g: [begin, end).
  [[nodiscard]] std::pair<std::size_t, std::size_t> group_slots(std::size_t g) const {
    return {group_begin_[g], group_begin_[g + 1]};
  }
  // The node at a slot.
  [[nodiscard]] std::size_t node_at_slot(std::size_t slot) const { return node_at_slot_[slot]; }
  // The name of the node at a slot (node_name(node_at_slot(slot)) without
  // the two lookups): decisions list names by slot. The view stays valid as
  // long as the inventory or a holder of name_storage().
  [[nodiscard]] std::string_view slot_name(std::size_t slot) const { return slot_name_[slot]; }
  // The storage of every string the inventory returns, names included: a
  // holder keeps the views of them valid after the inventory is gone.
  [[nodiscard]] std::shared_ptr<const void> name_storage() const { return strings_; }

  // Whether some node carries label `key` (mutation pins only on labels
  // the inventory has).
  [[nodiscard]] bool has_label_key(std::string_view key) const;

  // The nodes whose label `key` equals `value` (nodeSelector), as a new set.
  [[nodiscard]] NodeSet with_label(std::string_view key, std::string_view value) const;

 private:
  friend class InventoryBuilder;

  // Lookups by string_view without building a std::string.
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // Keyed by views of strings_, which outlive the maps.
  template <class V>
  using ViewMap = std::unordered_map<std::string_view, V, StringHash, std::equal_to<>>;

  // The nodes of one label key or value: a sorted index list while that is
  // smaller than a bitset, else a bitset. Labels with a value per node
  // (hostnames, instance ids) then cost memory per node, not per node squared.
  struct Members {
    std::vector<std::uint32_t> sparse;
    NodeSet dense;  // used when `is_dense`
    bool is_dense = false;

    void add_to(NodeSet& set) const;
    // set &= members; `kept` is scratch space.
    void intersect(NodeSet& set, NodeSet& kept) const;
  };
  struct LabelIndex {
    Members has_key;
    ViewMap<Members> by_value;
  };

  // Each writes its set of slots into `out`.
  void match_term(const NodeSelectorTerm& term, NodeSet& out, CandidateScratch& scratch) const;
  void match_requirement(const NodeSelectorRequirement& r, NodeSet& out) const;
  void match_field(const NodeSelectorRequirement& r, NodeSet& out) const;
  [[nodiscard]] const LabelIndex* label_index(std::string_view key) const;
  [[nodiscard]] NodeSet to_nodes(const NodeSet& slots) const;

  // Every distinct string of the nodes (names, label keys and values),
  // once; a deque, so that views of them stay valid, shared, so that they
  // can outlive the inventory (see name_storage()).
  std::shared_ptr<std::deque<std::string>> strings_ = std::make_shared<std::deque<std::string>>();
  // The nodes, by index: name, labels (a range of node_labels_, sorted by
  // key), taints (a range of node_taints_, indexes into taint_kinds_),
  // cordon, extended resources (a range of node_resources_).
  std::vector<std::uint32_t> node_name_;
  std::vector<std::uint32_t> label_begin_;  // n + 1 offsets
  std::vector<std::pair<std::uint32_t, std::uint32_t>> node_labels_;
  std::vector<std::uint32_t> taint_begin_;  // n + 1 offsets
  std::vector<std::uint32_t> node_taints_;
  std::vector<Taint> taint_kinds_;
  std::vector<bool> unschedulable_;
  std::vector<std::uint32_t> resource_begin_;  // n + 1 offsets
  std::vector<std::pair<std::uint32_t, std::int64_t>> node_resources_;

  std::vector<NodeGroup> groups_;
  std::vector<std::uint32_t> group_of_;
  // Slots: the nodes ordered by group, then by position in the file. Every
  // index below holds slots.
  std::vector<std::uint32_t> slot_of_node_;
  std::vector<std::uint32_t> node_at_slot_;
  std::vector<std::string_view> slot_name_;  // of strings_
  std::vector<std::size_t> group_begin_;  // group g: slots [group_begin_[g], group_begin_[g + 1])
  ViewMap<LabelIndex> labels_;
  ViewMap<std::uint32_t> by_name_;  // name -> node
  // Distinct NoSchedule/NoExecute taints (cordon included) and their nodes.
  std::vector<std::pair<Taint, NodeSet>> taints_;
  // Extended resource -> (amount -> nodes with exactly that allocatable amount).
  ViewMap<std::map<std::int64_t, NodeSet>> resources_;
  std::size_t unknown_gpu_nodes_ = 0;
  std::size_t gpu_nodes_ = 0;
};

// Builds an inventory one node at a time, so that a large node list can be
// read and indexed without holding every Node at once (Inventory::build is
// this over a vector). add() copies what it keeps; the node may be reused.
class InventoryBuilder {
 public:
  explicit InventoryBuilder(const CompatDb& db);
  ~InventoryBuilder();
  InventoryBuilder(const InventoryBuilder&) = delete;
  InventoryBuilder& operator=(const InventoryBuilder&) = delete;

  // Adds `node`; false, adding nothing, when a node of that name was added.
  // `facts`, when given, are the node's GPU facts as derive_gpu_facts gives
  // them (a node copied from another inventory keeps its group's facts).
  bool add(const Node& node, const GpuFacts* facts = nullptr);
  [[nodiscard]] std::size_t size() const;
  [[nodiscard]] Inventory finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace cudagate

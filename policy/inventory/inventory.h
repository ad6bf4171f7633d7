#pragma once
// The node inventory: built once from a node list, indexed so that a
// decision never walks every node.
//
// Nodes with equal GPU facts form a group; a decision checks each group once
// and counts the candidate members of each with a bitset intersection.
// Candidate nodes (docs/contract.md §2.4) come from label, field, taint and
// resource indexes combined as bitsets.
//
// An Inventory is immutable after build() and safe to read from many
// threads; the server swaps whole inventories (shared_ptr) to update it,
// and makes the next one with patched(), which shares all it does not
// change with the last (shared_parts.h).
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
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "compat-db/compat_db.h"
#include "policy/inventory/node_set.h"
#include "policy/inventory/shared_parts.h"
#include "policy/objects/node.h"
#include "policy/objects/pod.h"

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

// Extended resources that one container of a pod needs beyond those its
// spec requests: the devices its resource claims allocate (Dynamic Resource
// Allocation). They count as if the container requested them too.
struct AddedRequests {
  std::span<const std::pair<std::string, std::int64_t>> requests;
  std::size_t container = 0;
};

class InventoryBuilder;

// One change of a node, for Inventory::patched(): `node` is its new form
// (added or replacing the node of that name), or nullptr when the node
// named `name` is removed.
struct NodeEdit {
  std::string_view name;
  const Node* node = nullptr;
};

class Inventory {
 public:
  Inventory() = default;
  static Inventory build(const std::vector<Node>& nodes, const CompatDb& db);

  // This inventory with `edits` applied in order (the last edit of a node
  // wins), made in time proportional to the nodes edited, not the fleet:
  // the result shares every part the edits did not touch with this one,
  // which stays as it was and may be read meanwhile from other threads.
  // Only the edited nodes' GPU facts are derived. Queries answer exactly
  // what they answer on Inventory::build of the same nodes, except for the
  // order of node indexes, slots and groups. Edits of one inventory and of
  // those made from it are made by one thread at a time.
  [[nodiscard]] Inventory patched(const std::vector<NodeEdit>& edits, const CompatDb& db) const;

  [[nodiscard]] std::size_t size() const { return nodes_.size(); }
  // Node i as read (a copy: the inventory keeps nodes compactly, each label
  // string once for all nodes). Prefer node_name() and node_label().
  [[nodiscard]] Node node(std::size_t i) const;
  // The same into `out`, reusing its storage (a rebuild copies every node).
  void node_into(std::size_t i, Node& out) const;
  // The index of the node named `name`, or nullopt.
  [[nodiscard]] std::optional<std::size_t> index_of(std::string_view name) const;
  [[nodiscard]] const std::string& node_name(std::size_t i) const { return *nodes_[i]->name; }
  // The value of label `key` of node i; nullptr when it has none. Stays
  // valid as long as the inventory.
  [[nodiscard]] const std::string* node_label(std::size_t i, std::string_view key) const;
  // The groups by index; a group without members (its nodes changed or
  // left after the inventory was built) has no slots and counts for nothing.
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
  // tolerations, and every extended resource the pod requests available,
  // with `added` counted as requests of the container they name. A node
  // pool's node is a candidate when the pool admits the pod (pool_admits(),
  // Karpenter's semantics); never for a pod whose devices come from
  // resource claims, which a node that does not exist yet publishes none of.
  [[nodiscard]] NodeSet candidates(const PodSpec& spec, AddedRequests added = {}) const;

  // The same candidates, for decisions: as a set of slots, the inventory's
  // internal order in which every group's members lie in one range of its
  // own, so that counting the candidates of a group is one range count,
  // whatever the fleet's size. The result lives in `scratch`.
  [[nodiscard]] const NodeSet& candidate_slots(const PodSpec& spec, CandidateScratch& scratch,
                                               AddedRequests added = {}) const;
  // The slots of group g: [begin, end). A range may hold free slots (a
  // patch leaves room for nodes that join the group), which are in no
  // candidate set.
  [[nodiscard]] std::pair<std::size_t, std::size_t> group_slots(std::size_t g) const {
    return {group_slots_[g].begin, group_slots_[g].end};
  }
  // The node at a slot.
  [[nodiscard]] std::size_t node_at_slot(std::size_t slot) const { return node_at_slot_[slot]; }
  // The name of the node at a slot (node_name(node_at_slot(slot)) without
  // the two lookups): decisions list names by slot. The view stays valid as
  // long as the inventory or a holder of name_storage().
  [[nodiscard]] std::string_view slot_name(std::size_t slot) const { return slot_name_[slot]; }
  // The number of slots, free ones included: the universe of candidate_slots().
  [[nodiscard]] std::size_t slot_count() const { return slot_count_; }
  // The storage of every string the inventory returns, names included: a
  // holder keeps the views of them valid after the inventory is gone.
  [[nodiscard]] std::shared_ptr<const void> name_storage() const { return strings_; }

  // Whether node i stands for a node pool's next node (policy/objects/node_pool.h).
  [[nodiscard]] bool is_pool(std::size_t i) const { return nodes_[i]->pool_node != nullptr; }
  // What node i stands for when it is a node pool's node, else nullptr.
  // Valid as long as the inventory.
  [[nodiscard]] const PoolNodeInfo* pool_info(std::size_t i) const {
    return nodes_[i]->pool_node != nullptr ? nodes_[i]->pool_node->pool.get() : nullptr;
  }
  // The number of node pool nodes.
  [[nodiscard]] std::size_t pool_nodes() const { return pool_names_.size(); }

  // Whether some node carries label `key` (mutation pins only on labels
  // the inventory has).
  [[nodiscard]] bool has_label_key(std::string_view key) const;

  // The nodes whose label `key` equals `value` (nodeSelector), as a new set.
  [[nodiscard]] NodeSet with_label(std::string_view key, std::string_view value) const;

 private:
  friend class InventoryBuilder;
  class Editor;

  // Every string the inventory's nodes hold, each kept where it is as long
  // as the pool lives. The build and later patches (one at a time) add to
  // it; readers only follow pointers and views into it, never the deque.
  struct StringPool {
    std::deque<std::string> strings;
    const std::string* add(std::string_view text) { return &strings.emplace_back(text); }
  };

  // What a decision needs of one node. Immutable once made; shared by the
  // inventories that have the node unchanged.
  struct NodeRecord {
    const std::string* name = nullptr;
    // Sorted by key, for node_label()'s binary search; the keys are views
    // of the pool's strings.
    std::vector<std::pair<std::string_view, const std::string*>> labels;
    std::vector<Taint> taints;
    std::vector<std::pair<std::string_view, std::int64_t>> allocatable;
    std::shared_ptr<const std::vector<DeviceKind>> devices;  // null without DRA devices
    bool unschedulable = false;
    // A node pool's node (policy/objects/node_pool.h): the Node as given, which
    // pool_admits() reads; null for a node of the cluster.
    std::shared_ptr<const Node> pool_node;
  };

  // The slots of one label key or value: a sorted slot list while that is
  // smaller than a bitset, else a bitset. Labels with a value per node
  // (hostnames, instance ids) then cost memory per node, not per node
  // squared. A bitset may be shorter than the slots (bits beyond are 0).
  struct Members {
    std::vector<std::uint32_t> sparse;
    NodeSet dense;                      // used when `is_dense`
    const std::string* text = nullptr;  // a value's, in the pool
    std::uint32_t count = 0;
    bool is_dense = false;

    void add_to(NodeSet& set) const;
    // set &= members; `kept` is scratch space.
    void intersect(NodeSet& set, NodeSet& kept) const;
    // For patches: `slots` is the inventory's slot count.
    void insert(std::uint32_t slot, std::size_t slots);
    void erase(std::uint32_t slot, std::size_t slots);
  };
  struct LabelIndex {
    Members has_key;
    SharedMap<Members> by_value;
  };
  // A NoSchedule/NoExecute taint (cordon included) and the slots of its nodes.
  struct TaintIndex {
    Taint taint;
    NodeSet slots;
  };
  // A group's slots: [begin, end), and those of them no member holds.
  struct GroupSlots {
    std::uint32_t begin = 0;
    std::uint32_t end = 0;
    std::vector<std::uint32_t> free;
  };

  // The candidates among the nodes of the cluster, into scratch.result.
  void node_candidate_slots(const PodSpec& spec, CandidateScratch& scratch,
                            AddedRequests added) const;
  // The pod's effective request of each extended resource, into scratch.requests.
  static void effective_requests(const PodSpec& spec, AddedRequests added,
                                 CandidateScratch& scratch);
  // Sets each pool node's slot in scratch.result by whether the pool admits the pod.
  void admit_pools(const PodSpec& spec, CandidateScratch& scratch, AddedRequests added) const;
  // pool_slots_ from pool_names_.
  void locate_pools();

  // Each writes its set of slots into `out`.
  void match_term(const NodeSelectorTerm& term, NodeSet& out, CandidateScratch& scratch) const;
  void match_requirement(const NodeSelectorRequirement& r, NodeSet& out) const;
  void match_field(const NodeSelectorRequirement& r, NodeSet& out) const;
  [[nodiscard]] const LabelIndex* label_index(std::string_view key) const;
  [[nodiscard]] NodeSet to_nodes(const NodeSet& slots) const;
  // The same nodes built anew, without free slots or unused strings.
  [[nodiscard]] Inventory compacted(const CompatDb& db) const;

  // Shared, so that the strings can outlive the inventory (see name_storage()).
  std::shared_ptr<StringPool> strings_ = std::make_shared<StringPool>();
  std::uint64_t generation_ = 0;   // see shared_parts.h
  std::size_t built_strings_ = 0;  // the pool's size when built
  // The nodes, by index.
  SharedArray<std::shared_ptr<const NodeRecord>, 5> nodes_;
  SharedArray<std::uint32_t, 8> group_of_;
  SharedArray<std::uint32_t, 8> slot_of_node_;

  std::vector<NodeGroup> groups_;  // members by node index
  std::vector<GroupSlots> group_slots_;
  // Group by group_key() of its facts; groups without members, for reuse.
  std::unordered_map<std::string, std::uint32_t> group_by_key_;
  // A key equal for equal facts (GpuFacts' operator==), unequal otherwise.
  [[nodiscard]] static std::string group_key(const GpuFacts& facts);
  std::vector<std::uint32_t> free_groups_;

  // Slots: every index below holds slots. A built inventory has the nodes
  // ordered by group, then by position in the list, and no free slots.
  std::size_t slot_count_ = 0;
  Shared<NodeSet> live_;  // the slots that hold a node
  SharedArray<std::uint32_t, 8> node_at_slot_;
  SharedArray<std::string_view, 8> slot_name_;  // into strings_
  // Keyed by views into strings_.
  ViewMap<Shared<LabelIndex>> labels_;
  SharedMap<std::uint32_t> by_name_;  // name -> node
  std::vector<Shared<TaintIndex>> taints_;
  // Extended resource -> (amount -> slots with exactly that allocatable amount).
  ViewMap<Shared<std::map<std::int64_t, NodeSet>>> resources_;
  std::size_t unknown_gpu_nodes_ = 0;
  std::size_t gpu_nodes_ = 0;
  // The node pools' nodes, by name and by slot (a few at most: every
  // decision visits each).
  std::vector<std::string> pool_names_;
  std::vector<std::uint32_t> pool_slots_;
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

#pragma once
// A rollout plan: the same workloads judged against the fleet as it is and
// as it will be after a set of changes (policy/plan/fleet_change.h), with per
// workload what the change does to it, per group of nodes that change
// together what runs there before and after, and, when asked, an order in
// which the groups can move without breaking anything that runs now.
//
// Pure: both fleets are node lists given by the caller; the plan is
// computed with evaluate() on an inventory of each, and changes no cluster.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compat-db/compat_db.h"
#include "policy/config/policy.h"
#include "policy/objects/node.h"
#include "policy/objects/pod.h"
#include "policy/rules/decision.h"
#include "policy/rules/metadata.h"
#include "types/expected.h"

namespace cudagate {

// What the rollout does to one workload. breaks: it can run on some node it
// may land on now and on none after (a fail, no-candidates or unknown
// verdict after); heals: the reverse; narrows: it still runs, on fewer of
// its candidates (pass -> partial); widens: partial -> pass; unchanged:
// the same verdict.
enum class PlanChange : unsigned char { breaks, heals, narrows, widens, unchanged };
[[nodiscard]] std::string_view to_string(PlanChange change);

// One workload's verdict after evaluate(), or why it could not be judged.
struct JudgedWorkload {
  Decision decision;  // resource always set
  std::optional<Error> error;
};

// The outcome of one workload on the nodes of one move: nullopt where none
// of them is a candidate (or, after, where the nodes are gone).
struct PlanCell {
  std::optional<Outcome> before;
  std::optional<Outcome> after;
};

struct PlannedWorkload {
  std::string place;  // where it was read
  JudgedWorkload before;
  JudgedWorkload after;
  PlanChange change = PlanChange::unchanged;
  bool image_changed = false;   // a --set-image change applies to it
  std::vector<PlanCell> cells;  // one per RolloutPlan::moves
};

// Nodes that share their GPU facts before and their GPU facts after: a node
// group as the plan moves it. Unchanged groups are moves too (before ==
// after), so that every GPU node group is shown.
struct NodeMove {
  std::optional<GpuFacts> before;  // nullopt: added nodes
  std::optional<GpuFacts> after;   // nullopt: removed nodes
  std::vector<std::string> nodes;  // in the order of the node lists
  std::vector<std::string> pools;  // those of `nodes` that are node pools' nodes
  std::size_t runs_before = 0;     // workloads compatible on these nodes before
  std::size_t runs_after = 0;      // ... after

  [[nodiscard]] bool changes() const { return before != after; }
};

// What a workload needs before a blocked move can go ahead: the fix of each
// finding on the moved nodes (the arch list or CUDA version to build), or
// why no rebuild helps.
struct Rebuild {
  std::size_t workload = 0;  // index into RolloutPlan::workloads
  std::string container;
  std::optional<Rule> rule;  // none where no rebuild helps
  std::string fix;
};

struct BlockedMove {
  std::size_t move = 0;             // index into RolloutPlan::moves
  std::vector<std::size_t> breaks;  // workloads it would break
  std::vector<Rebuild> rebuilds;
};

// The order: `first` can move one after the other (in that order, each
// with those before it done) without breaking any workload that runs;
// each blocked move would break the workloads named, with the safe moves
// done, until they are rebuilt. Image changes count as made before the
// first move.
struct RolloutOrder {
  std::vector<std::size_t> first;
  std::vector<BlockedMove> blocked;
};

struct RolloutPlan {
  std::vector<PlannedWorkload> workloads;
  std::vector<NodeMove> moves;  // GPU node groups: changing ones first, in node order
  std::optional<RolloutOrder> order;
  [[nodiscard]] std::size_t count(PlanChange change) const;
};

// The inputs of a plan. `before_workloads[i]` and `after_workloads[i]` are
// the same workload without and with the image changes; the registry facts
// (may be null) are per workload, as evaluate() takes them.
struct PlanInputs {
  const std::vector<Node>* before_nodes = nullptr;
  const std::vector<Node>* after_nodes = nullptr;
  const std::vector<Workload>* before_workloads = nullptr;
  const std::vector<Workload>* after_workloads = nullptr;
  std::vector<std::string> places;                    // per workload, may be empty
  std::vector<const RegistryFacts*> before_registry;  // per workload, may be empty
  std::vector<const RegistryFacts*> after_registry;   // per workload, may be empty
  bool order = false;
};

[[nodiscard]] RolloutPlan plan_rollout(const PlanInputs& inputs, const Policy& policy,
                                       const CompatDb& db);

// The change between two judgements of one workload (see PlanChange).
[[nodiscard]] PlanChange change_between(const JudgedWorkload& before, const JudgedWorkload& after);

}  // namespace cudagate

// The rollout plan: two inventories, the same workloads, and the
// difference; the order by trying each move on top of the safe ones.
#include "policy/plan/rollout_plan.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <utility>

#include "policy/inventory/inventory.h"
#include "policy/rules/evaluate.h"

namespace cudagate {
namespace {

struct Judge {
  const Policy& policy;
  const CompatDb& db;
  MetadataMemo memo;
  CandidateScratch scratch;

  std::vector<JudgedWorkload> all(const std::vector<Workload>& workloads,
                                  const std::vector<const RegistryFacts*>& registry,
                                  const Inventory& inventory) {
    std::vector<JudgedWorkload> out;
    out.reserve(workloads.size());
    for (std::size_t i = 0; i < workloads.size(); ++i) {
      const RegistryFacts* facts = i < registry.size() ? registry[i] : nullptr;
      const EvaluationInputs inputs{facts, nullptr, &scratch, &memo};
      auto decision = evaluate(workloads[i], inventory, policy, db, inputs);
      JudgedWorkload j;
      if (decision) {
        j.decision = std::move(decision).value();
      } else {
        j.decision.resource = workloads[i].resource;
        j.error = decision.error();
      }
      out.push_back(std::move(j));
    }
    return out;
  }
};

bool runs(const JudgedWorkload& j) {
  return !j.error && j.decision.verdict != Verdict::skip && j.decision.compatible > 0;
}

// The facts of each node, by name.
std::unordered_map<std::string, GpuFacts> facts_by_name(const Inventory& inventory) {
  std::unordered_map<std::string, GpuFacts> out;
  for (std::size_t i = 0; i < inventory.size(); ++i) {
    out.emplace(inventory.node_name(i), inventory.groups()[inventory.group_of(i)].facts);
  }
  return out;
}

// The outcome of `j` on the nodes `members` (indices of `inventory`) with
// facts `facts`; nullopt where none of them is a candidate.
std::optional<Outcome> outcome_on(const Workload& workload, const JudgedWorkload& j,
                                  const Inventory& inventory,
                                  const std::vector<std::size_t>& members, const GpuFacts& facts) {
  if (j.error || j.decision.verdict == Verdict::skip || members.empty()) return std::nullopt;
  const NodeSet candidates = inventory.candidates(workload.spec);
  const bool any = std::any_of(members.begin(), members.end(),
                               [&](std::size_t i) { return candidates.contains(i); });
  if (!any) return std::nullopt;
  for (const GroupDecision& g : j.decision.groups) {
    if (g.facts == facts) return g.outcome;
  }
  return std::nullopt;
}

// A fleet part-way through the rollout: the moves in `applied` done.
class Stages {
 public:
  Stages(const std::vector<Node>& before, const std::vector<Node>& after,
         const std::unordered_map<std::string, std::size_t>& move_of)
      : before_(before), move_of_(move_of) {
    for (const Node& n : after) after_by_name_.emplace(n.name, &n);
    std::unordered_map<std::string, bool> in_before;
    for (const Node& n : before) in_before.emplace(n.name, true);
    for (const Node& n : after) {
      if (!in_before.contains(n.name)) added_.push_back(&n);
    }
  }

  [[nodiscard]] std::vector<Node> nodes(const std::vector<bool>& applied) const {
    std::vector<Node> out;
    out.reserve(before_.size() + added_.size());
    for (const Node& n : before_) {
      const auto m = move_of_.find(n.name);
      if (m == move_of_.end() || !applied[m->second]) {
        out.push_back(n);
        continue;
      }
      if (const auto a = after_by_name_.find(n.name); a != after_by_name_.end()) {
        out.push_back(*a->second);
      }
    }
    for (const Node* n : added_) {
      const auto m = move_of_.find(n->name);
      if (m != move_of_.end() && applied[m->second]) out.push_back(*n);
    }
    return out;
  }

 private:
  const std::vector<Node>& before_;
  const std::unordered_map<std::string, std::size_t>& move_of_;
  std::unordered_map<std::string, const Node*> after_by_name_;
  std::vector<const Node*> added_;
};

std::vector<Rebuild> rebuilds_for(std::size_t workload, const JudgedWorkload& j,
                                  const NodeMove& move) {
  std::vector<Rebuild> out;
  auto add = [&](Rebuild r) {
    const bool seen = std::any_of(out.begin(), out.end(), [&](const Rebuild& o) {
      return o.container == r.container && o.rule == r.rule && o.fix == r.fix;
    });
    if (!seen) out.push_back(std::move(r));
  };
  if (j.error) {
    add(Rebuild{workload, "", std::nullopt, j.error->str()});
    return out;
  }
  const Decision& d = j.decision;
  if (d.verdict == Verdict::no_candidates) {
    add(Rebuild{workload, "", std::nullopt,
                "no node it may run on remains (" +
                    (d.reason.empty() ? std::string("no candidate nodes") : d.reason) +
                    "): change its node selector, affinity or tolerations, or keep nodes it "
                    "can use"});
    return out;
  }
  for (const bool moved_only : {true, false}) {
    for (const GroupDecision& g : d.groups) {
      if (g.outcome == Outcome::compatible) continue;
      if (moved_only && (!move.after || !(g.facts == *move.after))) continue;
      for (const Finding& f : g.findings) add(Rebuild{workload, f.container, f.rule, f.fix});
    }
    if (!out.empty()) break;
  }
  return out;
}

// Additions first (they take nothing away), then driver changes, then
// removals; in node order within each.
int move_rank(const NodeMove& m) {
  if (!m.before) return 0;
  if (!m.after) return 2;
  return 1;
}

}  // namespace

std::string_view to_string(PlanChange change) {
  switch (change) {
    case PlanChange::breaks:
      return "breaks";
    case PlanChange::heals:
      return "heals";
    case PlanChange::narrows:
      return "narrows";
    case PlanChange::widens:
      return "widens";
    case PlanChange::unchanged:
      return "unchanged";
  }
  return "unchanged";
}

PlanChange change_between(const JudgedWorkload& before, const JudgedWorkload& after) {
  const bool was = runs(before);
  const bool is = runs(after);
  if (was && !is) return PlanChange::breaks;
  if (!was && is) return PlanChange::heals;
  if (was && is && !before.error && !after.error) {
    const Verdict b = before.decision.verdict;
    const Verdict a = after.decision.verdict;
    if (b == Verdict::pass && a != Verdict::pass) return PlanChange::narrows;
    if (b != Verdict::pass && a == Verdict::pass) return PlanChange::widens;
  }
  return PlanChange::unchanged;
}

std::size_t RolloutPlan::count(PlanChange change) const {
  return static_cast<std::size_t>(
      std::count_if(workloads.begin(), workloads.end(),
                    [&](const PlannedWorkload& w) { return w.change == change; }));
}

namespace {

// The moves: the GPU nodes of either side grouped by their facts before and
// after (a node only before is removed, only after added), those that
// change first.
std::vector<NodeMove> node_moves(const std::vector<Node>& before_nodes,
                                 const std::vector<Node>& after_nodes, const Inventory& before_inv,
                                 const Inventory& after_inv) {
  std::vector<NodeMove> moves;
  const auto before_facts = facts_by_name(before_inv);
  const auto after_facts = facts_by_name(after_inv);
  std::map<std::pair<std::optional<std::size_t>, std::optional<std::size_t>>, std::size_t> keyed;
  std::vector<GpuFacts> distinct;  // facts, numbered for the key
  auto number = [&](const GpuFacts& f) {
    const auto it = std::find(distinct.begin(), distinct.end(), f);
    if (it != distinct.end()) return static_cast<std::size_t>(it - distinct.begin());
    distinct.push_back(f);
    return distinct.size() - 1;
  };
  auto place_node = [&](const std::string& name, const GpuFacts* b, const GpuFacts* a) {
    if ((b == nullptr || !b->has_gpu) && (a == nullptr || !a->has_gpu)) return;
    std::optional<std::size_t> kb, ka;
    if (b != nullptr) kb = number(*b);
    if (a != nullptr) ka = number(*a);
    auto [it, inserted] = keyed.emplace(std::pair{kb, ka}, moves.size());
    if (inserted) {
      NodeMove m;
      if (b != nullptr) m.before = *b;
      if (a != nullptr) m.after = *a;
      moves.push_back(std::move(m));
    }
    NodeMove& move = moves[it->second];
    move.nodes.push_back(name);
    const auto before_i = before_inv.index_of(name);
    const auto after_i = after_inv.index_of(name);
    if ((before_i && before_inv.is_pool(*before_i)) || (after_i && after_inv.is_pool(*after_i))) {
      move.pools.push_back(name);
    }
  };
  for (const Node& n : before_nodes) {
    const auto a = after_facts.find(n.name);
    place_node(n.name, &before_facts.at(n.name), a == after_facts.end() ? nullptr : &a->second);
  }
  for (const Node& n : after_nodes) {
    if (!before_facts.contains(n.name)) place_node(n.name, nullptr, &after_facts.at(n.name));
  }
  std::stable_sort(moves.begin(), moves.end(), [](const NodeMove& a, const NodeMove& b) {
    return a.changes() && !b.changes();
  });
  return moves;
}

// The move of each node the moves name.
std::unordered_map<std::string, std::size_t> move_of_node(const std::vector<NodeMove>& moves) {
  std::unordered_map<std::string, std::size_t> out;
  for (std::size_t m = 0; m < moves.size(); ++m) {
    for (const std::string& name : moves[m].nodes) out.emplace(name, m);
  }
  return out;
}

// Each workload judged before and after, with its cell of the before/after
// matrix in every move; the moves count the workloads that run on them.
void plan_workloads(RolloutPlan& plan, const PlanInputs& in, std::vector<JudgedWorkload> before,
                    std::vector<JudgedWorkload> after, const Inventory& before_inv,
                    const Inventory& after_inv) {
  const std::vector<Workload>& before_w = *in.before_workloads;
  const std::vector<Workload>& after_w = *in.after_workloads;
  std::vector<std::vector<std::size_t>> before_members(plan.moves.size());
  std::vector<std::vector<std::size_t>> after_members(plan.moves.size());
  for (std::size_t m = 0; m < plan.moves.size(); ++m) {
    for (const std::string& name : plan.moves[m].nodes) {
      if (auto i = before_inv.index_of(name); i && plan.moves[m].before) {
        before_members[m].push_back(*i);
      }
      if (auto i = after_inv.index_of(name); i && plan.moves[m].after) {
        after_members[m].push_back(*i);
      }
    }
  }
  plan.workloads.reserve(before_w.size());
  for (std::size_t i = 0; i < before_w.size(); ++i) {
    PlannedWorkload w;
    if (i < in.places.size()) w.place = in.places[i];
    w.change = change_between(before[i], after[i]);
    w.image_changed = false;
    for (std::size_t c = 0; c < before_w[i].spec.containers.size(); ++c) {
      if (before_w[i].spec.containers[c].image != after_w[i].spec.containers[c].image) {
        w.image_changed = true;
      }
    }
    for (std::size_t m = 0; m < plan.moves.size(); ++m) {
      const NodeMove& move = plan.moves[m];
      PlanCell cell;
      if (move.before) {
        cell.before =
            outcome_on(before_w[i], before[i], before_inv, before_members[m], *move.before);
      }
      if (move.after) {
        cell.after = outcome_on(after_w[i], after[i], after_inv, after_members[m], *move.after);
      }
      if (cell.before == Outcome::compatible) ++plan.moves[m].runs_before;
      if (cell.after == Outcome::compatible) ++plan.moves[m].runs_after;
      w.cells.push_back(cell);
    }
    w.before = std::move(before[i]);
    w.after = std::move(after[i]);
    plan.workloads.push_back(std::move(w));
  }
}

// The order: each changing move tried on top of the safe ones, until no
// more becomes safe; the rest are blocked, with what they would break.
RolloutOrder rollout_order(const RolloutPlan& plan, const PlanInputs& in, Judge& judge,
                           const CompatDb& db) {
  const std::vector<Workload>& after_w = *in.after_workloads;
  const auto move_of = move_of_node(plan.moves);
  const Stages stages(*in.before_nodes, *in.after_nodes, move_of);
  auto judge_stage = [&](const std::vector<bool>& applied) {
    const Inventory inv = Inventory::build(stages.nodes(applied), db);
    return judge.all(after_w, in.after_registry, inv);
  };
  std::vector<std::size_t> pending;
  for (std::size_t m = 0; m < plan.moves.size(); ++m) {
    if (plan.moves[m].changes()) pending.push_back(m);
  }
  std::stable_sort(pending.begin(), pending.end(), [&](std::size_t a, std::size_t b) {
    return move_rank(plan.moves[a]) < move_rank(plan.moves[b]);
  });
  RolloutOrder order;
  std::vector<bool> applied(plan.moves.size(), false);
  std::vector<JudgedWorkload> baseline = judge_stage(applied);
  auto breaks_of = [&](const std::vector<JudgedWorkload>& trial) {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < trial.size(); ++i) {
      if (runs(baseline[i]) && !runs(trial[i])) out.push_back(i);
    }
    return out;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (auto it = pending.begin(); it != pending.end();) {
      std::vector<bool> trial_applied = applied;
      trial_applied[*it] = true;
      std::vector<JudgedWorkload> trial = judge_stage(trial_applied);
      if (!breaks_of(trial).empty()) {
        ++it;
        continue;
      }
      applied = std::move(trial_applied);
      baseline = std::move(trial);
      order.first.push_back(*it);
      it = pending.erase(it);
      progress = true;
    }
  }
  for (const std::size_t m : pending) {
    std::vector<bool> trial_applied = applied;
    trial_applied[m] = true;
    const std::vector<JudgedWorkload> trial = judge_stage(trial_applied);
    BlockedMove blocked;
    blocked.move = m;
    blocked.breaks = breaks_of(trial);
    for (const std::size_t i : blocked.breaks) {
      for (Rebuild& r : rebuilds_for(i, trial[i], plan.moves[m])) {
        blocked.rebuilds.push_back(std::move(r));
      }
    }
    order.blocked.push_back(std::move(blocked));
  }
  return order;
}

}  // namespace

RolloutPlan plan_rollout(const PlanInputs& in, const Policy& policy, const CompatDb& db) {
  const Inventory before_inv = Inventory::build(*in.before_nodes, db);
  const Inventory after_inv = Inventory::build(*in.after_nodes, db);
  Judge judge{policy, db, {}, {}};
  std::vector<JudgedWorkload> before =
      judge.all(*in.before_workloads, in.before_registry, before_inv);
  std::vector<JudgedWorkload> after = judge.all(*in.after_workloads, in.after_registry, after_inv);

  RolloutPlan plan;
  plan.moves = node_moves(*in.before_nodes, *in.after_nodes, before_inv, after_inv);
  plan_workloads(plan, in, std::move(before), std::move(after), before_inv, after_inv);
  if (in.order) plan.order = rollout_order(plan, in, judge, db);
  return plan;
}

}  // namespace cudagate

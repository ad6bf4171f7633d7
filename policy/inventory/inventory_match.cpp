// A pod's candidate nodes, with the scheduler's matching rules: nodeName,
// nodeSelector, required node affinity, taints against tolerations,
// extended resources; and node pools that would launch a node for it.
#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "policy/inventory/inventory.h"
#include "policy/objects/k8s_names.h"
#include "policy/objects/node_pool.h"
#include "types/go_int.h"
#include "types/saturating.h"

namespace cudagate {

void Inventory::Members::add_to(NodeSet& set) const {
  if (is_dense) {
    set |= dense;
  } else {
    for (const std::uint32_t i : sparse) set.insert(i);
  }
}

void Inventory::Members::intersect(NodeSet& set, NodeSet& kept) const {
  if (is_dense) {
    set &= dense;
    return;
  }
  kept.assign(set.universe());
  for (const std::uint32_t i : sparse) {
    if (set.contains(i)) kept.insert(i);
  }
  std::swap(set, kept);
}

NodeSet Inventory::to_nodes(const NodeSet& slots) const {
  NodeSet out(size());
  slots.for_each([&](std::size_t slot) {
    out.insert(node_at_slot_[slot]);
    return true;
  });
  return out;
}

bool Inventory::has_label_key(std::string_view key) const {
  return labels_.find(key) != labels_.end();
}

const Inventory::LabelIndex* Inventory::label_index(std::string_view key) const {
  const auto it = labels_.find(key);
  return it == labels_.end() ? nullptr : &*it->second;
}

NodeSet Inventory::with_label(std::string_view key, std::string_view value) const {
  NodeSet out(slot_count_);
  if (const LabelIndex* index = label_index(key)) {
    if (const auto* found = index->by_value.find(value)) found->second.add_to(out);
  }
  return to_nodes(out);
}

// labels.NewRequirement and Requirement.Matches. A requirement the
// scheduler cannot parse makes its term match no node, so it yields the
// empty set here.
void Inventory::match_requirement(const NodeSelectorRequirement& r, NodeSet& out) const {
  out.assign(slot_count_);
  if (!is_label_key(r.key)) return;
  if (!std::all_of(r.values.begin(), r.values.end(), is_label_value)) return;
  const LabelIndex* index = label_index(r.key);

  if (r.op == "In" || r.op == "NotIn") {
    if (r.values.empty()) return;
    if (index != nullptr) {
      for (const std::string& v : r.values) {
        if (const auto* found = index->by_value.find(v)) found->second.add_to(out);
      }
    }
    // NotIn also matches nodes without the label.
    if (r.op == "NotIn") out.complement();
    return;
  }
  if (r.op == "Exists" || r.op == "DoesNotExist") {
    if (!r.values.empty()) return;
    if (index != nullptr) index->has_key.add_to(out);
    if (r.op == "DoesNotExist") out.complement();
    return;
  }
  if (r.op == "Gt" || r.op == "Lt") {
    if (r.values.size() != 1) return;
    const std::optional<std::int64_t> bound = parse_go_int64(r.values[0]);
    if (!bound || index == nullptr) return;
    // The distinct values of one key, not the nodes: few for numeric labels.
    index->by_value.for_each([&](std::string_view value, const Members& members) {
      const std::optional<std::int64_t> v = parse_go_int64(value);
      if (v && (r.op == "Gt" ? *v > *bound : *v < *bound)) members.add_to(out);
    });
  }
}

// nodeSelectorRequirementsAsFieldSelector: metadata.name, In or NotIn, one value.
void Inventory::match_field(const NodeSelectorRequirement& r, NodeSet& out) const {
  out.assign(slot_count_);
  if (r.key != "metadata.name" || r.values.size() != 1) return;
  if (r.op != "In" && r.op != "NotIn") return;
  if (const auto* found = by_name_.find(r.values[0])) out.insert(slot_of_node_[found->second]);
  if (r.op == "NotIn") out.complement();
}

void Inventory::match_term(const NodeSelectorTerm& term, NodeSet& out,
                           CandidateScratch& scratch) const {
  const std::size_t n = slot_count_;
  // An empty term selects nothing.
  if (term.match_expressions.empty() && term.match_fields.empty()) {
    out.assign(n);
    return;
  }
  out.assign(n, true);
  for (const auto& r : term.match_expressions) {
    match_requirement(r, scratch.part);
    out &= scratch.part;
    if (out.empty()) return;
  }
  for (const auto& r : term.match_fields) {
    match_field(r, scratch.part);
    out &= scratch.part;
    if (out.empty()) return;
  }
}

NodeSet Inventory::candidates(const PodSpec& spec, AddedRequests added) const {
  CandidateScratch scratch;
  return to_nodes(candidate_slots(spec, scratch, added));
}

const NodeSet& Inventory::candidate_slots(const PodSpec& spec, CandidateScratch& scratch,
                                          AddedRequests added) const {
  node_candidate_slots(spec, scratch, added);
  if (!pool_slots_.empty()) admit_pools(spec, scratch, added);
  return scratch.result;
}

void Inventory::admit_pools(const PodSpec& spec, CandidateScratch& scratch,
                            AddedRequests added) const {
  NodeSet& result = scratch.result;
  const bool claims = !added.requests.empty();
  if (!claims) effective_requests(spec, added, scratch);
  std::vector<std::pair<std::string_view, std::int64_t>> requests;
  requests.reserve(scratch.requests.size());
  for (const auto& r : scratch.requests) requests.emplace_back(r.resource, std::max(r.app, r.init));
  for (const std::uint32_t slot : pool_slots_) {
    const NodeRecord& record = *nodes_[node_at_slot_[slot]];
    if (!claims && pool_admits(*record.pool_node, requests, spec)) {
      result.insert(slot);
    } else {
      result.erase(slot);
    }
  }
}

void Inventory::node_candidate_slots(const PodSpec& spec, CandidateScratch& scratch,
                                     AddedRequests added) const {
  const std::size_t n = slot_count_;
  NodeSet& result = scratch.result;
  // A pod with nodeName skips the scheduler: the kubelet admits it after
  // checking selector, affinity and resources, and of the taints only
  // NoExecute ones.
  const bool bound = !spec.node_name.empty();
  if (bound) {
    result.assign(n);
    const auto* found = by_name_.find(spec.node_name);
    if (found == nullptr) return;
    result.insert(slot_of_node_[found->second]);
  } else if (n == size()) {
    result.assign(n, true);  // no free slots
  } else {
    result = *live_;
  }

  for (const auto& [key, value] : spec.node_selector) {
    const LabelIndex* index = label_index(key);
    if (index == nullptr) {
      result.clear();
      return;
    }
    const auto* found = index->by_value.find(value);
    if (found == nullptr) {
      result.clear();
      return;
    }
    found->second.intersect(result, scratch.kept);
    if (result.empty()) return;
  }

  if (spec.required_terms) {
    scratch.any.assign(n);
    for (const auto& term : *spec.required_terms) {
      match_term(term, scratch.term, scratch);
      scratch.any |= scratch.term;
    }
    result &= scratch.any;
    if (result.empty()) return;
  }

  for (const auto& entry : taints_) {
    const Taint& taint = entry->taint;
    if (bound && taint.effect != "NoExecute") continue;
    const bool tolerated = std::any_of(spec.tolerations.begin(), spec.tolerations.end(),
                                       [&](const Toleration& t) { return tolerates(t, taint); });
    if (!tolerated) result.subtract(entry->slots);
  }

  effective_requests(spec, added, scratch);
  for (const auto& request : scratch.requests) {
    const std::int64_t needed = std::max(request.app, request.init);
    if (needed <= 0) continue;
    NodeSet& fit = scratch.part;
    fit.assign(n);
    if (const auto it = resources_.find(request.resource); it != resources_.end()) {
      for (auto a = it->second->lower_bound(needed); a != it->second->end(); ++a) fit |= a->second;
    }
    result &= fit;
  }
}

// The larger of the app containers' sum and the largest init container's.
void Inventory::effective_requests(const PodSpec& spec, AddedRequests added,
                                   CandidateScratch& scratch) {
  auto& requests = scratch.requests;
  requests.clear();
  const auto count = [&requests](std::string_view resource, std::int64_t amount, bool init) {
    auto it =
        std::find_if(requests.begin(), requests.end(),
                     [&](const CandidateScratch::Request& r) { return r.resource == resource; });
    if (it == requests.end()) it = requests.insert(requests.end(), {resource, 0, 0});
    if (init) {
      it->init = std::max(it->init, amount);
    } else {
      it->app = saturating_add(it->app, amount);
    }
  };
  for (std::size_t i = 0; i < spec.containers.size(); ++i) {
    const ContainerSpec& c = spec.containers[i];
    if (i != added.container || added.requests.empty()) {
      for (const auto& [resource, amount] : c.resources) count(resource, amount, c.init);
      continue;
    }
    // The container's own request of a resource and the added ones are one
    // request of their sum.
    const auto added_of = [&added](std::string_view resource) {
      std::int64_t sum = 0;
      for (const auto& [name, more] : added.requests) {
        if (name == resource) sum = saturating_add(sum, more);
      }
      return sum;
    };
    for (const auto& [resource, amount] : c.resources) {
      count(resource, saturating_add(amount, added_of(resource)), c.init);
    }
    for (auto a = added.requests.begin(); a != added.requests.end(); ++a) {
      const std::string& name = a->first;
      const auto same = [&name](const auto& entry) { return entry.first == name; };
      if (std::any_of(c.resources.begin(), c.resources.end(), same) ||
          std::any_of(added.requests.begin(), a, same)) {
        continue;  // counted above, or with the first entry of its name
      }
      count(name, added_of(name), c.init);
    }
  }
}

}  // namespace cudagate

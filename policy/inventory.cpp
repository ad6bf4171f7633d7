#include "policy/inventory.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <utility>

namespace cudagate {
namespace {

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], at most 63 characters.
bool is_qualified_name_part(std::string_view s) {
  if (s.empty() || s.size() > 63 || !is_alnum(s.front()) || !is_alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return is_alnum(c) || c == '-' || c == '_' || c == '.'; });
}

// A lower-case RFC 1123 subdomain: dot-separated labels of [a-z0-9-] that
// start and end alphanumeric, at most 253 characters.
bool is_dns_subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = s.find('.', start);
    const std::string_view label =
        s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    auto lower_alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
    if (label.empty() || !lower_alnum(label.front()) || !lower_alnum(label.back())) return false;
    if (!std::all_of(label.begin(), label.end(),
                     [&](char c) { return lower_alnum(c) || c == '-'; })) {
      return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// validateLabelKey: an optional DNS subdomain prefix and '/', then a name.
bool is_label_key(std::string_view key) {
  const std::size_t slash = key.find('/');
  if (slash == std::string_view::npos) return is_qualified_name_part(key);
  if (key.find('/', slash + 1) != std::string_view::npos) return false;
  return is_dns_subdomain(key.substr(0, slash)) && is_qualified_name_part(key.substr(slash + 1));
}

// validateLabelValue: empty, or a qualified name part.
bool is_label_value(std::string_view value) {
  return value.empty() || is_qualified_name_part(value);
}

// Go's strconv.ParseInt(s, 10, 64): ^[+-]?[0-9]+$ within int64.
std::optional<std::int64_t> parse_int64(std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  std::uint64_t magnitude = 0;
  constexpr std::uint64_t kLimit = std::uint64_t{1} << 63;  // |INT64_MIN|
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (magnitude > (kLimit - digit) / 10) return std::nullopt;
    magnitude = magnitude * 10 + digit;
  }
  if (negative) {
    if (magnitude == kLimit) return std::numeric_limits<std::int64_t>::min();
    return -static_cast<std::int64_t>(magnitude);
  }
  if (magnitude == kLimit) return std::nullopt;
  return static_cast<std::int64_t>(magnitude);
}

// Toleration.ToleratesTaint.
bool tolerates(const Toleration& t, const Taint& taint) {
  if (!t.effect.empty() && t.effect != taint.effect) return false;
  if (!t.key.empty() && t.key != taint.key) return false;
  if (t.op.empty() || t.op == "Equal") return t.value == taint.value;
  return t.op == "Exists";
}

std::string facts_key(const GpuFacts& f) {
  // Consistent with GpuFacts' operator==: versions by their numbers.
  constexpr char kSep = '\x1f';
  std::string key = f.has_gpu ? "1" : "0";
  key += kSep;
  if (f.driver) {
    key += std::to_string(f.driver->part(0)) + "." + std::to_string(f.driver->part(1)) + "." +
           std::to_string(f.driver->part(2));
  }
  key += kSep;
  if (f.max_cuda) key += f.max_cuda->str();
  key += kSep;
  if (f.cc) key += f.cc->str();
  key += kSep;
  key += f.product;
  key += kSep;
  key += f.family;
  key += kSep;
  if (f.brand) key += "=" + *f.brand;
  key += kSep;
  key += std::to_string(static_cast<int>(f.driver_source)) + "," +
         std::to_string(static_cast<int>(f.cc_source));
  return key;
}

std::string taint_key(const Taint& t) {
  return t.key + '\0' + t.value + '\0' + t.effect;
}

}  // namespace

void Inventory::Members::add_to(NodeSet& set) const {
  if (is_dense) {
    set |= dense;
  } else {
    for (const std::uint32_t i : sparse) set.insert(i);
  }
}

void Inventory::Members::intersect(NodeSet& set) const {
  if (is_dense) {
    set &= dense;
    return;
  }
  NodeSet kept(set.universe());
  for (const std::uint32_t i : sparse) {
    if (set.contains(i)) kept.insert(i);
  }
  set = std::move(kept);
}

Inventory Inventory::build(std::vector<Node> nodes, const CompatDb& db) {
  Inventory inv;
  inv.nodes_ = std::move(nodes);
  const std::size_t n = inv.nodes_.size();
  inv.group_of_.reserve(n);

  std::unordered_map<std::string, std::size_t> group_by_key;
  std::unordered_map<std::string, std::size_t> taint_index;
  for (std::size_t i = 0; i < n; ++i) {
    const Node& node = inv.nodes_[i];
    GpuFacts facts = derive_gpu_facts(node, db);
    if (facts.has_gpu) {
      ++inv.gpu_nodes_;
      if (!facts.driver) ++inv.unknown_gpu_nodes_;
    }
    const auto [it, added] = group_by_key.try_emplace(facts_key(facts), inv.groups_.size());
    if (added) inv.groups_.push_back(NodeGroup{std::move(facts), NodeSet(n)});
    inv.groups_[it->second].members.insert(i);
    inv.group_of_.push_back(it->second);

    inv.by_name_.try_emplace(node.name, i);

    const auto index = static_cast<std::uint32_t>(i);
    for (const auto& [key, value] : node.labels) {
      LabelIndex& label = inv.labels_[key];
      label.has_key.sparse.push_back(index);
      label.by_value[value].sparse.push_back(index);
    }

    auto add_taint = [&](const Taint& taint) {
      if (taint.effect != "NoSchedule" && taint.effect != "NoExecute") return;
      const auto [t, fresh] = taint_index.try_emplace(taint_key(taint), inv.taints_.size());
      if (fresh) inv.taints_.emplace_back(taint, NodeSet(n));
      inv.taints_[t->second].second.insert(i);
    };
    for (const Taint& taint : node.taints) add_taint(taint);
    if (node.unschedulable) add_taint(Taint{"node.kubernetes.io/unschedulable", "", "NoSchedule"});

    for (const auto& [resource, amount] : node.allocatable) {
      auto& by_amount = inv.resources_[resource];
      auto [a, fresh] = by_amount.try_emplace(amount, NodeSet(n));
      a->second.insert(i);
    }
  }

  // A bitset costs n/8 bytes, an index list 4 bytes a member.
  auto settle = [n](Members& m) {
    if (m.sparse.size() * 32 > n) {
      m.dense = NodeSet(n);
      for (const std::uint32_t i : m.sparse) m.dense.insert(i);
      m.is_dense = true;
      m.sparse = {};
    } else {
      m.sparse.shrink_to_fit();
    }
  };
  for (auto& [key, label] : inv.labels_) {
    settle(label.has_key);
    for (auto& [value, members] : label.by_value) settle(members);
  }
  return inv;
}

bool Inventory::has_label_key(std::string_view key) const {
  return labels_.find(key) != labels_.end();
}

const Inventory::LabelIndex* Inventory::label_index(std::string_view key) const {
  const auto it = labels_.find(key);
  return it == labels_.end() ? nullptr : &it->second;
}

NodeSet Inventory::with_label(std::string_view key, std::string_view value) const {
  NodeSet out(nodes_.size());
  if (const LabelIndex* index = label_index(key)) {
    if (const auto it = index->by_value.find(value); it != index->by_value.end())
      it->second.add_to(out);
  }
  return out;
}

// labels.NewRequirement and Requirement.Matches. A requirement the
// scheduler cannot parse makes its term match no node, so it yields the
// empty set here.
NodeSet Inventory::match_requirement(const NodeSelectorRequirement& r) const {
  const std::size_t n = nodes_.size();
  NodeSet out(n);
  if (!is_label_key(r.key)) return out;
  if (!std::all_of(r.values.begin(), r.values.end(), is_label_value)) return out;
  const LabelIndex* index = label_index(r.key);

  if (r.op == "In" || r.op == "NotIn") {
    if (r.values.empty()) return out;
    if (index != nullptr) {
      for (const std::string& v : r.values) {
        if (const auto it = index->by_value.find(v); it != index->by_value.end()) {
          it->second.add_to(out);
        }
      }
    }
    // NotIn also matches nodes without the label.
    if (r.op == "NotIn") out.complement();
    return out;
  }
  if (r.op == "Exists" || r.op == "DoesNotExist") {
    if (!r.values.empty()) return out;
    if (index != nullptr) index->has_key.add_to(out);
    if (r.op == "DoesNotExist") out.complement();
    return out;
  }
  if (r.op == "Gt" || r.op == "Lt") {
    if (r.values.size() != 1) return out;
    const std::optional<std::int64_t> bound = parse_int64(r.values[0]);
    if (!bound || index == nullptr) return out;
    // The distinct values of one key, not the nodes: few for numeric labels.
    for (const auto& [value, members] : index->by_value) {
      const std::optional<std::int64_t> v = parse_int64(value);
      if (v && (r.op == "Gt" ? *v > *bound : *v < *bound)) members.add_to(out);
    }
    return out;
  }
  return out;
}

// nodeSelectorRequirementsAsFieldSelector: metadata.name, In or NotIn, one value.
NodeSet Inventory::match_field(const NodeSelectorRequirement& r) const {
  const std::size_t n = nodes_.size();
  NodeSet out(n);
  if (r.key != "metadata.name" || r.values.size() != 1) return out;
  if (r.op != "In" && r.op != "NotIn") return out;
  if (const auto it = by_name_.find(r.values[0]); it != by_name_.end()) out.insert(it->second);
  if (r.op == "NotIn") out.complement();
  return out;
}

NodeSet Inventory::match_term(const NodeSelectorTerm& term) const {
  const std::size_t n = nodes_.size();
  // An empty term selects nothing.
  if (term.match_expressions.empty() && term.match_fields.empty()) return NodeSet(n);
  NodeSet out(n, true);
  for (const auto& r : term.match_expressions) {
    out &= match_requirement(r);
    if (out.empty()) return out;
  }
  for (const auto& r : term.match_fields) {
    out &= match_field(r);
    if (out.empty()) return out;
  }
  return out;
}

NodeSet Inventory::candidates(const PodSpec& spec) const {
  const std::size_t n = nodes_.size();
  // A pod with nodeName skips the scheduler: the kubelet admits it after
  // checking selector, affinity and resources, and of the taints only
  // NoExecute ones.
  const bool bound = !spec.node_name.empty();
  NodeSet result(n, !bound);
  if (bound) {
    const auto it = by_name_.find(spec.node_name);
    if (it == by_name_.end()) return result;
    result.insert(it->second);
  }

  for (const auto& [key, value] : spec.node_selector) {
    const LabelIndex* index = label_index(key);
    if (index == nullptr) return NodeSet(n);
    const auto it = index->by_value.find(value);
    if (it == index->by_value.end()) return NodeSet(n);
    it->second.intersect(result);
    if (result.empty()) return result;
  }

  if (spec.required_terms) {
    NodeSet any(n);
    for (const auto& term : *spec.required_terms) any |= match_term(term);
    result &= any;
    if (result.empty()) return result;
  }

  for (const auto& entry : taints_) {
    const Taint& taint = entry.first;
    if (bound && taint.effect != "NoExecute") continue;
    const bool tolerated = std::any_of(spec.tolerations.begin(), spec.tolerations.end(),
                                       [&](const Toleration& t) { return tolerates(t, taint); });
    if (!tolerated) result.subtract(entry.second);
  }

  // The pod's effective request of each extended resource: the larger of
  // the app containers' sum and the largest init container's.
  std::map<std::string, std::int64_t> app_sum;
  std::map<std::string, std::int64_t> init_max;
  for (const ContainerSpec& c : spec.containers) {
    for (const auto& [resource, amount] : c.resources) {
      if (c.init) {
        auto& m = init_max[resource];
        m = std::max(m, amount);
      } else {
        auto& s = app_sum[resource];
        s = amount > std::numeric_limits<std::int64_t>::max() - s
                ? std::numeric_limits<std::int64_t>::max()
                : s + amount;
      }
    }
  }
  for (const auto& [resource, amount] : init_max) {
    auto& s = app_sum[resource];
    s = std::max(s, amount);
  }
  for (const auto& [resource, needed] : app_sum) {
    if (needed <= 0) continue;
    NodeSet fit(n);
    if (const auto it = resources_.find(resource); it != resources_.end()) {
      for (auto a = it->second.lower_bound(needed); a != it->second.end(); ++a) fit |= a->second;
    }
    result &= fit;
  }
  return result;
}

}  // namespace cudagate

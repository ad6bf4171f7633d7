// Building the indexed node inventory (groups by GPU facts; label, taint and resource indexes)
// and computing a pod's candidate nodes with the scheduler's matching rules.
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

struct InventoryBuilder::State {
  explicit State(const CompatDb& compat) : db(compat) {}

  // The id of `text` in inv.strings_, added when new.
  std::uint32_t intern(std::string_view text) {
    if (2 * (views.size() + 1) > ids.size()) grow_ids();
    const std::size_t hash = std::hash<std::string_view>{}(text);
    const std::size_t mask = ids.size() - 1;
    for (std::size_t at = hash & mask;; at = (at + 1) & mask) {
      IdSlot& slot = ids[at];
      if (slot.id == kNoId) {
        const auto id = static_cast<std::uint32_t>(inv.strings_->size());
        inv.strings_->emplace_back(text);
        views.emplace_back(inv.strings_->back());
        slot = {hash, id};
        return id;
      }
      if (slot.hash == hash && views[slot.id] == text) return slot.id;
    }
  }
  std::string_view view(std::uint32_t id) const { return views[id]; }
  std::vector<std::string_view> views;  // of inv.strings_, by id

  // The ids by content: an open-addressing table (linear probing, at most
  // half full) of the strings' hashes and ids. Nothing is removed from it.
  static constexpr std::uint32_t kNoId = static_cast<std::uint32_t>(-1);
  struct IdSlot {
    std::size_t hash = 0;
    std::uint32_t id = kNoId;
  };
  std::vector<IdSlot> ids;
  void grow_ids() {
    std::vector<IdSlot> old(std::max<std::size_t>(1024, 2 * ids.size()));
    std::swap(ids, old);
    const std::size_t mask = ids.size() - 1;
    for (const IdSlot& slot : old) {
      if (slot.id == kNoId) continue;
      std::size_t at = slot.hash & mask;
      while (ids[at].id != kNoId) at = (at + 1) & mask;
      ids[at] = slot;
    }
  }

  // The nodes of a fleet carry mostly the same label keys, and each key a
  // few values: a key is first looked for among the previous node's keys
  // (both lists sorted, so one forward walk), a value among the values its
  // key had on earlier nodes, before the strings are hashed.
  std::uint32_t intern_key(std::string_view key) {
    // Most often the same key as the previous node's at this place.
    if (key_cursor < previous_keys.size() && view(previous_keys[key_cursor]) == key) {
      return previous_keys[key_cursor++];
    }
    while (key_cursor < previous_keys.size() && view(previous_keys[key_cursor]) < key) {
      ++key_cursor;
    }
    if (key_cursor < previous_keys.size() && view(previous_keys[key_cursor]) == key) {
      return previous_keys[key_cursor++];
    }
    return intern(key);
  }
  std::vector<std::uint32_t> previous_keys;
  std::vector<std::uint32_t> current_keys;
  std::size_t key_cursor = 0;

  // A value of a label key, with its index entries.
  struct Value {
    std::uint32_t id;
    Inventory::Members* members;
  };
  // What is known of one label key: its index entry and its values while
  // they are few; those of a key with more (a host name, an instance id)
  // are hashed.
  struct Key {
    Inventory::LabelIndex* index = nullptr;
    std::vector<Value> values;
    bool many = false;
  };
  static constexpr std::size_t kFewValues = 16;
  std::vector<Key> keys;  // by string id

  // The value `value` of key `k`, added to the index when new.
  Value label_value(std::uint32_t k, std::string_view value) {
    if (k >= keys.size()) keys.resize(k + 1);
    Key& key = keys[k];
    if (!key.many) {
      for (const Value& known : key.values) {
        if (view(known.id) == value) return known;
      }
    }
    if (key.index == nullptr) key.index = &inv.labels_[view(k)];
    const std::uint32_t id = intern(value);
    const Value found{id, &key.index->by_value[view(id)]};
    if (key.values.size() < kFewValues) {
      key.values.push_back(found);
    } else if (!key.many) {
      key.many = true;
      key.values = {};
    }
    return found;
  }

  const CompatDb& db;
  Inventory inv;
  std::unordered_map<std::string, std::size_t> group_by_key;
  std::unordered_map<std::string, std::uint32_t> taint_kind_by_key;
  // Per indexed (NoSchedule/NoExecute) taint kind: its entry in inv.taints_.
  std::unordered_map<std::uint32_t, std::size_t> indexed_taint;
  std::vector<std::vector<std::uint32_t>> taint_nodes;
  Inventory::ViewMap<std::map<std::int64_t, std::vector<std::uint32_t>>> resource_nodes;
};

InventoryBuilder::InventoryBuilder(const CompatDb& db) : state_(std::make_unique<State>(db)) {
  state_->inv.label_begin_.push_back(0);
  state_->inv.taint_begin_.push_back(0);
  state_->inv.resource_begin_.push_back(0);
}

InventoryBuilder::~InventoryBuilder() = default;

std::size_t InventoryBuilder::size() const {
  return state_->inv.node_name_.size();
}

bool InventoryBuilder::add(const Node& node, const GpuFacts* known) {
  State& st = *state_;
  Inventory& inv = st.inv;
  const auto i = static_cast<std::uint32_t>(inv.node_name_.size());

  const std::uint32_t name = st.intern(node.name);
  if (!inv.by_name_.try_emplace(st.view(name), i).second) return false;
  inv.node_name_.push_back(name);

  GpuFacts facts = known != nullptr ? *known : derive_gpu_facts(node, st.db);
  if (facts.has_gpu) {
    ++inv.gpu_nodes_;
    if (!facts.driver) ++inv.unknown_gpu_nodes_;
  }
  const auto [group, added] = st.group_by_key.try_emplace(facts_key(facts), inv.groups_.size());
  if (added) inv.groups_.push_back(NodeGroup{std::move(facts), NodeSet()});
  inv.group_of_.push_back(static_cast<std::uint32_t>(group->second));

  const std::size_t first_label = inv.node_labels_.size();
  bool sorted = true;
  st.key_cursor = 0;
  st.current_keys.clear();
  for (std::size_t position = 0; position < node.labels.size(); ++position) {
    const auto& [key, value] = node.labels[position];
    if (position > 0 && !(node.labels[position - 1].first < key)) sorted = false;
    const std::uint32_t k = sorted ? st.intern_key(key) : st.intern(key);
    const State::Value v = st.label_value(k, value);
    st.current_keys.push_back(k);
    inv.node_labels_.emplace_back(k, v.id);
    st.keys[k].index->has_key.sparse.push_back(i);
    v.members->sparse.push_back(i);
  }
  if (sorted) {
    std::swap(st.previous_keys, st.current_keys);
  } else {
    // Sorted by key, for node_label()'s binary search, whatever the caller did.
    const auto first = inv.node_labels_.begin() + static_cast<std::ptrdiff_t>(first_label);
    std::sort(first, inv.node_labels_.end(),
              [&st](const auto& a, const auto& b) { return st.view(a.first) < st.view(b.first); });
    st.previous_keys.clear();
  }
  inv.label_begin_.push_back(static_cast<std::uint32_t>(inv.node_labels_.size()));

  auto taint_kind = [&](const Taint& taint) {
    const auto [it, fresh] = st.taint_kind_by_key.try_emplace(
        taint_key(taint), static_cast<std::uint32_t>(inv.taint_kinds_.size()));
    if (fresh) inv.taint_kinds_.push_back(taint);
    return it->second;
  };
  auto index_taint = [&](std::uint32_t kind) {
    const Taint& taint = inv.taint_kinds_[kind];
    if (taint.effect != "NoSchedule" && taint.effect != "NoExecute") return;
    const auto [it, fresh] = st.indexed_taint.try_emplace(kind, inv.taints_.size());
    if (fresh) {
      inv.taints_.emplace_back(taint, NodeSet());
      st.taint_nodes.emplace_back();
    }
    auto& nodes = st.taint_nodes[it->second];
    if (nodes.empty() || nodes.back() != i) nodes.push_back(i);
  };
  for (const Taint& taint : node.taints) {
    const std::uint32_t kind = taint_kind(taint);
    inv.node_taints_.push_back(kind);
    index_taint(kind);
  }
  inv.taint_begin_.push_back(static_cast<std::uint32_t>(inv.node_taints_.size()));
  if (node.unschedulable) {
    index_taint(taint_kind(Taint{"node.kubernetes.io/unschedulable", "", "NoSchedule"}));
  }
  inv.unschedulable_.push_back(node.unschedulable);

  for (const auto& [resource, amount] : node.allocatable) {
    const std::uint32_t r = st.intern(resource);
    inv.node_resources_.emplace_back(r, amount);
    st.resource_nodes[st.view(r)][amount].push_back(i);
  }
  inv.resource_begin_.push_back(static_cast<std::uint32_t>(inv.node_resources_.size()));
  return true;
}

Inventory InventoryBuilder::finish() {
  State& st = *state_;
  Inventory& inv = st.inv;
  const std::size_t n = inv.node_name_.size();

  for (NodeGroup& g : inv.groups_) g.members = NodeSet(n);
  for (std::size_t i = 0; i < n; ++i) inv.groups_[inv.group_of_[i]].members.insert(i);

  // Slots: each group's nodes contiguous, in file order within the group.
  inv.group_begin_.assign(inv.groups_.size() + 1, 0);
  for (const std::uint32_t g : inv.group_of_) ++inv.group_begin_[g + 1];
  for (std::size_t g = 0; g < inv.groups_.size(); ++g) {
    inv.group_begin_[g + 1] += inv.group_begin_[g];
  }
  inv.slot_of_node_.resize(n);
  inv.node_at_slot_.resize(n);
  std::vector<std::size_t> next(inv.group_begin_.begin(), inv.group_begin_.end() - 1);
  for (std::size_t i = 0; i < n; ++i) {
    const auto slot = static_cast<std::uint32_t>(next[inv.group_of_[i]]++);
    inv.slot_of_node_[i] = slot;
    inv.node_at_slot_[slot] = static_cast<std::uint32_t>(i);
  }
  inv.slot_name_.resize(n);
  for (std::size_t slot = 0; slot < n; ++slot) {
    inv.slot_name_[slot] = (*inv.strings_)[inv.node_name_[inv.node_at_slot_[slot]]];
  }
  auto to_slots = [&inv](std::vector<std::uint32_t>& nodes) {
    for (std::uint32_t& i : nodes) i = inv.slot_of_node_[i];
    std::sort(nodes.begin(), nodes.end());
  };
  auto to_set = [&](const std::vector<std::uint32_t>& nodes) {
    NodeSet set(n);
    for (const std::uint32_t i : nodes) set.insert(inv.slot_of_node_[i]);
    return set;
  };

  for (std::size_t t = 0; t < inv.taints_.size(); ++t) {
    inv.taints_[t].second = to_set(st.taint_nodes[t]);
  }
  for (auto& [resource, by_amount] : st.resource_nodes) {
    auto& sets = inv.resources_[resource];
    for (auto& [amount, nodes] : by_amount) sets.emplace(amount, to_set(nodes));
  }

  // A bitset costs n/8 bytes, an index list 4 bytes a member.
  auto settle = [&](Inventory::Members& m) {
    if (m.sparse.size() * 32 > n) {
      m.dense = NodeSet(n);
      for (const std::uint32_t i : m.sparse) m.dense.insert(inv.slot_of_node_[i]);
      m.is_dense = true;
      m.sparse = {};
    } else {
      to_slots(m.sparse);
      m.sparse.shrink_to_fit();
    }
  };
  for (auto& [key, label] : inv.labels_) {
    settle(label.has_key);
    for (auto& [value, members] : label.by_value) settle(members);
  }
  inv.node_labels_.shrink_to_fit();
  inv.node_taints_.shrink_to_fit();
  inv.node_resources_.shrink_to_fit();
  Inventory out = std::move(inv);
  st.ids = {};
  st.views.clear();
  st.keys.clear();
  return out;
}

Inventory Inventory::build(const std::vector<Node>& nodes, const CompatDb& db) {
  InventoryBuilder builder(db);
  // parse_nodes refuses a list that names a node twice.
  for (const Node& node : nodes) builder.add(node);
  return builder.finish();
}

Node Inventory::node(std::size_t i) const {
  Node out;
  node_into(i, out);
  return out;
}

void Inventory::node_into(std::size_t i, Node& out) const {
  out.name = (*strings_)[node_name_[i]];
  const std::size_t labels = label_begin_[i + 1] - label_begin_[i];
  out.labels.resize(labels);
  for (std::size_t l = 0; l < labels; ++l) {
    const auto& [key, value] = node_labels_[label_begin_[i] + l];
    out.labels[l].first = (*strings_)[key];
    out.labels[l].second = (*strings_)[value];
  }
  out.taints.clear();
  for (std::uint32_t t = taint_begin_[i]; t < taint_begin_[i + 1]; ++t) {
    out.taints.push_back(taint_kinds_[node_taints_[t]]);
  }
  out.unschedulable = unschedulable_[i];
  out.allocatable.clear();
  for (std::uint32_t r = resource_begin_[i]; r < resource_begin_[i + 1]; ++r) {
    out.allocatable.emplace_back((*strings_)[node_resources_[r].first], node_resources_[r].second);
  }
}

std::optional<std::size_t> Inventory::index_of(std::string_view name) const {
  const auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

const std::string* Inventory::node_label(std::size_t i, std::string_view key) const {
  const auto first = node_labels_.begin() + label_begin_[i];
  const auto last = node_labels_.begin() + label_begin_[i + 1];
  const auto it = std::lower_bound(first, last, key, [this](const auto& label, std::string_view k) {
    return std::string_view((*strings_)[label.first]) < k;
  });
  if (it == last || (*strings_)[it->first] != key) return nullptr;
  return &(*strings_)[it->second];
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
  return it == labels_.end() ? nullptr : &it->second;
}

NodeSet Inventory::with_label(std::string_view key, std::string_view value) const {
  NodeSet out(size());
  if (const LabelIndex* index = label_index(key)) {
    if (const auto it = index->by_value.find(value); it != index->by_value.end())
      it->second.add_to(out);
  }
  return to_nodes(out);
}

// labels.NewRequirement and Requirement.Matches. A requirement the
// scheduler cannot parse makes its term match no node, so it yields the
// empty set here.
void Inventory::match_requirement(const NodeSelectorRequirement& r, NodeSet& out) const {
  out.assign(size());
  if (!is_label_key(r.key)) return;
  if (!std::all_of(r.values.begin(), r.values.end(), is_label_value)) return;
  const LabelIndex* index = label_index(r.key);

  if (r.op == "In" || r.op == "NotIn") {
    if (r.values.empty()) return;
    if (index != nullptr) {
      for (const std::string& v : r.values) {
        if (const auto it = index->by_value.find(v); it != index->by_value.end()) {
          it->second.add_to(out);
        }
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
    const std::optional<std::int64_t> bound = parse_int64(r.values[0]);
    if (!bound || index == nullptr) return;
    // The distinct values of one key, not the nodes: few for numeric labels.
    for (const auto& [value, members] : index->by_value) {
      const std::optional<std::int64_t> v = parse_int64(value);
      if (v && (r.op == "Gt" ? *v > *bound : *v < *bound)) members.add_to(out);
    }
  }
}

// nodeSelectorRequirementsAsFieldSelector: metadata.name, In or NotIn, one value.
void Inventory::match_field(const NodeSelectorRequirement& r, NodeSet& out) const {
  out.assign(size());
  if (r.key != "metadata.name" || r.values.size() != 1) return;
  if (r.op != "In" && r.op != "NotIn") return;
  if (const auto it = by_name_.find(r.values[0]); it != by_name_.end()) {
    out.insert(slot_of_node_[it->second]);
  }
  if (r.op == "NotIn") out.complement();
}

void Inventory::match_term(const NodeSelectorTerm& term, NodeSet& out,
                           CandidateScratch& scratch) const {
  const std::size_t n = size();
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

NodeSet Inventory::candidates(const PodSpec& spec) const {
  CandidateScratch scratch;
  return to_nodes(candidate_slots(spec, scratch));
}

const NodeSet& Inventory::candidate_slots(const PodSpec& spec, CandidateScratch& scratch) const {
  const std::size_t n = size();
  NodeSet& result = scratch.result;
  // A pod with nodeName skips the scheduler: the kubelet admits it after
  // checking selector, affinity and resources, and of the taints only
  // NoExecute ones.
  const bool bound = !spec.node_name.empty();
  result.assign(n, !bound);
  if (bound) {
    const auto it = by_name_.find(spec.node_name);
    if (it == by_name_.end()) return result;
    result.insert(slot_of_node_[it->second]);
  }

  for (const auto& [key, value] : spec.node_selector) {
    const LabelIndex* index = label_index(key);
    if (index == nullptr) {
      result.clear();
      return result;
    }
    const auto it = index->by_value.find(value);
    if (it == index->by_value.end()) {
      result.clear();
      return result;
    }
    it->second.intersect(result, scratch.kept);
    if (result.empty()) return result;
  }

  if (spec.required_terms) {
    scratch.any.assign(n);
    for (const auto& term : *spec.required_terms) {
      match_term(term, scratch.term, scratch);
      scratch.any |= scratch.term;
    }
    result &= scratch.any;
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
  auto& requests = scratch.requests;
  requests.clear();
  for (const ContainerSpec& c : spec.containers) {
    for (const auto& entry : c.resources) {
      const std::string_view resource = entry.first;
      const std::int64_t amount = entry.second;
      auto it =
          std::find_if(requests.begin(), requests.end(),
                       [&](const CandidateScratch::Request& r) { return r.resource == resource; });
      if (it == requests.end()) it = requests.insert(requests.end(), {resource, 0, 0});
      if (c.init) {
        it->init = std::max(it->init, amount);
      } else {
        it->app = amount > std::numeric_limits<std::int64_t>::max() - it->app
                      ? std::numeric_limits<std::int64_t>::max()
                      : it->app + amount;
      }
    }
  }
  for (const auto& request : requests) {
    const std::int64_t needed = std::max(request.app, request.init);
    if (needed <= 0) continue;
    NodeSet& fit = scratch.part;
    fit.assign(n);
    if (const auto it = resources_.find(request.resource); it != resources_.end()) {
      for (auto a = it->second.lower_bound(needed); a != it->second.end(); ++a) fit |= a->second;
    }
    result &= fit;
  }
  return result;
}

}  // namespace cudagate

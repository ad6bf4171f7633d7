// Building the indexed node inventory (groups by GPU facts; label, taint and resource indexes)
// and computing a pod's candidate nodes with the scheduler's matching rules.
#include "policy/inventory.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "policy/k8s_names.h"
#include "policy/node_pool.h"
#include "types/saturating.h"

namespace cudagate {
namespace {

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
  if (f.max_cuda) key += f.max_cuda->str() + (f.max_cuda_floor ? "+" : "");
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
  key += kSep;
  key += f.inconsistency;
  for (const DeviceKind& kind : f.devices) {
    key += kSep;
    key += kind.driver;
    key += '\x1e';
    key += kind.type;
    key += '\x1e';
    key += std::to_string(kind.count);
    for (const DeviceAttribute& a : kind.attributes) {
      key += '\x1e';
      key += a.name;
      key += static_cast<char>('0' + static_cast<int>(a.type));
      key += a.value;
    }
  }
  return key;
}

std::string taint_key(const Taint& t) {
  return t.key + '\0' + t.value + '\0' + t.effect;
}

}  // namespace

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
        const auto id = static_cast<std::uint32_t>(views.size());
        const std::string* added = inv.strings_->add(text);
        views.emplace_back(*added);
        texts.push_back(added);
        slot = {hash, id};
        return id;
      }
      if (slot.hash == hash && views[slot.id] == text) return slot.id;
    }
  }
  std::string_view view(std::uint32_t id) const { return views[id]; }
  std::vector<std::string_view> views;  // of inv.strings_, by id
  const std::string* text(std::uint32_t id) const { return texts[id]; }
  std::vector<const std::string*> texts;  // the same strings

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
    std::vector<std::uint32_t>* members;
  };
  // A label key's nodes, and each value's (with the value's id), by node index.
  struct Label {
    std::vector<std::uint32_t> has_key;
    ViewMap<std::pair<std::uint32_t, std::vector<std::uint32_t>>> by_value;
  };
  ViewMap<Label> labels;
  // What is known of one label key: its index entry and its values while
  // they are few; those of a key with more (a host name, an instance id)
  // are hashed.
  struct Key {
    Label* index = nullptr;
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
    if (key.index == nullptr) key.index = &labels[view(k)];
    const std::uint32_t id = intern(value);
    auto& entry = key.index->by_value[view(id)];
    entry.first = id;
    const Value found{id, &entry.second};
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
  // The nodes as added: name, labels (a range of node_labels, sorted by
  // key), taints (a range of node_taints, indexes into taint_kinds),
  // cordon, extended resources (a range of node_resources), group.
  std::vector<std::uint32_t> node_name;
  std::vector<std::uint32_t> label_begin{0};  // n + 1 offsets
  std::vector<std::pair<std::uint32_t, std::uint32_t>> node_labels;
  std::vector<std::uint32_t> taint_begin{0};  // n + 1 offsets
  std::vector<std::uint32_t> node_taints;
  std::vector<Taint> taint_kinds;
  std::vector<bool> unschedulable;
  std::vector<std::uint32_t> resource_begin{0};  // n + 1 offsets
  std::vector<std::pair<std::uint32_t, std::int64_t>> node_resources;
  std::vector<std::uint32_t> group_of;
  // DRA devices, for the few nodes that have them.
  std::unordered_map<std::uint32_t, std::shared_ptr<const std::vector<DeviceKind>>> node_devices;
  // Node pools' nodes, as given.
  std::unordered_map<std::uint32_t, std::shared_ptr<const Node>> pool_nodes;
  ViewMap<std::uint32_t> by_name;
  std::unordered_map<std::string, std::uint32_t> taint_kind_by_key;
  // Per indexed (NoSchedule/NoExecute) taint kind: its entry in taint_nodes.
  std::unordered_map<std::uint32_t, std::size_t> indexed_taint;
  std::vector<std::vector<std::uint32_t>> taint_nodes;
  std::vector<Taint> indexed_taints;  // by entry
  ViewMap<std::map<std::int64_t, std::vector<std::uint32_t>>> resource_nodes;
};

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

// A bitset costs slots/8 bytes, an index list 4 bytes a member: a list
// turns into a bitset above slots/32 members, and back below slots/64.
void Inventory::Members::insert(std::uint32_t slot, std::size_t slots) {
  if (is_dense) {
    if (slot >= dense.universe()) dense.resize(slots);
    if (dense.contains(slot)) return;
    dense.insert(slot);
    ++count;
    return;
  }
  const auto at = std::lower_bound(sparse.begin(), sparse.end(), slot);
  if (at != sparse.end() && *at == slot) return;
  sparse.insert(at, slot);
  ++count;
  if (std::size_t{count} * 32 > slots) {
    dense = NodeSet(slots);
    for (const std::uint32_t i : sparse) dense.insert(i);
    sparse = {};
    is_dense = true;
  }
}

void Inventory::Members::erase(std::uint32_t slot, std::size_t slots) {
  if (is_dense) {
    if (slot >= dense.universe() || !dense.contains(slot)) return;
    dense.erase(slot);
    --count;
    if (std::size_t{count} * 64 < slots) {
      sparse.reserve(count);
      dense.for_each([&](std::size_t i) {
        sparse.push_back(static_cast<std::uint32_t>(i));
        return true;
      });
      dense = NodeSet();
      is_dense = false;
    }
    return;
  }
  const auto at = std::lower_bound(sparse.begin(), sparse.end(), slot);
  if (at == sparse.end() || *at != slot) return;
  sparse.erase(at);
  --count;
}

InventoryBuilder::InventoryBuilder(const CompatDb& db) : state_(std::make_unique<State>(db)) {}

InventoryBuilder::~InventoryBuilder() = default;

std::size_t InventoryBuilder::size() const {
  return state_->node_name.size();
}

bool InventoryBuilder::add(const Node& node, const GpuFacts* known) {
  State& st = *state_;
  Inventory& inv = st.inv;
  const auto i = static_cast<std::uint32_t>(st.node_name.size());

  const std::uint32_t name = st.intern(node.name);
  if (!st.by_name.try_emplace(st.view(name), i).second) return false;
  st.node_name.push_back(name);

  GpuFacts facts = known != nullptr ? *known : derive_gpu_facts(node, st.db);
  if (facts.has_gpu) {
    ++inv.gpu_nodes_;
    if (!facts.driver) ++inv.unknown_gpu_nodes_;
  }
  const auto [group, added] = inv.group_by_key_.try_emplace(
      facts_key(facts), static_cast<std::uint32_t>(inv.groups_.size()));
  if (added) inv.groups_.push_back(NodeGroup{std::move(facts), NodeSet()});
  st.group_of.push_back(group->second);

  const std::size_t first_label = st.node_labels.size();
  bool sorted = true;
  st.key_cursor = 0;
  st.current_keys.clear();
  for (std::size_t position = 0; position < node.labels.size(); ++position) {
    const auto& [key, value] = node.labels[position];
    if (position > 0 && !(node.labels[position - 1].first < key)) sorted = false;
    const std::uint32_t k = sorted ? st.intern_key(key) : st.intern(key);
    const State::Value v = st.label_value(k, value);
    st.current_keys.push_back(k);
    st.node_labels.emplace_back(k, v.id);
    st.keys[k].index->has_key.push_back(i);
    v.members->push_back(i);
  }
  if (sorted) {
    std::swap(st.previous_keys, st.current_keys);
  } else {
    // Sorted by key, for node_label()'s binary search, whatever the caller did.
    const auto first = st.node_labels.begin() + static_cast<std::ptrdiff_t>(first_label);
    std::sort(first, st.node_labels.end(),
              [&st](const auto& a, const auto& b) { return st.view(a.first) < st.view(b.first); });
    st.previous_keys.clear();
  }
  st.label_begin.push_back(static_cast<std::uint32_t>(st.node_labels.size()));

  auto taint_kind = [&](const Taint& taint) {
    const auto [it, fresh] = st.taint_kind_by_key.try_emplace(
        taint_key(taint), static_cast<std::uint32_t>(st.taint_kinds.size()));
    if (fresh) st.taint_kinds.push_back(taint);
    return it->second;
  };
  auto index_taint = [&](std::uint32_t kind) {
    const Taint& taint = st.taint_kinds[kind];
    if (taint.effect != "NoSchedule" && taint.effect != "NoExecute") return;
    const auto [it, fresh] = st.indexed_taint.try_emplace(kind, st.taint_nodes.size());
    if (fresh) {
      st.indexed_taints.push_back(taint);
      st.taint_nodes.emplace_back();
    }
    auto& nodes = st.taint_nodes[it->second];
    if (nodes.empty() || nodes.back() != i) nodes.push_back(i);
  };
  for (const Taint& taint : node.taints) {
    const std::uint32_t kind = taint_kind(taint);
    st.node_taints.push_back(kind);
    index_taint(kind);
  }
  st.taint_begin.push_back(static_cast<std::uint32_t>(st.node_taints.size()));
  if (node.unschedulable) {
    index_taint(taint_kind(Taint{"node.kubernetes.io/unschedulable", "", "NoSchedule"}));
  }
  st.unschedulable.push_back(node.unschedulable);

  for (const auto& [resource, amount] : node.allocatable) {
    const std::uint32_t r = st.intern(resource);
    st.node_resources.emplace_back(r, amount);
    st.resource_nodes[st.view(r)][amount].push_back(i);
  }
  st.resource_begin.push_back(static_cast<std::uint32_t>(st.node_resources.size()));
  if (!node.devices.empty()) {
    st.node_devices[i] = std::make_shared<const std::vector<DeviceKind>>(node.devices);
  }
  if (node.pool != nullptr) st.pool_nodes[i] = std::make_shared<const Node>(node);
  return true;
}

Inventory InventoryBuilder::finish() {
  State& st = *state_;
  Inventory& inv = st.inv;
  const std::size_t n = st.node_name.size();
  constexpr std::uint64_t kBuild = 0;  // the builder's generation: in place

  // The nodes' records, from the builder's compact lists.
  inv.nodes_.resize(n, kBuild);
  inv.group_of_.resize(n, kBuild);
  inv.slot_of_node_.resize(n, kBuild);
  for (std::size_t i = 0; i < n; ++i) {
    auto record = std::make_shared<Inventory::NodeRecord>();
    record->name = st.text(st.node_name[i]);
    record->labels.reserve(st.label_begin[i + 1] - st.label_begin[i]);
    for (std::uint32_t l = st.label_begin[i]; l < st.label_begin[i + 1]; ++l) {
      record->labels.emplace_back(st.view(st.node_labels[l].first),
                                  st.text(st.node_labels[l].second));
    }
    for (std::uint32_t t = st.taint_begin[i]; t < st.taint_begin[i + 1]; ++t) {
      record->taints.push_back(st.taint_kinds[st.node_taints[t]]);
    }
    record->unschedulable = st.unschedulable[i];
    record->allocatable.reserve(st.resource_begin[i + 1] - st.resource_begin[i]);
    for (std::uint32_t r = st.resource_begin[i]; r < st.resource_begin[i + 1]; ++r) {
      record->allocatable.emplace_back(st.view(st.node_resources[r].first),
                                       st.node_resources[r].second);
    }
    if (const auto d = st.node_devices.find(static_cast<std::uint32_t>(i));
        d != st.node_devices.end()) {
      record->devices = d->second;
    }
    if (const auto p = st.pool_nodes.find(static_cast<std::uint32_t>(i));
        p != st.pool_nodes.end()) {
      record->pool_node = p->second;
      inv.pool_names_.push_back(*record->name);
    }
    inv.nodes_.edit(i, kBuild) = std::move(record);
    inv.group_of_.edit(i, kBuild) = st.group_of[i];
    inv.by_name_.edit(st.view(st.node_name[i]), kBuild) = static_cast<std::uint32_t>(i);
  }

  for (NodeGroup& g : inv.groups_) g.members = NodeSet(n);
  for (std::size_t i = 0; i < n; ++i) inv.groups_[st.group_of[i]].members.insert(i);

  // Slots: each group's nodes contiguous, in list order within the group.
  inv.group_slots_.assign(inv.groups_.size(), {});
  std::vector<std::uint32_t> next(inv.groups_.size() + 1, 0);
  for (const std::uint32_t g : st.group_of) ++next[g + 1];
  for (std::size_t g = 0; g < inv.groups_.size(); ++g) {
    next[g + 1] += next[g];
    inv.group_slots_[g].begin = next[g];
    inv.group_slots_[g].end = next[g + 1];
  }
  inv.slot_count_ = n;
  inv.live_.edit(kBuild) = NodeSet(n, true);
  inv.node_at_slot_.resize(n, kBuild);
  inv.slot_name_.resize(n, kBuild);
  std::vector<std::uint32_t> slot_of(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t slot = next[st.group_of[i]]++;
    slot_of[i] = slot;
    inv.slot_of_node_.edit(i, kBuild) = slot;
    inv.node_at_slot_.edit(slot, kBuild) = static_cast<std::uint32_t>(i);
    inv.slot_name_.edit(slot, kBuild) = st.view(st.node_name[i]);
  }
  auto to_set = [&](const std::vector<std::uint32_t>& nodes) {
    NodeSet set(n);
    for (const std::uint32_t i : nodes) set.insert(slot_of[i]);
    return set;
  };

  for (std::size_t t = 0; t < st.taint_nodes.size(); ++t) {
    inv.taints_.emplace_back(
        Inventory::TaintIndex{st.indexed_taints[t], to_set(st.taint_nodes[t])});
  }
  for (auto& [resource, by_amount] : st.resource_nodes) {
    auto& sets = inv.resources_[resource].edit(kBuild);
    for (auto& [amount, nodes] : by_amount) sets.emplace(amount, to_set(nodes));
  }

  // A bitset costs n/8 bytes, an index list 4 bytes a member.
  auto settle = [&](std::vector<std::uint32_t>& nodes, Inventory::Members& m) {
    m.count = static_cast<std::uint32_t>(nodes.size());
    if (nodes.size() * 32 > n) {
      m.dense = to_set(nodes);
      m.is_dense = true;
    } else {
      m.sparse.reserve(nodes.size());
      for (const std::uint32_t i : nodes) m.sparse.push_back(slot_of[i]);
      std::sort(m.sparse.begin(), m.sparse.end());
    }
    nodes = {};
  };
  for (auto& [key, label] : st.labels) {
    Inventory::LabelIndex& index = inv.labels_[key].edit(kBuild);
    settle(label.has_key, index.has_key);
    for (auto& [value, entry] : label.by_value) {
      Inventory::Members& members = index.by_value.edit(value, kBuild);
      members.text = st.text(entry.first);
      settle(entry.second, members);
    }
  }
  inv.locate_pools();
  inv.built_strings_ = inv.strings_->strings.size();
  Inventory out = std::move(inv);
  st.ids = {};
  st.views = {};
  st.texts = {};
  st.keys = {};
  st.labels = {};
  st.by_name = {};
  st.pool_nodes = {};
  return out;
}

Inventory Inventory::build(const std::vector<Node>& nodes, const CompatDb& db) {
  InventoryBuilder builder(db);
  // parse_nodes refuses a list that names a node twice.
  for (const Node& node : nodes) builder.add(node);
  return builder.finish();
}

// Patching: the nodes named by edits are taken out of every index they are
// in and put back with their new form; a node whose GPU facts changed moves
// to a free slot of its new group. A group without a free slot moves to new
// slots at the end, twice as many (so a group that grows by k nodes moves
// O(log k) times), leaving its old slots free for no one until the
// inventory is compacted.
class Inventory::Editor {
 public:
  Editor(Inventory& inv, const CompatDb& db) : inv_(inv), db_(db), gen_(inv.generation_) {}

  void upsert(const Node& node) {
    GpuFacts facts = derive_gpu_facts(node, db_);
    const auto* found = inv_.by_name_.find(node.name);
    const bool was_pool = found != nullptr && inv_.nodes_[found->second]->pool_node != nullptr;
    if (was_pool && node.pool == nullptr) forget_pool(node.name);
    if (!was_pool && node.pool != nullptr) inv_.pool_names_.push_back(node.name);
    const std::string* name =
        found != nullptr ? inv_.nodes_[found->second]->name : inv_.strings_->add(node.name);
    std::shared_ptr<const NodeRecord> record = make_record(node, name);
    if (found == nullptr) {
      const auto id = static_cast<std::uint32_t>(inv_.nodes_.size());
      inv_.nodes_.push_back(std::move(record), gen_);
      inv_.by_name_.edit(*name, gen_) = id;
      const std::uint32_t g = group_for(std::move(facts));
      inv_.group_of_.push_back(g, gen_);
      inv_.slot_of_node_.push_back(0, gen_);
      join(id, g);
      return;
    }
    const std::uint32_t id = found->second;
    const std::uint32_t old_group = inv_.group_of_[id];
    std::uint32_t slot = inv_.slot_of_node_[id];
    unindex(id, slot);
    count_gpu(inv_.groups_[old_group].facts, -1);
    inv_.nodes_.edit(id, gen_) = std::move(record);
    if (facts_key(facts) == facts_key(inv_.groups_[old_group].facts)) {
      count_gpu(inv_.groups_[old_group].facts, 1);
      index(id, slot);
      return;
    }
    const std::uint32_t g = group_for(std::move(facts));
    leave(id, old_group, slot);
    inv_.group_of_.edit(id, gen_) = g;
    join(id, g);
  }

  void remove(std::string_view name) {
    const auto* found = inv_.by_name_.find(name);
    if (found == nullptr) return;
    const std::uint32_t id = found->second;
    if (inv_.nodes_[id]->pool_node != nullptr) forget_pool(name);
    const std::uint32_t slot = inv_.slot_of_node_[id];
    const std::uint32_t g = inv_.group_of_[id];
    unindex(id, slot);
    count_gpu(inv_.groups_[g].facts, -1);
    leave(id, g, slot);
    inv_.by_name_.erase(name, gen_);
    // The last node takes the index of the removed one, so that indexes stay 0..n-1.
    const auto last = static_cast<std::uint32_t>(inv_.nodes_.size() - 1);
    if (id != last) {
      std::shared_ptr<const NodeRecord> moved = inv_.nodes_[last];
      const std::uint32_t moved_group = inv_.group_of_[last];
      const std::uint32_t moved_slot = inv_.slot_of_node_[last];
      inv_.by_name_.edit(*moved->name, gen_) = id;
      inv_.nodes_.edit(id, gen_) = std::move(moved);
      inv_.group_of_.edit(id, gen_) = moved_group;
      inv_.slot_of_node_.edit(id, gen_) = moved_slot;
      inv_.node_at_slot_.edit(moved_slot, gen_) = id;
      NodeSet& members = inv_.groups_[moved_group].members;
      members.erase(last);
      members.insert(id);
    }
    inv_.nodes_.resize(last, gen_);
    inv_.group_of_.resize(last, gen_);
    inv_.slot_of_node_.resize(last, gen_);
  }

  // Every group's members over the final node indexes.
  void finish() {
    for (NodeGroup& g : inv_.groups_) {
      if (g.members.universe() != inv_.size()) g.members.resize(inv_.size());
    }
    // A node that changed group, or whose group moved, has a new slot.
    inv_.locate_pools();
  }

 private:
  void forget_pool(std::string_view name) {
    auto& names = inv_.pool_names_;
    names.erase(std::remove(names.begin(), names.end(), name), names.end());
  }

  std::shared_ptr<const NodeRecord> make_record(const Node& node, const std::string* name) {
    auto record = std::make_shared<NodeRecord>();
    record->name = name;
    record->labels.reserve(node.labels.size());
    for (const auto& [key, value] : node.labels) {
      const auto index = inv_.labels_.find(key);
      std::string_view key_text;
      const std::string* value_text = nullptr;
      if (index != inv_.labels_.end()) {
        key_text = index->first;
        if (const auto* known = index->second->by_value.find(value))
          value_text = known->second.text;
      } else {
        key_text = *inv_.strings_->add(key);
      }
      if (value_text == nullptr) value_text = inv_.strings_->add(value);
      record->labels.emplace_back(key_text, value_text);
    }
    std::sort(record->labels.begin(), record->labels.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    record->taints = node.taints;
    record->unschedulable = node.unschedulable;
    for (const auto& [resource, amount] : node.allocatable) {
      const auto known = inv_.resources_.find(resource);
      const std::string_view text =
          known != inv_.resources_.end() ? known->first : *inv_.strings_->add(resource);
      record->allocatable.emplace_back(text, amount);
    }
    if (!node.devices.empty()) {
      record->devices = std::make_shared<const std::vector<DeviceKind>>(node.devices);
    }
    if (node.pool != nullptr) record->pool_node = std::make_shared<const Node>(node);
    return record;
  }

  void count_gpu(const GpuFacts& facts, int by) {
    if (!facts.has_gpu) return;
    inv_.gpu_nodes_ = static_cast<std::size_t>(static_cast<std::ptrdiff_t>(inv_.gpu_nodes_) + by);
    if (!facts.driver) {
      inv_.unknown_gpu_nodes_ =
          static_cast<std::size_t>(static_cast<std::ptrdiff_t>(inv_.unknown_gpu_nodes_) + by);
    }
  }

  // The group of `facts`, made (without slots yet) when there is none.
  std::uint32_t group_for(GpuFacts facts) {
    std::string key = facts_key(facts);
    if (const auto it = inv_.group_by_key_.find(key); it != inv_.group_by_key_.end()) {
      return it->second;
    }
    std::uint32_t g = 0;
    if (!inv_.free_groups_.empty()) {
      g = inv_.free_groups_.back();
      inv_.free_groups_.pop_back();
      inv_.groups_[g] = NodeGroup{std::move(facts), NodeSet(inv_.size())};
      inv_.group_slots_[g] = GroupSlots{};
    } else {
      g = static_cast<std::uint32_t>(inv_.groups_.size());
      inv_.groups_.push_back(NodeGroup{std::move(facts), NodeSet(inv_.size())});
      inv_.group_slots_.emplace_back();
    }
    inv_.group_by_key_.emplace(std::move(key), g);
    return g;
  }

  // Node `id` (its record in place) joins group g at a free slot.
  void join(std::uint32_t id, std::uint32_t g) {
    count_gpu(inv_.groups_[g].facts, 1);
    NodeSet& members = inv_.groups_[g].members;
    if (id >= members.universe()) members.resize(std::max<std::size_t>(id + 1, inv_.size()));
    members.insert(id);
    GroupSlots* slots = &inv_.group_slots_[g];
    if (slots->free.empty()) {
      move_group(g);
      slots = &inv_.group_slots_[g];
    }
    const std::uint32_t slot = slots->free.back();
    slots->free.pop_back();
    index(id, slot);
  }

  // Node `id` (already out of the indexes) leaves group g and its slot;
  // the group goes when that was its last member.
  void leave(std::uint32_t id, std::uint32_t g, std::uint32_t slot) {
    inv_.groups_[g].members.erase(id);
    GroupSlots& slots = inv_.group_slots_[g];
    slots.free.push_back(slot);
    if (slots.free.size() < slots.end - slots.begin) return;
    inv_.group_by_key_.erase(facts_key(inv_.groups_[g].facts));
    // The last slots are given back; others stay free until compaction.
    if (slots.end == inv_.slot_count_) resize_slots(slots.begin);
    slots = GroupSlots{};
    inv_.free_groups_.push_back(g);
  }

  void resize_slots(std::size_t count) {
    inv_.slot_count_ = count;
    inv_.node_at_slot_.resize(count, gen_);
    inv_.slot_name_.resize(count, gen_);
    inv_.live_.edit(gen_).resize(count);
  }

  // Group g to twice its slots (at least 8): where it is when it has the
  // last slots, else at the end.
  void move_group(std::uint32_t g) {
    const GroupSlots old = inv_.group_slots_[g];
    const std::size_t size = std::max<std::size_t>(8, std::size_t{2} * (old.end - old.begin));
    GroupSlots& slots = inv_.group_slots_[g];
    if (old.end == inv_.slot_count_ && old.end > old.begin) {
      const auto end = static_cast<std::uint32_t>(old.begin + size);
      resize_slots(end);
      slots.end = end;
      // Taken from the back: lowest first.
      for (std::uint32_t slot = end; slot > old.end; --slot) slots.free.push_back(slot - 1);
      return;
    }
    const auto begin = static_cast<std::uint32_t>(inv_.slot_count_);
    const auto end = static_cast<std::uint32_t>(inv_.slot_count_ + size);
    resize_slots(end);
    std::uint32_t next = begin;
    for (std::uint32_t slot = old.begin; slot < old.end; ++slot) {
      if (!inv_.live_->contains(slot)) continue;
      const std::uint32_t id = inv_.node_at_slot_[slot];
      unindex(id, slot);
      index(id, next++);
    }
    slots = GroupSlots{begin, end, {}};
    for (std::uint32_t slot = end; slot > next; --slot) slots.free.push_back(slot - 1);
  }

  static void insert(NodeSet& set, std::uint32_t slot, std::size_t slots) {
    if (slot >= set.universe()) set.resize(slots);
    set.insert(slot);
  }

  // Node `id`'s record into every index, at `slot`.
  void index(std::uint32_t id, std::uint32_t slot) {
    const NodeRecord& node = *inv_.nodes_[id];
    const std::size_t slots = inv_.slot_count_;
    insert(inv_.live_.edit(gen_), slot, slots);
    inv_.node_at_slot_.edit(slot, gen_) = id;
    inv_.slot_name_.edit(slot, gen_) = *node.name;
    inv_.slot_of_node_.edit(id, gen_) = slot;
    for (const auto& [key, value] : node.labels) {
      LabelIndex& index = inv_.labels_[key].edit(gen_);
      index.has_key.insert(slot, slots);
      Members& members = index.by_value.edit(*value, gen_);
      members.text = value;
      members.insert(slot, slots);
    }
    auto index_taint = [&](const Taint& taint) {
      if (taint.effect != "NoSchedule" && taint.effect != "NoExecute") return;
      auto it = std::find_if(inv_.taints_.begin(), inv_.taints_.end(),
                             [&](const Shared<TaintIndex>& t) { return t->taint == taint; });
      if (it == inv_.taints_.end()) it = inv_.taints_.insert(it, Shared(TaintIndex{taint, {}}));
      insert(it->edit(gen_).slots, slot, slots);
    };
    for (const Taint& taint : node.taints) index_taint(taint);
    if (node.unschedulable) index_taint(cordon());
    for (const auto& [resource, amount] : node.allocatable) {
      insert(inv_.resources_[resource].edit(gen_)[amount], slot, slots);
    }
  }

  // Node `id`'s record out of every index (it is at `slot`); entries left
  // empty go, as a build would not have them.
  void unindex(std::uint32_t id, std::uint32_t slot) {
    const NodeRecord& node = *inv_.nodes_[id];
    const std::size_t slots = inv_.slot_count_;
    inv_.live_.edit(gen_).erase(slot);
    for (const auto& [key, value] : node.labels) {
      const auto found = inv_.labels_.find(key);
      if (found == inv_.labels_.end()) continue;
      LabelIndex& index = found->second.edit(gen_);
      index.has_key.erase(slot, slots);
      if (index.has_key.count == 0) {
        inv_.labels_.erase(found);
        continue;
      }
      if (index.by_value.find(*value) == nullptr) continue;
      Members& members = index.by_value.edit(*value, gen_);
      members.erase(slot, slots);
      if (members.count == 0) index.by_value.erase(*value, gen_);
    }
    auto unindex_taint = [&](const Taint& taint) {
      const auto it = std::find_if(inv_.taints_.begin(), inv_.taints_.end(),
                                   [&](const Shared<TaintIndex>& t) { return t->taint == taint; });
      if (it == inv_.taints_.end()) return;
      NodeSet& set = it->edit(gen_).slots;
      if (slot < set.universe()) set.erase(slot);
      if (set.empty()) inv_.taints_.erase(it);
    };
    for (const Taint& taint : node.taints) unindex_taint(taint);
    if (node.unschedulable) unindex_taint(cordon());
    for (const auto& [resource, amount] : node.allocatable) {
      const auto found = inv_.resources_.find(resource);
      if (found == inv_.resources_.end()) continue;
      auto& by_amount = found->second.edit(gen_);
      const auto at = by_amount.find(amount);
      if (at == by_amount.end()) continue;
      if (slot < at->second.universe()) at->second.erase(slot);
      if (at->second.empty()) by_amount.erase(at);
      if (by_amount.empty()) inv_.resources_.erase(found);
    }
  }

  static const Taint& cordon() {
    static const Taint taint{"node.kubernetes.io/unschedulable", "", "NoSchedule"};
    return taint;
  }

  Inventory& inv_;
  const CompatDb& db_;
  std::uint64_t gen_;
};

Inventory Inventory::patched(const std::vector<NodeEdit>& edits, const CompatDb& db) const {
  Inventory next = *this;
  ++next.generation_;
  Editor editor(next, db);
  for (const NodeEdit& edit : edits) {
    if (edit.node != nullptr) {
      editor.upsert(*edit.node);
    } else {
      editor.remove(edit.name);
    }
  }
  editor.finish();
  // Free slots make every decision's bitsets longer, and strings of nodes
  // gone or changed stay in the pool: past a bound, the inventory is built
  // anew (O(n), so amortised over at least as many edits as nodes).
  const std::size_t n = next.size();
  if (next.slot_count_ > 2 * n + 4096 ||
      next.strings_->strings.size() > 2 * next.built_strings_ + 4 * n + 4096) {
    return next.compacted(db);
  }
  return next;
}

Inventory Inventory::compacted(const CompatDb& db) const {
  InventoryBuilder builder(db);
  Node node;
  for (std::size_t i = 0; i < size(); ++i) {
    node_into(i, node);
    builder.add(node, &groups_[group_of_[i]].facts);
  }
  return builder.finish();
}

Node Inventory::node(std::size_t i) const {
  Node out;
  node_into(i, out);
  return out;
}

void Inventory::node_into(std::size_t i, Node& out) const {
  const NodeRecord& node = *nodes_[i];
  out.name = *node.name;
  out.labels.resize(node.labels.size());
  for (std::size_t l = 0; l < node.labels.size(); ++l) {
    out.labels[l].first = node.labels[l].first;
    out.labels[l].second = *node.labels[l].second;
  }
  out.taints = node.taints;
  out.unschedulable = node.unschedulable;
  out.allocatable.clear();
  for (const auto& [resource, amount] : node.allocatable) {
    out.allocatable.emplace_back(std::string(resource), amount);
  }
  if (node.devices) {
    out.devices = *node.devices;
  } else {
    out.devices.clear();
  }
  out.pool = node.pool_node != nullptr ? node.pool_node->pool : nullptr;
}

void Inventory::locate_pools() {
  pool_slots_.clear();
  for (const std::string& name : pool_names_) {
    if (const auto* found = by_name_.find(name))
      pool_slots_.push_back(slot_of_node_[found->second]);
  }
}

std::optional<std::size_t> Inventory::index_of(std::string_view name) const {
  const auto* found = by_name_.find(name);
  if (found == nullptr) return std::nullopt;
  return found->second;
}

const std::string* Inventory::node_label(std::size_t i, std::string_view key) const {
  const auto& labels = nodes_[i]->labels;
  const auto it =
      std::lower_bound(labels.begin(), labels.end(), key,
                       [](const auto& label, std::string_view k) { return label.first < k; });
  if (it == labels.end() || it->first != key) return nullptr;
  return it->second;
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
    const std::optional<std::int64_t> bound = parse_int64(r.values[0]);
    if (!bound || index == nullptr) return;
    // The distinct values of one key, not the nodes: few for numeric labels.
    index->by_value.for_each([&](std::string_view value, const Members& members) {
      const std::optional<std::int64_t> v = parse_int64(value);
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

// Building the indexed node inventory from nodes as read: each string
// interned once, groups by GPU facts, and the label, taint and resource
// indexes a pod's candidates are computed from.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "policy/inventory/inventory.h"
#include "policy/objects/node_pool.h"

namespace cudagate {
namespace {

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
      Inventory::group_key(facts), static_cast<std::uint32_t>(inv.groups_.size()));
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

}  // namespace cudagate

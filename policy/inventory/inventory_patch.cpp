// Editing an inventory by patches that share every untouched part with the
// inventory they start from, and compacting one that patches have spread.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "policy/inventory/inventory.h"
#include "policy/objects/node_pool.h"

namespace cudagate {

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
    if (group_key(facts) == group_key(inv_.groups_[old_group].facts)) {
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
    std::string key = group_key(facts);
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
    inv_.group_by_key_.erase(group_key(inv_.groups_[g].facts));
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

}  // namespace cudagate

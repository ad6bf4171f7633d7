// The indexed node inventory: what it answers of one node (its name, labels
// and form as read), and the key that groups nodes by their GPU facts. It
// is built by InventoryBuilder (inventory_builder.cpp), edited by patches
// (inventory_patch.cpp) and queried for a pod's candidates
// (inventory_match.cpp).
#include "policy/inventory/inventory.h"

#include <algorithm>
#include <optional>
#include <string>

#include "policy/objects/node_pool.h"

namespace cudagate {

std::string Inventory::group_key(const GpuFacts& f) {
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

}  // namespace cudagate

#pragma once
// The one mapping from a Kubernetes Node object to a Node (node.h), written
// over policy/objects/json_view.h like workload_reader.h: node.cpp reads node lists
// through nlohmann::json with it, and the server's streaming loader
// (inputs/node_loader.h) reads large JSON node lists through simdjson with
// the same rules and errors.
//
// read_node_into() reuses the Node it is given (its strings keep their
// capacity), so that reading thousands of nodes one after another allocates
// little.

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/objects/json_view.h"
#include "policy/objects/node.h"
#include "policy/objects/workload_reader.h"
#include "types/expected.h"
#include "types/quote.h"

namespace cudagate {
namespace node_reader {

using workload_reader::Path;

// Assigns into the pair at `n` of `list`, or appends one.
inline void put(std::vector<std::pair<std::string, std::string>>& list, std::size_t n,
                std::string_view key, std::string_view value) {
  if (n < list.size()) {
    list[n].first.assign(key);
    list[n].second.assign(value);
  } else {
    list.emplace_back(key, value);
  }
}

// The taints list `value`, the member "taints" of the object at `spec_path`
// (a Node's spec, a NodePool's spec.template.spec).
template <JsonView V>
std::optional<Error> read_taints(const V& value, std::vector<Taint>& out,
                                 const Path& spec_path = Path("spec")) {
  auto list = workload_reader::array_value(value, "taints", spec_path);
  if (!list) return list.error();
  out.clear();
  if (!list->valid()) return std::nullopt;
  const Path list_path = spec_path.field("taints");
  static constexpr std::array<std::string_view, 3> kKeys = {"key", "value", "effect"};
  std::optional<Error> error;
  list->for_each_element([&](std::size_t i, const V& item) {
    if (error) return;
    const Path item_path = list_path.at(i);
    if (!item.is_object()) {
      error = workload_reader::type_mismatch(item_path, "an object", item);
      return;
    }
    const auto found = workload_reader::members(item, kKeys);
    Taint t;
    std::string* targets[] = {&t.key, &t.value, &t.effect};
    for (std::size_t k = 0; k < kKeys.size(); ++k) {
      auto v = workload_reader::string_value(found[k], kKeys[k], item_path, false);
      if (!v) {
        error = v.error();
        return;
      }
      targets[k]->assign(*v);
    }
    out.push_back(std::move(t));
  });
  return error;
}

// Reads one Node, or a Node list item (the API server leaves out the kind
// there), into `node`. Errors name the field, not the node: the caller adds
// where it was.
template <JsonView V>
std::optional<Error> read_node_into(const V& object, Node& node) {
  if (!object.is_object()) return Error{"", view_type_error("an object", object)};
  const Path root("");
  static constexpr std::array<std::string_view, 4> kKeys = {"kind", "metadata", "spec", "status"};
  const auto [kind_v, metadata_v, spec_v, status_v] = workload_reader::members(object, kKeys);
  auto kind = workload_reader::string_value(kind_v, "kind", root, false);
  if (!kind) return kind.error();
  if (!kind->empty() && *kind != "Node") {
    return Error{"kind", "expected a Node, got " + quote(*kind)};
  }
  auto metadata = workload_reader::object_value(metadata_v, "metadata", root);
  if (!metadata) return metadata.error();
  if (!metadata->valid()) return Error{"metadata", "is required"};
  const Path meta_path("metadata");
  static constexpr std::array<std::string_view, 2> kMetaKeys = {"name", "labels"};
  const auto [name_v, labels_v] = workload_reader::members(*metadata, kMetaKeys);
  auto name = workload_reader::string_value(name_v, "name", meta_path, true);
  if (!name) return name.error();
  if (name->empty()) return Error{"metadata.name", "is required"};
  node.name.assign(*name);

  auto labels = workload_reader::object_value(labels_v, "labels", meta_path);
  if (!labels) return labels.error();
  std::size_t count = 0;
  if (labels->valid()) {
    std::optional<Error> error;
    const Path labels_path("metadata.labels");
    labels->for_each_member([&](std::string_view k, const V& v) {
      if (error) return;
      if (!v.is_string()) {
        error = workload_reader::type_mismatch(labels_path.field(k), "a string", v);
        return;
      }
      put(node.labels, count++, k, v.string());
    });
    if (error) return error;
  }
  // In key order, each key once: as every view visits members.
  node.labels.resize(count);

  node.taints.clear();
  node.unschedulable = false;
  auto spec = workload_reader::object_value(spec_v, "spec", root);
  if (!spec) return spec.error();
  if (spec->valid()) {
    static constexpr std::array<std::string_view, 2> kSpecKeys = {"taints", "unschedulable"};
    const auto [taints_v, unschedulable] = workload_reader::members(*spec, kSpecKeys);
    if (auto e = read_taints(taints_v, node.taints)) return e;
    if (unschedulable.valid() && !unschedulable.is_null()) {
      if (!unschedulable.is_boolean()) {
        return Error{"spec.unschedulable", view_type_error("a boolean", unschedulable)};
      }
      node.unschedulable = unschedulable.boolean();
    }
  }

  node.allocatable.clear();
  auto status = workload_reader::object_value(status_v, "status", root);
  if (!status) return status.error();
  if (status->valid()) {
    auto allocatable =
        workload_reader::object_value(status->find("allocatable"), "allocatable", Path("status"));
    if (!allocatable) return allocatable.error();
    if (allocatable->valid()) {
      std::optional<Error> error;
      const Path allocatable_path("status.allocatable");
      allocatable->for_each_member([&](std::string_view resource, const V& quantity) {
        if (error || !is_extended_resource(resource)) return;
        auto amount = workload_reader::count_quantity(quantity);
        if (!amount) {
          error = amount.error().within(allocatable_path.field(resource).str());
          return;
        }
        node.allocatable.emplace_back(std::string(resource), *amount);
      });
      if (error) return error;
    }
  }
  std::sort(node.allocatable.begin(), node.allocatable.end());
  return std::nullopt;
}

}  // namespace node_reader

// A Node read through any JSON view; node_from_json is this over nlohmann::json.
template <JsonView V>
Expected<Node> node_from_view(const V& object, std::string_view where) {
  Node node;
  if (auto e = node_reader::read_node_into(object, node)) return e->within(std::string(where));
  return node;
}

}  // namespace cudagate

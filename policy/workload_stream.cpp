// Reading the workloads of a manifest stream one document and one List item
// at a time, so that one broken object costs only itself.
#include "policy/workload_stream.h"

#include <set>
#include <tuple>
#include <utility>

#include "policy/document.h"

namespace cudagate {
namespace {

using nlohmann::json;

std::string join_place(const std::string& outer, const std::string& inner) {
  if (outer.empty()) return inner;
  if (inner.empty()) return outer;
  return outer + ": " + inner;
}

std::optional<ResourceRef> controller_of(const json& object) {
  const auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return std::nullopt;
  const auto owners = metadata->find("ownerReferences");
  if (owners == metadata->end() || !owners->is_array()) return std::nullopt;
  for (const json& owner : *owners) {
    if (!owner.is_object()) continue;
    const auto controller = owner.find("controller");
    if (controller == owner.end() || !controller->is_boolean() || !controller->get<bool>()) {
      continue;
    }
    const auto kind = owner.find("kind");
    const auto name = owner.find("name");
    if (kind == owner.end() || !kind->is_string() || name == owner.end() || !name->is_string()) {
      continue;
    }
    ResourceRef ref;
    ref.api_version = owner.value("apiVersion", std::string());
    ref.kind = kind->get<std::string>();
    ref.name = name->get<std::string>();
    return ref;
  }
  return std::nullopt;
}

class StreamReader {
 public:
  explicit StreamReader(WorkloadStream& out) : out_(out) {}

  // One object at `place`: a workload, a List of objects, or another kind.
  void take(const json& value, const std::string& place, bool in_list) {
    if (!value.is_object()) {
      out_.broken.push_back(
          Error{place, "expected a Kubernetes object, got " + std::string(value.type_name())});
      return;
    }
    const auto kind_it = value.find("kind");
    if (kind_it == value.end() || kind_it->is_null()) {
      out_.broken.push_back(Error{join_place(place, "kind"), "is required"});
      return;
    }
    if (!kind_it->is_string()) {
      out_.broken.push_back(Error{join_place(place, "kind"), type_error("a string", *kind_it)});
      return;
    }
    const auto& kind = kind_it->get_ref<const std::string&>();
    if (is_workload_kind(kind)) {
      auto workload = workload_from_json(value, place);
      if (!workload) {
        out_.broken.push_back(workload.error());
        return;
      }
      out_.workloads.push_back(PlacedWorkload{std::move(*workload), place, controller_of(value)});
      return;
    }
    const bool is_list = kind.size() >= 4 && kind.compare(kind.size() - 4, 4, "List") == 0;
    if (!is_list || in_list) {
      ++out_.skipped;
      return;
    }
    auto items = array_field(value, "items", "");
    if (!items) {
      out_.broken.push_back(items.error().within(place));
      return;
    }
    if (*items == nullptr) return;
    for (std::size_t i = 0; i < (*items)->size(); ++i) {
      take((**items)[i], join_place(place, index_path("items", i)), /*in_list=*/true);
    }
  }

 private:
  WorkloadStream& out_;
};

}  // namespace

WorkloadStream read_workload_stream(std::string_view text, std::string_view source) {
  WorkloadStream out;
  StreamReader reader(out);
  for (auto& doc : parse_document_stream(text, source)) {
    if (!doc) {
      out.broken.push_back(doc.error());
      continue;
    }
    std::string place(source);
    if (doc->line > 0) place += ":" + std::to_string(doc->line);
    if (doc->value.is_array()) {
      // A JSON array of objects reads like a List's items.
      for (std::size_t i = 0; i < doc->value.size(); ++i) {
        reader.take(doc->value[i], join_place(place, index_path("", i)), /*in_list=*/true);
      }
      continue;
    }
    reader.take(doc->value, place, /*in_list=*/false);
  }
  return out;
}

std::size_t drop_controlled(std::vector<PlacedWorkload>& workloads) {
  // Copies, not views: the workloads move while the set is read.
  using Key = std::tuple<std::string, std::string, std::string>;
  std::set<Key> present;
  for (const auto& w : workloads) {
    const ResourceRef& r = w.workload.resource;
    present.emplace(r.namespace_, r.kind, r.name);
  }
  // "web-5d8f7c9b4" -> "web": the name a generated ReplicaSet or Job was made from.
  auto generator_name = [](std::string_view name) {
    const auto dash = name.rfind('-');
    return dash == std::string_view::npos || dash == 0 ? std::string_view() : name.substr(0, dash);
  };
  auto reported_elsewhere = [&](const PlacedWorkload& w) {
    if (!w.controller) return false;
    const std::string& ns = w.workload.resource.namespace_;
    const ResourceRef& owner = *w.controller;
    if (present.contains(Key{ns, owner.kind, owner.name})) return true;
    const std::string base(generator_name(owner.name));
    if (base.empty()) return false;
    if (owner.kind == "ReplicaSet") return present.contains(Key{ns, "Deployment", base});
    if (owner.kind == "Job") return present.contains(Key{ns, "CronJob", base});
    return false;
  };
  std::vector<PlacedWorkload> kept;
  kept.reserve(workloads.size());
  std::size_t dropped = 0;
  for (auto& w : workloads) {
    if (reported_elsewhere(w)) {
      ++dropped;
    } else {
      kept.push_back(std::move(w));
    }
  }
  workloads = std::move(kept);
  return dropped;
}

}  // namespace cudagate

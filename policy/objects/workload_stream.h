#pragma once
// Reading every workload of a manifest stream for an audit: unlike
// parse_workloads (pod.h), which stops at the first problem, a document or
// object that cannot be read is recorded with its place and the rest are
// still read; objects that are not workloads are counted, not judged.
//
// Shapes read: single objects, multi-document YAML (comments and empty
// documents, as Helm renders them), JSON arrays of objects, and Lists
// (`kubectl get pods,deployments,... -A -o json|yaml`).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/objects/document.h"
#include "policy/objects/json_view.h"
#include "policy/objects/pod.h"
#include "policy/objects/workload_reader.h"
#include "types/expected.h"

namespace cudagate {

// A workload and where it was read: "deploy.yaml:12" (the line its
// document starts on), "pods.json: items[3]".
struct PlacedWorkload {
  Workload workload;
  std::string place;
  // The owner reference marked `controller: true`, when there is one (a Pod
  // of a ReplicaSet, a Job of a CronJob): kind and name, in the workload's
  // namespace.
  std::optional<ResourceRef> controller;
};

struct WorkloadStream {
  std::vector<PlacedWorkload> workloads;
  // Documents that do not parse and objects that are not valid workloads,
  // each naming its place ("chart.yaml:40: spec.containers: is required").
  std::vector<Error> broken;
  std::size_t skipped = 0;  // objects of other kinds (Service, ConfigMap, ...)
};

// Every workload in `text`; `source` names it in places ("<stdin>", a path).
[[nodiscard]] WorkloadStream read_workload_stream(std::string_view text, std::string_view source);

// The workloads of one parsed document `root` at `place` ("pods.json:1"),
// through any JSON view (policy/objects/json_view.h), added to `out`: what
// read_workload_stream does with each document, so that a caller with a
// faster parser for a large JSON file gets the same workloads, places and
// errors.
template <JsonView V>
void read_workload_document(const V& root, const std::string& place, WorkloadStream& out);

namespace workload_stream_detail {

inline std::string join_place(const std::string& outer, const std::string& inner) {
  if (outer.empty()) return inner;
  if (inner.empty()) return outer;
  return outer + ": " + inner;
}

template <JsonView V>
std::optional<ResourceRef> controller_of(const V& object) {
  const V metadata = object.find("metadata");
  if (!metadata.valid() || !metadata.is_object()) return std::nullopt;
  const V owners = metadata.find("ownerReferences");
  if (!owners.valid() || !owners.is_array()) return std::nullopt;
  std::optional<ResourceRef> found;
  owners.for_each_element([&found](std::size_t, const V& owner) {
    if (found || !owner.is_object()) return;
    const V controller = owner.find("controller");
    if (!controller.valid() || !controller.is_boolean() || !controller.boolean()) return;
    const V kind = owner.find("kind");
    const V name = owner.find("name");
    if (!kind.valid() || !kind.is_string() || !name.valid() || !name.is_string()) return;
    const V api_version = owner.find("apiVersion");
    ResourceRef ref;
    if (api_version.valid() && api_version.is_string()) ref.api_version = api_version.string();
    ref.kind = kind.string();
    ref.name = name.string();
    found = std::move(ref);
  });
  return found;
}

// One object at `place`: a workload, a List of objects, or another kind.
template <JsonView V>
void take(const V& value, const std::string& place, bool in_list, WorkloadStream& out) {
  if (!value.is_object()) {
    out.broken.push_back(
        Error{place, "expected a Kubernetes object, got " + std::string(value.type_name())});
    return;
  }
  const V kind_v = value.find("kind");
  if (!kind_v.valid() || kind_v.is_null()) {
    out.broken.push_back(Error{join_place(place, "kind"), "is required"});
    return;
  }
  if (!kind_v.is_string()) {
    out.broken.push_back(Error{join_place(place, "kind"), view_type_error("a string", kind_v)});
    return;
  }
  const std::string_view kind = kind_v.string();
  if (is_workload_kind(kind)) {
    auto workload = workload_from_view(value, place);
    if (!workload) {
      out.broken.push_back(workload.error());
      return;
    }
    out.workloads.push_back(PlacedWorkload{std::move(*workload), place, controller_of(value)});
    return;
  }
  const bool is_list = kind.size() >= 4 && kind.substr(kind.size() - 4) == "List";
  if (!is_list || in_list) {
    ++out.skipped;
    return;
  }
  const V items = value.find("items");
  if (!items.valid() || items.is_null()) return;
  if (!items.is_array()) {
    out.broken.push_back(Error{join_place(place, "items"), view_type_error("a list", items)});
    return;
  }
  items.for_each_element([&](std::size_t i, const V& item) {
    take(item, join_place(place, index_path("items", i)), /*in_list=*/true, out);
  });
}

}  // namespace workload_stream_detail

template <JsonView V>
void read_workload_document(const V& root, const std::string& place, WorkloadStream& out) {
  using workload_stream_detail::join_place;
  if (root.is_array()) {
    // A JSON array of objects reads like a List's items.
    root.for_each_element([&](std::size_t i, const V& item) {
      workload_stream_detail::take(item, join_place(place, index_path("", i)), true, out);
    });
    return;
  }
  workload_stream_detail::take(root, place, /*in_list=*/false, out);
}

// Removes the workloads whose controller is among `workloads` too, so that
// each is reported once, as its controller: a Pod of a ReplicaSet or of a
// Deployment's ReplicaSet ("web-5d8f7c9b4" of Deployment "web"), a Job of a
// CronJob, a Pod of a StatefulSet, DaemonSet or Job. Returns how many were
// removed; the order of the others is kept.
std::size_t drop_controlled(std::vector<PlacedWorkload>& workloads);

}  // namespace cudagate

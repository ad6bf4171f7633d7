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

#include "policy/pod.h"
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

// Removes the workloads whose controller is among `workloads` too, so that
// each is reported once, as its controller: a Pod of a ReplicaSet or of a
// Deployment's ReplicaSet ("web-5d8f7c9b4" of Deployment "web"), a Job of a
// CronJob, a Pod of a StatefulSet, DaemonSet or Job. Returns how many were
// removed; the order of the others is kept.
std::size_t drop_controlled(std::vector<PlacedWorkload>& workloads);

}  // namespace cudagate

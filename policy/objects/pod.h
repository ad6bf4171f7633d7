#pragma once
// Workloads: a Pod, or the pod template of a Deployment, ReplicaSet,
// StatefulSet, DaemonSet, Job or CronJob, reduced to what scheduling and GPU
// compatibility depend on.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/objects/key_values.h"
#include "types/expected.h"

namespace cudagate {

struct EnvVar {
  std::string name;
  std::optional<std::string> value;  // nullopt for valueFrom (not known at admission)
};

// An entry of a container's resources.claims: the pod claim it uses, and
// optionally one request of that claim.
struct ContainerClaim {
  std::string name;
  std::string request;  // "" for every request of the claim
};

// An entry of spec.resourceClaims: a name the containers use for a
// ResourceClaim, named directly or made from a ResourceClaimTemplate for
// each pod.
struct PodClaim {
  std::string name;
  std::string claim_name;     // resourceClaimName
  std::string template_name;  // resourceClaimTemplateName
};

struct ContainerSpec {
  std::string name;
  std::string image;
  bool init = false;
  std::vector<EnvVar> env;
  // Extended resources from limits and requests (limits win), integer
  // counts, sorted by name.
  std::vector<std::pair<std::string, std::int64_t>> resources;
  std::vector<ContainerClaim> claims;  // resources.claims
};

struct NodeSelectorRequirement {
  std::string key;
  std::string op;  // In, NotIn, Exists, DoesNotExist, Gt, Lt
  std::vector<std::string> values;
  friend bool operator==(const NodeSelectorRequirement&, const NodeSelectorRequirement&) = default;
};

struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;
  std::vector<NodeSelectorRequirement> match_fields;
  friend bool operator==(const NodeSelectorTerm&, const NodeSelectorTerm&) = default;
};

struct Toleration {
  std::string key;
  std::string op;  // "", Equal, Exists
  std::string value;
  std::string effect;  // "" = every effect
};

struct PodSpec {
  std::string node_name;
  std::vector<std::pair<std::string, std::string>> node_selector;
  // requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
  // nullopt when the pod has no required node affinity.
  std::optional<std::vector<NodeSelectorTerm>> required_terms;
  std::vector<Toleration> tolerations;
  std::vector<ContainerSpec> containers;  // init containers first, then containers
  std::vector<PodClaim> resource_claims;  // spec.resourceClaims
};

struct ResourceRef {
  std::string api_version;  // "v1", "apps/v1"
  std::string kind;         // "Pod", "Deployment"
  std::string namespace_;
  std::string name;

  friend bool operator==(const ResourceRef&, const ResourceRef&) = default;
};

struct Workload {
  ResourceRef resource;
  // The pod's annotations: the template's, over the object's own.
  KeyValues annotations;
  PodSpec spec;
  std::string spec_pointer;  // JSON pointer of the pod spec: "/spec", "/spec/template/spec"

  [[nodiscard]] const std::string* annotation(std::string_view key) const;
};

// True for the kinds whose pods cudagate judges.
[[nodiscard]] bool is_workload_kind(std::string_view kind);

// Extended resources: names with a domain other than kubernetes.io or
// *.kubernetes.io ("nvidia.com/gpu", "nvidia.com/mig-1g.10gb").
[[nodiscard]] bool is_extended_resource(std::string_view name);

// A Kubernetes quantity that must be a whole count, as extended resources
// must: 2, "2", "2k", "1000m". "1.5", "500m" and negative values are errors
// (without a place: the caller names the field).
Expected<std::int64_t> parse_count_quantity(const nlohmann::json& value);
// The same for a quantity written as a string ("2", "2k", "1000m").
Expected<std::int64_t> parse_count_text(std::string_view text);

// One object -> workload (policy/objects/workload_reader.h holds the mapping, over
// any JSON parser). Errors name `where` and the field path
// ("spec.containers[1].resources.limits.nvidia.com/gpu: expected an integer").
// A pod spec without containers is an error. A DaemonSet's pod spec gets the
// tolerations its controller adds to every daemon pod (cordoned nodes, node
// conditions), so that its candidates are the nodes its pods can run on.
Expected<Workload> workload_from_json(const nlohmann::json& object, std::string_view where);

// Every workload in a JSON or YAML text: single objects, multi-document
// YAML, Lists (kubectl get ... -o json). Objects of other kinds are skipped.
Expected<std::vector<Workload>> parse_workloads(std::string_view text, std::string_view source);

}  // namespace cudagate

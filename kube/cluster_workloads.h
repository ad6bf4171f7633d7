#pragma once
// What an audit of a live cluster reads from its API server: the Nodes and
// the workloads (Pods and the controllers that own pods), list page by
// list page, into the same values `cudagate audit` reads from files.
//
// read_workload_page() and read_node_page() are pure: a page (items with
// kind and apiVersion filled in, as ApiClient::list hands them on) in,
// workloads or nodes out, by the same mappings as manifests and --nodes
// files. Items that cannot be read are recorded with the object's name and
// the field, and the others still read. The list_* functions make the
// requests, with a BlockingApiClient, so they block the calling thread.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kube/api_calls.h"
#include "kube/api_client.h"
#include "policy/objects/dra.h"
#include "policy/objects/node.h"
#include "policy/objects/node_pool.h"
#include "policy/objects/workload_stream.h"
#include "types/expected.h"

namespace cudagate::kube {

// The workloads of one list page of `call`'s collection, added to `out`.
// Their place is "" (they come from no file); a broken item is an Error at
// "pods ml/trainer-0: spec.containers: ...".
void read_workload_page(const nlohmann::json& page, ApiCallId call, WorkloadStream& out);

// The Nodes of one NodeList page, added to `out`; unreadable ones go to
// `skipped`, named.
void read_node_page(const nlohmann::json& page, std::vector<Node>& out,
                    std::vector<Error>& skipped);

// Every workload of the collections `calls` (kClusterAuditLists,
// kBackgroundAuditLists), of `namespace_` only unless it is empty, before
// drop_controlled(). A list that restarts (an expired continue token)
// replaces what its earlier pages gave. Errors: the first list that failed.
[[nodiscard]] Expected<WorkloadStream> list_cluster_workloads(BlockingApiClient& client,
                                                              std::span<const ApiCallId> calls,
                                                              const std::string& namespace_);

// Every Node of the cluster (the call's collection).
struct NodeListing {
  std::vector<Node> nodes;
  std::vector<Error> skipped;
};
[[nodiscard]] Expected<NodeListing> list_cluster_nodes(BlockingApiClient& client, ApiCallId call);

// Dynamic Resource Allocation (resource.k8s.io), each collection listed at
// the newest of kDraVersions the server serves; a cluster that serves none
// (404 for each) has none, which is no error.

// Whether a ResourceClaim object was made for one pod from its template
// (owned by a Pod, or annotated resource.kubernetes.io/pod-claim-name): no
// pod names it (the pod names the template), and there is one per pod.
[[nodiscard]] bool made_for_pod(const nlohmann::json& claim);

// The claim or template of one object (kind and apiVersion filled in), or
// nullopt for a claim made for a pod; an Error names the object
// ("ResourceClaimTemplate ml/one-gpu: spec.spec.devices: ...").
[[nodiscard]] Expected<std::optional<ClaimSpec>> read_claim_object(const nlohmann::json& object);

// Every ResourceSlice of the cluster, listed as `call`; unreadable ones go
// to `skipped`.
struct SliceListing {
  std::vector<ResourceSlice> slices;
  std::vector<Error> skipped;
  std::string version;  // the version read, "" when the cluster serves none
};
[[nodiscard]] Expected<SliceListing> list_cluster_slices(
    BlockingApiClient& client, ApiCallId call = ApiCallId::cluster_list_resourceslices);

// Every Karpenter NodePool (karpenter.sh, kKarpenterVersions), listed as
// `call`; a cluster without Karpenter has none, which is no error.
// Unreadable ones go to `skipped`.
struct NodePoolListing {
  std::vector<NodePool> pools;
  std::vector<Error> skipped;
  bool served = false;  // whether the cluster serves NodePools
};
[[nodiscard]] Expected<NodePoolListing> list_cluster_node_pools(
    BlockingApiClient& client, ApiCallId call = ApiCallId::cluster_list_nodepools);

// Every ResourceClaimTemplate and ResourceClaim (of `namespace_` only
// unless it is empty), without the claims made for pods.
struct ClaimListing {
  std::vector<ClaimSpec> claims;
  std::vector<Error> skipped;
};
[[nodiscard]] Expected<ClaimListing> list_cluster_claims(BlockingApiClient& client,
                                                         const std::string& namespace_);

}  // namespace cudagate::kube

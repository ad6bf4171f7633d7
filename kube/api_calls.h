#pragma once
// Every call cudagate makes to the Kubernetes API server, in one table.
//
// A request is made only through a row of this table: the API client
// (api_client.h) and the node watcher take an ApiCallId and build the
// request path from its row (group, version, resource), so the table
// cannot drift from what the binary does. `cudagate api-calls` prints it
// as JSON, the list a ClusterRole must grant: verb and resource as RBAC
// names them ("patch" for a server-side apply), group "" for the core
// API, `rbac` every verb the call needs granted, and `when` the feature
// that makes the call:
//
//   inventory         serve --in-cluster / --kubeconfig: the node inventory
//   background-audit  serve --audit-interval: what already runs
//   write-reports     serve --write-reports: PolicyReport or Report objects
//   audit-cluster     audit --cluster (the CLI, with the user's kubeconfig)
//   explain           explain pod NAME (the CLI): the pod, its events, the nodes
//
// Dynamic Resource Allocation (resource.k8s.io) rows name the version
// cudagate prefers, v1; a cluster that serves only an older version of
// the group (1.32-1.33: v1beta2, v1beta1) is asked for that one instead
// (kDraVersions, ApiCall::at_version), and RBAC, which names groups and
// resources and not versions, grants them all alike.
//
// A new call is a new ApiCallId and a new row, at the same index.

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace cudagate::kube {

struct ApiCall {
  std::string_view verb;      // RBAC verb: get, list, watch, patch, delete
  std::string_view group;     // "" = the core API ("/api/v1")
  std::string_view version;   // "v1", "v1alpha2", ...
  std::string_view resource;  // plural, as in the URL and in RBAC
  std::string_view kind;      // of the objects (list items carry no kind)
  bool namespaced = false;
  std::string_view when;
  // A verb RBAC checks besides `verb`, or "": a server-side apply (patch)
  // of an object that does not exist yet creates it, and the API server
  // authorizes that as "create" too (k8s.io/apiserver
  // pkg/endpoints/handlers/patch.go, createAuthorizerAttributes).
  std::string_view also = {};

  // "/api/v1" or "/apis/GROUP/VERSION".
  [[nodiscard]] std::string group_version_path() const;
  // The collection: "/api/v1/nodes", "/api/v1/namespaces/NS/pods", or
  // "/api/v1/pods" (every namespace) when `namespace_` is empty.
  [[nodiscard]] std::string collection_path(std::string_view namespace_) const;
  // One object of the collection: collection_path(namespace_) + "/" + name.
  [[nodiscard]] std::string object_path(std::string_view namespace_, std::string_view name) const;
  // "apps/v1" or "v1", as objects' apiVersion says it.
  [[nodiscard]] std::string api_version() const;
  // The same call at another version of its group ("" = this one).
  [[nodiscard]] constexpr ApiCall at_version(std::string_view other) const {
    ApiCall out = *this;
    if (!other.empty()) out.version = other;
    return out;
  }
};

// The versions of resource.k8s.io cudagate reads, newest first: each is
// tried when the server answers 404 for the one before.
inline constexpr std::array<std::string_view, 3> kDraVersions{"v1", "v1beta2", "v1beta1"};
// The versions of karpenter.sh cudagate reads: v1 alone (Karpenter 1.0 and
// later); a cluster that serves none runs without NodePools.
inline constexpr std::array<std::string_view, 1> kKarpenterVersions{"v1"};

enum class ApiCallId : unsigned char {
  inventory_list_nodes,
  inventory_watch_nodes,
  background_list_pods,
  background_list_deployments,
  background_list_statefulsets,
  background_list_daemonsets,
  background_list_replicasets,
  background_list_jobs,
  background_list_cronjobs,
  write_list_policyreports,
  write_apply_policyreports,
  write_delete_policyreports,
  write_list_reports,
  write_apply_reports,
  write_delete_reports,
  cluster_list_nodes,
  cluster_list_pods,
  cluster_list_deployments,
  cluster_list_statefulsets,
  cluster_list_daemonsets,
  cluster_list_replicasets,
  cluster_list_jobs,
  cluster_list_cronjobs,
  explain_get_pod,
  explain_list_events,
  explain_list_nodes,
  inventory_list_resourceslices,
  inventory_watch_resourceslices,
  inventory_list_resourceclaimtemplates,
  inventory_watch_resourceclaimtemplates,
  inventory_list_resourceclaims,
  inventory_watch_resourceclaims,
  cluster_list_resourceslices,
  cluster_list_resourceclaimtemplates,
  cluster_list_resourceclaims,
  inventory_list_nodepools,
  inventory_watch_nodepools,
  cluster_list_nodepools,
  explain_list_resourceslices,
  explain_list_nodepools,
  count_  // not a call
};

inline constexpr std::array<ApiCall, static_cast<std::size_t>(ApiCallId::count_)> kApiCalls{{
    {"list", "", "v1", "nodes", "Node", false, "inventory"},
    {"watch", "", "v1", "nodes", "Node", false, "inventory"},
    {"list", "", "v1", "pods", "Pod", true, "background-audit"},
    {"list", "apps", "v1", "deployments", "Deployment", true, "background-audit"},
    {"list", "apps", "v1", "statefulsets", "StatefulSet", true, "background-audit"},
    {"list", "apps", "v1", "daemonsets", "DaemonSet", true, "background-audit"},
    {"list", "apps", "v1", "replicasets", "ReplicaSet", true, "background-audit"},
    {"list", "batch", "v1", "jobs", "Job", true, "background-audit"},
    {"list", "batch", "v1", "cronjobs", "CronJob", true, "background-audit"},
    {"list", "wgpolicyk8s.io", "v1alpha2", "policyreports", "PolicyReport", true, "write-reports"},
    {"patch", "wgpolicyk8s.io", "v1alpha2", "policyreports", "PolicyReport", true, "write-reports",
     "create"},
    {"delete", "wgpolicyk8s.io", "v1alpha2", "policyreports", "PolicyReport", true,
     "write-reports"},
    {"list", "openreports.io", "v1alpha1", "reports", "Report", true, "write-reports"},
    {"patch", "openreports.io", "v1alpha1", "reports", "Report", true, "write-reports", "create"},
    {"delete", "openreports.io", "v1alpha1", "reports", "Report", true, "write-reports"},
    {"list", "", "v1", "nodes", "Node", false, "audit-cluster"},
    {"list", "", "v1", "pods", "Pod", true, "audit-cluster"},
    {"list", "apps", "v1", "deployments", "Deployment", true, "audit-cluster"},
    {"list", "apps", "v1", "statefulsets", "StatefulSet", true, "audit-cluster"},
    {"list", "apps", "v1", "daemonsets", "DaemonSet", true, "audit-cluster"},
    {"list", "apps", "v1", "replicasets", "ReplicaSet", true, "audit-cluster"},
    {"list", "batch", "v1", "jobs", "Job", true, "audit-cluster"},
    {"list", "batch", "v1", "cronjobs", "CronJob", true, "audit-cluster"},
    {"get", "", "v1", "pods", "Pod", true, "explain"},
    {"list", "", "v1", "events", "Event", true, "explain"},
    {"list", "", "v1", "nodes", "Node", false, "explain"},
    {"list", "resource.k8s.io", "v1", "resourceslices", "ResourceSlice", false, "inventory"},
    {"watch", "resource.k8s.io", "v1", "resourceslices", "ResourceSlice", false, "inventory"},
    {"list", "resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", true,
     "inventory"},
    {"watch", "resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", true,
     "inventory"},
    {"list", "resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", true, "inventory"},
    {"watch", "resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", true, "inventory"},
    {"list", "resource.k8s.io", "v1", "resourceslices", "ResourceSlice", false, "audit-cluster"},
    {"list", "resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", true,
     "audit-cluster"},
    {"list", "resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", true, "audit-cluster"},
    {"list", "karpenter.sh", "v1", "nodepools", "NodePool", false, "inventory"},
    {"watch", "karpenter.sh", "v1", "nodepools", "NodePool", false, "inventory"},
    {"list", "karpenter.sh", "v1", "nodepools", "NodePool", false, "audit-cluster"},
    {"list", "resource.k8s.io", "v1", "resourceslices", "ResourceSlice", false, "explain"},
    {"list", "karpenter.sh", "v1", "nodepools", "NodePool", false, "explain"},
}};

[[nodiscard]] constexpr const ApiCall& api_call(ApiCallId id) {
  return kApiCalls[static_cast<std::size_t>(id)];
}

// The workload collections an audit lists, pods first, for the CLI
// (audit-cluster) and for the server (background-audit).
inline constexpr std::array<ApiCallId, 7> kClusterAuditLists{
    ApiCallId::cluster_list_pods,         ApiCallId::cluster_list_deployments,
    ApiCallId::cluster_list_statefulsets, ApiCallId::cluster_list_daemonsets,
    ApiCallId::cluster_list_replicasets,  ApiCallId::cluster_list_jobs,
    ApiCallId::cluster_list_cronjobs};
inline constexpr std::array<ApiCallId, 7> kBackgroundAuditLists{
    ApiCallId::background_list_pods,         ApiCallId::background_list_deployments,
    ApiCallId::background_list_statefulsets, ApiCallId::background_list_daemonsets,
    ApiCallId::background_list_replicasets,  ApiCallId::background_list_jobs,
    ApiCallId::background_list_cronjobs};

// The table as `cudagate api-calls` prints it: a JSON array of
// {"verb", "group", "resource", "rbac", "when"}, in table order, one row
// a line; "rbac" is [verb] or [verb, also].
[[nodiscard]] std::string api_calls_json();

}  // namespace cudagate::kube

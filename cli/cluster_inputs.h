#pragma once
// A live cluster as what a command judges (`audit --cluster`, `plan
// --cluster`): the flags that name it, their checks, and what is read from
// it, its Pods and pod controllers and its Nodes, with the user's own
// kubeconfig or the pod's service account.

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "cli/manifest_inputs.h"
#include "compat-db/compat_db.h"
#include "kube/api_calls.h"
#include "kube/api_client.h"
#include "policy/inventory/inventory.h"

namespace cudagate::cli {

struct ClusterOptions {
  bool cluster = false;
  bool in_cluster = false;
  std::string kubeconfig;
  std::string namespace_;  // "" = every namespace
  bool all_namespaces = false;
};

// --cluster (described by `cluster_help`), --in-cluster, --kubeconfig,
// -n/--namespace and -A/--all-namespaces on `command`.
void add_cluster_options(CLI::App& command, ClusterOptions& options,
                         const std::string& cluster_help);

// Ends the command (cli::fail) for cluster flags without --cluster, or
// that exclude each other; `inputs` names the manifests --cluster replaces
// ("PATHs", "-f"), `has_inputs` whether any were given.
void check_cluster_options(const ClusterOptions& options, bool has_inputs, std::string_view inputs);

// The calls that list a cluster's node inventory, as `cudagate api-calls`
// names them for the command that makes them.
struct InventoryCalls {
  kube::ApiCallId nodes;
  kube::ApiCallId slices;
  kube::ApiCallId pools;
};
inline constexpr InventoryCalls kClusterInventoryCalls{kube::ApiCallId::cluster_list_nodes,
                                                       kube::ApiCallId::cluster_list_resourceslices,
                                                       kube::ApiCallId::cluster_list_nodepools};
inline constexpr InventoryCalls kExplainInventoryCalls{kube::ApiCallId::explain_list_nodes,
                                                       kube::ApiCallId::explain_list_resourceslices,
                                                       kube::ApiCallId::explain_list_nodepools};

// The cluster's node inventory: its Nodes, with the devices of their
// ResourceSlices where resource.k8s.io is served, and a node for each
// Karpenter NodePool where karpenter.sh is (docs/contract.md §2.7). Nodes,
// slices and NodePools that cannot be read are left out, each named in a
// warning. Ends the command (cli::fail) where a list fails.
[[nodiscard]] Inventory cluster_inventory(kube::BlockingApiClient& client, const CompatDb& db,
                                          const InventoryCalls& calls);

// What a command judges: the node inventory of `nodes` (a file, "-") or,
// when it is empty, of the cluster; and the workloads of the manifests
// `paths` or, with --cluster, of the cluster: Pods and the controllers that
// own pods, listed page by page, each reported once, as its controller.
// Nodes a cluster lists that cannot be read are left out, each named in a
// warning. Ends the command (cli::fail) where nothing can be read.
struct JudgedInputs {
  Inventory inventory;
  ManifestInputs manifests;
};
[[nodiscard]] JudgedInputs read_judged_inputs(const ClusterOptions& cluster,
                                              const std::vector<std::string>& paths,
                                              const std::string& nodes, const CompatDb& db);

}  // namespace cudagate::cli

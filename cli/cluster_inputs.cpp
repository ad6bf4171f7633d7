#include "cli/cluster_inputs.h"

#include <spdlog/spdlog.h>

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "cli/common.h"
#include "inputs/node_loader.h"
#include "kube/api_client.h"
#include "kube/cluster_workloads.h"
#include "policy/inventory/inventory_pools.h"
#include "policy/objects/node_pool.h"
#include "policy/objects/workload_stream.h"

namespace cudagate::cli {

void add_cluster_options(CLI::App& command, ClusterOptions& options,
                         const std::string& cluster_help) {
  command.add_flag("--cluster", options.cluster, cluster_help);
  command.add_flag("--in-cluster", options.in_cluster,
                   "With --cluster: the cluster this pod runs in (service account token and CA)");
  command
      .add_option("--kubeconfig", options.kubeconfig,
                  "With --cluster: the kubeconfig whose current context to use (default: "
                  "$KUBECONFIG, else ~/.kube/config)")
      ->type_name("FILE");
  command
      .add_option("-n,--namespace", options.namespace_,
                  "With --cluster: the workloads of this namespace only")
      ->type_name("NAMESPACE");
  command.add_flag("-A,--all-namespaces", options.all_namespaces,
                   "With --cluster: the workloads of every namespace (the default)");
}

void check_cluster_options(const ClusterOptions& options, bool has_inputs,
                           std::string_view inputs) {
  if (options.cluster && has_inputs) {
    fail(Error{"--cluster", "give either " + std::string(inputs) + " or --cluster, not both"});
  }
  if (!options.cluster && (options.in_cluster || !options.kubeconfig.empty() ||
                           !options.namespace_.empty() || options.all_namespaces)) {
    fail(Error{options.in_cluster            ? "--in-cluster"
               : !options.kubeconfig.empty() ? "--kubeconfig"
               : options.all_namespaces      ? "--all-namespaces"
                                             : "--namespace",
               "only with --cluster"});
  }
  if (options.in_cluster && !options.kubeconfig.empty()) {
    fail(Error{"--in-cluster", "give one of --in-cluster and --kubeconfig"});
  }
  if (options.all_namespaces && !options.namespace_.empty()) {
    fail(Error{"--all-namespaces", "give one of --namespace and --all-namespaces"});
  }
}

namespace {

ManifestInputs read_cluster(kube::BlockingApiClient& client, const std::string& namespace_) {
  WorkloadStream stream =
      value_or_fail(kube::list_cluster_workloads(client, kube::kClusterAuditLists, namespace_));
  ManifestInputs in;
  in.workloads = std::move(stream.workloads);
  in.broken = std::move(stream.broken);
  in.skipped = stream.skipped;
  in.controlled = drop_controlled(in.workloads);
  kube::ClaimListing claims = value_or_fail(kube::list_cluster_claims(client, namespace_));
  for (const Error& skipped : claims.skipped) spdlog::warn("claim left out: {}", skipped.str());
  for (ClaimSpec& claim : claims.claims) in.claims.add(std::move(claim));
  spdlog::debug("cluster: {} workloads, {} reported as their controller, {} unreadable",
                in.workloads.size(), in.controlled, in.broken.size());
  return in;
}

}  // namespace

Inventory cluster_inventory(kube::BlockingApiClient& client, const CompatDb& db,
                            const InventoryCalls& calls) {
  kube::NodeListing listing = value_or_fail(kube::list_cluster_nodes(client, calls.nodes));
  for (const Error& skipped : listing.skipped) spdlog::warn("node left out: {}", skipped.str());
  // Dynamic Resource Allocation: the listed nodes' devices from their ResourceSlices.
  const kube::SliceListing slices = value_or_fail(kube::list_cluster_slices(client, calls.slices));
  for (const Error& skipped : slices.skipped) {
    spdlog::warn("ResourceSlice left out: {}", skipped.str());
  }
  std::vector<Node> nodes = std::move(listing.nodes);
  if (!slices.slices.empty()) {
    auto kinds = device_kinds_by_node(slices.slices);
    for (Node& node : nodes) {
      if (auto it = kinds.find(node.name); it != kinds.end()) {
        attach_devices(node, std::move(it->second));
      }
    }
  }
  spdlog::debug("cluster: {} nodes, {} ResourceSlices{}", nodes.size(), slices.slices.size(),
                slices.version.empty() ? " (no resource.k8s.io API)"
                                       : " (resource.k8s.io/" + slices.version + ")");
  // Karpenter: each NodePool stands for its next node (docs/contract.md §2.7).
  const kube::NodePoolListing pools =
      value_or_fail(kube::list_cluster_node_pools(client, calls.pools));
  for (const Error& skipped : pools.skipped) spdlog::warn("NodePool left out: {}", skipped.str());
  if (pools.served) spdlog::debug("cluster: {} NodePools", pools.pools.size());
  auto inventory = std::make_shared<const Inventory>(Inventory::build(nodes, db));
  return *with_pools(std::move(inventory), pools.pools, db);
}

JudgedInputs read_judged_inputs(const ClusterOptions& cluster,
                                const std::vector<std::string>& paths, const std::string& nodes,
                                const CompatDb& db) {
  std::optional<kube::BlockingApiClient> client;
  if (cluster.cluster)
    client.emplace(cluster_config_or_fail(cluster.in_cluster, cluster.kubeconfig));
  Inventory inventory = nodes.empty() ? cluster_inventory(*client, db, kClusterInventoryCalls)
                                      : value_or_fail(load_inventory(nodes, db));
  ManifestInputs manifests = cluster.cluster ? read_cluster(*client, cluster.namespace_)
                                             : read_manifest_inputs(manifest_files(paths));
  return JudgedInputs{std::move(inventory), std::move(manifests)};
}

}  // namespace cudagate::cli

// `cudagate api-calls`: every call the binary makes to the Kubernetes API
// server (kube/api_calls.h), as JSON, for writing and testing the
// ClusterRole that the deployment grants.

#include "kube/api_calls.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"

namespace cudagate {

void add_api_calls_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand(
      "api-calls", "Print every Kubernetes API call cudagate makes, as JSON (for RBAC)");
  command->footer(
      "One object a call: verb and resource as RBAC names them (a server-side apply is\n"
      "\"patch\"), group (\"\" is the core API) and when the call is made: inventory (serve\n"
      "--in-cluster/--kubeconfig), background-audit (serve --audit-interval), write-reports\n"
      "(serve --write-reports), audit-cluster (audit --cluster).");
  command->callback([] { std::cout << kube::api_calls_json() << std::flush; });
}

}  // namespace cudagate

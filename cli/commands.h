#pragma once
// The `cudagate` subcommands. main() builds one CLI::App and hands it to each
// add_*_command, which registers its subcommand, its flags and a callback.
//
// Exit-code contract shared by every subcommand callback: returning normally
// means exit 0; any other status is reported by throwing
// CLI::RuntimeError(code) after the command printed its own output (main
// turns it into the process exit code and prints nothing more). Errors a
// person must act on go through cli::fail() (common.h), which prints the
// one-line `cudagate: error: ...` message and throws CLI::RuntimeError(2).

namespace CLI {
class App;
}

namespace cudagate {

// `cudagate serve`: the HTTPS admission webhook (server/serve.h). A start-up
// failure is reported through cli::fail(), so it exits with status 2.
void add_serve_command(CLI::App& app);
// `cudagate audit PATH...`: judge every workload of a set of manifests
// against an inventory and print a report (table, json, policyreport,
// openreports, html, junit).
void add_audit_command(CLI::App& app);
// `cudagate plan`: what a driver rollout, node pool or image change does to
// the workloads of a set of manifests, before it is made.
void add_plan_command(CLI::App& app);
// `cudagate explain`: why a pod failed, from its status, its events and its
// node, offline or from the API server.
void add_explain_command(CLI::App& app);
// `cudagate check`: explain an image or workload against one node or an inventory.
void add_check_command(CLI::App& app);
// `cudagate db show` / `cudagate db lint FILE...`: the compatibility matrix.
void add_db_command(CLI::App& app);
// `cudagate scan`: the GPU code, CUDA runtime and framework an image's files
// hold (an OCI layout, a docker archive or a root file system).
void add_scan_command(CLI::App& app);
// `cudagate version`: version, build and compat-db revision.
void add_version_command(CLI::App& app);
// `cudagate api-calls`: the Kubernetes API calls the binary makes, as JSON.
void add_api_calls_command(CLI::App& app);

}  // namespace cudagate

#pragma once
// What every `cudagate` subcommand shares: the common flags, reading input
// files (or stdin), loading the compat-db, the policy, the node inventory and
// workloads with errors that name the file, and the logging setup.
//
// Error contract: bad usage or unreadable input ends the process with exit
// status 2 and exactly one line on stderr,
//   cudagate: error: <file>: <field>: <what was expected>
// produced by fail() (see commands.h for how the status reaches main()).

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compat-db/compat_db.h"
#include "inputs/input_files.h"
#include "kube/cluster_config.h"
#include "policy/config/policy.h"
#include "policy/inventory/inventory.h"
#include "policy/objects/pod.h"
#include "policy/rules/metadata.h"
#include "types/expected.h"
#include "types/quote.h"

namespace CLI {
class App;
}

namespace cudagate::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFindings = 1;  // a policy failure was found
inline constexpr int kExitUsage = 2;     // bad usage or unreadable input

// The flags every subcommand accepts (docs/contract.md §1). Empty strings
// mean "not given".
struct CommonOptions {
  std::string config;     // --config FILE: the policy; defaults when absent
  std::string nodes;      // --nodes FILE: the node inventory
  std::string compat_db;  // --compat-db FILE: replaces the embedded matrix
  std::string log_level = "info";
  std::string log_format = "text";  // text | json
};

// Adds --config, --nodes, --compat-db, --log-level and --log-format to
// `command`. `options` must outlive parsing and the command's callback.
void add_common_options(CLI::App& command, CommonOptions& options);

// Installs the process's logger (server/logging.h) at --log-level, in
// --log-format.
void setup_logging(const CommonOptions& options);

// The embedded matrix, or the one file given with --compat-db.
Expected<CompatDb> load_compat_db_option(const CommonOptions& options);
// The policy of --config, or the defaults when it is absent.
Expected<Policy> load_policy_option(const CommonOptions& options, const CompatDb& db);

// `inventory` with the nodes of the policy's node pools (with_pools).
[[nodiscard]] Inventory with_policy_pools(Inventory inventory, const Policy& policy,
                                          const CompatDb& db);
// The cluster of --in-cluster (the pod's service account), else of the
// kubeconfig `kubeconfig` (empty: the first file of $KUBECONFIG, else
// ~/.kube/config); an unreadable or invalid one fails.
[[nodiscard]] kube::ClusterConfig cluster_config_or_fail(bool in_cluster,
                                                         const std::string& kubeconfig);

// Prints `cudagate: error: <error>` as one line on stderr (line breaks in
// the message become spaces).
void print_error(const Error& error);

// The image configs of the GPU containers of `workloads` (those the policy
// catalog does not describe) from their registries, as the server reads
// them (registry/registry_client.h), within the policy's registry.timeout:
// one RegistryFacts per workload, in order. Nothing is read when `offline`
// or registry.enabled is false. A registry settings error (caFile) fails.
[[nodiscard]] std::vector<RegistryFacts> registry_facts(
    const std::vector<const Workload*>& workloads, const Policy& policy, const Inventory& inventory,
    bool offline);
// print_error(), then ends the command with exit status 2.
[[noreturn]] void fail(const Error& error);

template <class T>
T value_or_fail(Expected<T> result) {
  if (!result) fail(result.error());
  return std::move(result).value();
}

// Ends the command with `status` (0 returns normally from the callback).
void exit_with(int status);

// Whether stdout is a terminal that should get colour: a tty, NO_COLOR
// unset and TERM not "dumb".
[[nodiscard]] bool stdout_wants_colour();

// ANSI styling for terminal output; every call returns the text unchanged
// when colour is off.
class Paint {
 public:
  explicit Paint(bool enabled) : enabled_(enabled) {}
  [[nodiscard]] bool enabled() const { return enabled_; }
  [[nodiscard]] std::string bold(std::string_view text) const { return wrap(text, "1"); }
  [[nodiscard]] std::string dim(std::string_view text) const { return wrap(text, "2"); }
  [[nodiscard]] std::string red(std::string_view text) const { return wrap(text, "1;31"); }
  [[nodiscard]] std::string green(std::string_view text) const { return wrap(text, "1;32"); }
  [[nodiscard]] std::string yellow(std::string_view text) const { return wrap(text, "1;33"); }

 private:
  [[nodiscard]] std::string wrap(std::string_view text, std::string_view code) const;
  bool enabled_ = false;
};

// An NVIDIA_REQUIRE_* value shortened for a terminal: the nvidia/cuda images
// repeat one brand-qualified clause per brand and driver branch, which reads
// better as "cuda>=12.8, or forward compatibility on drivers 470+, 535+
// (brands tesla, unknown and 8 more)". Other values come back unchanged.
[[nodiscard]] std::string summarise_requirement(const std::string& text);

// `"text"` with quotes, cut to a readable length, for error messages.
using cudagate::quote;

}  // namespace cudagate::cli

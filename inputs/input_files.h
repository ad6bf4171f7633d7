#pragma once
// Reading the files cudagate is given: the compatibility matrix, the policy,
// the node inventory and workload manifests, whole, from a path or stdin.
// Shared by the server's start-up and reloads and by the command line, so
// that every reader names the file in its errors the same way.

#include <string>
#include <string_view>
#include <vector>

#include "compat-db/compat_db.h"
#include "policy/config/policy.h"
#include "policy/inventory/inventory.h"
#include "policy/objects/dra.h"
#include "policy/objects/pod.h"
#include "types/expected.h"

namespace cudagate {

// How a path is named in messages: "-" is "<stdin>", others as given.
[[nodiscard]] std::string display_name(std::string_view path);

// The whole content of `path`, or of stdin for "-". An unreadable file is
// Error{"<path>", "cannot read: <strerror>"}.
Expected<std::string> read_input(const std::string& path);

// The embedded matrix when `path` is empty, else the one file at `path`.
Expected<CompatDb> load_compat_db_file(const std::string& path);
// The policy at `path`, or the defaults when `path` is empty.
Expected<Policy> load_policy_file(const std::string& path, const CompatDb& db);
// A `kubectl get nodes -o json|yaml` file, indexed.
Expected<Inventory> load_inventory_file(const std::string& path, const CompatDb& db);
// Every workload (Pod or pod-owning kind) in a JSON or YAML file; a file
// without any is an error. With `claims`, the ResourceClaims and
// ResourceClaimTemplates of the file are added there, and a file that holds
// only those is no error.
Expected<std::vector<Workload>> load_workloads_file(const std::string& path,
                                                    std::vector<ClaimSpec>* claims = nullptr);

// The ResourceClaims and ResourceClaimTemplates of a manifest text; a text
// that names neither kind is not parsed again.
Expected<std::vector<ClaimSpec>> claims_in_text(std::string_view text, std::string_view source);

}  // namespace cudagate

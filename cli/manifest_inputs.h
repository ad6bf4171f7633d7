#pragma once
// The manifests a command judges (`audit`, `plan`): files and folders as
// given on the command line, and every workload read from them, with what
// could not be read. Ends the command (cli::fail) for a path that does not
// exist; a document that does not parse is recorded, not fatal.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/common.h"
#include "policy/objects/dra.h"
#include "policy/objects/workload_stream.h"

namespace cudagate::cli {

// "-" and files as given, folders walked recursively for .yaml, .yml and
// .json files in name order.
[[nodiscard]] std::vector<std::string> manifest_files(const std::vector<std::string>& paths);

// Everything read from the inputs, before any decision.
struct ManifestInputs {
  std::vector<PlacedWorkload> workloads;
  // The ResourceClaims and ResourceClaimTemplates their pods may name.
  ClaimCatalog claims;
  std::vector<Error> broken;
  std::size_t skipped = 0;     // objects that are not workloads
  std::size_t controlled = 0;  // reported as their controller instead
};

// The workloads of `files`; pods whose controller is among them are
// dropped (drop_controlled).
[[nodiscard]] ManifestInputs read_manifest_inputs(const std::vector<std::string>& files);

// The reports' time: SOURCE_DATE_EPOCH when set (fails when it is not a
// number of seconds), else now, in seconds since 1970.
[[nodiscard]] std::int64_t report_time();

}  // namespace cudagate::cli

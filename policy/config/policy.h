#pragma once
// The policy file (docs/contract.md §4): apiVersion cudagate.io/v1alpha1,
// kind Policy. Every field has its default when absent; unknown fields and
// bad values are errors naming the file, the line and the field:
//   policy.yaml:7: unknownImage: expected one of allow, warn, deny, got "maybe"
//
// apiVersion and kind are optional, so that an empty file is the default
// policy and a file holding only `mode: warn` is a valid policy; when present
// they must be cudagate.io/v1alpha1 and Policy, so a manifest of another kind
// handed to --config by mistake is refused rather than read as defaults.
// An explicit null (`images:` with nothing after it) means the default.

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/image/arch_list.h"
#include "policy/objects/node_pool.h"
#include "types/expected.h"

namespace cudagate {

enum class Mode : unsigned char { enforce, warn, dryrun };
enum class Action : unsigned char { allow, warn, deny };
enum class PartialAction : unsigned char { deny, warn };

// Which part of the NVIDIA container stack checks NVIDIA_REQUIRE_* on the
// nodes (policy toolkitMode).
//  - legacy: the toolkit's legacy and csv modes, where nvidia-container-cli
//    (or the CSV modifier) evaluates every requirement before the container
//    starts and refuses it with "unsatisfied condition";
//  - cdi: the toolkit's cdi and jit-cdi modes (jit-cdi is the default of
//    current toolkits) and runtimes that inject devices from CDI specs, none
//    of which checks NVIDIA_REQUIRE_* (nvidia-container-toolkit issue 1470);
//    what a container meets there is the CUDA runtime's own check.
enum class ToolkitMode : unsigned char { legacy, cdi };

// Catalog entry: metadata declared for images whose reference matches.
struct CatalogEntry {
  std::string match;  // glob on the normalised reference: "registry.example.com/ml/*"
  std::optional<std::string> cuda_version;
  std::optional<std::string> arch_list;     // TORCH_CUDA_ARCH_LIST syntax
  std::optional<std::string> require_cuda;  // NVIDIA_REQUIRE_CUDA value
};

struct RegistrySettings {
  bool enabled = true;
  std::chrono::milliseconds timeout{2000};
  std::chrono::seconds cache_ttl{600};
  std::size_t max_cache_entries = 10000;
  std::string platform = "linux/amd64";
  std::string credentials = "/etc/cudagate/registry/config.json";
  std::vector<std::string> insecure;
  std::string ca_file;
  std::map<std::string, std::string> mirrors;
  // Whether a lookup also asks for the scan attached to the image manifest
  // (policy scan.attached; docs/contract.md §6).
  bool scan_attached = true;
};

// What decisions take from image scans (docs/scan.md): the files whose
// architectures count, as globs over the file's path in the image
// ("/opt/app/lib/*.so"); empty: the framework's own libraries where a
// framework is found, else every CUDA library that is not NVIDIA's own.
// Whether scans are looked for at all is registry.scan_attached.
struct ScanSettings {
  std::vector<std::string> counted_files;
  // serve scans images with no attached scan itself, one at a time, within
  // these bounds (layer bytes as stored): per image and per hour.
  bool background = false;
  std::uint64_t max_image_bytes = std::uint64_t{16} << 30;
  std::uint64_t max_bytes_per_hour = std::uint64_t{64} << 30;
};

struct Policy {
  Mode mode = Mode::enforce;
  bool mutate = true;
  PartialAction partial = PartialAction::deny;
  Action unknown_image = Action::warn;
  Action unknown_node = Action::warn;
  Action no_candidates = Action::warn;
  Action on_error = Action::allow;  // allow | deny only
  bool minor_version_compatibility = false;
  ArchMatch arch_match = ArchMatch::cuda;
  ArchListReading arch_list_reading = ArchListReading::cpp_extension;
  ToolkitMode toolkit_mode = ToolkitMode::legacy;
  bool allow_pod_opt_out = false;
  std::vector<std::string> exclude_namespaces = {"kube-system"};
  std::vector<std::string> gpu_resources = {"nvidia.com/gpu"};
  // Device classes whose devices are GPUs to judge (Dynamic Resource Allocation).
  std::vector<std::string> dra_device_classes = {"gpu.nvidia.com", "mig.nvidia.com"};
  std::vector<CatalogEntry> images;
  // Node groups an autoscaler launches nodes of (docs/contract.md §2.7):
  // each stands for its next node beside the cluster's nodes.
  std::vector<NodePool> node_pools;
  RegistrySettings registry;
  ScanSettings scan;

  // The first catalog entry whose glob matches `reference`, or nullptr.
  // Each entry is tried against the reference as written, its normalised
  // form ImageRef::str() ("docker.io/library/ubuntu:22.04"), and the name
  // without tag or digest ("docker.io/library/ubuntu").
  [[nodiscard]] const CatalogEntry* catalog_entry(std::string_view reference) const;
};

// YAML or JSON. `source` names the file in errors. Catalog archList and
// cudaVersion values are checked here, so a bad catalog never reaches a
// decision.
Expected<Policy> parse_policy(std::string_view text, std::string_view source, const CompatDb& db);

[[nodiscard]] std::string_view to_string(Mode mode);
// "enforce", "warn", "dryrun"; nullopt for anything else.
[[nodiscard]] std::optional<Mode> parse_mode(std::string_view text);

// Glob match of the whole `text`: '*' matches any run of characters, '/'
// included; '?' matches one character; everything else matches itself.
// Linear in practice, quadratic at worst: no backtracking explosion.
[[nodiscard]] bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace cudagate

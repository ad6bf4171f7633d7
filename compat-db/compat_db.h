#pragma once
// The compatibility matrix: NVIDIA driver, CUDA release, compute capability,
// GPU products and well-known images, as data.
//
// The matrix is JSON (the files in compat-db/, embedded at build time, or one
// override file given with --compat-db). load_compat_db() validates it against
// the schema documented in compat-db/README.md and answers a bad file with an
// Error naming the file, the entry and the field. Every entry carries the
// source its facts were read from.
//
// A CompatDb is immutable once loaded and safe to share between threads.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "types/expected.h"
#include "types/version.h"

namespace cudagate {

// One CUDA toolkit release and the oldest Linux x86_64 driver that runs it.
struct CudaRelease {
  std::string version;  // "12.4.1" as released ("12.4" for a GA without patch number)
  std::string label;    // "12.4 Update 1"
  CudaVersion cuda;     // 12.4
  DriverVersion min_driver;
  std::string source;
};

// Minor-version compatibility: every CUDA release of `cuda_major` runs on a
// driver at or above `min_driver` (features of newer minors aside).
struct MinorVersionCompat {
  int cuda_major = 0;
  DriverVersion min_driver;
  std::string source;
};

// A driver branch and the CUDA version its driver reports (nvidia-smi).
struct DriverBranch {
  int branch = 0;           // 535
  CudaVersion cuda;         // 12.2
  std::string designation;  // "LTSB", "PB", "NFB", "" when unknown
  std::string source;
};

// What a CUDA release can compile for, from this release until the next
// entry. `all` and `all_major` are what CMake's "all"/"all-major" expand to;
// `all` is also every capability nvcc of these releases builds SASS or PTX
// for. `arch_specific` and `family_specific` are the capabilities that have
// an architecture-specific ("sm_90a") or family-specific ("sm_100f") target
// in these releases; both are subsets of `all`, empty before such targets.
struct CudaTargets {
  CudaVersion since;
  std::vector<ComputeCapability> all;
  std::vector<ComputeCapability> all_major;
  std::string source;
  std::vector<ComputeCapability> arch_specific = {};
  std::vector<ComputeCapability> family_specific = {};
};

// A GPU product.
struct Product {
  std::string name;                       // short name: "T4", "A100", "H100"
  std::vector<std::string> aliases;       // other short names, matched case-insensitively
  std::vector<std::string> gfd_names;     // exact nvidia.com/gpu.product values: "Tesla-T4"
  std::vector<std::string> gfd_prefixes;  // value prefixes: "NVIDIA-A100-" (MIG, memory variants)
  ComputeCapability cc;
  std::string family;  // GFD nvidia.com/gpu.family value: "turing", "ampere"
  std::string brand;  // NVML brand, lower-case, as NVIDIA_REQUIRE_* brand= sees it; "" when unknown
  bool datacenter = false;  // forward compatibility (cuda-compat) works on it
  std::string source;
};

// A cloud provider's accelerator label value mapped to a product name.
struct CloudAccelerator {
  std::string label;    // "cloud.google.com/gke-accelerator"
  std::string value;    // "nvidia-l4"
  std::string product;  // "L4" (a Product::name)
  std::string source;
};

// A named GPU generation as TORCH_CUDA_ARCH_LIST accepts it. A name whose
// meaning changed between PyTorch releases has one entry per meaning, each
// for the CUDA releases it applies to: [cuda_since, cuda_before), either end
// open when absent.
struct NamedArchitecture {
  std::string name;       // "Ampere", "Kepler+Tesla", as PyTorch spells it
  std::string arch_list;  // "8.0;8.6+PTX"
  std::string source;
  std::optional<CudaVersion> cuda_since = std::nullopt;
  std::optional<CudaVersion> cuda_before = std::nullopt;

  [[nodiscard]] bool applies_to(CudaVersion cuda) const {
    return (!cuda_since || !(cuda < *cuda_since)) && (!cuda_before || cuda < *cuda_before);
  }
};

// A compute capability of NVIDIA's Tegra (Jetson, DRIVE) integrated GPUs. The
// CUDA Programming Guide excludes Tegra from cubin minor-version
// compatibility, and cubins do not move between Tegra and desktop GPUs: SASS
// runs on a Tegra capability only when built for exactly it, and SASS built
// for one runs on no other capability.
struct TegraCapability {
  ComputeCapability cc;
  std::string devices;  // "Jetson AGX Orin, Jetson Orin NX, Jetson Orin Nano"
  std::string source;
};

// nvidia/cuda base images: what one CUDA_VERSION's image declares.
struct CudaImage {
  std::string cuda_version;  // CUDA_VERSION as set in the image: "12.8.1"
  std::string require_cuda;  // NVIDIA_REQUIRE_CUDA of the amd64 image, in full
  std::string source;
};

// An NGC framework container release (nvcr.io/nvidia/pytorch:YY.MM-py3 and siblings).
struct NgcRelease {
  std::string release;                        // "24.01"
  std::string cuda_version;                   // "12.3.2"
  std::optional<DriverVersion> min_driver;    // as the release notes print it
  std::vector<DriverVersion> forward_compat;  // "470.57" = 470.57 or later within R470
  std::optional<ComputeCapability> min_cc;
  std::string source;
};

// How to infer metadata from references of one set of repositories.
//  kind "cuda-base":    tag starts with the CUDA version, looked up in cuda_images
//  kind "ngc-release":  tag starts with YY.MM, looked up in ngc_releases
//  kind "cuda-tag":     a tag token cudaX.Y / cuX.Y / cuXYZ gives the CUDA version
struct ImageRule {
  std::vector<std::string> repositories;  // normalised names: "docker.io/nvidia/cuda"; "*" = any
  std::string kind;
  std::string source;
};

struct CompatDb {
  std::string revision;                    // content revision, printed by `cudagate version`
  std::vector<CudaRelease> cuda_releases;  // sorted by version
  std::vector<MinorVersionCompat> minor_version_compat;
  std::vector<DriverBranch> driver_branches;  // sorted by branch
  std::vector<CudaTargets> cuda_targets;      // sorted by `since`
  std::vector<Product> products;
  std::vector<CloudAccelerator> cloud_accelerators;
  std::vector<NamedArchitecture> architectures;  // in file order: PyTorch replaces names in order
  std::vector<TegraCapability> tegra;
  std::vector<CudaImage> cuda_images;
  std::vector<NgcRelease> ngc_releases;
  std::vector<ImageRule> image_rules;

  // --- Lookups. All are pure and cheap enough for the request path. ---

  // The oldest driver that runs `cuda` (its GA release); nullopt if unknown.
  [[nodiscard]] std::optional<DriverVersion> min_driver_for(CudaVersion cuda) const;
  // The CUDA version a driver reports, from its branch; for a branch between
  // known ones, the nearest lower branch's; nullopt below the oldest.
  [[nodiscard]] std::optional<CudaVersion> max_cuda_for(const DriverVersion& driver) const;
  // Minor-version compatibility floor for a CUDA major; nullopt if none.
  [[nodiscard]] const MinorVersionCompat* minor_compat_for(int cuda_major) const;
  // What `cuda` can compile for; nullptr when older than every entry.
  [[nodiscard]] const CudaTargets* targets_for(CudaVersion cuda) const;
  // A product by short name or alias (case-insensitive), by GFD product
  // label value (exact, then prefix; "-SHARED" and "-MIG-..." suffixes
  // ignored), or nullptr.
  [[nodiscard]] const Product* product_by_name(std::string_view name) const;
  [[nodiscard]] const Product* product_by_gfd(std::string_view label_value) const;
  // The product a cloud accelerator label names, or nullptr.
  [[nodiscard]] const Product* product_by_cloud_label(std::string_view label,
                                                      std::string_view value) const;
  // A named generation by its exact name (PyTorch compares names
  // case-sensitively): the entry that applies to `cuda` when one does, else
  // the newest meaning (the entry without cuda_before, or the last one);
  // nullptr when the name is unknown.
  [[nodiscard]] const NamedArchitecture* architecture(
      std::string_view name, std::optional<CudaVersion> cuda = std::nullopt) const;
  // Whether `cc` is a Tegra capability (tegra).
  [[nodiscard]] bool is_tegra(ComputeCapability cc) const;
  [[nodiscard]] const CudaImage* cuda_image(std::string_view cuda_version) const;
  [[nodiscard]] const NgcRelease* ngc_release(std::string_view release) const;
};

// One input file: its name (for errors) and its JSON text.
struct CompatDbFile {
  std::string name;
  std::string_view text;
};

// Merges and validates the sections of `files`. Each file is an object
// {"schemaVersion": 1, "<section>": [...], ...}; a section may appear in one
// file only, and every section must appear somewhere. Errors name the file,
// the entry ("cudaReleases[3]") and the field.
Expected<CompatDb> load_compat_db(const std::vector<CompatDbFile>& files);

// The matrix embedded at build time (the JSON files of compat-db/).
[[nodiscard]] const std::vector<CompatDbFile>& embedded_compat_db_files();

}  // namespace cudagate

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
#include <utility>
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

// A driver branch and the CUDA version its driver reports (nvidia-smi's
// "CUDA Version", or "CUDA UMD Version" from 610.43.02 on).
struct DriverBranch {
  int branch = 0;           // 535
  CudaVersion cuda;         // 12.2
  std::string designation;  // "LTSB", "PB", "NFB", "developer", "" when unknown
  std::string end_of_life;  // "2026-06" as NVIDIA's datacenter pages give it; "" when not given
  std::string source;
};

// The last driver branch that supports a GPU architecture: a driver of a
// newer branch does not run on its GPUs, so a node whose labels claim one
// has labels that cannot all be true.
struct LastDriverBranch {
  std::string family;                           // "kepler"
  std::vector<ComputeCapability> capabilities;  // 3.0, 3.5, 3.7
  int last_branch = 0;                          // 470
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

// A cloud instance type and the GPUs every instance of it carries, so that
// a node pool that scales from zero, whose nodes do not exist yet, can be
// judged by the instance type it will launch.
struct InstanceType {
  std::string provider;  // "aws", "gcp" or "azure"
  std::string name;      // node.kubernetes.io/instance-type value: "p4d.24xlarge"
  // The GPU, spelt exactly as a Product's gfd_names entry, the
  // nvidia.com/gpu.product value GPU Feature Discovery gives such nodes
  // ("NVIDIA-A100-SXM4-40GB"), or as a Product::name ("B300") where that
  // value is not known; product_by_label() finds its Product.
  std::string product;
  int gpus = 0;  // whole GPUs per instance, at least 1
  std::string source;
};

// A value of an autoscaler's GPU-name label ("karpenter.k8s.aws/instance-gpu-name
// In [a100]") and every product it may name: such a value names a GPU model
// but not its memory size or form factor, so "a100" is both the 40GB and the
// 80GB SXM4 A100.
struct InstanceGpuLabel {
  std::string label;                  // "karpenter.k8s.aws/instance-gpu-name"
  std::string value;                  // "a100", compared exactly as Kubernetes compares labels
  std::vector<std::string> products;  // as InstanceType::product, at least one
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
  std::string pytorch_version =
      {};  // the PyTorch the container ships: "2.10.0"; "" when not stated
};

// A build of PyTorch's own wheels and pytorch/pytorch images for one CUDA
// variant, over the torch releases [torch_since, torch_before) in which its
// TORCH_CUDA_ARCH_LIST did not change (torch_before absent: still current).
struct TorchBuild {
  std::string cuda_variant;  // "cu128"
  CudaVersion cuda;          // 12.8
  CudaVersion torch_since;   // torch 2.7, read as major.minor
  std::optional<CudaVersion> torch_before;
  std::string arch_list;  // "7.5;8.0;8.6;9.0;10.0;12.0+PTX", as TORCH_CUDA_ARCH_LIST spells it
  std::string source;

  [[nodiscard]] bool applies_to(CudaVersion torch) const {
    return !(torch < torch_since) && (!torch_before || torch < *torch_before);
  }
};

// How to infer metadata from references of one set of repositories.
//  kind "cuda-base":    tag starts with the CUDA version, looked up in cuda_images
//  kind "ngc-release":  tag starts with YY.MM, looked up in ngc_releases
//  kind "cuda-tag":     a tag token cudaX.Y / cuX.Y / cuXYZ gives the CUDA version
//  kind "pytorch-tag":  a tag <torch>-cuda<X.Y>-... gives torch and CUDA, and through
//                       torch_builds the arch list PyTorch built it for
struct ImageRule {
  std::vector<std::string> repositories;  // normalised names: "docker.io/nvidia/cuda"; "*" = any
  std::string kind;
  std::string source;
};

struct CompatDb {
  std::string revision;  // content revision, printed by `cudagate version`
  std::string as_of;     // "2026-12-04": the newest date the files say their data was checked
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
  std::vector<LastDriverBranch> last_driver_branches;
  std::vector<TorchBuild> torch_builds;
  std::vector<InstanceType> instance_types;           // in file order; names unique
  std::vector<InstanceGpuLabel> instance_gpu_labels;  // in file order; (label, value) unique

  // --- Lookups. All are pure and cheap enough for the request path. ---

  // The oldest driver that runs `cuda` (its GA release); nullopt if unknown.
  [[nodiscard]] std::optional<DriverVersion> min_driver_for(CudaVersion cuda) const;
  // The CUDA version a driver reports, from its branch; for a branch between
  // known ones, the nearest lower branch's; nullopt below the oldest.
  [[nodiscard]] std::optional<CudaVersion> max_cuda_for(const DriverVersion& driver) const;
  // Whether the driver's branch is newer than every branch the matrix
  // knows: max_cuda_for() then answers the newest known branch's CUDA, which
  // the driver supports at least (a floor, not its own value).
  [[nodiscard]] bool branch_beyond_known(const DriverVersion& driver) const;
  // The last branch that supports GPUs of `cc`, or nullptr when no entry
  // ends that capability's support.
  [[nodiscard]] const LastDriverBranch* last_driver_branch(ComputeCapability cc) const;
  // The newest compute capability the matrix can name (compiler targets and
  // products).
  [[nodiscard]] std::optional<ComputeCapability> newest_capability() const;
  // Whether `cc` is newer than the matrix knows: a minor above every known
  // capability of its major (10.9 when 10.7 is the newest 10.x), or a major
  // above every known one. A capability between known ones (7.1, 8.4) is
  // not newer: no such GPU exists.
  [[nodiscard]] bool capability_beyond_known(ComputeCapability cc) const;
  // The newest CUDA release the matrix knows (releases, branches, targets).
  [[nodiscard]] std::optional<CudaVersion> newest_cuda() const;
  // "the compatibility matrix (revision 0123456789abcdef, 2026-12-04)": how
  // messages about a gap in the matrix name it.
  [[nodiscard]] std::string describe() const;
  // PyTorch's own build for `torch` (major.minor) and the CUDA release of a
  // pytorch/pytorch tag, or nullptr.
  [[nodiscard]] const TorchBuild* torch_build(CudaVersion torch, CudaVersion cuda) const;
  // Minor-version compatibility floor for a CUDA major; nullopt if none.
  [[nodiscard]] const MinorVersionCompat* minor_compat_for(int cuda_major) const;
  // What `cuda` can compile for; nullptr when older than every entry.
  [[nodiscard]] const CudaTargets* targets_for(CudaVersion cuda) const;
  // A product by short name or alias (case-insensitive), by GFD product
  // label value (exact, then prefix; "-SHARED" and "-MIG-..." suffixes
  // ignored), or nullptr.
  [[nodiscard]] const Product* product_by_name(std::string_view name) const;
  [[nodiscard]] const Product* product_by_gfd(std::string_view label_value) const;
  // A product label's value (nvidia.com/gpu.product, cudagate.io/gpu-product)
  // or an NVML product name (the productName NVIDIA's DRA driver publishes):
  // as a GFD value, else as a name or alias, else as the value GFD would
  // label that NVML name with; nullptr when the matrix has no such product.
  [[nodiscard]] const Product* product_by_label(std::string_view value) const;
  // The product a cloud accelerator label names, or nullptr.
  [[nodiscard]] const Product* product_by_cloud_label(std::string_view label,
                                                      std::string_view value) const;
  // The instance type named exactly `name` ("p4d.24xlarge",
  // "Standard_NC24ads_A100_v4"), or nullptr when the matrix does not know
  // it. Its product resolves through product_by_label().
  [[nodiscard]] const InstanceType* instance_type(std::string_view name) const;
  // Every product an autoscaler's GPU-name label value may name, each once,
  // in the order the entry lists them: label and value compared exactly;
  // empty when the matrix has no such entry. A value that names a model
  // without its memory size ("a100") gives all the products it may be.
  [[nodiscard]] std::vector<const Product*> products_by_instance_label(
      std::string_view label, std::string_view value) const;
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

// The newest entries of a matrix, so that a person sees at once how far it
// reaches: ("CUDA release", "13.5 GA (13.5.0)"), ("driver branch", "620
// (CUDA 13.5)"), ("compute capability", "12.1"), ("NGC release", "26.11"),
// ("PyTorch build", "cu132 (torch 2.11)"); a section without entries is
// left out.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> newest_entries(const CompatDb& db);

// One input file: its name (for errors) and its JSON text.
struct CompatDbFile {
  std::string name;
  std::string_view text;
};

// Merges and validates the sections of `files`. Each file is an object
// {"schemaVersion": 1, "asOf": "YYYY-MM-DD", "<section>": [...], ...}; a
// section may appear in one file only, every required section must appear
// somewhere (lastDriverBranches, torchBuilds, instanceTypes and
// instanceGpuLabels may be left out), and asOf is
// optional. Errors name the file, the entry ("cudaReleases[3]") and the field.
Expected<CompatDb> load_compat_db(const std::vector<CompatDbFile>& files);

// The matrix embedded at build time (the JSON files of compat-db/).
[[nodiscard]] const std::vector<CompatDbFile>& embedded_compat_db_files();

}  // namespace cudagate

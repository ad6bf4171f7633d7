#pragma once
// Image metadata per GPU container (docs/contract.md §2.2): the CUDA runtime
// version, the NVIDIA_REQUIRE_* requirements and the compiled architectures,
// each with the source it came from.
//
// The environment is what the runtime will see: a literal env[].value in the
// pod spec, else the image's variable. The image's variables and labels come
// from, first found: the policy catalog, the registry's image config (handed
// in: the core does no I/O), inference from the reference through compat-db.
// Annotations override cuda and archs, never require. An image's attached
// scan (ImageConfig::scan) outranks its variables for archs, and gives the
// CUDA runtime where the image states no CUDA version.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compat-db/compat_db.h"
#include "policy/config/policy.h"
#include "policy/image/arch_list.h"
#include "policy/image/requirement.h"
#include "policy/image/scan_facts.h"
#include "policy/objects/pod.h"
#include "policy/rules/scanned_files.h"
#include "types/expected.h"
#include "types/version.h"

namespace cudagate {

enum class Source : unsigned char {
  annotation,
  env,
  catalog,
  registry,
  scan,
  inference,
  flag,
  unknown
};
[[nodiscard]] std::string_view to_string(Source source);

template <class T>
struct Sourced {
  std::optional<T> value;
  Source source = Source::unknown;
  std::string text;  // the value as written where it was found
  // Where it was found: the variable, annotation, label or flag
  // ("TORCH_CUDA_ARCH_LIST", "cudagate.io/arch-list.train", "--cuda"), so
  // that findings can tell a person what to change.
  std::string name;
};

// An image's config as the registry returns it (Env and Labels).
struct ImageConfig {
  std::vector<std::pair<std::string, std::string>> env;     // "CUDA_VERSION" -> "12.4.1"
  std::vector<std::pair<std::string, std::string>> labels;  // "com.nvidia.cuda.version" -> ...
  // The config blob's digest ("sha256:..."); "" when unknown. Configs are
  // content-addressed: equal digests mean equal env and labels.
  std::string digest;
  // The scan attached to the image manifest this config was reached from
  // (registry/scan_attachment.h), or null when none was found or looked for.
  std::shared_ptr<const ScanFacts> scan;
};

// Registry results gathered before the decision, keyed by the image string
// as written in the pod spec. A pod names few images: a short list. The
// configs are shared with the cache they came from.
class RegistryFacts {
 public:
  // Keeps the first config given for an image.
  void add(std::string image, std::shared_ptr<const ImageConfig> config);
  // The config of `image`, or nullptr.
  [[nodiscard]] const ImageConfig* find(std::string_view image) const;
  [[nodiscard]] bool empty() const { return entries_.empty(); }
  [[nodiscard]] std::size_t size() const { return entries_.size(); }

 private:
  std::vector<std::pair<std::string, std::shared_ptr<const ImageConfig>>> entries_;
};

// An image whose config a decision would read from the registry, for the
// platform of the pod's nodes ("linux/amd64").
struct ImageWanted {
  std::string image;  // as written in the pod spec
  std::string platform;
  friend bool operator==(const ImageWanted&, const ImageWanted&) = default;
};

// Values a person gave on the command line (`cudagate check`), which apply
// to every GPU container with source `flag`.
struct FlagValues {
  std::optional<std::string> cuda;
  std::optional<std::string> arch_list;  // TORCH_CUDA_ARCH_LIST syntax
  std::optional<std::string> min_cc;
};

struct ContainerMetadata {
  Sourced<CudaVersion> cuda;
  Sourced<ArchSet> archs;
  Sourced<RequirementSet> require;
  Sourced<ComputeCapability> min_cc;
  bool require_disabled = false;  // NVIDIA_DISABLE_REQUIRE is true
  // Why archs is unknown although the image names its architectures (its
  // list is "native": the GPUs of the build machine, or names a capability
  // newer than the matrix knows); empty otherwise.
  std::string archs_unknown;
  // archs_unknown is a gap in the matrix, fixed by a newer one.
  bool archs_beyond_matrix = false;
  // The scan attached to the image, when its files give archs (source
  // scan): each counted file must run on a node, the others are warnings
  // (scanned_files.h). Null otherwise.
  std::shared_ptr<const ScanFacts> scan;
  CountedFiles scan_files;
  // Where the scan and what the image states disagree, one sentence each:
  // "CUDA_VERSION (registry) says 12.4; the image ships the CUDA runtime
  // 12.8.90 (/usr/local/cuda/lib64/libcudart.so.12.8.90)".
  std::vector<std::string> scan_notes;
};

// Resolves one container's metadata. Values that a person wrote (annotations,
// pod env, flags) and that do not parse are errors naming the container and
// the annotation or variable:
//   container "train": annotation cudagate.io/cuda-version: expected a CUDA version ...
// values from an image that do not parse leave the value unknown.
//
// Details that follow the NVIDIA container toolkit: an empty variable counts
// as unset; NVIDIA_REQUIRE_JETPACK* is not a requirement; NVIDIA_DISABLE_REQUIRE
// is read with Go's strconv.ParseBool, and when it is true no NVIDIA_REQUIRE_*
// is read at all; CUDA_VERSION is read as the toolkit's semver parser reads
// it ("v11.6", "12.4.1-1"). NVIDIA_REQUIRE_* values are never errors here:
// an invalid term fails a node only where evaluation reaches it (see
// requirement.h). A pod variable set with valueFrom hides the image's value
// and cannot be read at admission: the value it would give (cuda, archs, or
// any requirement) is unknown. TORCH_CUDA_ARCH_LIST is read for the resolved
// CUDA release and the policy's archListReading; a list that is "native",
// or that names a compute capability newer than the matrix knows (from any
// source: an image's variable, an annotation, a flag), leaves archs unknown
// with archs_unknown saying why. With NVIDIA_DISABLE_REQUIRE true, a
// CUDA_VERSION that does not parse is no error (the toolkit never reads it
// then): the CUDA version is unknown.
//
// Inference through compat-db image rules: "cuda-base" and "ngc-release"
// give the image's CUDA_VERSION and NVIDIA_REQUIRE_CUDA (forward-compatible
// brand alternatives included), "ngc-release" also min_cc; "cuda-tag"
// gives only the CUDA version, as if the image carried the label
// com.nvidia.cuda.version, because a tag says which CUDA the image was built
// with, not which variables it sets (so no implicit cuda>= requirement).
//
// `memo` (may be null) keeps what depends only on text and the compat-db
// (image facts inferred from a reference, parsed NVIDIA_REQUIRE_* values)
// for the next resolutions; the result is the same with or without it.
class MetadataMemo;
Expected<ContainerMetadata> resolve_metadata(const Workload& workload,
                                             const ContainerSpec& container, const Policy& policy,
                                             const CompatDb& db, const RegistryFacts* registry,
                                             const FlagValues* flags, MetadataMemo* memo = nullptr);

// Whether resolve_metadata reads the environment variable `name` (CUDA_VERSION,
// NVIDIA_REQUIRE_*, the arch lists...): a workload read for a decision may
// keep only these (WorkloadReadOptions::keep_env).
[[nodiscard]] bool metadata_reads_env(std::string_view name);

// A cache for resolve_metadata, owned by one caller at a time (it is not
// synchronised: a server keeps one per thread). Bounded: it starts over
// when full, or when used with another compat-db.
class MetadataMemo {
 public:
  MetadataMemo();
  ~MetadataMemo();
  MetadataMemo(const MetadataMemo&) = delete;
  MetadataMemo& operator=(const MetadataMemo&) = delete;

  struct Impl;

  // What evaluate() keeps with the memo between decisions (policy/rules/evaluate.cpp
  // defines it): one memo per thread then serves both. Empty until evaluate()
  // first uses the memo.
  [[nodiscard]] std::shared_ptr<void>& evaluation_state() { return evaluation_state_; }

 private:
  friend Expected<ContainerMetadata> resolve_metadata(const Workload&, const ContainerSpec&,
                                                      const Policy&, const CompatDb&,
                                                      const RegistryFacts*, const FlagValues*,
                                                      MetadataMemo*);
  std::unique_ptr<Impl> impl_;
  std::shared_ptr<void> evaluation_state_;
};

}  // namespace cudagate

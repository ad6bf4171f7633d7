// The cuda-driver, gpu-arch and gpu-feature rules for one container on one node group, each
// finding worded with what is needed, what the nodes have and the fix.
#include "policy/rules.h"

#include <algorithm>
#include <string>

namespace cudagate {
namespace {

constexpr std::string_view kFixDriverUnknown =
    "label the nodes with cudagate.io/driver-version or run GPU Feature Discovery";
constexpr std::string_view kFixCcUnknown =
    "label the nodes with cudagate.io/compute-capability or cudagate.io/gpu-product, or run GPU "
    "Feature Discovery";
constexpr std::string_view kFixBrandUnknown =
    "label the nodes with cudagate.io/gpu-product or run GPU Feature Discovery, so that the GPU's "
    "brand is known";
constexpr std::string_view kFixCudaUnknown =
    "annotate the pod with cudagate.io/cuda-version (the CUDA release the image was built with)";
constexpr std::string_view kFixArchsUnknown =
    "annotate the pod with cudagate.io/arch-list (the architectures the image was compiled for)";
constexpr std::string_view kFixMatrix = kFixUpdateMatrix;
constexpr std::string_view kFixInconsistent =
    "correct the node's labels (GPU Feature Discovery, cudagate.io/*): a driver newer than its "
    "GPU's last branch does not run on it";
constexpr std::string_view kFixArchListAndCuda =
    "correct the image's arch list or CUDA version, or annotate the pod with "
    "cudagate.io/arch-list and cudagate.io/cuda-version (what the image was built with)";

// Collects the findings of one container on one group.
class Check {
 public:
  Check(std::string_view container, const ContainerMetadata& md, const GpuFacts& node,
        const Policy& policy, const CompatDb& db)
      : container_(container), md_(md), node_(node), policy_(policy), db_(db) {}

  RuleResult run() {
    if (!node_.inconsistency.empty()) {
      // Facts that cannot all be true judge nothing.
      unknown(kRuleCudaDriver, node_.inconsistency, kFixInconsistent);
      return std::move(result_);
    }
    cuda_driver();
    gpu_arch();
    gpu_feature();
    return std::move(result_);
  }

 private:
  void fail(std::string_view rule, std::string message, std::string fix) {
    result_.outcome = Outcome::incompatible;
    result_.findings.push_back(
        Finding{std::string(rule), std::string(container_), std::move(message), std::move(fix)});
  }

  void unknown(std::string_view rule, std::string message, std::string_view fix) {
    if (result_.outcome == Outcome::compatible) result_.outcome = Outcome::unknown;
    result_.findings.push_back(Finding{std::string(rule), std::string(container_),
                                       std::move(message), std::string(fix), true});
  }

  // The node's compute capability is unknown: when its product label names
  // a GPU the matrix has no entry for, that is a gap in the matrix.
  void cc_unknown(std::string_view rule, const std::string& prefix) {
    if (!node_.product.empty() && db_.product_by_label(node_.product) == nullptr) {
      unknown(rule,
              prefix + "the node's GPU " + node_.product + " is a product " + db_.describe() +
                  " does not know, and no label gives its compute capability",
              std::string(kFixMatrix) + ", or " + std::string(kFixCcUnknown));
      return;
    }
    unknown(rule, prefix + "the node's compute capability is unknown", kFixCcUnknown);
  }

  // "(Tesla-T4)" or "" when the product is unknown.
  std::string product_suffix() const {
    return node_.product.empty() ? std::string() : " (" + node_.product + ")";
  }

  // "needs CUDA 12.4; driver 535.129.03 supports up to CUDA 12.2", built in
  // one string: every failing group of a decision writes one.
  std::string needs_cuda(CudaVersion needed) const {
    std::string out;
    out.reserve(96);
    out += "needs CUDA ";
    out += needed.str();
    if (node_.driver) {
      out += "; driver ";
      out += node_.driver->str();
      out += " supports up to CUDA ";
    } else {
      out += "; the node's driver supports up to CUDA ";
    }
    out += node_.max_cuda ? node_.max_cuda->str() : std::string("?");
    return out;
  }

  // "driver 640.10 is of branch 640, which <matrix> does not know: it
  // supports at least CUDA 13.5 (inferred)", for a node whose max_cuda is a floor.
  std::string floor_text() const {
    return "driver " + node_.driver->str() + " is of branch " +
           std::to_string(node_.driver->branch()) + ", which " + db_.describe() +
           " does not know: it supports at least CUDA " + node_.max_cuda->str() + " (inferred)";
  }

  std::string upgrade_fix(CudaVersion needed) const {
    const auto driver = db_.min_driver_for(needed);
    std::string fix;
    fix.reserve(112);
    if (driver && driver->part_count() == 2 && driver->part(1) == 0) {
      // The release notes name only a branch (CUDA 13.4 and later).
      fix += "upgrade the driver to branch R";
      fix += std::to_string(driver->branch());
      fix += " or newer";
    } else if (driver) {
      fix += "upgrade the driver to ";
      fix += driver->str();
      fix += " or newer";
    } else {
      fix += "upgrade the driver to one that supports CUDA ";
      fix += needed.str();
      if (beyond_known_cuda(needed)) {
        fix += " (";
        fix += db_.describe();
        fix += " does not know CUDA ";
        fix += needed.str();
        fix += ")";
      }
    }
    if (node_.max_cuda) {
      fix += ", or use an image built for CUDA ";
      fix += node_.max_cuda->str();
      fix += " or older";
    }
    return fix;
  }

  template <class T>
  static std::string origin(const Sourced<T>& value) {
    std::string out = value.name;
    if (!out.empty()) out += ", ";
    out += to_string(value.source);
    return out;
  }

  // --- cuda-driver ---

  void cuda_driver() {
    // Whether the toolkit on these nodes checks the image's NVIDIA_REQUIRE_*:
    // not when the image disables it, nor in CDI mode.
    const bool toolkit_checks =
        policy_.toolkit_mode == ToolkitMode::legacy && !md_.require_disabled;
    if (toolkit_checks && md_.require.value && !md_.require.value->empty()) {
      requirement();
      return;
    }
    if (!md_.cuda.value) {
      unknown(kRuleCudaDriver,
              "the image's CUDA version is unknown (no CUDA_VERSION, NVIDIA_REQUIRE_CUDA or "
              "com.nvidia.cuda.version)",
              kFixCudaUnknown);
      return;
    }
    if (!node_.max_cuda) {
      unknown(kRuleCudaDriver, "the node's driver version is unknown", kFixDriverUnknown);
      return;
    }
    const CudaVersion cuda = *md_.cuda.value;
    if (cuda <= *node_.max_cuda) return;
    if (node_.max_cuda_floor) {
      // The driver's branch is newer than the matrix knows: it supports at
      // least max_cuda, and how much more is a gap in our knowledge.
      unknown(kRuleCudaDriver, "needs CUDA " + cuda.str() + "; " + floor_text(), kFixMatrix);
      return;
    }
    // Without the toolkit's check what remains is the CUDA runtime's own,
    // which applies minor version compatibility whatever the policy says;
    // otherwise the policy decides whether to count on it.
    if (!toolkit_checks || policy_.minor_version_compatibility) {
      switch (minor_version_compatible(cuda)) {
        case Tristate::yes:
          return;
        case Tristate::unknown:
          unknown(kRuleCudaDriver,
                  "needs CUDA " + cuda.str() +
                      " through minor version compatibility; the node's "
                      "driver version is unknown",
                  kFixDriverUnknown);
          return;
        case Tristate::no:
          break;
      }
    }
    if (!toolkit_checks && !md_.require_disabled && md_.require.value &&
        !md_.require.value->empty() && forward_compatibility_declared()) {
      return;
    }
    std::string message = needs_cuda(cuda);
    if (md_.require_disabled) {
      message += " (" + md_.require.text +
                 ": the toolkit checks no requirement, and the CUDA runtime refuses a driver "
                 "older than its release outside minor version compatibility)";
    } else if (!toolkit_checks) {
      message +=
          " (toolkitMode cdi: the toolkit checks no requirement, and the CUDA runtime refuses a "
          "driver older than its release outside minor version compatibility)";
    }
    fail(kRuleCudaDriver, std::move(message), upgrade_fix(cuda));
  }

  // Minor version compatibility: a newer minor of the node's CUDA major runs
  // on a driver at or above that major's minimum (compat-db).
  Tristate minor_version_compatible(CudaVersion cuda) const {
    const CudaVersion max = *node_.max_cuda;
    if (cuda.major() != max.major()) return Tristate::no;
    const MinorVersionCompat* mvc = db_.minor_compat_for(cuda.major());
    if (mvc == nullptr) return Tristate::no;
    if (node_.driver) return *node_.driver >= mvc->min_driver ? Tristate::yes : Tristate::no;
    // A driver that reports `max` is at least the oldest driver of that release.
    const auto floor = db_.min_driver_for(max);
    return floor && *floor >= mvc->min_driver ? Tristate::yes : Tristate::unknown;
  }

  // In CDI mode the toolkit enables the image's cuda-compat libraries (its
  // enable-cuda-compat hook) without checking NVIDIA_REQUIRE_*. Whether they
  // serve this node's driver is what the image's brand and driver groups
  // declare: a requirement the node meets although the image's CUDA is newer
  // than the driver's is met through such a group. True when that settles
  // the rule (forward compatibility, or a finding about it), false when the
  // image declares none for this node.
  bool forward_compatibility_declared() {
    const DeviceFacts device{node_.driver, node_.max_cuda, node_.cc, node_.brand,
                             node_.max_cuda_floor};
    const RequirementResult result = evaluate_requirements(*md_.require.value, device);
    if (result.satisfied == Tristate::yes) {
      forward_compatibility();
      return true;
    }
    if (result.satisfied == Tristate::unknown) {
      requirement_unknown(*md_.require.value);
      return true;
    }
    return false;
  }

  void requirement() {
    const RequirementSet& set = *md_.require.value;
    const DeviceFacts device{node_.driver, node_.max_cuda, node_.cc, node_.brand,
                             node_.max_cuda_floor};
    const RequirementResult result = evaluate_requirements(set, device);
    if (result.satisfied == Tristate::yes) {
      forward_compatibility();
      return;
    }
    if (result.satisfied == Tristate::unknown) {
      requirement_unknown(set);
      return;
    }
    if (result.invalid != nullptr) {
      // nvidia-container-cli: "requirement error: invalid expression".
      fail(kRuleCudaDriver,
           result.variable + ": invalid expression where the toolkit reaches it on this node: " +
               result.invalid->error,
           "correct or remove the term \"" + result.invalid->text + "\" of " + result.variable +
               " (the toolkit refuses to start the container on these nodes)");
      return;
    }
    const Requirement* req = nullptr;
    for (const Requirement& r : set.requirements) {
      if (r.variable == result.variable) req = &r;
    }
    const RequireAlternative* first =
        req != nullptr && !req->alternatives.empty() ? &req->alternatives.front() : nullptr;
    // The runtime's words without its generic advice, which the fix replaces.
    const auto toolkit = [&result] {
      const std::string_view condition =
          std::string_view(result.condition).substr(0, result.condition.find(", please"));
      std::string out = result.variable;
      out += ": ";
      out += condition;
      return out;
    };
    if (first != nullptr) {
      for (const RequireTerm& term : first->terms) {
        if (!term.valid() || term.key != RequireKey::cuda || term.op != RequireOp::ge) continue;
        const CudaVersion needed(term.part(0), term.part(1));
        if (!node_.max_cuda || !(*node_.max_cuda < needed)) continue;
        std::string message = needs_cuda(needed);
        // A bare "cuda>=X.Y" says all there is; anything richer (forward
        // compatibility alternatives, more terms) gets the runtime's words too.
        if (req->alternatives.size() > 1 || first->terms.size() > 1) {
          message += " (" + toolkit() + ")";
        }
        fail(kRuleCudaDriver, std::move(message), upgrade_fix(needed));
        return;
      }
      for (const RequireTerm& term : first->terms) {
        if (!term.valid() || term.key != RequireKey::driver ||
            (term.op != RequireOp::ge && term.op != RequireOp::gt)) {
          continue;
        }
        auto wanted = DriverVersion::parse(term.value);
        if (!wanted || !node_.driver || *node_.driver >= *wanted) continue;
        fail(kRuleCudaDriver, toolkit() + "; the node has driver " + node_.driver->str(),
             "upgrade the driver to " + term.value + " or newer");
        return;
      }
    }
    std::string have = "the node has ";
    have += node_.driver ? "driver " + node_.driver->str() : std::string("an unknown driver");
    if (node_.max_cuda) have += " (CUDA " + node_.max_cuda->str() + ")";
    if (node_.cc) have += ", compute capability " + node_.cc->str();
    if (node_.brand) have += ", brand " + *node_.brand;
    fail(kRuleCudaDriver, toolkit() + "; " + have,
         "run the pod on GPUs that satisfy " + result.variable +
             ", or use an image whose requirement these nodes meet");
  }

  // A requirement met while the image's CUDA is newer than the driver's is
  // met through a forward-compatible (brand=...) alternative: the image's
  // cuda-compat libraries then run only on datacenter GPUs, and elsewhere
  // the container fails with "forward compatibility was attempted on non
  // supported HW". Minor version compatibility, where the policy allows it,
  // needs no compat libraries.
  void forward_compatibility() {
    if (!md_.cuda.value || !node_.max_cuda || *md_.cuda.value <= *node_.max_cuda) return;
    const CudaVersion cuda = *md_.cuda.value;
    if (policy_.minor_version_compatibility && cuda.major() == node_.max_cuda->major()) return;
    if (node_.product.empty()) return;
    const Product* product = db_.product_by_label(node_.product);
    if (product == nullptr || product->datacenter) return;
    fail(kRuleCudaDriver,
         needs_cuda(cuda) + ", and forward compatibility (cuda-compat) does not run on " +
             node_.product + ", which is not a datacenter GPU",
         upgrade_fix(cuda));
  }

  void requirement_unknown(const RequirementSet& set) {
    bool uses[4] = {false, false, false, false};
    for (const Requirement& r : set.requirements) {
      for (const RequireAlternative& alt : r.alternatives) {
        for (const RequireTerm& term : alt.terms) {
          if (term.valid()) uses[static_cast<int>(term.key)] = true;
        }
      }
    }
    const std::string what = "cannot check " + md_.require.name + ": ";
    if (uses[static_cast<int>(RequireKey::cuda)] && node_.max_cuda_floor) {
      unknown(kRuleCudaDriver, what + floor_text(), kFixMatrix);
    } else if ((uses[static_cast<int>(RequireKey::cuda)] && !node_.max_cuda) ||
               (uses[static_cast<int>(RequireKey::driver)] && !node_.driver)) {
      unknown(kRuleCudaDriver, what + "the node's driver version is unknown", kFixDriverUnknown);
    } else if (uses[static_cast<int>(RequireKey::arch)] && !node_.cc) {
      cc_unknown(kRuleCudaDriver, what);
    } else {
      unknown(kRuleCudaDriver, what + "the brand of the node's GPU is unknown", kFixBrandUnknown);
    }
  }

  // --- gpu-arch ---

  bool beyond_known_cuda(CudaVersion cuda) const {
    const auto newest = db_.newest_cuda();
    return newest && *newest < cuda;
  }

  void archs_unknown() {
    unknown(kRuleGpuArch, md_.archs_unknown,
            md_.archs_beyond_matrix ? kFixMatrix : kFixArchsUnknown);
  }

  void gpu_arch() {
    if (md_.archs.value && !md_.archs.value->empty()) {
      const ArchSet& archs = *md_.archs.value;
      if (md_.cuda.value && !cannot_build(archs, *md_.cuda.value).empty()) return;
      if (!node_.cc) {
        cc_unknown(kRuleGpuArch, "");
        return;
      }
      const ComputeCapability cc = *node_.cc;
      if (archs.runs_on(cc, policy_.arch_match, db_)) return;
      std::string message = "compiled for " + archs.str() + " (" + origin(md_.archs) +
                            "); no kernel image for compute capability " + cc.str() +
                            product_suffix();
      if (policy_.arch_match == ArchMatch::exact && archs.runs_on(cc, ArchMatch::cuda, db_)) {
        message += " under archMatch: exact (only SASS built for exactly " + cc.str() +
                   ", or PTX, counts)";
      }
      if (db_.is_tegra(cc) ||
          std::any_of(archs.targets().begin(), archs.targets().end(),
                      [&](const ArchTarget& t) { return t.sass && db_.is_tegra(t.cc); })) {
        message +=
            " (Tegra GPUs run only SASS built for exactly their capability, and no SASS of "
            "another kind)";
      }
      fail(kRuleGpuArch, std::move(message), add_arch_fix(archs, cc));
      return;
    }
    if (!md_.cuda.value) {
      // Nothing to judge the architectures by, unless the image says why.
      if (!md_.archs_unknown.empty()) archs_unknown();
      return;
    }
    const CudaVersion cuda = *md_.cuda.value;
    const CudaTargets* targets = db_.targets_for(cuda);
    if (targets == nullptr || targets->all.empty()) return;
    if (!node_.cc) {
      cc_unknown(kRuleGpuArch, "");
      return;
    }
    const ComputeCapability cc = *node_.cc;
    const auto [oldest, newest] = std::minmax_element(targets->all.begin(), targets->all.end());
    if (cc < *oldest) {
      fail(kRuleGpuArch,
           "built with CUDA " + cuda.str() + " (" + origin(md_.cuda) +
               "), which cannot target compute capability " + cc.str() + product_suffix() +
               ": its oldest target is " + oldest->str(),
           older_cuda_fix(cc, cuda) + ", or run on a GPU of compute capability " + oldest->str() +
               " or newer");
    } else if (cc > *newest && beyond_known_cuda(cuda)) {
      unknown(kRuleGpuArch,
              "built with CUDA " + cuda.str() + " (" + origin(md_.cuda) + "), a release " +
                  db_.describe() +
                  " does not know, so whether it can build machine code for "
                  "compute capability " +
                  cc.str() + product_suffix() + " is unknown",
              kFixMatrix);
    } else if (cc > *newest) {
      unknown(kRuleGpuArch,
              "built with CUDA " + cuda.str() + " (" + origin(md_.cuda) +
                  "), which cannot build machine code for compute capability " + cc.str() +
                  product_suffix() + " (newest target " + newest->str() +
                  "); it runs there only if the image carries PTX",
              kFixArchsUnknown);
    } else if (!md_.archs_unknown.empty()) {
      archs_unknown();
    }
  }

  // The targets of `archs` that the image's CUDA release cannot build, with
  // an unknown finding when there are any: an image built with that release
  // cannot carry them, so the list or the release is not what the image has.
  std::vector<ArchTarget> cannot_build(const ArchSet& archs, CudaVersion cuda) {
    std::vector<ArchTarget> missing = targets_not_built_by(archs, cuda, db_);
    if (missing.empty()) return missing;
    std::string names;
    for (const ArchTarget& t : missing) {
      if (!names.empty()) names += ", ";
      names += target_str(t);
    }
    unknown(kRuleGpuArch,
            "compiled for " + archs.str() + " (" + origin(md_.archs) + "), but CUDA " + cuda.str() +
                " (" + origin(md_.cuda) + ") cannot build " + names +
                ": no image built with that release carries it, so the list or the CUDA "
                "version is not the image's",
            kFixArchListAndCuda);
    return missing;
  }

  // "add 7.5 to the arch list (TORCH_CUDA_ARCH_LIST="7.5;8.0"), or add +PTX
  // to an entry at or below 7.5", in CMake's spelling for CMake variables.
  std::string add_arch_fix(const ArchSet& archs, ComputeCapability cc) const {
    std::vector<ArchTarget> targets = archs.targets();
    targets.push_back(ArchTarget{cc, ArchVariant::portable, true, false});
    const ArchSet extended(std::move(targets));
    const bool cmake =
        md_.archs.name == "CUDAARCHS" || md_.archs.name == "CMAKE_CUDA_ARCHITECTURES";
    if (cmake) {
      const std::string code = std::to_string(cc.major()) + std::to_string(cc.minor());
      return "add " + code + " to the architectures (" + md_.archs.name + "=\"" +
             cmake_list(extended) + "\"), or add a virtual (PTX) entry at or below " + code;
    }
    return "add " + cc.str() + " to the arch list (TORCH_CUDA_ARCH_LIST=\"" + extended.str() +
           "\"), or add +PTX to an entry at or below " + cc.str();
  }

  static std::string cmake_list(const ArchSet& archs) {
    std::string out;
    for (const ArchTarget& t : archs.targets()) {
      if (!out.empty()) out += ";";
      out += std::to_string(t.cc.major()) + std::to_string(t.cc.minor());
      if (t.variant == ArchVariant::arch_specific) out += "a";
      if (t.variant == ArchVariant::family) out += "f";
      if (t.sass && !t.ptx) out += "-real";
      if (!t.sass && t.ptx) out += "-virtual";
    }
    return out;
  }

  // The newest CUDA release that can still target `cc`, from the targets table.
  std::string older_cuda_fix(ComputeCapability cc, CudaVersion cuda) const {
    const CudaTargets* last_fitting = nullptr;
    const CudaTargets* next = nullptr;
    for (const CudaTargets& t : db_.cuda_targets) {
      if (t.since > cuda) break;
      const bool fits = !t.all.empty() && *std::min_element(t.all.begin(), t.all.end()) <= cc;
      if (fits) {
        last_fitting = &t;
        next = nullptr;
      } else if (last_fitting != nullptr && next == nullptr) {
        next = &t;
      }
    }
    if (last_fitting == nullptr || next == nullptr) {
      return "use an image built with a CUDA release older than " + cuda.str();
    }
    std::optional<CudaVersion> newest;
    for (const CudaRelease& r : db_.cuda_releases) {
      if (r.cuda < next->since && (!newest || r.cuda > *newest)) newest = r.cuda;
    }
    if (!newest) return "use an image built with a CUDA release older than " + next->since.str();
    return "use an image built with CUDA " + newest->str() + " or older";
  }

  // --- gpu-feature ---

  void gpu_feature() {
    if (!md_.min_cc.value) return;
    if (!node_.cc) {
      cc_unknown(kRuleGpuFeature, "");
      return;
    }
    const ComputeCapability need = *md_.min_cc.value;
    if (need <= *node_.cc) return;
    fail(kRuleGpuFeature,
         "needs compute capability " + need.str() + " (" + md_.min_cc.name + "); node has " +
             node_.cc->str(),
         "run on a GPU of compute capability " + need.str() + " or newer");
  }

  std::string_view container_;
  const ContainerMetadata& md_;
  const GpuFacts& node_;
  const Policy& policy_;
  const CompatDb& db_;
  RuleResult result_;
};

}  // namespace

RuleResult check_container(std::string_view container, const ContainerMetadata& metadata,
                           const GpuFacts& node, const Policy& policy, const CompatDb& db) {
  return Check(container, metadata, node, policy, db).run();
}

}  // namespace cudagate

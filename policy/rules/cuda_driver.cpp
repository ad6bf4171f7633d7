// cuda-driver: the node's driver runs the image's CUDA release. What decides is
// what decides on the node: with the NVIDIA Container Toolkit in legacy mode
// and an NVIDIA_REQUIRE_* in the image, the toolkit's check of it
// (nvidia-container-cli's requirement evaluation); otherwise the CUDA
// runtime's own, with minor version compatibility and the image's
// forward-compatibility (cuda-compat) libraries where they apply.
#include <string>
#include <string_view>

#include "policy/rules/rule_check.h"

namespace cudagate {
namespace {

constexpr std::string_view kFixDriverUnknown =
    "label the nodes with cudagate.io/driver-version or run GPU Feature Discovery";
constexpr std::string_view kFixBrandUnknown =
    "label the nodes with cudagate.io/gpu-product or run GPU Feature Discovery, so that the GPU's "
    "brand is known";
constexpr std::string_view kFixCudaUnknown =
    "annotate the pod with cudagate.io/cuda-version (the CUDA release the image was built with)";

// "needs CUDA 12.4; driver 535.129.03 supports up to CUDA 12.2", built in
// one string: every failing group of a decision writes one.
std::string needs_cuda(const RuleCheck& c, CudaVersion needed) {
  const GpuFacts& node = c.node();
  std::string out;
  out.reserve(96);
  out += "needs CUDA ";
  out += needed.str();
  if (node.driver) {
    out += "; driver ";
    out += node.driver->str();
    out += " supports up to CUDA ";
  } else {
    out += "; the node's driver supports up to CUDA ";
  }
  out += node.max_cuda ? node.max_cuda->str() : std::string("?");
  return out;
}

// "driver 640.10 is of branch 640, which <matrix> does not know: it
// supports at least CUDA 13.5 (inferred)", for a node whose max_cuda is a floor.
std::string floor_text(const RuleCheck& c) {
  const GpuFacts& node = c.node();
  const CompatDb& db = c.db();
  return "driver " + node.driver->str() + " is of branch " + std::to_string(node.driver->branch()) +
         ", which " + db.describe() + " does not know: it supports at least CUDA " +
         node.max_cuda->str() + " (inferred)";
}

std::string upgrade_fix(const RuleCheck& c, CudaVersion needed) {
  const GpuFacts& node = c.node();
  const CompatDb& db = c.db();
  const auto driver = db.min_driver_for(needed);
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
    if (c.beyond_known_cuda(needed)) {
      fix += " (";
      fix += db.describe();
      fix += " does not know CUDA ";
      fix += needed.str();
      fix += ")";
    }
  }
  if (node.max_cuda) {
    fix += ", or use an image built for CUDA ";
    fix += node.max_cuda->str();
    fix += " or older";
  }
  return fix;
}

// Minor version compatibility: a newer minor of the node's CUDA major runs
// on a driver at or above that major's minimum (compat-db).
Tristate minor_version_compatible(const RuleCheck& c, CudaVersion cuda) {
  const GpuFacts& node = c.node();
  const CompatDb& db = c.db();
  const CudaVersion max = *node.max_cuda;
  if (cuda.major() != max.major()) return Tristate::no;
  const MinorVersionCompat* mvc = db.minor_compat_for(cuda.major());
  if (mvc == nullptr) return Tristate::no;
  if (node.driver) return *node.driver >= mvc->min_driver ? Tristate::yes : Tristate::no;
  // A driver that reports `max` is at least the oldest driver of that release.
  const auto floor = db.min_driver_for(max);
  return floor && *floor >= mvc->min_driver ? Tristate::yes : Tristate::unknown;
}

// A requirement met while the image's CUDA is newer than the driver's is
// met through a forward-compatible (brand=...) alternative: the image's
// cuda-compat libraries then run only on datacenter GPUs, and elsewhere
// the container fails with "forward compatibility was attempted on non
// supported HW". Minor version compatibility, where the policy allows it,
// needs no compat libraries.
void forward_compatibility(RuleCheck& c) {
  const ContainerMetadata& md = c.metadata();
  const GpuFacts& node = c.node();
  const Policy& policy = c.policy();
  const CompatDb& db = c.db();
  if (!md.cuda.value || !node.max_cuda || *md.cuda.value <= *node.max_cuda) return;
  const CudaVersion cuda = *md.cuda.value;
  if (policy.minor_version_compatibility && cuda.major() == node.max_cuda->major()) return;
  if (node.product.empty()) return;
  const Product* product = db.product_by_label(node.product);
  if (product == nullptr || product->datacenter) return;
  c.fail(Rule::cuda_driver,
         needs_cuda(c, cuda) + ", and forward compatibility (cuda-compat) does not run on " +
             node.product + ", which is not a datacenter GPU",
         upgrade_fix(c, cuda));
}

void requirement_unknown(RuleCheck& c, const RequirementSet& set) {
  const ContainerMetadata& md = c.metadata();
  const GpuFacts& node = c.node();
  bool uses[4] = {false, false, false, false};
  for (const Requirement& r : set.requirements) {
    for (const RequireAlternative& alt : r.alternatives) {
      for (const RequireTerm& term : alt.terms) {
        if (term.valid()) uses[static_cast<int>(term.key)] = true;
      }
    }
  }
  const std::string what = "cannot check " + md.require.name + ": ";
  if (uses[static_cast<int>(RequireKey::cuda)] && node.max_cuda_floor) {
    c.unknown(Rule::cuda_driver, what + floor_text(c), kFixUpdateMatrix);
  } else if ((uses[static_cast<int>(RequireKey::cuda)] && !node.max_cuda) ||
             (uses[static_cast<int>(RequireKey::driver)] && !node.driver)) {
    c.unknown(Rule::cuda_driver, what + "the node's driver version is unknown", kFixDriverUnknown);
  } else if (uses[static_cast<int>(RequireKey::arch)] && !node.cc) {
    c.cc_unknown(Rule::cuda_driver, what);
  } else {
    c.unknown(Rule::cuda_driver, what + "the brand of the node's GPU is unknown", kFixBrandUnknown);
  }
}

// In CDI mode the toolkit enables the image's cuda-compat libraries (its
// enable-cuda-compat hook) without checking NVIDIA_REQUIRE_*. Whether they
// serve this node's driver is what the image's brand and driver groups
// declare: a requirement the node meets although the image's CUDA is newer
// than the driver's is met through such a group. True when that settles
// the rule (forward compatibility, or a finding about it), false when the
// image declares none for this node.
bool forward_compatibility_declared(RuleCheck& c) {
  const ContainerMetadata& md = c.metadata();
  const GpuFacts& node = c.node();
  const DeviceFacts device{node.driver, node.max_cuda, node.cc, node.brand, node.max_cuda_floor};
  const RequirementResult result = evaluate_requirements(*md.require.value, device);
  if (result.satisfied == Tristate::yes) {
    forward_compatibility(c);
    return true;
  }
  if (result.satisfied == Tristate::unknown) {
    requirement_unknown(c, *md.require.value);
    return true;
  }
  return false;
}

void requirement(RuleCheck& c) {
  const ContainerMetadata& md = c.metadata();
  const GpuFacts& node = c.node();
  const RequirementSet& set = *md.require.value;
  const DeviceFacts device{node.driver, node.max_cuda, node.cc, node.brand, node.max_cuda_floor};
  const RequirementResult result = evaluate_requirements(set, device);
  if (result.satisfied == Tristate::yes) {
    forward_compatibility(c);
    return;
  }
  if (result.satisfied == Tristate::unknown) {
    requirement_unknown(c, set);
    return;
  }
  if (result.invalid != nullptr) {
    // nvidia-container-cli: "requirement error: invalid expression".
    c.fail(Rule::cuda_driver,
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
      if (!node.max_cuda || !(*node.max_cuda < needed)) continue;
      std::string message = needs_cuda(c, needed);
      // A bare "cuda>=X.Y" says all there is; anything richer (forward
      // compatibility alternatives, more terms) gets the runtime's words too.
      if (req->alternatives.size() > 1 || first->terms.size() > 1) {
        message += " (" + toolkit() + ")";
      }
      c.fail(Rule::cuda_driver, std::move(message), upgrade_fix(c, needed));
      return;
    }
    for (const RequireTerm& term : first->terms) {
      if (!term.valid() || term.key != RequireKey::driver ||
          (term.op != RequireOp::ge && term.op != RequireOp::gt)) {
        continue;
      }
      auto wanted = DriverVersion::parse(term.value);
      if (!wanted || !node.driver || *node.driver >= *wanted) continue;
      c.fail(Rule::cuda_driver, toolkit() + "; the node has driver " + node.driver->str(),
             "upgrade the driver to " + term.value + " or newer");
      return;
    }
  }
  std::string have = "the node has ";
  have += node.driver ? "driver " + node.driver->str() : std::string("an unknown driver");
  if (node.max_cuda) have += " (CUDA " + node.max_cuda->str() + ")";
  if (node.cc) have += ", compute capability " + node.cc->str();
  if (node.brand) have += ", brand " + *node.brand;
  c.fail(Rule::cuda_driver, toolkit() + "; " + have,
         "run the pod on GPUs that satisfy " + result.variable +
             ", or use an image whose requirement these nodes meet");
}

}  // namespace

void check_cuda_driver(RuleCheck& c) {
  const ContainerMetadata& md = c.metadata();
  const GpuFacts& node = c.node();
  const Policy& policy = c.policy();
  // Whether the toolkit on these nodes checks the image's NVIDIA_REQUIRE_*:
  // not when the image disables it, nor in CDI mode.
  const bool toolkit_checks = policy.toolkit_mode == ToolkitMode::legacy && !md.require_disabled;
  if (toolkit_checks && md.require.value && !md.require.value->empty()) {
    requirement(c);
    return;
  }
  if (!md.cuda.value) {
    c.unknown(Rule::cuda_driver,
              "the image's CUDA version is unknown (no CUDA_VERSION, NVIDIA_REQUIRE_CUDA or "
              "com.nvidia.cuda.version)",
              kFixCudaUnknown);
    return;
  }
  if (!node.max_cuda) {
    c.unknown(Rule::cuda_driver, "the node's driver version is unknown", kFixDriverUnknown);
    return;
  }
  const CudaVersion cuda = *md.cuda.value;
  if (cuda <= *node.max_cuda) return;
  if (node.max_cuda_floor) {
    // The driver's branch is newer than the matrix knows: it supports at
    // least max_cuda, and how much more is a gap in our knowledge.
    c.unknown(Rule::cuda_driver, "needs CUDA " + cuda.str() + "; " + floor_text(c),
              kFixUpdateMatrix);
    return;
  }
  // Without the toolkit's check what remains is the CUDA runtime's own,
  // which applies minor version compatibility whatever the policy says;
  // otherwise the policy decides whether to count on it.
  if (!toolkit_checks || policy.minor_version_compatibility) {
    switch (minor_version_compatible(c, cuda)) {
      case Tristate::yes:
        return;
      case Tristate::unknown:
        c.unknown(Rule::cuda_driver,
                  "needs CUDA " + cuda.str() +
                      " through minor version compatibility; the node's "
                      "driver version is unknown",
                  kFixDriverUnknown);
        return;
      case Tristate::no:
        break;
    }
  }
  if (!toolkit_checks && !md.require_disabled && md.require.value && !md.require.value->empty() &&
      forward_compatibility_declared(c)) {
    return;
  }
  std::string message = needs_cuda(c, cuda);
  if (md.require_disabled) {
    message += " (" + md.require.text +
               ": the toolkit checks no requirement, and the CUDA runtime refuses a driver "
               "older than its release outside minor version compatibility)";
  } else if (!toolkit_checks) {
    message +=
        " (toolkitMode cdi: the toolkit checks no requirement, and the CUDA runtime refuses a "
        "driver older than its release outside minor version compatibility)";
  }
  c.fail(Rule::cuda_driver, std::move(message), upgrade_fix(c, cuda));
}

const SourcedValue* cuda_driver_value(const ContainerDecision& container) {
  return !container.require.value.empty() ? &container.require : &container.cuda;
}

}  // namespace cudagate

// gpu-arch: the image carries machine code (SASS) or PTX that runs on the
// node's compute capability, judged from its arch list as the CUDA driver
// loads a fatbinary (docs/contract.md §2.5), or, without a list, from what
// the image's CUDA release can target at all.
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/rules/rule_check.h"

namespace cudagate {
namespace {

constexpr std::string_view kFixArchsUnknown =
    "annotate the pod with cudagate.io/arch-list (the architectures the image was compiled for)";
constexpr std::string_view kFixArchListAndCuda =
    "correct the image's arch list or CUDA version, or annotate the pod with "
    "cudagate.io/arch-list and cudagate.io/cuda-version (what the image was built with)";

void archs_unknown(RuleCheck& c) {
  const ContainerMetadata& md = c.metadata();
  c.unknown(Rule::gpu_arch, md.archs_unknown,
            md.archs_beyond_matrix ? kFixUpdateMatrix : kFixArchsUnknown);
}

// The targets of `archs` that the image's CUDA release cannot build, with
// an unknown finding when there are any: an image built with that release
// cannot carry them, so the list or the release is not what the image has.
std::vector<ArchTarget> cannot_build(RuleCheck& c, const ArchSet& archs, CudaVersion cuda) {
  const ContainerMetadata& md = c.metadata();
  const CompatDb& db = c.db();
  std::vector<ArchTarget> missing = targets_not_built_by(archs, cuda, db);
  if (missing.empty()) return missing;
  std::string names;
  for (const ArchTarget& t : missing) {
    if (!names.empty()) names += ", ";
    names += target_str(t);
  }
  c.unknown(Rule::gpu_arch,
            "compiled for " + archs.str() + " (" + origin(md.archs) + "), but CUDA " + cuda.str() +
                " (" + origin(md.cuda) + ") cannot build " + names +
                ": no image built with that release carries it, so the list or the CUDA "
                "version is not the image's",
            kFixArchListAndCuda);
  return missing;
}

std::string cmake_list(const ArchSet& archs) {
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

// "add 7.5 to the arch list (TORCH_CUDA_ARCH_LIST="7.5;8.0"), or add +PTX
// to an entry at or below 7.5", in CMake's spelling for CMake variables.
std::string add_arch_fix(const RuleCheck& c, const ArchSet& archs, ComputeCapability cc) {
  const ContainerMetadata& md = c.metadata();
  std::vector<ArchTarget> targets = archs.targets();
  targets.push_back(ArchTarget{cc, ArchVariant::portable, true, false});
  const ArchSet extended(std::move(targets));
  const bool cmake = md.archs.name == "CUDAARCHS" || md.archs.name == "CMAKE_CUDA_ARCHITECTURES";
  if (cmake) {
    const std::string code = std::to_string(cc.major()) + std::to_string(cc.minor());
    return "add " + code + " to the architectures (" + md.archs.name + "=\"" +
           cmake_list(extended) + "\"), or add a virtual (PTX) entry at or below " + code;
  }
  return "add " + cc.str() + " to the arch list (TORCH_CUDA_ARCH_LIST=\"" + extended.str() +
         "\"), or add +PTX to an entry at or below " + cc.str();
}

// The newest CUDA release that can still target `cc`, from the targets table.
std::string older_cuda_fix(const RuleCheck& c, ComputeCapability cc, CudaVersion cuda) {
  const CompatDb& db = c.db();
  const CudaTargets* last_fitting = nullptr;
  const CudaTargets* next = nullptr;
  for (const CudaTargets& t : db.cuda_targets) {
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
  for (const CudaRelease& r : db.cuda_releases) {
    if (r.cuda < next->since && (!newest || r.cuda > *newest)) newest = r.cuda;
  }
  if (!newest) return "use an image built with a CUDA release older than " + next->since.str();
  return "use an image built with CUDA " + newest->str() + " or older";
}

// The image's files, as its attached scan lists them: every counted file
// must have code the node can run; a file that is not counted and has
// none is a note.
void check_scanned(RuleCheck& c) {
  const ContainerMetadata& md = c.metadata();
  const ScanFacts& scan = *md.scan;
  if (!c.node().cc) {
    c.cc_unknown(Rule::gpu_arch, "");
    return;
  }
  const ComputeCapability cc = *c.node().cc;
  const auto runs = [&](std::size_t i) {
    return scan.files[i].archs.runs_on(cc, c.policy().arch_match, c.db());
  };
  std::vector<std::size_t> missing;
  for (const std::size_t i : md.scan_files.counted) {
    if (!runs(i)) missing.push_back(i);
  }
  if (!missing.empty()) {
    const ScannedCode& file = scan.files[missing.front()];
    std::string message = "ships " + file.path + ", which " + kernels_text(file.archs) +
                          " (scan); no kernel image for compute capability " + cc.str() +
                          c.product_suffix();
    if (missing.size() > 1) {
      message += ", nor in " + std::to_string(missing.size() - 1) + " more of the files counted";
    }
    c.fail(Rule::gpu_arch, std::move(message),
           "use a build of the image whose libraries are compiled for " + cc.str() +
               " (or carry PTX at or below it), or annotate the pod with cudagate.io/arch-list "
               "if the scan counts the wrong files");
    return;
  }
  for (const std::size_t i : md.scan_files.others) {
    if (runs(i)) continue;
    const ScannedCode& file = scan.files[i];
    c.note(file.path + " " + kernels_text(file.archs) +
           ": no kernel image for compute capability " + cc.str() + c.product_suffix() +
           "; it is not among the files counted (" + md.scan_files.why +
           "), but a call into it would fail there");
  }
}

}  // namespace

void check_gpu_arch(RuleCheck& c) {
  const ContainerMetadata& md = c.metadata();
  const GpuFacts& node = c.node();
  const Policy& policy = c.policy();
  const CompatDb& db = c.db();
  if (md.scan != nullptr && md.archs.source == Source::scan) {
    check_scanned(c);
    return;
  }
  if (md.archs.value && !md.archs.value->empty()) {
    const ArchSet& archs = *md.archs.value;
    if (md.cuda.value && !cannot_build(c, archs, *md.cuda.value).empty()) return;
    if (!node.cc) {
      c.cc_unknown(Rule::gpu_arch, "");
      return;
    }
    const ComputeCapability cc = *node.cc;
    if (archs.runs_on(cc, policy.arch_match, db)) return;
    std::string message = "compiled for " + archs.str() + " (" + origin(md.archs) +
                          "); no kernel image for compute capability " + cc.str() +
                          c.product_suffix();
    if (policy.arch_match == ArchMatch::exact && archs.runs_on(cc, ArchMatch::cuda, db)) {
      message +=
          " under archMatch: exact (only SASS built for exactly " + cc.str() + ", or PTX, counts)";
    }
    if (db.is_tegra(cc) ||
        std::any_of(archs.targets().begin(), archs.targets().end(),
                    [&](const ArchTarget& t) { return t.sass && db.is_tegra(t.cc); })) {
      message +=
          " (Tegra GPUs run only SASS built for exactly their capability, and no SASS of "
          "another kind)";
    }
    c.fail(Rule::gpu_arch, std::move(message), add_arch_fix(c, archs, cc));
    return;
  }
  if (!md.cuda.value) {
    // Nothing to judge the architectures by, unless the image says why.
    if (!md.archs_unknown.empty()) archs_unknown(c);
    return;
  }
  const CudaVersion cuda = *md.cuda.value;
  const CudaTargets* targets = db.targets_for(cuda);
  if (targets == nullptr || targets->all.empty()) return;
  if (!node.cc) {
    c.cc_unknown(Rule::gpu_arch, "");
    return;
  }
  const ComputeCapability cc = *node.cc;
  const auto [oldest, newest] = std::minmax_element(targets->all.begin(), targets->all.end());
  if (cc < *oldest) {
    c.fail(Rule::gpu_arch,
           "built with CUDA " + cuda.str() + " (" + origin(md.cuda) +
               "), which cannot target compute capability " + cc.str() + c.product_suffix() +
               ": its oldest target is " + oldest->str(),
           older_cuda_fix(c, cc, cuda) + ", or run on a GPU of compute capability " +
               oldest->str() + " or newer");
  } else if (cc > *newest && c.beyond_known_cuda(cuda)) {
    c.unknown(Rule::gpu_arch,
              "built with CUDA " + cuda.str() + " (" + origin(md.cuda) + "), a release " +
                  db.describe() +
                  " does not know, so whether it can build machine code for "
                  "compute capability " +
                  cc.str() + c.product_suffix() + " is unknown",
              kFixUpdateMatrix);
  } else if (cc > *newest) {
    c.unknown(Rule::gpu_arch,
              "built with CUDA " + cuda.str() + " (" + origin(md.cuda) +
                  "), which cannot build machine code for compute capability " + cc.str() +
                  c.product_suffix() + " (newest target " + newest->str() +
                  "); it runs there only if the image carries PTX",
              kFixArchsUnknown);
  } else if (!md.archs_unknown.empty()) {
    archs_unknown(c);
  }
}

const SourcedValue* gpu_arch_value(const ContainerDecision& container) {
  return !container.archs.value.empty() ? &container.archs : &container.cuda;
}

}  // namespace cudagate

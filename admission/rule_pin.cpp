// Asking the rules which maximum CUDA versions and compute capabilities pass,
// and writing the answer as Gt/In expressions on GPU Feature Discovery labels.
#include "admission/rule_pin.h"

#include <array>
#include <optional>
#include <utility>

#include "policy/image/arch_list.h"
#include "policy/image/requirement.h"
#include "policy/objects/dra_selector.h"
#include "policy/rules/container_check.h"
#include "policy/rules/metadata.h"
#include "types/quote.h"

namespace cudagate {
namespace {

// The grid of values asked about: majors 1..kMaxMajor, minors 0..9. A
// value's minor above 9 is taken as its row's last cell.
constexpr int kMaxMajor = 19;
constexpr int kMinors = 10;
using Row = std::array<bool, kMinors>;
using Grid = std::array<Row, kMaxMajor + 1>;  // [0] unused

// The metadata a container decision records, read back: the values the
// rules judged (their sources do not change the outcome).
Expected<ContainerMetadata> metadata_of(const ContainerDecision& c, const Policy& policy,
                                        const CompatDb& db) {
  ContainerMetadata md;
  if (!c.require.value.empty()) {
    // RequirementSet::str(): the variables' values joined by "; ".
    RequirementSet set;
    std::string_view rest = c.require.value;
    while (!rest.empty()) {
      const std::size_t end = rest.find("; ");
      set.requirements.push_back(parse_requirement("NVIDIA_REQUIRE_CUDA", rest.substr(0, end)));
      rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 2);
    }
    for (const Requirement& r : set.requirements) {
      for (const RequireAlternative& alternative : r.alternatives) {
        for (const RequireTerm& term : alternative.terms) {
          if (!term.valid() || (term.key != RequireKey::cuda && term.key != RequireKey::arch)) {
            return Error{c.name, "its NVIDIA_REQUIRE_* requirement " + quote(r.text) +
                                     " judges the driver version or brand, which are no label "
                                     "ranges"};
          }
        }
      }
    }
    md.require.value = std::move(set);
  }
  if (!c.cuda.value.empty()) {
    auto cuda = CudaVersion::parse(c.cuda.value);
    if (!cuda) return Error{c.name, "CUDA version " + c.cuda.value + " cannot be read back"};
    md.cuda.value = *cuda;
  }
  if (!c.archs.value.empty()) {
    auto archs = parse_torch_arch_list(c.archs.value, db, md.cuda.value, policy.arch_list_reading);
    if (!archs) return Error{c.name, "arch list " + c.archs.value + " cannot be read back"};
    md.archs.value = std::move(*archs);
  } else if (md.cuda.value && c.archs.source != "unknown") {
    // The image names its architectures in a way that leaves them unknown.
    return Error{c.name, "its architectures are unknown"};
  }
  if (!c.min_cc.value.empty()) {
    auto cc = ComputeCapability::parse(c.min_cc.value);
    if (!cc) return Error{c.name, "minimum compute capability cannot be read back"};
    md.min_cc.value = *cc;
  }
  return md;
}

// Which cells pass every container when `vary` sets the cell's value into
// a copy of `base`.
template <class Vary>
Grid passing(const std::vector<std::pair<std::string, ContainerMetadata>>& containers,
             const GpuFacts& base, const Policy& policy, const CompatDb& db, Vary vary) {
  Grid grid{};
  for (int major = 1; major <= kMaxMajor; ++major) {
    for (int minor = 0; minor < kMinors; ++minor) {
      GpuFacts facts = base;
      vary(facts, major, minor);
      bool ok = true;
      for (const auto& [name, md] : containers) {
        ok = ok && check_container(name, md, facts, policy, db).outcome == Outcome::compatible;
      }
      grid[static_cast<std::size_t>(major)][static_cast<std::size_t>(minor)] = ok;
    }
  }
  return grid;
}

NodeSelectorRequirement requirement(std::string_view key, const char* op, int value) {
  return {std::string(key), op, {std::to_string(value)}};
}

// The passing cells as ORed terms on (major_key, minor_key); an empty list
// when no cell passes, nullopt when every cell does (no constraint).
std::optional<std::vector<NodeSelectorTerm>> grid_terms(const Grid& grid,
                                                        std::string_view major_key,
                                                        std::string_view minor_key) {
  auto full = [&](int m) {
    const Row& r = grid[static_cast<std::size_t>(m)];
    for (const bool cell : r) {
      if (!cell) return false;
    }
    return true;
  };
  bool all = true;
  for (int m = 1; m <= kMaxMajor; ++m) all = all && full(m);
  if (all) return std::nullopt;

  std::vector<NodeSelectorTerm> terms;
  for (int m = 1; m <= kMaxMajor;) {
    if (full(m)) {
      // A run of whole majors [m, last]: open-ended when it reaches the
      // grid's top (the newer GPUs and drivers to come), else listed.
      int last = m;
      while (last + 1 <= kMaxMajor && full(last + 1)) ++last;
      NodeSelectorTerm term;
      if (last == kMaxMajor) {
        term.match_expressions.push_back(requirement(major_key, "Gt", m - 1));
      } else {
        std::vector<std::string> majors;
        for (int k = m; k <= last; ++k) majors.push_back(std::to_string(k));
        term.match_expressions.push_back({std::string(major_key), "In", std::move(majors)});
      }
      terms.push_back(std::move(term));
      m = last + 1;
      continue;
    }
    const Row& r = grid[static_cast<std::size_t>(m)];
    std::vector<std::string> minors;
    int first_of_tail = kMinors;  // the start of the passing cells that run to the row's end
    for (int n = kMinors - 1; n >= 0 && r[static_cast<std::size_t>(n)]; --n) first_of_tail = n;
    for (int n = 0; n < kMinors; ++n) {
      if (r[static_cast<std::size_t>(n)]) minors.push_back(std::to_string(n));
    }
    if (!minors.empty()) {
      NodeSelectorTerm term;
      term.match_expressions.push_back({std::string(major_key), "In", {std::to_string(m)}});
      if (first_of_tail < kMinors && static_cast<int>(minors.size()) == kMinors - first_of_tail) {
        term.match_expressions.push_back(requirement(minor_key, "Gt", first_of_tail - 1));
      } else {
        term.match_expressions.push_back({std::string(minor_key), "In", std::move(minors)});
      }
      terms.push_back(std::move(term));
    }
    ++m;
  }
  return terms;
}

// Every term of `a` with every term of `b`, their expressions concatenated.
std::vector<NodeSelectorTerm> and_terms(const std::vector<NodeSelectorTerm>& a,
                                        const std::vector<NodeSelectorTerm>& b) {
  std::vector<NodeSelectorTerm> out;
  for (const auto& x : a) {
    for (const auto& y : b) {
      NodeSelectorTerm term = x;
      term.match_expressions.insert(term.match_expressions.end(), y.match_expressions.begin(),
                                    y.match_expressions.end());
      out.push_back(std::move(term));
    }
  }
  return out;
}

// The metadata of the decision's GPU containers, read back.
Expected<std::vector<std::pair<std::string, ContainerMetadata>>> gpu_metadata(
    const Decision& decision, const Policy& policy, const CompatDb& db) {
  std::vector<std::pair<std::string, ContainerMetadata>> containers;
  for (const auto& c : decision.containers) {
    if (!c.gpu) continue;
    auto md = metadata_of(c, policy, db);
    if (!md) return Error{"", "container " + md.error().where + ": " + md.error().message};
    containers.emplace_back(c.name, std::move(*md));
  }
  if (containers.empty()) return Error{"", "no GPU container"};
  return containers;
}

// The passing cells of `grid` as CEL over the version attribute
// `attribute`: ranges [m.n.0, m.(k+1).0) ORed; "" when every cell passes.
std::string grid_cel(const Grid& grid, std::string_view attribute) {
  const std::string subject =
      "device.attributes[\"gpu.nvidia.com\"]." + std::string(attribute) + ".compareTo(semver(\"";
  auto at_least = [&](int major, int minor) {
    return subject + std::to_string(major) + "." + std::to_string(minor) + ".0\")) >= 0";
  };
  auto below = [&](int major, int minor) {
    if (minor >= kMinors) {
      ++major;
      minor = 0;
    }
    return subject + std::to_string(major) + "." + std::to_string(minor) + ".0\")) < 0";
  };
  // The passing cells in order, as runs [first, end) of (major, minor).
  std::vector<std::string> ranges;
  bool all = true;
  int start = -1;  // index of the run's first cell: major * kMinors + minor
  auto cell = [&](int index) {
    return grid[static_cast<std::size_t>(index / kMinors)]
               [static_cast<std::size_t>(index % kMinors)];
  };
  const int first_index = kMinors;  // 1.0
  const int end_index = (kMaxMajor + 1) * kMinors;
  for (int i = first_index; i <= end_index; ++i) {
    const bool pass = i < end_index && cell(i);
    all = all && (i == end_index || pass);
    if (pass && start < 0) start = i;
    if (!pass && start >= 0) {
      const std::string from = at_least(start / kMinors, start % kMinors);
      // A run that reaches the grid's top stays open for what comes later.
      ranges.push_back(i < end_index ? "(" + from + " && " + below(i / kMinors, i % kMinors) + ")"
                                     : from);
      start = -1;
    }
  }
  if (all) return "";
  if (ranges.empty()) return "false";
  std::string out;
  for (const std::string& r : ranges) out += (out.empty() ? "" : " || ") + r;
  return ranges.size() > 1 ? "(" + out + ")" : out;
}

}  // namespace

Expected<std::string> rule_device_selector(const Decision& decision, const Policy& policy,
                                           const CompatDb& db) {
  if (policy.minor_version_compatibility) {
    return Error{"", "minorVersionCompatibility judges the driver version by its branch"};
  }
  auto gpu = gpu_metadata(decision, policy, db);
  if (!gpu) return gpu.error();
  const std::vector<std::pair<std::string, ContainerMetadata>>& containers = *gpu;
  // The other facts of a compatible kind when there is one, else of any.
  const DeviceKind* base_kind = nullptr;
  for (const auto& g : decision.groups) {
    for (const DeviceKind& kind : g.facts.devices) {
      if (base_kind == nullptr || g.outcome == Outcome::compatible) base_kind = &kind;
    }
    if (base_kind != nullptr && g.outcome == Outcome::compatible) break;
  }
  if (base_kind == nullptr) return Error{"", "no candidate node has DRA devices"};
  const GpuFacts base = device_gpu_facts(*base_kind, db);
  const Grid cuda = passing(containers, base, policy, db, [](GpuFacts& f, int major, int minor) {
    f.max_cuda = CudaVersion(major, minor);
  });
  const Grid cc = passing(containers, base, policy, db, [](GpuFacts& f, int major, int minor) {
    f.cc = ComputeCapability(major, minor);
  });
  const std::string cuda_cel = grid_cel(cuda, "cudaDriverVersion");
  const std::string cc_cel = grid_cel(cc, "cudaComputeCapability");
  std::string selector;
  if (!cuda_cel.empty() && !cc_cel.empty()) {
    selector = cuda_cel + " && " + cc_cel;
  } else {
    selector = !cuda_cel.empty() ? cuda_cel : cc_cel;
  }
  if (selector.empty()) return Error{"", "every CUDA version and compute capability passes"};
  if (selector == "false" || cuda_cel == "false" || cc_cel == "false") {
    return Error{"", "no CUDA version or compute capability passes the rules"};
  }

  // Checked on every kind of device the decision judged.
  std::string why;
  const auto parsed = DraSelector::parse(selector, &why);
  if (!parsed) return Error{"", "the selector does not read back: " + why};
  for (const auto& g : decision.groups) {
    for (const DeviceKind& kind : g.facts.devices) {
      const GpuFacts facts = device_gpu_facts(kind, db);
      bool compatible = true;
      for (const auto& [name, md] : containers) {
        compatible = compatible &&
                     check_container(name, md, facts, policy, db).outcome == Outcome::compatible;
      }
      if (parsed->matches(kind) != compatible) {
        return Error{
            "", "the rules' selector would " + std::string(compatible ? "exclude" : "select") +
                    " " + facts.product + " devices (driver " +
                    (facts.driver ? facts.driver->str() : "unknown") + "), which the rules find " +
                    (compatible ? "compatible" : "incompatible")};
      }
    }
  }
  return selector;
}

Expected<RulePin> rule_pin_terms(const Decision& decision, const Policy& policy,
                                 const CompatDb& db) {
  if (policy.minor_version_compatibility) {
    return Error{"",
                 "minorVersionCompatibility judges the driver version, which is no label range"};
  }
  const GroupDecision* compatible = nullptr;
  for (const auto& g : decision.groups) {
    if (g.outcome == Outcome::compatible) {
      compatible = &g;
      break;
    }
  }
  if (compatible == nullptr) return Error{"", "no compatible node"};
  auto gpu = gpu_metadata(decision, policy, db);
  if (!gpu) return gpu.error();
  const std::vector<std::pair<std::string, ContainerMetadata>>& containers = *gpu;

  const GpuFacts& base = compatible->facts;
  const Grid cuda = passing(containers, base, policy, db, [](GpuFacts& f, int major, int minor) {
    f.max_cuda = CudaVersion(major, minor);
  });
  const Grid cc = passing(containers, base, policy, db, [](GpuFacts& f, int major, int minor) {
    f.cc = ComputeCapability(major, minor);
  });
  // On both of GFD's label schemes, whichever today's compatible nodes
  // carry: a node that becomes compatible after a rollout matches the pin
  // whether its GPU Feature Discovery writes the newer keys or the older.
  auto cuda_terms = grid_terms(cuda, kCudaRuntimeMajor, kCudaRuntimeMinor);
  if (cuda_terms) {
    auto older = grid_terms(cuda, kCudaRuntimeMajorOld, kCudaRuntimeMinorOld);
    cuda_terms->insert(cuda_terms->end(), std::make_move_iterator(older->begin()),
                       std::make_move_iterator(older->end()));
  }
  auto cc_terms = grid_terms(cc, kComputeMajor, kComputeMinor);
  if ((cuda_terms && cuda_terms->empty()) || (cc_terms && cc_terms->empty())) {
    return Error{"",
                 "no CUDA version or compute capability passes the rules with the other facts "
                 "of a compatible node"};
  }
  RulePin pin;
  pin.keys = "rules on labels";
  const char* separator = " ";
  if (cuda_terms) {
    pin.keys += separator + std::string(kCudaRuntimeMajor) + ", " + std::string(kCudaRuntimeMinor) +
                " (or " + std::string(kCudaRuntimeMajorOld) + ", " +
                std::string(kCudaRuntimeMinorOld) + ")";
    separator = ", ";
  }
  if (cc_terms) {
    pin.keys += separator + std::string(kComputeMajor) + ", " + std::string(kComputeMinor);
  }
  if (cuda_terms && cc_terms) {
    pin.terms = and_terms(*cuda_terms, *cc_terms);
  } else if (cuda_terms) {
    pin.terms = std::move(*cuda_terms);
  } else if (cc_terms) {
    pin.terms = std::move(*cc_terms);
  } else {
    return Error{"",
                 "every CUDA version and compute capability passes: the rules set nothing apart"};
  }
  return pin;
}

}  // namespace cudagate

// The images a decision reads from the registry, and the platform of each.
#include "policy/rules/images_wanted.h"

#include <algorithm>
#include <utility>

namespace cudagate {

std::string fleet_platform(const Inventory& inventory) {
  std::string platform;
  for (std::size_t i = 0; i < inventory.size(); ++i) {
    if (!inventory.groups()[inventory.group_of(i)].facts.has_gpu) continue;
    const std::string* arch = inventory.node_label(i, "kubernetes.io/arch");
    if (arch == nullptr || arch->empty()) return "";
    const std::string* os = inventory.node_label(i, "kubernetes.io/os");
    std::string node_platform =
        (os == nullptr || os->empty() ? std::string("linux") : *os) + "/" + *arch;
    if (platform.empty()) {
      platform = std::move(node_platform);
    } else if (platform != node_platform) {
      return "";
    }
  }
  return platform;
}

std::string registry_platform(const PodSpec& spec, std::string_view fleet_platform,
                              const Policy& policy) {
  constexpr std::string_view kArch = "kubernetes.io/arch";
  constexpr std::string_view kOs = "kubernetes.io/os";
  std::string arch;
  std::string os;
  for (const auto& [key, value] : spec.node_selector) {
    if (key == kArch) arch = value;
    if (key == kOs) os = value;
  }
  // A required affinity names one architecture when each of its terms (ORed)
  // asks for that one with In.
  if (arch.empty() && spec.required_terms && !spec.required_terms->empty()) {
    std::string common;
    bool agreed = true;
    for (const NodeSelectorTerm& term : *spec.required_terms) {
      std::string named;
      for (const NodeSelectorRequirement& r : term.match_expressions) {
        if (r.key == kArch && r.op == "In" && r.values.size() == 1) named = r.values[0];
      }
      if (named.empty() || (!common.empty() && named != common)) {
        agreed = false;
        break;
      }
      common = named;
    }
    if (agreed) arch = common;
  }
  if (arch.empty()) {
    return std::string(fleet_platform.empty() ? std::string_view(policy.registry.platform)
                                              : fleet_platform);
  }
  return (os.empty() ? std::string("linux") : os) + "/" + arch;
}

std::vector<ImageWanted> images_wanted(const Workload& workload,
                                       std::span<const ContainerSpec* const> gpu,
                                       std::string_view fleet_platform, const Policy& policy) {
  std::vector<ImageWanted> out;
  if (!policy.registry.enabled) return out;
  std::string platform;
  for (const ContainerSpec* c : gpu) {
    if (c->image.empty() || policy.catalog_entry(c->image) != nullptr) continue;
    if (platform.empty()) platform = registry_platform(workload.spec, fleet_platform, policy);
    ImageWanted wanted{c->image, platform};
    if (std::find(out.begin(), out.end(), wanted) == out.end()) out.push_back(std::move(wanted));
  }
  return out;
}

}  // namespace cudagate

#pragma once
// Which image configs a decision reads from the registry, and for which
// platform: the one home of that choice for the webhook (admission/), the
// background audit (server/) and the commands (cli/), each of which then
// looks them up its own way (awaited, from the cache, or at once).

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "policy/config/policy.h"
#include "policy/inventory/inventory.h"
#include "policy/objects/pod.h"
#include "policy/rules/metadata.h"

namespace cudagate {

// The platform ("linux/amd64") that every GPU node of `inventory` has
// (labels kubernetes.io/os, kubernetes.io/arch), or "" when they differ or
// some does not say. Walks the inventory: computed once per inventory.
[[nodiscard]] std::string fleet_platform(const Inventory& inventory);

// The platform whose config a pod's images are read for: the one its
// nodeSelector or required node affinity names (kubernetes.io/arch, and
// kubernetes.io/os), else the fleet's single platform, else the policy's
// registry.platform. Its candidates then run that platform's image.
[[nodiscard]] std::string registry_platform(const PodSpec& spec, std::string_view fleet_platform,
                                            const Policy& policy);

// The lookups `gpu` (the workload's GPU containers, gpu_containers()) need:
// each image the policy's catalog does not describe, once, for the
// workload's registry_platform(); none when the policy's registry is off.
[[nodiscard]] std::vector<ImageWanted> images_wanted(const Workload& workload,
                                                     std::span<const ContainerSpec* const> gpu,
                                                     std::string_view fleet_platform,
                                                     const Policy& policy);

}  // namespace cudagate

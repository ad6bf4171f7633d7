#pragma once
// Pin terms written on the facts the rules judge, not on today's values.
//
// A pod's GPU containers need some maximum CUDA version of the node's
// driver and some compute capability. Which values pass is asked of the
// rules themselves (check_container) for every value on a grid: the CUDA
// versions 1.0 to 19.9 with the other facts of a compatible node, and the
// compute capabilities 1.0 to 19.9 the same way. The passing values are then
// written as the scheduler's label expressions on GPU Feature Discovery's
// numeric labels:
//
//   CUDA >= 12.4  ->  runtime.major Gt 12  OR  (runtime.major In [12], runtime.minor Gt 3)
//   SASS 8.0, 9.0 ->  (compute.major In [8], compute.minor Gt -1)  OR  (compute.major In [9], ...)
//
// and ANDed (every CUDA term with every compute term). A node whose driver
// is upgraded to one whose CUDA passes then matches the pin without the pod
// being recreated; one downgraded, or given an older GPU, stops matching.
// Nodes without those labels never match Gt, so they are not selected.
//
// Kubernetes' Gt and Lt compare one integer, so a fact is written on its
// major and minor labels; driver versions (535.129.03) and cudagate.io/*
// labels ("8.0") are not integers and cannot be ranges. Where the facts
// cannot be said this way (an NVIDIA_REQUIRE_* requirement, which also
// judges driver and brand; minorVersionCompatibility, which depends on the
// driver; no value passing), rule_pin_terms says why, and the caller pins on
// exact values instead.
//
// Pure: the result depends only on its arguments.

#include <string>
#include <vector>

#include "compat-db/compat_db.h"
#include "policy/config/policy.h"
#include "policy/inventory/inventory.h"
#include "policy/objects/pod.h"
#include "policy/rules/decision.h"
#include "types/expected.h"

namespace cudagate {

// GPU Feature Discovery's numeric labels of the two facts.
inline constexpr std::string_view kCudaRuntimeMajor = "nvidia.com/cuda.runtime-version.major";
inline constexpr std::string_view kCudaRuntimeMinor = "nvidia.com/cuda.runtime-version.minor";
inline constexpr std::string_view kCudaRuntimeMajorOld = "nvidia.com/cuda.runtime.major";
inline constexpr std::string_view kCudaRuntimeMinorOld = "nvidia.com/cuda.runtime.minor";
inline constexpr std::string_view kComputeMajor = "nvidia.com/gpu.compute.major";
inline constexpr std::string_view kComputeMinor = "nvidia.com/gpu.compute.minor";

struct RulePin {
  std::vector<NodeSelectorTerm> terms;  // ORed
  std::string keys;                     // "rules on labels nvidia.com/...": for Pin::scheme
};

// The pin terms for `decision` (a partial decision with at least one
// compatible group) under `policy`. The CUDA ranges are written on both of
// GPU Feature Discovery's label schemes, nvidia.com/cuda.runtime-version.*
// and the older nvidia.com/cuda.runtime.*, each range once per scheme
// (ORed): a node that becomes compatible matches whichever it carries.
[[nodiscard]] Expected<RulePin> rule_pin_terms(const Decision& decision, const Policy& policy,
                                               const CompatDb& db);

// The same rules as a CEL selector on the attributes of NVIDIA's DRA
// driver, for a device request of a claim that `decision`'s pod names:
//
//   device.attributes["gpu.nvidia.com"].cudaDriverVersion.compareTo(semver("12.4.0")) >= 0 &&
//   (device.attributes["gpu.nvidia.com"].cudaComputeCapability.compareTo(semver("8.0.0")) >= 0 &&
//    device.attributes["gpu.nvidia.com"].cudaComputeCapability.compareTo(semver("9.0.0")) < 0) ||
//    ...
//
// so that the scheduler gives the claim only devices that can run the
// image, on the fleet of today and of after a driver rollout. It is checked
// on every kind of device of the decision's groups: it must select exactly
// the kinds the rules find compatible, else the error says which it would
// get wrong.
[[nodiscard]] Expected<std::string> rule_device_selector(const Decision& decision,
                                                         const Policy& policy, const CompatDb& db);

}  // namespace cudagate

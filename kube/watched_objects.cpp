// Reading the ResourceSlices, claims and NodePools the watchers receive.
#include "kube/watched_objects.h"

#include <spdlog/spdlog.h>

#include <string>
#include <utility>

#include "kube/cluster_workloads.h"

namespace cudagate::kube {
namespace {

// What a log line calls an object of each kind left out.
template <typename T>
constexpr std::string_view kLeftOut = "";
template <>
constexpr std::string_view kLeftOut<ResourceSlice> = "ResourceSlice";
template <>
constexpr std::string_view kLeftOut<ClaimSpec> = "claim";
template <>
constexpr std::string_view kLeftOut<NodePool> = "NodePool";

}  // namespace

template <>
Expected<std::optional<ResourceSlice>> read_watched<ResourceSlice>(const nlohmann::json& object,
                                                                   std::string_view name) {
  auto slice = resource_slice_from_json(object, "resourceslices " + std::string(name));
  if (!slice) return slice.error();
  return std::optional<ResourceSlice>(std::move(*slice));
}

template <>
Expected<std::optional<ClaimSpec>> read_watched<ClaimSpec>(const nlohmann::json& object,
                                                           std::string_view /*name*/) {
  return read_claim_object(object);
}

template <>
Expected<std::optional<NodePool>> read_watched<NodePool>(const nlohmann::json& object,
                                                         std::string_view name) {
  auto pool = node_pool_from_json(object, "nodepools " + std::string(name));
  if (!pool) return pool.error();
  return std::optional<NodePool>(std::move(*pool));
}

template <typename T>
std::optional<T> watched_object(const nlohmann::json& object, std::string_view name) {
  auto value = read_watched<T>(object, name);
  if (!value) {
    spdlog::warn("API server: {} left out: {}", kLeftOut<T>, value.error().str());
    return std::nullopt;
  }
  return std::move(*value);
}

template std::optional<ResourceSlice> watched_object<ResourceSlice>(const nlohmann::json& object,
                                                                    std::string_view name);
template std::optional<ClaimSpec> watched_object<ClaimSpec>(const nlohmann::json& object,
                                                            std::string_view name);
template std::optional<NodePool> watched_object<NodePool>(const nlohmann::json& object,
                                                          std::string_view name);

}  // namespace cudagate::kube

#pragma once
// The objects of the collections watched beside the Nodes, read from the
// JSON the API server sends, so that they leave kube/ as values
// (kube/object_watcher.h hands them on read): ResourceSlices, ResourceClaims
// and ResourceClaimTemplates (Dynamic Resource Allocation), and Karpenter's
// NodePools.
//
// read_watched<T>(object, name) reads one object of its collection (a list
// item or a watch event's object, with kind and apiVersion filled in);
// `name` is its metadata.name as the list or the event gives it. It is the
// reader of each kind, with the place its errors name:
//
//   ResourceSlice  resource_slice_from_json at "resourceslices <name>"
//   ClaimSpec      read_claim_object (kube/cluster_workloads.h), which names
//                  the object itself ("ResourceClaim ml/shared"); `name` is
//                  not used
//   NodePool       node_pool_from_json at "nodepools <name>"
//
// The value is nullopt for an object of the collection that is none of
// cudagate's: a ResourceClaim made for a pod from its template
// (kube::made_for_pod), which no pod names and of which there is one per
// pod. Every other object is a T or an Error (what was expected, and
// where). Which objects the server keeps (NVIDIA's slices, say) is the
// server's to choose; these readers keep them all.
//
// watched_object<T>(object, name) is read_watched<T> for the watcher: an
// Error is logged (spdlog warn, "API server: <what> left out: <error>",
// <what> being "ResourceSlice", "claim" or "NodePool") and becomes
// nullopt, as an object none of cudagate's does.
//
// Pure but for that log line; thread-safe.

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "policy/objects/dra.h"
#include "policy/objects/node_pool.h"
#include "types/expected.h"

namespace cudagate::kube {

template <typename T>
[[nodiscard]] Expected<std::optional<T>> read_watched(const nlohmann::json& object,
                                                      std::string_view name);
template <>
[[nodiscard]] Expected<std::optional<ResourceSlice>> read_watched<ResourceSlice>(
    const nlohmann::json& object, std::string_view name);
template <>
[[nodiscard]] Expected<std::optional<ClaimSpec>> read_watched<ClaimSpec>(
    const nlohmann::json& object, std::string_view name);
template <>
[[nodiscard]] Expected<std::optional<NodePool>> read_watched<NodePool>(const nlohmann::json& object,
                                                                       std::string_view name);

template <typename T>
[[nodiscard]] std::optional<T> watched_object(const nlohmann::json& object, std::string_view name);
extern template std::optional<ResourceSlice> watched_object<ResourceSlice>(
    const nlohmann::json& object, std::string_view name);
extern template std::optional<ClaimSpec> watched_object<ClaimSpec>(const nlohmann::json& object,
                                                                   std::string_view name);
extern template std::optional<NodePool> watched_object<NodePool>(const nlohmann::json& object,
                                                                 std::string_view name);

}  // namespace cudagate::kube

#pragma once
// Where an image's registry is reached, by the policy's registry settings
// (docs/contract.md §4, registry:): the mirror of its registry first
// (registry.mirrors: "mirror.example.com", "https://mirror.example.com",
// "http://10.0.0.5:5000"), the origin last; plain HTTP to the hosts in
// registry.insecure and to a mirror written with http://; docker.io is
// reached at registry-1.docker.io.
//
// Pure functions of their input.

#include <string_view>
#include <vector>

#include "policy/config/policy.h"
#include "policy/image/image_ref.h"
#include "registry/image_lookup.h"

namespace cudagate {

// A mirror as written in registry.mirrors.
[[nodiscard]] RegistryEndpoint mirror_endpoint(std::string_view text,
                                               const RegistrySettings& settings);
// The registry of `ref` itself.
[[nodiscard]] RegistryEndpoint origin_endpoint(const ImageRef& ref,
                                               const RegistrySettings& settings);
// The endpoints to read `ref` from, in order: its mirror (if any), then its origin.
[[nodiscard]] std::vector<RegistryEndpoint> read_endpoints(const ImageRef& ref,
                                                           const RegistrySettings& settings);

}  // namespace cudagate

// Mirrors and origins from the policy's registry settings.
#include "registry/registry_endpoints.h"

#include <algorithm>

namespace cudagate {

namespace {

bool is_insecure(const RegistrySettings& settings, std::string_view host) {
  return std::ranges::find(settings.insecure, host) != settings.insecure.end();
}

}  // namespace

RegistryEndpoint mirror_endpoint(std::string_view text, const RegistrySettings& settings) {
  bool tls = true;
  bool explicit_scheme = false;
  if (text.starts_with("https://")) {
    text.remove_prefix(8);
    explicit_scheme = true;
  } else if (text.starts_with("http://")) {
    text.remove_prefix(7);
    tls = false;
    explicit_scheme = true;
  }
  text = text.substr(0, text.find('/'));
  RegistryEndpoint out{std::string(text), tls};
  if (!explicit_scheme && is_insecure(settings, out.host)) out.tls = false;
  return out;
}

RegistryEndpoint origin_endpoint(const ImageRef& ref, const RegistrySettings& settings) {
  RegistryEndpoint out{ref.registry == "docker.io" ? "registry-1.docker.io" : ref.registry, true};
  if (is_insecure(settings, ref.registry) || is_insecure(settings, out.host)) out.tls = false;
  return out;
}

std::vector<RegistryEndpoint> read_endpoints(const ImageRef& ref,
                                             const RegistrySettings& settings) {
  std::vector<RegistryEndpoint> out;
  if (const auto mirror = settings.mirrors.find(ref.registry); mirror != settings.mirrors.end()) {
    out.push_back(mirror_endpoint(mirror->second, settings));
  }
  out.push_back(origin_endpoint(ref, settings));
  return out;
}

}  // namespace cudagate

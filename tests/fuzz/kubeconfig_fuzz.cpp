// Feeds arbitrary text to the kubeconfig, API server URL and ExecCredential
// readers: each reads it or says why not, a kubeconfig error naming the
// file and the field, and what is read has a server.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kube/cluster_config.h"
#include "kube/credentials.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = cudagate::kube::parse_kubeconfig(text, "/nonexistent/kubeconfig");
  if (!config) {
    if (config.error().message.empty()) __builtin_trap();
    if (config.error().where.find("/nonexistent/kubeconfig") != 0) __builtin_trap();
  } else if (config->server.host.empty()) {
    __builtin_trap();
  }
  auto url = cudagate::kube::parse_server_url(text, "server");
  if (url && url->host.empty()) __builtin_trap();
  auto credential =
      cudagate::kube::parse_exec_credential(text, "client.authentication.k8s.io/v1", "fuzz-plugin");
  if (!credential && credential.error().message.empty()) __builtin_trap();
  return 0;
}

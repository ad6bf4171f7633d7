#pragma once
// The HTTPS admission webhook as a whole (docs/contract.md §5): loads the
// compatibility matrix, the policy, the node inventory and the TLS
// certificate, serves until SIGTERM or SIGINT, reloads the files when they
// change, and drains in-flight requests within the shutdown grace before it
// returns.
//
// The command line (cli/serve.cpp) turns flags into ServeSettings; serve()
// does the rest. It sets the logger's flush scheduler while it runs, so the
// logger (server/logging.h) must be set up before it is called.

#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <optional>
#include <string>

#include "kube/cluster_config.h"
#include "server/background_audit.h"
#include "server/cert_store.h"
#include "server/tls_server.h"
#include "types/expected.h"

namespace cudagate {

struct ServeSettings {
  std::string config_path;  // the policy file; empty: the defaults
  std::string nodes_path;   // the node inventory file; this or `cluster`
  // The cluster whose Nodes are listed and watched (--in-cluster,
  // --kubeconfig) instead of a file; ready once the first list is in.
  std::optional<kube::ClusterConfig> cluster;
  // The background audit of what runs in `cluster` (--audit-interval);
  // needs `cluster`.
  std::optional<BackgroundAuditSettings> audit;
  std::string compat_db_path;  // empty: the embedded matrix
  // A matrix file that replaces the one above while it exists (a mounted
  // ConfigMap that may be absent): created, changed or removed, the server
  // switches matrices without a restart.
  std::string compat_db_override;
  TlsFiles tls;
  boost::asio::ip::tcp::endpoint endpoint;
  unsigned threads = 1;  // I/O threads, at least one
  std::chrono::milliseconds shutdown_grace{10'000};
  ServerLimits limits;
};

// Serves until a signal ends it, then returns nullopt. A start-up failure
// (an unreadable or invalid file, an address in use) is returned as the
// Error that names the file or flag, before anything is served.
[[nodiscard]] std::optional<Error> serve(const ServeSettings& settings);

// "0.0.0.0:8443", "[::1]:8443", ":8443" (every IPv4 address); the Error
// names --listen.
[[nodiscard]] Expected<boost::asio::ip::tcp::endpoint> parse_listen(const std::string& text);

}  // namespace cudagate

#pragma once
// Where the Kubernetes API server is and how cudagate proves who it is:
// read from a kubeconfig file (the current context) or from the pod's
// service account (in-cluster), the two ways client-go configures itself.
//
// A ClusterConfig is a value: the server's address, the CA to verify it
// with, and one way to authenticate (a token, a token file re-read when it
// changes, a client certificate and key, or an exec credential plugin). It
// holds paths and data as the source gave them; credentials.h turns them
// into what a connection presents. Parsing reads files only for the
// kubeconfig itself; errors name the file and the field.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "types/expected.h"

namespace cudagate::kube {

// https://HOST[:PORT][/PREFIX]
struct ServerAddress {
  std::string host;  // a name or an IP address, without IPv6 brackets
  std::uint16_t port = 443;
  std::string path_prefix;  // "" or "/prefix" (no trailing slash)
};

// Parses a kubeconfig `server` value; only https is accepted. `where` names
// the field in errors.
[[nodiscard]] Expected<ServerAddress> parse_server_url(std::string_view url,
                                                       const std::string& where);

// A client.authentication.k8s.io exec plugin (kubeconfig users[].user.exec).
struct ExecPlugin {
  std::string api_version;
  std::string command;  // resolved against the kubeconfig's folder when it names a relative path
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;  // added to cudagate's environment
};

struct ClusterConfig {
  std::string source;  // "kubeconfig /path (context ctx)" or "in-cluster"
  ServerAddress server;
  std::string tls_server_name;  // SNI and the name verified; empty: server.host
  // The CA bundle: PEM data, or a file; both empty: the system's trust store.
  std::string ca_pem;
  std::string ca_file;
  bool insecure_skip_tls_verify = false;

  // Authentication; any of them may be set (a client certificate and a
  // token together is valid).
  std::string token;
  std::string token_file;  // re-read when it changes
  std::string client_cert_pem;
  std::string client_cert_file;
  std::string client_key_pem;
  std::string client_key_file;
  std::optional<ExecPlugin> exec;
};

// The current context of a kubeconfig file's text. Relative paths in it
// (certificate-authority, client-certificate, client-key, tokenFile, and an
// exec command containing a '/') are resolved against `path`'s folder, as
// kubectl does. Errors: Error{"<path>: <field>", ...}.
[[nodiscard]] Expected<ClusterConfig> parse_kubeconfig(std::string_view text,
                                                       const std::string& path);

// parse_kubeconfig of the file at `path`.
[[nodiscard]] Expected<ClusterConfig> load_kubeconfig(const std::string& path);

// The kubeconfig to use: `flag` when given, else the first existing file
// of $KUBECONFIG (a ':'-separated list; cudagate reads one file and does
// not merge them), else ~/.kube/config.
[[nodiscard]] Expected<std::string> kubeconfig_path(const std::string& flag,
                                                    const std::map<std::string, std::string>& env);

// The standard folder of a pod's service account credentials.
inline constexpr std::string_view kServiceAccountDir =
    "/var/run/secrets/kubernetes.io/serviceaccount";

// In-cluster configuration: KUBERNETES_SERVICE_HOST and _PORT from `env`,
// the token file and ca.crt from `service_account_dir` (kServiceAccountDir in
// a pod). The token is read from the file by every connection, so bound
// tokens that the kubelet rotates are picked up.
[[nodiscard]] Expected<ClusterConfig> in_cluster_config(
    const std::map<std::string, std::string>& env, const std::string& service_account_dir);

// The process environment, for the two functions above.
[[nodiscard]] std::map<std::string, std::string> process_environment();

}  // namespace cudagate::kube

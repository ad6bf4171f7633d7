#pragma once
// What a connection to the API server presents, from a ClusterConfig: the
// bearer token and the client certificate, as they are now.
//
// A token file is read again whenever its modification time or size
// changes (the kubelet rotates bound service account tokens about hourly);
// an exec plugin is run when there is no credential yet, when the one it
// gave has expired (status.expirationTimestamp), and after the server
// refused it (invalidate()). File contents are read here, so a missing or
// unreadable file is an Error naming it.
//
// Not thread-safe: one CredentialSource belongs to one watcher, which uses
// it from its strand. current() runs an exec plugin itself when it must (and
// blocks while it runs, at most kExecTimeout); a caller that must not block
// asks exec_due() first, runs the plugin elsewhere and hands its result to
// set_exec().

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "kube/cluster_config.h"
#include "types/expected.h"

namespace cudagate::kube {

struct Credentials {
  std::string token;            // empty: no Authorization header
  std::string client_cert_pem;  // with client_key_pem, or both empty
  std::string client_key_pem;
  std::string ca_pem;  // empty: the system's trust store
};

// The status of a client.authentication.k8s.io ExecCredential as a plugin
// prints it on stdout.
struct ExecCredential {
  std::string token;
  std::string client_cert_pem;
  std::string client_key_pem;
  // Unix seconds; nullopt: valid until the server refuses it.
  std::optional<std::int64_t> expires_at;
};

// Parses a plugin's output; `api_version` is the one the kubeconfig asked
// for, which the output must carry. Errors name `where` (the command).
[[nodiscard]] Expected<ExecCredential> parse_exec_credential(std::string_view text,
                                                             std::string_view api_version,
                                                             const std::string& where);

// Runs the plugin (its env added to this process's, KUBERNETES_EXEC_INFO
// set) and parses what it prints. A plugin that exits non-zero, prints no
// credential or runs past `timeout` is an Error.
[[nodiscard]] Expected<ExecCredential> run_exec_plugin(const ExecPlugin& plugin,
                                                       std::chrono::milliseconds timeout);

inline constexpr std::chrono::milliseconds kExecTimeout{30'000};

class CredentialSource {
 public:
  explicit CredentialSource(ClusterConfig config);

  // The credentials to present now; `now` is Unix seconds.
  [[nodiscard]] Expected<Credentials> current(std::int64_t now);
  // The server refused the last credentials (401): an exec plugin runs again
  // and a token file is read again on the next current().
  void invalidate();

  // Whether current() would run the exec plugin now.
  [[nodiscard]] bool exec_due(std::int64_t now) const;
  // The plugin's credential, run by the caller.
  void set_exec(ExecCredential credential) { exec_ = std::move(credential); }

  [[nodiscard]] const ClusterConfig& config() const { return config_; }

 private:
  ClusterConfig config_;
  // The token file as last read, and what identified that version of it.
  std::string file_token_;
  std::int64_t token_mtime_ns_ = -1;
  std::int64_t token_size_ = -1;
  std::optional<ExecCredential> exec_;
  // Static files (CA, client certificate) read once.
  std::optional<Credentials> static_;
};

}  // namespace cudagate::kube

#pragma once
// Where an HTTPS client connects: a host, a port, plain HTTP or TLS, and the
// name the server's certificate is verified against (and sent as SNI), which
// a kubeconfig's tls-server-name may set apart from the host.
//
// Values only; no I/O.

#include <string>
#include <string_view>

namespace cudagate::https {

struct Endpoint {
  std::string host;  // a DNS name or an IP address (IPv6 without brackets)
  std::string port;  // "443"
  bool tls = true;
  std::string server_name;  // "" = host

  // The name the certificate must carry.
  [[nodiscard]] const std::string& verified_name() const {
    return server_name.empty() ? host : server_name;
  }
  // "host:port", with an IPv6 address in brackets: a Host header.
  [[nodiscard]] std::string authority() const;
  // Endpoints with one key may share connections.
  [[nodiscard]] std::string key() const;

  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

// An authority as an image reference or a mirror writes it: "registry.io",
// "registry.io:5000", "[::1]:5000"; without a port, the scheme's (443, 80).
[[nodiscard]] Endpoint endpoint_of_authority(std::string_view authority, bool tls);

// Whether `name` is an IPv4 or IPv6 address (no SNI is sent for one).
[[nodiscard]] bool is_ip_address(const std::string& name);

}  // namespace cudagate::https

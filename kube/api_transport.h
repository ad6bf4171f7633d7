#pragma once
// What every request to the API server carries, whoever sends it
// (api_client.h, collection_watcher.h): the server's endpoint with the name
// its certificate is verified against, the TLS client made from the
// credentials (the cluster's CA or else the system's, the client
// certificate), and the request's standard headers and bearer token. The
// requests themselves go over cudagate's HTTPS client (https/pool.h,
// https/connection.h).

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "https/endpoint.h"
#include "https/pool.h"
#include "https/tls_client.h"
#include "kube/cluster_config.h"
#include "kube/credentials.h"
#include "types/expected.h"

namespace cudagate::kube {

// Each step of opening a connection: resolve, connect, handshake.
inline constexpr std::chrono::seconds kConnectTimeout{30};

[[nodiscard]] https::Endpoint api_endpoint(const ClusterConfig& config);

// The TLS client for the credentials presented now, made again only when
// their CA, client certificate or key changed (an exec plugin's new
// certificate). Used on one strand.
class ApiTls {
 public:
  explicit ApiTls(bool insecure_skip_tls_verify) : insecure_(insecure_skip_tls_verify) {}

  // `renewed` is set when a new client was made: connections made with the
  // one before must not be used again. An Error names the server.
  [[nodiscard]] Expected<std::shared_ptr<const https::TlsClient>> for_credentials(
      const ClusterConfig& config, const Credentials& credentials, bool& renewed);

 private:
  bool insecure_;
  std::string ca_pem_;
  std::string client_cert_pem_;
  std::string client_key_pem_;
  std::shared_ptr<const https::TlsClient> client_;
};

// A request for `method` `target` (below the server's path prefix) with the
// headers every request carries; kept alive unless `keep_alive` is false.
[[nodiscard]] https::Request api_request(const ClusterConfig& config,
                                         const Credentials& credentials,
                                         boost::beast::http::verb method, const std::string& target,
                                         bool keep_alive = true);

// The Retry-After header in seconds, when it is one.
[[nodiscard]] std::optional<std::chrono::seconds> retry_after(
    const boost::beast::http::response_header<>& header);

// The message of a Status error body, or the body's start.
[[nodiscard]] std::string status_message(const std::string& body);

}  // namespace cudagate::kube

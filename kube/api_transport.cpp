// The API server's endpoint, TLS client and standard request headers.
#include "kube/api_transport.h"

#include <nlohmann/json.hpp>

namespace cudagate::kube {

namespace http = boost::beast::http;

https::Endpoint api_endpoint(const ClusterConfig& config) {
  return https::Endpoint{config.server.host, std::to_string(config.server.port), true,
                         config.tls_server_name};
}

Expected<std::shared_ptr<const https::TlsClient>> ApiTls::for_credentials(
    const ClusterConfig& config, const Credentials& credentials, bool& renewed) {
  renewed = false;
  if (client_ && credentials.ca_pem == ca_pem_ && credentials.client_cert_pem == client_cert_pem_ &&
      credentials.client_key_pem == client_key_pem_) {
    return client_;
  }
  https::TlsTrust trust;
  trust.verify = !insecure_;
  trust.system_cas = credentials.ca_pem.empty();
  trust.ca_pem = credentials.ca_pem;
  trust.client_cert_pem = credentials.client_cert_pem;
  trust.client_key_pem = credentials.client_key_pem;
  auto made = https::TlsClient::make(trust);
  if (!made) {
    return Error{"API server " + config.server.host,
                 "cannot set up TLS with the configured certificates: " + made.error().message};
  }
  renewed = client_ != nullptr;
  ca_pem_ = credentials.ca_pem;
  client_cert_pem_ = credentials.client_cert_pem;
  client_key_pem_ = credentials.client_key_pem;
  client_ = std::move(*made);
  return client_;
}

https::Request api_request(const ClusterConfig& config, const Credentials& credentials,
                           http::verb method, const std::string& target, bool keep_alive) {
  https::Request req{method, config.server.path_prefix + target, 11};
  req.set(http::field::host, api_endpoint(config).authority());
  req.set(http::field::accept, "application/json");
  req.set(http::field::user_agent, std::string("cudagate/") + CUDAGATE_KUBE_VERSION);
  req.keep_alive(keep_alive);
  if (!credentials.token.empty()) {
    req.set(http::field::authorization, "Bearer " + credentials.token);
  }
  return req;
}

std::optional<std::chrono::seconds> retry_after(const http::response_header<>& header) {
  const auto it = header.find(http::field::retry_after);
  if (it == header.end()) return std::nullopt;
  const std::string_view value = it->value();
  if (value.empty() || value.size() > 9) return std::nullopt;
  std::int64_t n = 0;
  for (const char c : value) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return std::chrono::seconds(n);
}

std::string status_message(const std::string& body) {
  const auto doc = nlohmann::json::parse(body, nullptr, false);
  if (doc.is_object()) {
    const auto it = doc.find("message");
    if (it != doc.end() && it->is_string()) return it->get<std::string>();
  }
  return body.substr(0, 200);
}

}  // namespace cudagate::kube

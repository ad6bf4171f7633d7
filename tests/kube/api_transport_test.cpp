// What every request to the API server carries: the endpoint and the name
// verified, the TLS client made again only when the credentials' CA or
// client certificate change, the standard headers and the bearer token (as
// a real HTTPS server on loopback receives them), the client certificate
// presented to a server that requires one, Retry-After and Status messages.
#include "kube/api_transport.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/dev_certs.h"
#include "tests/support/http_test_server.h"

namespace cudagate::kube {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using test_support::HttpTestServer;

std::string transport_pem(const std::string& file) {
  std::ifstream in(test_support::dev_certs() + "/" + file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

ClusterConfig transport_config(const std::string& port) {
  ClusterConfig config;
  config.source = "test";
  config.server.host = "127.0.0.1";
  config.server.port = static_cast<std::uint16_t>(std::stoi(port));
  config.server.path_prefix = "/k8s";
  return config;
}

Credentials dev_ca_credentials(const std::string& token) {
  Credentials credentials;
  credentials.token = token;
  credentials.ca_pem = transport_pem("ca.crt");
  return credentials;
}

TEST(ApiEndpoint, IsTheServerWithTheNameItsCertificateIsVerifiedAgainst) {
  ClusterConfig config = transport_config("6443");
  config.server.host = "10.0.0.1";
  const https::Endpoint plain = api_endpoint(config);
  EXPECT_EQ(plain, (https::Endpoint{"10.0.0.1", "6443", true, ""}));
  EXPECT_EQ(plain.verified_name(), "10.0.0.1");
  EXPECT_EQ(plain.authority(), "10.0.0.1:6443");

  config.tls_server_name = "kubernetes.default.svc";
  const https::Endpoint named = api_endpoint(config);
  EXPECT_EQ(named.verified_name(), "kubernetes.default.svc");
  EXPECT_EQ(named.authority(), "10.0.0.1:6443");  // the Host header is still the address
}

TEST(ApiTls, IsMadeAgainOnlyWhenTheCertificatesChange) {
  const ClusterConfig config = transport_config("6443");
  ApiTls tls(/*insecure_skip_tls_verify=*/false);
  Credentials credentials = dev_ca_credentials("t1");
  bool renewed = true;
  auto first = tls.for_credentials(config, credentials, renewed);
  ASSERT_TRUE(first) << first.error().str();
  EXPECT_FALSE(renewed);  // the first one renews nothing
  EXPECT_TRUE((*first)->verifies());

  credentials.token = "t2";  // a token is no part of TLS
  auto same = tls.for_credentials(config, credentials, renewed);
  ASSERT_TRUE(same);
  EXPECT_FALSE(renewed);
  EXPECT_EQ(*same, *first);

  // An exec plugin's new client certificate: connections made with the
  // old one must not be used again.
  credentials.client_cert_pem = transport_pem("client.crt");
  credentials.client_key_pem = transport_pem("client.key");
  auto with_cert = tls.for_credentials(config, credentials, renewed);
  ASSERT_TRUE(with_cert) << with_cert.error().str();
  EXPECT_TRUE(renewed);
  EXPECT_NE(*with_cert, *first);

  ApiTls insecure(/*insecure_skip_tls_verify=*/true);
  auto unverified = insecure.for_credentials(config, credentials, renewed);
  ASSERT_TRUE(unverified);
  EXPECT_FALSE((*unverified)->verifies());
}

TEST(ApiTls, UnusableCertificatesAreAnErrorNamingTheServer) {
  const ClusterConfig config = transport_config("6443");
  struct Row {
    std::string name;
    Credentials credentials;
    std::string what;  // what TlsClient could not use
  };
  Credentials bad_ca;
  bad_ca.ca_pem = "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n";
  Credentials cert_without_key = dev_ca_credentials("");
  cert_without_key.client_cert_pem = transport_pem("client.crt");
  cert_without_key.client_key_pem = "not a key";
  for (const Row& row :
       {Row{"a CA that is no certificate", bad_ca, "cannot use the CA certificates: "},
        Row{"a client key that is no key", cert_without_key, "cannot use the client key: "}}) {
    SCOPED_TRACE(row.name);
    ApiTls tls(false);
    bool renewed = false;
    auto made = tls.for_credentials(config, row.credentials, renewed);
    ASSERT_FALSE(made);
    EXPECT_EQ(made.error().where, "API server 127.0.0.1");
    EXPECT_EQ(made.error().message.rfind(
                  "cannot set up TLS with the configured certificates: " + row.what, 0),
              0U)
        << made.error().message;
  }
}

TEST(ApiRequest, CarriesTheStandardHeadersAndTheToken) {
  const ClusterConfig config = transport_config("6443");
  const https::Request kept =
      api_request(config, dev_ca_credentials("secret"), http::verb::get, "/api/v1/nodes?limit=5");
  EXPECT_EQ(kept.method(), http::verb::get);
  EXPECT_EQ(kept.target(), "/k8s/api/v1/nodes?limit=5");
  EXPECT_EQ(kept.version(), 11U);
  EXPECT_EQ(kept[http::field::host], "127.0.0.1:6443");
  EXPECT_EQ(kept[http::field::accept], "application/json");
  EXPECT_TRUE(kept[http::field::user_agent].starts_with("cudagate/"))
      << kept[http::field::user_agent];
  EXPECT_EQ(kept[http::field::authorization], "Bearer secret");
  EXPECT_TRUE(kept.keep_alive());

  const https::Request closed =
      api_request(config, Credentials{}, http::verb::delete_, "/api/v1/x", false);
  EXPECT_EQ(closed.method(), http::verb::delete_);
  EXPECT_FALSE(closed.keep_alive());
  EXPECT_EQ(closed.count(http::field::authorization), 0U);  // no token, no header
}

// One request through the pool, as the API client sends it; the response
// or the transport's Error.
Expected<https::Response> send_to_api(const ClusterConfig& config, const Credentials& credentials,
                                      const std::string& target) {
  net::io_context ioc;
  https::Pool pool(ioc.get_executor());
  ApiTls tls(false);
  bool renewed = false;
  auto client = tls.for_credentials(config, credentials, renewed);
  if (!client) return client.error();
  https::Request request = api_request(config, credentials, http::verb::get, target);
  const https::Endpoint endpoint = api_endpoint(config);
  std::optional<Expected<https::Response>> out;
  net::co_spawn(
      ioc,
      [&]() -> net::awaitable<void> {
        out.emplace(co_await pool.exchange(endpoint, *client, request, {}));
      },
      net::detached);
  ioc.run();
  return std::move(*out);
}

TEST(ApiRequest, IsWhatTheServerReceives) {
  std::mutex mutex;
  std::vector<std::string> received;
  HttpTestServer server(
      [&](const HttpTestServer::Request& request) {
        std::lock_guard lock(mutex);
        received.push_back(std::string(request.method_string()) + " " +
                           std::string(request.target()) + " | " +
                           std::string(request[http::field::host]) + " | " +
                           std::string(request[http::field::accept]) + " | " +
                           std::string(request[http::field::authorization]));
        HttpTestServer::Answer answer;
        answer.response.result(http::status::ok);
        answer.response.body() = "{}";
        return answer;
      },
      test_support::dev_certs());
  const ClusterConfig config = transport_config(server.port());
  auto response = send_to_api(config, dev_ca_credentials("secret"), "/api/v1/nodes");
  ASSERT_TRUE(response) << response.error().str();
  EXPECT_EQ(response->result_int(), 200U);
  std::lock_guard lock(mutex);
  EXPECT_EQ(received,
            (std::vector<std::string>{"GET /k8s/api/v1/nodes | 127.0.0.1:" + server.port() +
                                      " | application/json | Bearer secret"}));
}

TEST(ApiRequest, PresentsTheClientCertificate) {
  // The server requires a certificate signed by the client CA.
  HttpTestServer server(
      [](const HttpTestServer::Request&) {
        HttpTestServer::Answer answer;
        answer.response.result(http::status::ok);
        answer.response.body() = "{}";
        return answer;
      },
      test_support::dev_certs(), test_support::dev_certs() + "/client-ca.crt");
  const ClusterConfig config = transport_config(server.port());

  Credentials with_cert = dev_ca_credentials("");
  with_cert.client_cert_pem = transport_pem("client.crt");
  with_cert.client_key_pem = transport_pem("client.key");
  auto accepted = send_to_api(config, with_cert, "/api/v1/nodes");
  ASSERT_TRUE(accepted) << accepted.error().str();
  EXPECT_EQ(accepted->result_int(), 200U);

  auto refused = send_to_api(config, dev_ca_credentials(""), "/api/v1/nodes");
  ASSERT_FALSE(refused);
  EXPECT_EQ(server.requests(), 1);  // only the request with the certificate
}

TEST(RetryAfter, IsWholeSecondsOnly) {
  struct Row {
    std::optional<std::string> header;
    std::optional<std::chrono::seconds> expected;
  };
  const std::vector<Row> rows = {
      {"5", std::chrono::seconds(5)},
      {"0", std::chrono::seconds(0)},
      {"999999999", std::chrono::seconds(999999999)},
      {std::nullopt, std::nullopt},
      {"", std::nullopt},
      {"1234567890", std::nullopt},  // more than 9 digits
      {"-1", std::nullopt},
      {"1.5", std::nullopt},
      {"Wed, 21 Oct 2026 07:28:00 GMT", std::nullopt},  // an HTTP date is not followed
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.header.value_or("(none)"));
    http::response_header<> header;
    if (row.header) header.set(http::field::retry_after, *row.header);
    EXPECT_EQ(retry_after(header), row.expected);
  }
}

TEST(StatusMessage, IsTheStatusMessageOrTheBodysStart) {
  EXPECT_EQ(
      status_message(
          R"({"kind":"Status","status":"Failure","message":"nodes is forbidden","code":403})"),
      "nodes is forbidden");
  EXPECT_EQ(status_message("upstream connect error"), "upstream connect error");
  EXPECT_EQ(status_message(R"({"kind":"Status","code":500})"), R"({"kind":"Status","code":500})");
  EXPECT_EQ(status_message(R"({"message":7})"), R"({"message":7})");
  EXPECT_EQ(status_message(std::string(300, 'x')), std::string(200, 'x'));
}

}  // namespace
}  // namespace cudagate::kube

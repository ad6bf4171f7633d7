// The API client: list targets and query escaping, and its requests against
// a real HTTPS server on loopback (tests/support/http_test_server.h) with
// the development certificates: connections kept across requests and
// pages, the bearer token and path prefix, retries of a 503 and the Retry-
// After of a 429, the error that names what still failed, and verification.
#include "kube/api_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/dev_certs.h"
#include "tests/support/http_test_server.h"
#include "tests/support/loopback_cluster.h"

namespace cudagate::kube {
namespace {

TEST(ApiClient, ListTargets) {
  EXPECT_EQ(list_target(ApiCallId::cluster_list_pods, {}, 500, ""), "/api/v1/pods?limit=500");
  EXPECT_EQ(list_target(ApiCallId::cluster_list_jobs, {"ml", "", ""}, 50, "eyJ2Ijo+/="),
            "/apis/batch/v1/namespaces/ml/jobs?limit=50&continue=eyJ2Ijo%2B%2F%3D");
  EXPECT_EQ(list_target(ApiCallId::write_list_policyreports,
                        {"", "app.kubernetes.io/managed-by=cudagate", ""}, 500, ""),
            "/apis/wgpolicyk8s.io/v1alpha2/policyreports?limit=500&labelSelector=app.kubernetes."
            "io%2Fmanaged-by%3Dcudagate");
}

TEST(ApiClient, QueryEscapeKeepsUnreservedCharacters) {
  EXPECT_EQ(query_escape("aZ09-._~"), "aZ09-._~");
  EXPECT_EQ(query_escape("a b&c=d"), "a%20b%26c%3Dd");
  EXPECT_EQ(query_escape("\xff"), "%FF");
}

TEST(ApiClient, ApplyIsForcedUnderCudagatesFieldManager) {
  EXPECT_EQ(kApplyQuery, "?fieldManager=cudagate&force=true");
  EXPECT_EQ(kApplyContentType, "application/apply-patch+yaml");
}

using test_support::HttpTestServer;

HttpTestServer::Answer json_answer(int status, const nlohmann::json& body) {
  HttpTestServer::Answer answer;
  answer.response.result(status);
  answer.response.set(boost::beast::http::field::content_type, "application/json");
  answer.response.body() = body.dump();
  return answer;
}

ClusterConfig config_for(const HttpTestServer& server, const std::string& token) {
  ClusterConfig config = ::test_support::loopback_cluster(server, token);
  config.server.path_prefix = "/prefix";
  return config;
}

// What the server was asked: "METHOD target authorization".
class Seen {
 public:
  void add(const HttpTestServer::Request& request) {
    std::lock_guard lock(mutex_);
    lines_.push_back(std::string(request.method_string()) + " " + std::string(request.target()) +
                     " " + std::string(request[boost::beast::http::field::authorization]));
  }
  [[nodiscard]] std::vector<std::string> lines() const {
    std::lock_guard lock(mutex_);
    return lines_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

ApiClientOptions quick_retries() {
  ApiClientOptions options;
  options.initial_backoff = std::chrono::milliseconds(1);
  options.max_backoff = std::chrono::milliseconds(2);
  options.max_attempts = 3;
  return options;
}

TEST(ApiClientOverHttps, KeepsItsConnectionAcrossRequestsAndPages) {
  Seen seen;
  HttpTestServer server(
      [&seen](const HttpTestServer::Request& request) {
        seen.add(request);
        const std::string target(request.target());
        if (target.find("/pods/") != std::string::npos) {
          return json_answer(200, {{"kind", "Pod"}, {"metadata", {{"name", "p"}}}});
        }
        if (target.find("continue=") == std::string::npos) {
          return json_answer(200, {{"metadata", {{"continue", "next"}}},
                                   {"items", {{{"metadata", {{"name", "n1"}}}}}}});
        }
        return json_answer(200, {{"metadata", nlohmann::json::object()},
                                 {"items", {{{"metadata", {{"name", "n2"}}}}}}});
      },
      test_support::dev_certs());
  BlockingApiClient client(config_for(server, "secret"));

  auto pod = client.get(ApiCallId::explain_get_pod, "ml", "p");
  ASSERT_TRUE(pod) << pod.error().str();
  EXPECT_EQ((*pod)["metadata"]["name"], "p");

  std::vector<std::string> names;
  const auto listed =
      client.list(ApiCallId::cluster_list_nodes, {}, [&names](nlohmann::json page, bool) {
        for (const auto& item : page["items"]) {
          names.push_back(item["metadata"]["name"]);
          EXPECT_EQ(item["kind"], "Node");  // filled in: the API server leaves it out
        }
      });
  EXPECT_FALSE(listed.has_value()) << listed->str();
  EXPECT_EQ(names, (std::vector<std::string>{"n1", "n2"}));

  const std::vector<std::string> expected = {
      "GET /prefix/api/v1/namespaces/ml/pods/p Bearer secret",
      "GET /prefix/api/v1/nodes?limit=500 Bearer secret",
      "GET /prefix/api/v1/nodes?limit=500&continue=next Bearer secret",
  };
  EXPECT_EQ(seen.lines(), expected);
  EXPECT_EQ(server.accepted(), 1);  // one TLS connection for all three
}

TEST(ApiClientOverHttps, RetriesA503AndHonoursRetryAfter) {
  std::atomic<int> calls = 0;
  HttpTestServer server(
      [&calls](const HttpTestServer::Request&) {
        const int call = ++calls;
        if (call == 1) return json_answer(503, {{"message", "etcd is busy"}});
        if (call == 2) {
          auto answer = json_answer(429, {{"message", "slow down"}});
          answer.response.set(boost::beast::http::field::retry_after, "0");
          return answer;
        }
        return json_answer(200, {{"kind", "Pod"}});
      },
      test_support::dev_certs());
  BlockingApiClient client(config_for(server, "t"), quick_retries());
  auto pod = client.get(ApiCallId::explain_get_pod, "ml", "p");
  ASSERT_TRUE(pod) << pod.error().str();
  EXPECT_EQ(server.requests(), 3);
}

TEST(ApiClientOverHttps, WhatStillFailsNamesTheServerTheCallAndTheStatus) {
  HttpTestServer server(
      [](const HttpTestServer::Request&) {
        return json_answer(503, {{"message", "etcd is busy"}});
      },
      test_support::dev_certs());
  BlockingApiClient client(config_for(server, "t"), quick_retries());
  auto pod = client.get(ApiCallId::explain_get_pod, "ml", "p");
  ASSERT_FALSE(pod);
  EXPECT_EQ(pod.error().str(),
            "API server 127.0.0.1: get pods p: 503 Service Unavailable: etcd is busy");
  EXPECT_EQ(server.requests(), 3);  // max_attempts
}

TEST(ApiClientOverHttps, AnUnverifiedServerIsNeverAsked) {
  HttpTestServer server([](const HttpTestServer::Request&) { return json_answer(200, {}); },
                        test_support::dev_certs());
  ClusterConfig config = config_for(server, "t");
  config.tls_server_name = "not-the-server.example";
  BlockingApiClient client(config, quick_retries());
  auto pod = client.get(ApiCallId::explain_get_pod, "ml", "p");
  ASSERT_FALSE(pod);
  EXPECT_NE(pod.error().message.find("certificate verify failed"), std::string::npos)
      << pod.error().str();
  EXPECT_EQ(server.requests(), 0);
}

}  // namespace
}  // namespace cudagate::kube

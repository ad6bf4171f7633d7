#pragma once
// The cluster configuration of an API server a test plays on loopback with
// an HttpTestServer (tests/support/http_test_server.h): its address and
// port, the development CA that signed its certificate
// (tests/support/dev_certs.h) and a bearer token, as kube/ reads them from a
// kubeconfig.

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "kube/cluster_config.h"
#include "tests/support/dev_certs.h"
#include "tests/support/http_test_server.h"

namespace test_support {

inline cudagate::kube::ClusterConfig loopback_cluster(const HttpTestServer& server,
                                                      const std::string& token) {
  std::ifstream in(dev_certs() + "/ca.crt");
  std::stringstream ca;
  ca << in.rdbuf();
  cudagate::kube::ClusterConfig config;
  config.source = "test";
  config.server.host = "127.0.0.1";
  config.server.port = static_cast<std::uint16_t>(std::stoi(server.port()));
  config.ca_pem = ca.str();
  config.token = token;
  return config;
}

}  // namespace test_support

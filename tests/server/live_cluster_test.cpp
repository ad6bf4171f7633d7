// The watched cluster against an API server on loopback (real TLS, the
// development certificates): each collection listed, read in kube/ and
// folded into the server's state, which counts as synced once all five are
// listed: the Nodes with the devices of NVIDIA's slices only, the claims and
// templates without those made for pods, the NodePools as pool nodes; and a
// cluster that serves no DRA and no NodePools is synced without them.
#include "server/live_cluster.h"

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/dev_certs.h"
#include "tests/support/fixtures.h"
#include "tests/support/http_test_server.h"
#include "tests/support/karpenter_pool.h"
#include "tests/support/loopback_cluster.h"

namespace cudagate {
namespace {

namespace net = boost::asio;
using nlohmann::json;
using ::test_support::HttpTestServer;

HttpTestServer::Answer live_cluster_answer(int status, const json& body) {
  HttpTestServer::Answer answer;
  answer.response.result(status);
  answer.response.set(boost::beast::http::field::content_type, "application/json");
  answer.response.body() = body.dump();
  return answer;
}

json live_cluster_list(const std::string& kind, const std::string& api_version, json items) {
  return {{"kind", kind + "List"},
          {"apiVersion", api_version},
          {"metadata", {{"resourceVersion", "10"}}},
          {"items", std::move(items)}};
}

json live_cluster_node(const std::string& name) {
  return {
      {"metadata",
       {{"name", name},
        {"labels", {{"kubernetes.io/hostname", name}, {"nvidia.com/gpu.product", "NVIDIA-L4"}}}}},
      {"status", {{"allocatable", {{"nvidia.com/gpu", "1"}}}}}};
}

json live_cluster_slice(const std::string& name, const std::string& driver,
                        const std::string& node) {
  return {{"metadata", {{"name", name}}},
          {"spec",
           {{"driver", driver},
            {"nodeName", node},
            {"pool", {{"name", node}, {"generation", 1}, {"resourceSliceCount", 1}}},
            {"devices", json::array({{{"name", "gpu-0"},
                                      {"attributes",
                                       {{"type", {{"string", "gpu"}}},
                                        {"cudaDriverVersion", {{"version", "12.8.0"}}},
                                        {"productName", {{"string", "NVIDIA L4"}}}}}}})}}}};
}

json live_cluster_claim(const std::string& kind, const std::string& name) {
  const json devices = {
      {"requests",
       json::array({{{"name", "gpu"}, {"exactly", {{"deviceClassName", "gpu.nvidia.com"}}}}})}};
  json object = {{"metadata", {{"name", name}, {"namespace", "ml"}}}};
  object["spec"] = kind == "ResourceClaimTemplate" ? json{{"spec", {{"devices", devices}}}}
                                                   : json{{"devices", devices}};
  return object;
}

// A cluster's API server: each collection's list, at v1, or 404 for those
// it does not serve; a watch says nothing until the server stops.
HttpTestServer::Answer live_cluster_api(const HttpTestServer::Request& request, bool serves_dra) {
  const std::string target(request.target());
  if (target.find("watch=1") != std::string::npos) {
    HttpTestServer::Answer hang;
    hang.hang = true;
    return hang;
  }
  const auto is = [&target](const std::string& path) { return target.rfind(path, 0) == 0; };
  if (is("/api/v1/nodes?")) {
    return live_cluster_answer(
        200,
        live_cluster_list("Node", "v1",
                          json::array({live_cluster_node("gpu-a"), live_cluster_node("gpu-b")})));
  }
  if (serves_dra && is("/apis/resource.k8s.io/v1/resourceslices?")) {
    json broken = live_cluster_slice("gpu-b-gpu", "gpu.nvidia.com", "gpu-b");
    broken["spec"]["pool"]["generation"] = "one";
    return live_cluster_answer(
        200, live_cluster_list(
                 "ResourceSlice", "resource.k8s.io/v1",
                 json::array({live_cluster_slice("gpu-a-gpu", "gpu.nvidia.com", "gpu-a"),
                              live_cluster_slice("gpu-b-cd", "compute-domain.nvidia.com", "gpu-b"),
                              broken})));
  }
  if (serves_dra && is("/apis/resource.k8s.io/v1/resourceclaimtemplates?")) {
    return live_cluster_answer(
        200,
        live_cluster_list("ResourceClaimTemplate", "resource.k8s.io/v1",
                          json::array({live_cluster_claim("ResourceClaimTemplate", "one-gpu")})));
  }
  if (serves_dra && is("/apis/resource.k8s.io/v1/resourceclaims?")) {
    json made = live_cluster_claim("ResourceClaim", "train-gpu-x7k2p");
    made["metadata"]["ownerReferences"] =
        json::array({{{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", "train"}, {"uid", "1"}}});
    return live_cluster_answer(
        200, live_cluster_list("ResourceClaim", "resource.k8s.io/v1",
                               json::array({live_cluster_claim("ResourceClaim", "shared"), made})));
  }
  if (serves_dra && is("/apis/karpenter.sh/v1/nodepools?")) {
    return live_cluster_answer(
        200, live_cluster_list("NodePool", "karpenter.sh/v1",
                               json::array({test_support::karpenter_pool_json("gpu-t4", "t4")})));
  }
  return live_cluster_answer(404, {{"kind", "Status"}, {"code", 404}, {"message", "not found"}});
}

kube::ClusterConfig live_cluster_config(const HttpTestServer& server) {
  return ::test_support::loopback_cluster(server, "t");
}

// A LiveCluster over `server`, its requests and its folding on the test's
// thread alone (one io_context for both), so that the test sees each step
// the moment it is taken, whichever side takes it (a collection found not
// served is told on the requests' side).
class LiveClusterRun {
 public:
  explicit LiveClusterRun(const HttpTestServer& server)
      : state_(std::make_shared<const CompatDb>(test_support::db()),
               std::make_shared<const Policy>(), std::make_shared<const Inventory>()),
        cluster_(io_.get_executor(), io_.get_executor(), live_cluster_config(server),
                 std::make_shared<const CompatDb>(test_support::db()), state_, metrics_,
                 LiveCluster::Handlers{[this](const Inventory&, const CompatDb&) { ++published_; },
                                       [] {}}) {
    state_.set_certificate_loaded();
    cluster_.start();
  }
  ~LiveClusterRun() {
    cluster_.stop();
    io_.poll();
  }
  LiveClusterRun(const LiveClusterRun&) = delete;
  LiveClusterRun& operator=(const LiveClusterRun&) = delete;

  // Runs the watchers until the state is ready (true) or a minute passed.
  bool ready() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    while (!state_.ready()) {
      if (io_.run_one_until(deadline) == 0) return false;
    }
    return true;
  }
  [[nodiscard]] const ServerState& state() const { return state_; }
  [[nodiscard]] int published() const { return published_; }

 private:
  net::io_context io_;
  net::executor_work_guard<net::io_context::executor_type> work_{io_.get_executor()};
  ServerState state_;
  WebhookMetrics metrics_{"test", "rev"};
  int published_ = 0;
  LiveCluster cluster_;
};

// The CUDA version of the first device kind of node `name`, "" when it has
// none, "absent" when the inventory does not hold it.
std::string live_cluster_device_cuda(const Inventory& inventory, const std::string& name) {
  const auto index = inventory.index_of(name);
  if (!index) return "absent";
  const Node node = inventory.node(*index);
  if (node.devices.empty()) return "";
  const DeviceAttribute* cuda = node.devices[0].attribute("gpu.nvidia.com/cudaDriverVersion");
  return cuda != nullptr ? cuda->value : "?";
}

TEST(LiveCluster, EachCollectionIsReadAndFoldedIntoTheState) {
  HttpTestServer server(
      [](const HttpTestServer::Request& request) { return live_cluster_api(request, true); },
      ::test_support::dev_certs());
  LiveClusterRun run(server);
  ASSERT_TRUE(run.ready()) << "each collection listed";
  EXPECT_GE(run.published(), 1);
  const auto snapshot = run.state().snapshot();
  const Inventory& inventory = *snapshot->inventory;
  // NVIDIA's slice gives gpu-a its devices; another driver's slice, and
  // one that cannot be read, give gpu-b none.
  EXPECT_EQ(live_cluster_device_cuda(inventory, "gpu-a"), "12.8.0");
  EXPECT_EQ(live_cluster_device_cuda(inventory, "gpu-b"), "");
  // The NodePool stands for its next node.
  EXPECT_TRUE(inventory.index_of("NodePool gpu-t4 (0 nodes now)").has_value());
  EXPECT_EQ(inventory.size(), 3U);
  ASSERT_NE(snapshot->claims, nullptr);
  EXPECT_EQ(snapshot->claims->size(), 2U);
  EXPECT_NE(snapshot->claims->find("ResourceClaimTemplate", "ml", "one-gpu"), nullptr);
  EXPECT_NE(snapshot->claims->find("ResourceClaim", "ml", "shared"), nullptr);
  EXPECT_EQ(snapshot->claims->find("ResourceClaim", "ml", "train-gpu-x7k2p"), nullptr);
}

TEST(LiveCluster, ACollectionNotServedIsNotWaitedFor) {
  HttpTestServer server(
      [](const HttpTestServer::Request& request) { return live_cluster_api(request, false); },
      ::test_support::dev_certs());
  LiveClusterRun run(server);
  ASSERT_TRUE(run.ready()) << "the Nodes listed, the rest not served";
  const auto snapshot = run.state().snapshot();
  EXPECT_EQ(snapshot->inventory->size(), 2U);
  EXPECT_EQ(live_cluster_device_cuda(*snapshot->inventory, "gpu-a"), "");
}

}  // namespace
}  // namespace cudagate

// List pages read as workloads and nodes: items as the API server sends
// them (kind and apiVersion filled in by the client), broken items named
// by their object, owners kept for drop_controlled().
#include "kube/cluster_workloads.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace cudagate::kube {
namespace {

using nlohmann::json;

json pod(const std::string& name, const json& owners = json::array()) {
  json p = {
      {"kind", "Pod"},
      {"apiVersion", "v1"},
      {"metadata",
       {{"name", name},
        {"namespace", "ml"},
        {"uid", "u-" + name},
        {"managedFields", json::array({{{"manager", "kubelet"}}})}}},
      {"spec",
       {{"containers", json::array({{{"name", "train"},
                                     {"image", "nvcr.io/nvidia/pytorch:24.01-py3"},
                                     {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}})}}},
      {"status", {{"phase", "Running"}}}};
  if (!owners.empty()) p["metadata"]["ownerReferences"] = owners;
  return p;
}

TEST(ClusterWorkloads, PageItemsAreWorkloadsWithoutPlacesAndWithTheirController) {
  const json owner = {{"apiVersion", "apps/v1"},
                      {"kind", "ReplicaSet"},
                      {"name", "web-5d8f7c9b4"},
                      {"uid", "x"},
                      {"controller", true}};
  const json page = {
      {"kind", "PodList"},
      {"metadata", {{"continue", "abc"}}},
      {"items", json::array({pod("solo"), pod("web-5d8f7c9b4-x7k2p", json::array({owner}))})}};
  WorkloadStream out;
  read_workload_page(page, ApiCallId::cluster_list_pods, out);
  ASSERT_EQ(out.workloads.size(), 2U);
  EXPECT_TRUE(out.broken.empty());
  EXPECT_EQ(out.workloads[0].workload.resource.name, "solo");
  EXPECT_EQ(out.workloads[0].workload.resource.namespace_, "ml");
  EXPECT_EQ(out.workloads[0].place, "");
  EXPECT_FALSE(out.workloads[0].controller);
  ASSERT_TRUE(out.workloads[1].controller);
  EXPECT_EQ(out.workloads[1].controller->kind, "ReplicaSet");
  EXPECT_EQ(out.workloads[1].controller->name, "web-5d8f7c9b4");
}

TEST(ClusterWorkloads, ABrokenItemIsNamedAndTheOthersStillRead) {
  json bad = pod("typo");
  bad["spec"]["containers"] = "none";
  const json page = {{"items", json::array({bad, pod("good"), 7})}};
  WorkloadStream out;
  read_workload_page(page, ApiCallId::background_list_pods, out);
  ASSERT_EQ(out.workloads.size(), 1U);
  EXPECT_EQ(out.workloads[0].workload.resource.name, "good");
  ASSERT_EQ(out.broken.size(), 2U);
  EXPECT_EQ(out.broken[0].where.rfind("pods ml/typo", 0), 0U) << out.broken[0].str();
  EXPECT_NE(out.broken[0].str().find("spec.containers"), std::string::npos) << out.broken[0].str();
  EXPECT_EQ(out.broken[1].where.rfind("pods ?", 0), 0U) << out.broken[1].str();
}

TEST(ClusterWorkloads, PagesWithoutItemsAddNothing) {
  for (const json& page : {json::object(), json{{"items", nullptr}}, json{{"items", "x"}},
                           json::array(), json("text")}) {
    WorkloadStream out;
    read_workload_page(page, ApiCallId::cluster_list_jobs, out);
    EXPECT_TRUE(out.workloads.empty());
    EXPECT_TRUE(out.broken.empty());
    std::vector<Node> nodes;
    std::vector<Error> skipped;
    read_node_page(page, nodes, skipped);
    EXPECT_TRUE(nodes.empty());
    EXPECT_TRUE(skipped.empty());
  }
}

TEST(ClusterWorkloads, NodePagesKeepReadableNodesAndNameTheOthers) {
  const json page = {
      {"items",
       json::array({{{"kind", "Node"},
                     {"apiVersion", "v1"},
                     {"metadata",
                      {{"name", "gpu-1"},
                       {"labels", {{"nvidia.com/cuda.driver-version.full", "550.54.15"}}}}}},
                    {{"kind", "Node"},
                     {"apiVersion", "v1"},
                     {"metadata", {{"name", "gpu-2"}, {"labels", {{"a", 1}}}}}}})}};
  std::vector<Node> nodes;
  std::vector<Error> skipped;
  read_node_page(page, nodes, skipped);
  ASSERT_EQ(nodes.size(), 1U);
  EXPECT_EQ(nodes[0].name, "gpu-1");
  ASSERT_EQ(skipped.size(), 1U);
  EXPECT_NE(skipped[0].str().find("nodes gpu-2"), std::string::npos) << skipped[0].str();
}

}  // namespace
}  // namespace cudagate::kube

// The API call table: the paths its rows give, and its JSON form.
#include "kube/api_calls.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>

#include "kube/api_client.h"

namespace cudagate::kube {
namespace {

TEST(ApiCall, PathsFollowTheGroupVersionAndScope) {
  struct Row {
    ApiCallId id;
    std::string namespace_;
    std::string collection;
    std::string api_version;
  };
  const Row rows[] = {
      {ApiCallId::inventory_list_nodes, "", "/api/v1/nodes", "v1"},
      {ApiCallId::inventory_list_nodes, "ml", "/api/v1/nodes", "v1"},  // cluster-scoped
      {ApiCallId::cluster_list_pods, "", "/api/v1/pods", "v1"},
      {ApiCallId::cluster_list_pods, "ml", "/api/v1/namespaces/ml/pods", "v1"},
      {ApiCallId::cluster_list_deployments, "ml", "/apis/apps/v1/namespaces/ml/deployments",
       "apps/v1"},
      {ApiCallId::background_list_cronjobs, "", "/apis/batch/v1/cronjobs", "batch/v1"},
      {ApiCallId::write_apply_policyreports, "ml",
       "/apis/wgpolicyk8s.io/v1alpha2/namespaces/ml/policyreports", "wgpolicyk8s.io/v1alpha2"},
      {ApiCallId::write_delete_reports, "ml", "/apis/openreports.io/v1alpha1/namespaces/ml/reports",
       "openreports.io/v1alpha1"},
  };
  for (const Row& row : rows) {
    const ApiCall& call = api_call(row.id);
    EXPECT_EQ(call.collection_path(row.namespace_), row.collection) << call.resource;
    EXPECT_EQ(call.object_path(row.namespace_, "x"), row.collection + "/x") << call.resource;
    EXPECT_EQ(call.api_version(), row.api_version) << call.resource;
  }
}

TEST(ApiCall, JsonHasOneObjectPerRowWithTheFiveFields) {
  const auto doc = nlohmann::json::parse(api_calls_json());
  ASSERT_TRUE(doc.is_array());
  ASSERT_EQ(doc.size(), kApiCalls.size());
  std::set<std::tuple<std::string, std::string, std::string, std::string>> seen;
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const auto& row = doc[i];
    ASSERT_EQ(row.size(), 5U);
    EXPECT_EQ(row.at("verb"), std::string(kApiCalls[i].verb));
    EXPECT_EQ(row.at("group"), std::string(kApiCalls[i].group));
    EXPECT_EQ(row.at("resource"), std::string(kApiCalls[i].resource));
    EXPECT_EQ(row.at("rbac").at(0), row.at("verb"));
    EXPECT_EQ(row.at("rbac").size(), kApiCalls[i].also.empty() ? 1U : 2U);
    EXPECT_EQ(row.at("when"), std::string(kApiCalls[i].when));
    EXPECT_TRUE(seen.emplace(row["verb"], row["group"], row["resource"], row["when"]).second)
        << "duplicate row " << row.dump();
  }
  // Keys in the order a reader expects them, one row a line.
  EXPECT_TRUE(api_calls_json().starts_with(
      "[\n  {\"verb\":\"list\",\"group\":\"\",\"resource\":\"nodes\",\"rbac\":[\"list\"],"
      "\"when\":\"inventory\"},\n"));
}

// A server-side apply that creates the object is authorized as patch and as
// create (k8s.io/apiserver pkg/endpoints/handlers/patch.go,
// createAuthorizerAttributes); the report writes are applies of objects
// that may not exist yet, so their ClusterRole must grant both.
TEST(ApiCall, AppliesAlsoNeedCreate) {
  for (const ApiCallId id :
       {ApiCallId::write_apply_policyreports, ApiCallId::write_apply_reports}) {
    EXPECT_EQ(api_call(id).verb, "patch");
    EXPECT_EQ(api_call(id).also, "create");
  }
  for (const ApiCall& call : kApiCalls) {
    if (call.verb != "patch") {
      EXPECT_TRUE(call.also.empty()) << call.verb << " " << call.resource;
    }
  }
}

TEST(ApiCall, VerbsAreRbacVerbs) {
  const std::set<std::string> verbs{"get", "list", "watch", "patch", "delete"};
  for (const ApiCall& call : kApiCalls) {
    EXPECT_TRUE(verbs.contains(std::string(call.verb))) << call.verb;
    if (!call.also.empty()) {
      EXPECT_EQ(call.also, "create") << call.resource;
    }
    EXPECT_FALSE(call.kind.empty());
  }
}

TEST(ApiCall, AuditListsArePodsAndTheirControllers) {
  for (const auto& lists : {kClusterAuditLists, kBackgroundAuditLists}) {
    std::set<std::string> resources;
    for (const ApiCallId id : lists) {
      EXPECT_EQ(api_call(id).verb, "list");
      resources.emplace(api_call(id).resource);
    }
    EXPECT_EQ(resources, (std::set<std::string>{"pods", "deployments", "statefulsets", "daemonsets",
                                                "replicasets", "jobs", "cronjobs"}));
  }
  for (const ApiCallId id : kClusterAuditLists) EXPECT_EQ(api_call(id).when, "audit-cluster");
  for (const ApiCallId id : kBackgroundAuditLists) EXPECT_EQ(api_call(id).when, "background-audit");
}

}  // namespace
}  // namespace cudagate::kube

namespace cudagate::kube {
namespace {

TEST(ApiCall, DynamicResourceAllocationRowsAtOlderVersions) {
  const ApiCall& slices = api_call(ApiCallId::inventory_list_resourceslices);
  EXPECT_EQ(slices.collection_path("ml"), "/apis/resource.k8s.io/v1/resourceslices");
  EXPECT_EQ(slices.at_version("v1beta1").collection_path(""),
            "/apis/resource.k8s.io/v1beta1/resourceslices");
  EXPECT_EQ(slices.at_version("").api_version(), "resource.k8s.io/v1");
  EXPECT_EQ(list_target(ApiCallId::cluster_list_resourceclaims, ListOptions{"ml", "", "v1beta2"},
                        500, ""),
            "/apis/resource.k8s.io/v1beta2/namespaces/ml/resourceclaims?limit=500");
  EXPECT_EQ(kDraVersions.front(), "v1");
  EXPECT_TRUE(is_not_found(Error{"API server x: list resourceslices", "404 Not Found: gone"}));
  EXPECT_FALSE(is_not_found(Error{"API server x: list resourceslices", "403 Forbidden: no"}));
}

}  // namespace
}  // namespace cudagate::kube

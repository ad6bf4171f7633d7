// The readers of the watched kinds: ResourceSlices at "resourceslices
// <name>", claims and templates as read_claim_object names them (a claim
// made for a pod is no object), NodePools at "nodepools <name>"; each
// Error names the object and the field, and watched_object turns it into
// no object, logged as the server logged it.
#include "kube/watched_objects.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/captured_log.h"
#include "tests/support/karpenter_pool.h"

namespace cudagate::kube {
namespace {

using nlohmann::json;

json watched_slice_json(const std::string& name, const std::string& driver) {
  return {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceSlice"},
      {"metadata", {{"name", name}}},
      {"spec",
       {{"driver", driver},
        {"nodeName", "gpu-a"},
        {"pool", {{"name", "gpu-a"}, {"generation", 3}}},
        {"devices",
         json::array({{{"name", "gpu-0"}, {"attributes", {{"type", {{"string", "gpu"}}}}}}})}}}};
}

json watched_claim_json(const std::string& kind, const std::string& name) {
  const json requests =
      json::array({{{"name", "gpu"}, {"exactly", {{"deviceClassName", "gpu.nvidia.com"}}}}});
  json object = {{"apiVersion", "resource.k8s.io/v1"},
                 {"kind", kind},
                 {"metadata", {{"name", name}, {"namespace", "ml"}}}};
  if (kind == "ResourceClaimTemplate") {
    object["spec"] = {{"spec", {{"devices", {{"requests", requests}}}}}};
  } else {
    object["spec"] = {{"devices", {{"requests", requests}}}};
  }
  return object;
}

TEST(ReadWatched, ResourceSlicesOfEveryDriver) {
  auto nvidia = read_watched<ResourceSlice>(watched_slice_json("a-gpu", "gpu.nvidia.com"), "a-gpu");
  ASSERT_TRUE(nvidia) << nvidia.error().str();
  ASSERT_TRUE(nvidia->has_value());
  const ResourceSlice& slice = **nvidia;
  EXPECT_EQ(slice.name, "a-gpu");
  EXPECT_EQ(slice.node_name, "gpu-a");
  EXPECT_EQ(slice.driver, "gpu.nvidia.com");
  EXPECT_EQ(slice.pool, "gpu-a");
  EXPECT_EQ(slice.pool_generation, 3);
  ASSERT_EQ(slice.devices.size(), 1U);
  EXPECT_EQ(slice.devices[0].name, "gpu-0");

  // Which drivers count is the server's choice: another driver's slice is read.
  auto other =
      read_watched<ResourceSlice>(watched_slice_json("a-cd", "compute-domain.nvidia.com"), "a-cd");
  ASSERT_TRUE(other) << other.error().str();
  ASSERT_TRUE(other->has_value());
  EXPECT_EQ((*other)->driver, "compute-domain.nvidia.com");
}

// An unreadable object of each kind: the Error names the object (at the
// place its reader gives) and the field.
struct WatchedErrorRow {
  const char* what;
  Expected<bool> (*read)(const json& object, const std::string& name);
  json object;
  const char* name;
  std::string error;
};

template <typename T>
Expected<bool> watched_read_as(const json& object, const std::string& name) {
  auto value = read_watched<T>(object, name);
  if (!value) return value.error();
  return value->has_value();
}

TEST(ReadWatched, AnUnreadableObjectIsAnErrorThatNamesItAndTheField) {
  json generation = watched_slice_json("a-gpu", "gpu.nvidia.com");
  generation["spec"]["pool"]["generation"] = "one";
  json no_spec = watched_slice_json("a-gpu", "gpu.nvidia.com");
  no_spec.erase("spec");
  json claim_requests = watched_claim_json("ResourceClaim", "broken");
  claim_requests["spec"]["devices"]["requests"] = "gpu";
  json template_requests = watched_claim_json("ResourceClaimTemplate", "broken");
  template_requests["spec"]["spec"]["devices"]["requests"] = "gpu";
  json requirements = test_support::karpenter_pool_json("gpu-t4", "t4");
  requirements["spec"]["template"]["spec"]["requirements"] = "not a list";
  json pool_version = test_support::karpenter_pool_json("gpu-t4", "t4");
  pool_version["apiVersion"] = "karpenter.sh/v1beta1";

  const std::vector<WatchedErrorRow> rows = {
      {"slice generation", watched_read_as<ResourceSlice>, generation, "a-gpu",
       "resourceslices a-gpu: spec.pool.generation: expected an integer, got string"},
      {"slice without spec", watched_read_as<ResourceSlice>, no_spec, "a-gpu",
       "resourceslices a-gpu: spec: is required"},
      {"claim requests", watched_read_as<ClaimSpec>, claim_requests, "broken",
       "ResourceClaim ml/broken: spec.devices.requests: expected a list, got string"},
      {"template requests", watched_read_as<ClaimSpec>, template_requests, "broken",
       "ResourceClaimTemplate ml/broken: spec.spec.devices.requests: expected a list, got string"},
      {"pool requirements", watched_read_as<NodePool>, requirements, "gpu-t4",
       "nodepools gpu-t4: spec.template.spec.requirements: expected a list, got string"},
      {"pool version", watched_read_as<NodePool>, pool_version, "gpu-t4",
       "nodepools gpu-t4: apiVersion: expected karpenter.sh/v1 for a NodePool, got "
       "\"karpenter.sh/v1beta1\""},
  };
  for (const WatchedErrorRow& row : rows) {
    SCOPED_TRACE(row.what);
    const auto read = row.read(row.object, row.name);
    ASSERT_FALSE(read);
    EXPECT_EQ(read.error().str(), row.error);
  }
}

TEST(ReadWatched, ClaimsAndTemplates) {
  auto made = read_watched<ClaimSpec>(watched_claim_json("ResourceClaimTemplate", "one-gpu"), "");
  ASSERT_TRUE(made) << made.error().str();
  ASSERT_TRUE(made->has_value());
  EXPECT_EQ((*made)->resource.kind, "ResourceClaimTemplate");
  EXPECT_EQ((*made)->resource.namespace_, "ml");
  EXPECT_EQ((*made)->resource.name, "one-gpu");
  ASSERT_EQ((*made)->requests.size(), 1U);
  EXPECT_EQ((*made)->requests[0].name, "gpu");
  ASSERT_EQ((*made)->requests[0].ways.size(), 1U);
  EXPECT_EQ((*made)->requests[0].ways[0].device_class, "gpu.nvidia.com");

  auto shared = read_watched<ClaimSpec>(watched_claim_json("ResourceClaim", "shared"), "shared");
  ASSERT_TRUE(shared) << shared.error().str();
  ASSERT_TRUE(shared->has_value());
  EXPECT_EQ((*shared)->resource.kind, "ResourceClaim");
  EXPECT_EQ((*shared)->resource.name, "shared");
}

TEST(ReadWatched, AClaimMadeForAPodIsNoObject) {
  json owned = watched_claim_json("ResourceClaim", "train-gpu-x7k2p");
  owned["metadata"]["ownerReferences"] =
      json::array({{{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", "train"}, {"uid", "1"}}});
  json annotated = watched_claim_json("ResourceClaim", "train-gpu-q8");
  annotated["metadata"]["annotations"] = {{"resource.kubernetes.io/pod-claim-name", "gpu"}};
  // Even one cudagate could not read: it is not cudagate's to read.
  json owned_broken = owned;
  owned_broken["spec"]["devices"]["requests"] = "gpu";
  for (const json& object : {owned, annotated, owned_broken}) {
    SCOPED_TRACE(object["metadata"].dump());
    auto claim = read_watched<ClaimSpec>(object, object["metadata"]["name"].get<std::string>());
    ASSERT_TRUE(claim) << claim.error().str();
    EXPECT_FALSE(claim->has_value());
  }
  // A claim owned by something else than a Pod is a claim.
  json job_owned = watched_claim_json("ResourceClaim", "shared");
  job_owned["metadata"]["ownerReferences"] =
      json::array({{{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"name", "train"}}});
  auto claim = read_watched<ClaimSpec>(job_owned, "shared");
  ASSERT_TRUE(claim) << claim.error().str();
  EXPECT_TRUE(claim->has_value());
}

TEST(ReadWatched, NodePoolsAtTheirPlace) {
  auto pool = read_watched<NodePool>(test_support::karpenter_pool_json("gpu-t4", "t4"), "gpu-t4");
  ASSERT_TRUE(pool) << pool.error().str();
  ASSERT_TRUE(pool->has_value());
  EXPECT_EQ((*pool)->name, "gpu-t4");
  EXPECT_EQ((*pool)->driver, "570.124.06");
  EXPECT_EQ((*pool)->where, "nodepools gpu-t4");
  EXPECT_EQ((*pool)->source, NodePool::Source::karpenter);
}

// spdlog's default logger writes into a string for the test's length.
class WatchedObjectTest : public ::testing::Test {
 protected:
  // The lines logged since the last call.
  std::vector<std::string> logged() { return log_.lines(); }

  test_support::CapturedLog log_{"watched-objects-test"};
};

TEST_F(WatchedObjectTest, AnUnreadableObjectIsLoggedAndNoObject) {
  json slice = watched_slice_json("a-gpu", "gpu.nvidia.com");
  slice["spec"]["pool"]["generation"] = "one";
  EXPECT_FALSE(watched_object<ResourceSlice>(slice, "a-gpu").has_value());
  json claim = watched_claim_json("ResourceClaim", "broken");
  claim["spec"]["devices"]["requests"] = "gpu";
  EXPECT_FALSE(watched_object<ClaimSpec>(claim, "broken").has_value());
  json pool = test_support::karpenter_pool_json("gpu-t4", "t4");
  pool["spec"]["template"]["spec"]["requirements"] = "not a list";
  EXPECT_FALSE(watched_object<NodePool>(pool, "gpu-t4").has_value());
  EXPECT_EQ(logged(), (std::vector<std::string>{
                          "warning API server: ResourceSlice left out: resourceslices a-gpu: "
                          "spec.pool.generation: expected an integer, got string",
                          "warning API server: claim left out: ResourceClaim ml/broken: "
                          "spec.devices.requests: expected a list, got string",
                          "warning API server: NodePool left out: nodepools gpu-t4: "
                          "spec.template.spec.requirements: expected a list, got string"}));
}

TEST_F(WatchedObjectTest, ReadableObjectsAndClaimsMadeForPodsAreNotLogged) {
  const auto slice =
      watched_object<ResourceSlice>(watched_slice_json("a-gpu", "gpu.nvidia.com"), "a-gpu");
  ASSERT_TRUE(slice.has_value());
  EXPECT_EQ(slice->name, "a-gpu");
  const auto pool =
      watched_object<NodePool>(test_support::karpenter_pool_json("gpu-t4", "t4"), "gpu-t4");
  ASSERT_TRUE(pool.has_value());
  EXPECT_EQ(pool->name, "gpu-t4");
  json owned = watched_claim_json("ResourceClaim", "train-gpu-x7k2p");
  owned["metadata"]["ownerReferences"] =
      json::array({{{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", "train"}, {"uid", "1"}}});
  EXPECT_FALSE(watched_object<ClaimSpec>(owned, "train-gpu-x7k2p").has_value());
  EXPECT_TRUE(logged().empty());
}

}  // namespace
}  // namespace cudagate::kube

// The images a decision reads from the registry and the platform of each:
// the pod's architecture, else the fleet's one platform, else the policy's.
#include "policy/rules/images_wanted.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "policy/rules/evaluate.h"
#include "tests/support/embedded_compat_db.h"

namespace cudagate {
namespace {

using test_support::db;

TEST(RegistryPlatform, ThePodsArchitectureElseTheFleetsElseThePolicys) {
  Policy policy;
  policy.registry.platform = "linux/ppc64le";
  PodSpec spec;
  EXPECT_EQ(registry_platform(spec, "", policy), "linux/ppc64le");
  EXPECT_EQ(registry_platform(spec, "linux/amd64", policy), "linux/amd64");
  spec.node_selector = {{"kubernetes.io/arch", "arm64"}};
  EXPECT_EQ(registry_platform(spec, "linux/amd64", policy), "linux/arm64");

  PodSpec affinity;
  affinity.required_terms = std::vector<NodeSelectorTerm>{
      NodeSelectorTerm{{{"kubernetes.io/arch", "In", {"arm64"}}}, {}},
      NodeSelectorTerm{{{"kubernetes.io/arch", "In", {"arm64"}}, {"zone", "In", {"a"}}}, {}}};
  EXPECT_EQ(registry_platform(affinity, "", policy), "linux/arm64");
  // Terms (ORed) that allow two architectures name none.
  affinity.required_terms->push_back(
      NodeSelectorTerm{{{"kubernetes.io/arch", "In", {"amd64"}}}, {}});
  EXPECT_EQ(registry_platform(affinity, "", policy), "linux/ppc64le");
  PodSpec two_values;
  two_values.required_terms = std::vector<NodeSelectorTerm>{
      NodeSelectorTerm{{{"kubernetes.io/arch", "In", {"arm64", "amd64"}}}, {}}};
  EXPECT_EQ(registry_platform(two_values, "", policy), "linux/ppc64le");
}

TEST(RegistryPlatform, TheFleetsOnePlatformCountsGpuNodesOnly) {
  auto gpu_node = [](std::string name, std::string arch) {
    Node n;
    n.name = std::move(name);
    n.labels = {{"cudagate.io/driver-version", "550.54.15"},
                {"cudagate.io/gpu-product", "A100"},
                {"kubernetes.io/arch", std::move(arch)},
                {"kubernetes.io/os", "linux"}};
    std::sort(n.labels.begin(), n.labels.end());
    n.allocatable = {{"nvidia.com/gpu", 8}};
    return n;
  };
  Node cpu;
  cpu.name = "cpu-1";
  cpu.labels = {{"kubernetes.io/arch", "amd64"}};
  const Inventory arm = Inventory::build({gpu_node("gh200-1", "arm64"), cpu}, db());
  EXPECT_EQ(fleet_platform(arm), "linux/arm64");
  const Inventory mixed =
      Inventory::build({gpu_node("gh200-1", "arm64"), gpu_node("a100-1", "amd64")}, db());
  EXPECT_EQ(fleet_platform(mixed), "");
}

TEST(ImagesWanted, EachUncataloguedImageOnceForTheWorkloadsPlatform) {
  Policy policy;
  policy.registry.enabled = true;
  policy.registry.platform = "linux/amd64";
  Workload w;
  w.spec.node_selector = {{"kubernetes.io/arch", "arm64"}};
  ContainerSpec train;
  train.name = "train";
  train.image = "registry.example/train:1";
  ContainerSpec again = train;
  again.name = "again";
  ContainerSpec unnamed;
  unnamed.name = "no-image";
  ContainerSpec other = train;
  other.name = "other";
  other.image = "registry.example/other:2";
  const std::vector<const ContainerSpec*> gpu = {&train, &again, &unnamed, &other};
  EXPECT_EQ(images_wanted(w, gpu, "linux/amd64", policy),
            (std::vector<ImageWanted>{{"registry.example/train:1", "linux/arm64"},
                                      {"registry.example/other:2", "linux/arm64"}}));
  // The fleet's platform where the pod names none.
  w.spec.node_selector.clear();
  EXPECT_EQ(images_wanted(w, gpu, "linux/amd64", policy).front().platform, "linux/amd64");
  // Nothing to look up with the registry off.
  policy.registry.enabled = false;
  EXPECT_TRUE(images_wanted(w, gpu, "linux/amd64", policy).empty());
}

}  // namespace
}  // namespace cudagate

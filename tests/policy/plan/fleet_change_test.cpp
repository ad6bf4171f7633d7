// Fleet changes: the driver labels rewritten in every scheme a node
// carries, with the maximum CUDA from the matrix as the node reader derives
// it; removals, additions, image changes and their errors.
#include "policy/plan/fleet_change.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/support/fixtures.h"

namespace cudagate {
namespace {

using test_support::db;

Node gfd_node(const std::string& name, const std::string& pool) {
  Node n;
  n.name = name;
  n.labels = {{"nvidia.com/cuda.driver-version.full", "535.129.03"},
              {"nvidia.com/cuda.driver-version.major", "535"},
              {"nvidia.com/cuda.driver-version.minor", "129"},
              {"nvidia.com/cuda.driver-version.revision", "03"},
              {"nvidia.com/cuda.driver.major", "535"},
              {"nvidia.com/cuda.driver.minor", "129"},
              {"nvidia.com/cuda.driver.rev", "03"},
              {"nvidia.com/cuda.runtime-version.full", "12.2"},
              {"nvidia.com/cuda.runtime-version.major", "12"},
              {"nvidia.com/cuda.runtime-version.minor", "2"},
              {"nvidia.com/cuda.runtime.major", "12"},
              {"nvidia.com/cuda.runtime.minor", "2"},
              {"nvidia.com/gpu.compute.major", "7"},
              {"nvidia.com/gpu.compute.minor", "5"},
              {"nvidia.com/gpu.product", "Tesla-T4"},
              {"pool", pool}};
  std::sort(n.labels.begin(), n.labels.end());
  n.allocatable = {{"nvidia.com/gpu", 1}};
  return n;
}

DriverVersion driver(const char* text) {
  return *DriverVersion::parse(text);
}

TEST(FleetChange, SetDriverRewritesEveryGfdLabelAndTheMaxCuda) {
  Node n = gfd_node("t4-1", "t4");
  set_driver(n, driver("570.124.06"), db());
  EXPECT_EQ(*n.label("nvidia.com/cuda.driver-version.full"), "570.124.06");
  EXPECT_EQ(*n.label("nvidia.com/cuda.driver-version.major"), "570");
  EXPECT_EQ(*n.label("nvidia.com/cuda.driver-version.minor"), "124");
  EXPECT_EQ(*n.label("nvidia.com/cuda.driver-version.revision"), "06");
  EXPECT_EQ(*n.label("nvidia.com/cuda.driver.major"), "570");
  EXPECT_EQ(*n.label("nvidia.com/cuda.driver.rev"), "06");
  EXPECT_EQ(*n.label("nvidia.com/cuda.runtime-version.full"), "12.8");
  EXPECT_EQ(*n.label("nvidia.com/cuda.runtime.minor"), "8");
  EXPECT_TRUE(std::is_sorted(n.labels.begin(), n.labels.end()));
  const GpuFacts f = derive_gpu_facts(n, db());
  EXPECT_EQ(f.driver->str(), "570.124.06");
  EXPECT_EQ(f.max_cuda->str(), "12.8");
  EXPECT_EQ(f.cc->str(), "7.5");
}

// A rollout to a branch newer than the matrix knows: what the driver will
// report is unknown, so the plan leaves GFD's runtime labels out and the
// node's facts carry the matrix's floor, as they would after the rollout.
TEST(FleetChange, ADriverOfAnUnknownBranchLeavesAFloor) {
  Node n = gfd_node("t4-1", "t4");
  set_driver(n, driver("640.10.01"), db());
  EXPECT_EQ(*n.label("nvidia.com/cuda.driver-version.full"), "640.10.01");
  EXPECT_EQ(n.label("nvidia.com/cuda.runtime-version.full"), nullptr);
  EXPECT_EQ(n.label("nvidia.com/cuda.runtime.major"), nullptr);
  const GpuFacts f = derive_gpu_facts(n, db());
  ASSERT_TRUE(f.max_cuda);
  EXPECT_TRUE(f.max_cuda_floor);
  EXPECT_EQ(max_cuda_text(f), "at least 13.5 (inferred)");
}

TEST(FleetChange, EachSchemeAsTheNodeCarriesIt) {
  // Only the deprecated GFD labels: they are rewritten and none added.
  Node old;
  old.name = "v100";
  old.labels = {{"nvidia.com/cuda.driver.major", "470"},
                {"nvidia.com/cuda.driver.minor", "82"},
                {"nvidia.com/cuda.driver.rev", "01"},
                {"nvidia.com/cuda.runtime.major", "11"},
                {"nvidia.com/cuda.runtime.minor", "4"}};
  set_driver(old, driver("580.65.06"), db());
  EXPECT_EQ(old.label("nvidia.com/cuda.driver-version.full"), nullptr);
  EXPECT_EQ(*old.label("nvidia.com/cuda.driver.major"), "580");
  EXPECT_EQ(*old.label("nvidia.com/cuda.runtime.major"), "13");
  EXPECT_EQ(derive_gpu_facts(old, db()).max_cuda->str(), "13.0");

  // cudagate's own label: rewritten, the max CUDA left to the reader.
  Node own;
  own.name = "h100";
  own.labels = {{"cudagate.io/driver-version", "525.147.05"}, {"cudagate.io/gpu-product", "H100"}};
  set_driver(own, driver("570.26"), db());
  EXPECT_EQ(*own.label("cudagate.io/driver-version"), "570.26");
  EXPECT_EQ(own.label("nvidia.com/cuda.runtime-version.full"), nullptr);
  EXPECT_EQ(derive_gpu_facts(own, db()).max_cuda->str(), "12.8");

  // No driver label at all: GFD's current ones, a two-part version with an empty revision.
  Node bare;
  bare.name = "gke";
  bare.labels = {{"cloud.google.com/gke-accelerator", "nvidia-l4"}};
  set_driver(bare, driver("570.26"), db());
  EXPECT_EQ(*bare.label("nvidia.com/cuda.driver-version.revision"), "");
  EXPECT_EQ(derive_gpu_facts(bare, db()).driver->str(), "570.26");
}

TEST(FleetChange, AppliesRemovalsDriversAndAdditions) {
  const std::vector<Node> nodes = {gfd_node("t4-1", "t4"), gfd_node("t4-2", "t4"),
                                   gfd_node("a-1", "a100")};
  FleetChanges changes;
  changes.drivers.push_back(*DriverChange::parse("pool=t4=570.124.06"));
  changes.removals.emplace_back(*LabelSelector::parse("pool=a100"), "pool=a100");
  changes.additions.push_back(gfd_node("a-1", "h100"));  // the name is free once removed
  auto after = apply_fleet_changes(nodes, changes, db());
  ASSERT_TRUE(after) << after.error().str();
  ASSERT_EQ(after->size(), 3U);
  EXPECT_EQ(*(*after)[0].label("nvidia.com/cuda.driver-version.full"), "570.124.06");
  EXPECT_EQ(*(*after)[2].label("pool"), "h100");
  EXPECT_EQ(*(*after)[2].label("nvidia.com/cuda.driver-version.full"), "535.129.03");
}

TEST(FleetChange, Errors) {
  const std::vector<Node> nodes = {gfd_node("t4-1", "t4")};
  FleetChanges none;
  none.drivers.push_back(*DriverChange::parse("pool=t5=570.124.06"));
  auto r = apply_fleet_changes(nodes, none, db());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().str(), "--set-driver \"pool=t5=570.124.06\": selects no node");

  FleetChanges clash;
  clash.drivers.push_back(*DriverChange::parse("pool=t4=570.124.06"));
  clash.drivers.push_back(*DriverChange::parse("pool in (t4)=580.65.06"));
  r = apply_fleet_changes(nodes, clash, db());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("also set to 570.124.06"), std::string::npos);

  FleetChanges taken;
  taken.additions.push_back(gfd_node("t4-1", "t4"));
  r = apply_fleet_changes(nodes, taken, db());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("already in the inventory"), std::string::npos);

  EXPECT_FALSE(DriverChange::parse("pool=t4"));
  EXPECT_FALSE(DriverChange::parse("=570.1"));
  EXPECT_NE(DriverChange::parse("pool=t4=5x").error().message.find("after the last '='"),
            std::string::npos);
}

TEST(FleetChange, ImageChanges) {
  auto c = ImageChange::parse("ml/Deployment/trainer:main=nvcr.io/nvidia/pytorch:24.05-py3");
  ASSERT_TRUE(c) << c.error().str();
  EXPECT_EQ(*c->namespace_, "ml");
  EXPECT_EQ(c->kind, "Deployment");
  EXPECT_EQ(c->name, "trainer");
  EXPECT_EQ(c->container, "main");
  EXPECT_EQ(c->image, "nvcr.io/nvidia/pytorch:24.05-py3");
  c = ImageChange::parse("pod/x=ubuntu:22.04");
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->namespace_);
  for (const char* bad : {"trainer=img", "a/b/c/d=img", "Deployment/x=", "Deployment/x:=img",
                          "Deployment/x", "/Deployment/x=img"}) {
    EXPECT_FALSE(ImageChange::parse(bad)) << bad;
  }

  Workload w;
  w.resource = ResourceRef{"apps/v1", "Deployment", "ml", "trainer"};
  w.spec.containers = {ContainerSpec{"setup", "busybox", true, {}, {}, {}},
                       ContainerSpec{"main", "old:1", false, {}, {}, {}}};
  const std::vector<Workload> ws = {w};
  auto out = apply_image_changes(ws, {*ImageChange::parse("deployment/trainer=new:2")});
  ASSERT_TRUE(out) << out.error().str();
  EXPECT_EQ((*out)[0].spec.containers[1].image, "new:2");
  EXPECT_EQ((*out)[0].spec.containers[0].image, "busybox");
  out = apply_image_changes(ws, {*ImageChange::parse("other/Deployment/trainer=new:2")});
  ASSERT_FALSE(out);
  EXPECT_NE(out.error().message.find("matches no workload"), std::string::npos);
  out = apply_image_changes(ws, {*ImageChange::parse("Deployment/trainer:nope=new:2")});
  ASSERT_FALSE(out);
  EXPECT_NE(out.error().message.find("has no container \"nope\" (containers: main)"),
            std::string::npos);
}

}  // namespace
}  // namespace cudagate

// The CEL selector that `check -o claims` adds to a claim's GPU requests:
// written on the rules' facts, it selects exactly the kinds of devices the
// rules find compatible, today and after a driver rollout.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "admission/rule_pin.h"
#include "compat-db/compat_db.h"
#include "policy/inventory/inventory.h"
#include "policy/objects/dra_selector.h"
#include "policy/rules/evaluate.h"
#include "tests/support/dra_fixture.h"

namespace cudagate {
namespace {

using ::testing::HasSubstr;

using test_support::db;
using test_support::dra;

const Workload& pod(const std::string& name) {
  return dra().pod(name);
}

Decision decide(const Workload& w, const std::vector<Node>& nodes, const Policy& policy = {}) {
  EvaluationInputs inputs;
  inputs.claims = &dra().claims;
  auto d = evaluate(w, Inventory::build(nodes, db()), policy, db(), inputs);
  EXPECT_TRUE(d) << d.error().str();
  return d ? *d : Decision{};
}

DraSelector parsed(const std::string& text) {
  std::string why;
  auto s = DraSelector::parse(text, &why);
  EXPECT_TRUE(s) << why << ": " << text;
  return s ? *s : *DraSelector::parse("true", nullptr);
}

TEST(DeviceSelector, SelectsExactlyTheKindsTheRulesFindCompatible) {
  const Decision d = decide(pod("train-cuda124"), dra().nodes);
  ASSERT_EQ(d.verdict, Verdict::partial);
  auto selector = rule_device_selector(d, Policy{}, db());
  ASSERT_TRUE(selector) << selector.error().str();
  EXPECT_THAT(
      *selector,
      HasSubstr(
          R"(device.attributes["gpu.nvidia.com"].cudaDriverVersion.compareTo(semver("12.4.0")) >= 0)"));
  EXPECT_THAT(*selector, HasSubstr("cudaComputeCapability"));
  const DraSelector s = parsed(*selector);
  // Each node with one kind of device, judged alone: the selector agrees.
  for (const Node& node : dra().nodes) {
    if (node.devices.size() != 1) continue;
    const Decision alone = decide(pod("train-cuda124"), {node});
    EXPECT_EQ(s.matches(node.devices.front()), alone.verdict == Verdict::pass) << node.name;
  }
}

TEST(DeviceSelector, KeepsSelectingAfterADriverRollout) {
  const Decision d = decide(pod("train-cuda124"), dra().nodes);
  auto selector = rule_device_selector(d, Policy{}, db());
  ASSERT_TRUE(selector) << selector.error().str();
  const DraSelector s = parsed(*selector);
  const Node& a100 = dra().node("dra-a100-0");
  ASSERT_EQ(a100.devices.size(), 1U);
  EXPECT_EQ(s.matches(a100.devices.front()), false) << "driver 535: CUDA 12.2";
  DeviceKind upgraded = a100.devices.front();
  for (DeviceAttribute& a : upgraded.attributes) {
    if (a.name == "gpu.nvidia.com/cudaDriverVersion") a.value = "12.8.0";
    if (a.name == "gpu.nvidia.com/driverVersion") a.value = "570.86.10";
  }
  EXPECT_EQ(s.matches(upgraded), true);
}

TEST(DeviceSelector, AnArchListWithoutTuringCodeExcludesTheT4) {
  const Decision d = decide(pod("train-cuda124"), dra().nodes);
  auto selector = rule_device_selector(d, Policy{}, db());
  ASSERT_TRUE(selector);
  const Node& mixed = dra().node("dra-mixed-0");
  ASSERT_EQ(mixed.devices.size(), 2U);
  const DraSelector s = parsed(*selector);
  int selected = 0;
  for (const DeviceKind& k : mixed.devices) selected += s.matches(k) == true ? 1 : 0;
  EXPECT_EQ(selected, 1) << "the L4 (8.9), not the T4 (7.5)";
}

TEST(DeviceSelector, MinorVersionCompatibilityIsNoRange) {
  Policy policy;
  policy.minor_version_compatibility = true;
  const Decision d = decide(pod("train-cuda124"), dra().nodes, policy);
  auto selector = rule_device_selector(d, policy, db());
  ASSERT_FALSE(selector);
  EXPECT_THAT(selector.error().message, HasSubstr("minorVersionCompatibility"));
}

}  // namespace
}  // namespace cudagate

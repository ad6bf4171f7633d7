// Pins written on the rules' facts: the label ranges for common images, the
// patched pod judged again after a driver rollout (upgraded nodes become
// candidates, downgraded ones stop being), and the exact form, with its
// reason, where the facts cannot be ranges.
#include "admission/rule_pin.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "admission/pin_affinity.h"
#include "policy/objects/node.h"
#include "policy/rules/evaluate.h"
#include "tests/support/decide.h"
#include "tests/support/fixtures.h"

namespace cudagate {
namespace {

using nlohmann::json;
using test_support::db;
using test_support::decide;
using test_support::workload_of;

// A node labelled by GPU Feature Discovery, both label generations.
json gfd_node(const std::string& name, const std::string& driver, const std::string& runtime,
              const std::string& cc, const std::string& product) {
  const auto d1 = driver.find('.');
  const auto d2 = driver.find('.', d1 + 1);
  const auto r = runtime.find('.');
  const auto c = cc.find('.');
  json labels = {{"kubernetes.io/hostname", name},
                 {"nvidia.com/gpu.present", "true"},
                 {"nvidia.com/cuda.driver-version.full", driver},
                 {"nvidia.com/cuda.driver-version.major", driver.substr(0, d1)},
                 {"nvidia.com/cuda.driver-version.minor", driver.substr(d1 + 1, d2 - d1 - 1)},
                 {"nvidia.com/cuda.driver-version.revision", driver.substr(d2 + 1)},
                 {"nvidia.com/cuda.driver.major", driver.substr(0, d1)},
                 {"nvidia.com/cuda.driver.minor", driver.substr(d1 + 1, d2 - d1 - 1)},
                 {"nvidia.com/cuda.driver.rev", driver.substr(d2 + 1)},
                 {"nvidia.com/cuda.runtime-version.full", runtime},
                 {"nvidia.com/cuda.runtime-version.major", runtime.substr(0, r)},
                 {"nvidia.com/cuda.runtime-version.minor", runtime.substr(r + 1)},
                 {"nvidia.com/cuda.runtime.major", runtime.substr(0, r)},
                 {"nvidia.com/cuda.runtime.minor", runtime.substr(r + 1)},
                 {"nvidia.com/gpu.compute.major", cc.substr(0, c)},
                 {"nvidia.com/gpu.compute.minor", cc.substr(c + 1)},
                 {"nvidia.com/gpu.product", product}};
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"status", {{"allocatable", {{"nvidia.com/gpu", "8"}}}}}};
}

Inventory inventory_of(const std::vector<json>& nodes) {
  json list = {{"apiVersion", "v1"}, {"kind", "NodeList"}, {"items", nodes}};
  auto parsed = parse_nodes(list.dump(), "nodes");
  if (!parsed) throw std::runtime_error(parsed.error().str());
  return Inventory::build(*parsed, db());
}

json pod_with(const std::vector<std::pair<std::string, std::string>>& env) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "train"}, {"namespace", "ml"}}},
              {"spec",
               {{"containers",
                 {{{"name", "train"},
                   {"image", "registry.example.com/ml/train:1.0"},
                   {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}}}}}};
  for (const auto& [k, v] : env) {
    pod["spec"]["containers"][0]["env"].push_back({{"name", k}, {"value", v}});
  }
  return pod;
}

// The patch's two operations applied to a pod without affinity or annotations.
json apply_pin(json pod, const Pin& pin) {
  pod["spec"]["affinity"] = pin.patch[0]["value"];
  pod["metadata"]["annotations"] = pin.patch[1]["value"];
  return pod;
}

std::vector<std::string> names(const NodeSet& set, const Inventory& inventory) {
  std::vector<std::string> out;
  set.for_each([&](std::size_t i) {
    out.push_back(inventory.node_name(i));
    return true;
  });
  return out;
}

json terms_json(const std::vector<NodeSelectorTerm>& terms) {
  json out = json::array();
  for (const auto& t : terms) {
    json exprs = json::array();
    for (const auto& r : t.match_expressions) {
      exprs.push_back({{"key", r.key}, {"operator", r.op}, {"values", r.values}});
    }
    out.push_back({{"matchExpressions", exprs}});
  }
  return out;
}

// Today: T4s on 535 (CUDA 12.2), A100s on 550 (CUDA 12.4), an H100 on 570.
std::vector<json> today() {
  return {gfd_node("t4-1", "535.129.03", "12.2", "7.5", "Tesla-T4"),
          gfd_node("t4-2", "535.129.03", "12.2", "7.5", "Tesla-T4"),
          gfd_node("a100-1", "550.54.15", "12.4", "8.0", "NVIDIA-A100-SXM4-80GB"),
          gfd_node("a100-2", "550.54.15", "12.4", "8.0", "NVIDIA-A100-SXM4-80GB"),
          gfd_node("h100-1", "570.124.06", "12.8", "9.0", "NVIDIA-H100-80GB-HBM3")};
}

TEST(RulePinTerms, CudaVersionAsRuntimeLabelRanges) {
  const Inventory inventory = inventory_of(today());
  const json pod = pod_with({{"CUDA_VERSION", "12.4.1"}, {"TORCH_CUDA_ARCH_LIST", "7.5;8.0;9.0"}});
  const Decision d = decide(workload_of(pod), inventory);
  ASSERT_EQ(d.verdict, Verdict::partial);
  auto pin = rule_pin_terms(d, Policy{}, db());
  ASSERT_TRUE(pin) << pin.error().str();
  // The driver's CUDA 12.4 to 12.9, or 13 and later, on GFD's newer labels
  // and on its older ones...
  const json cuda = json::parse(R"([
    [{"key": "nvidia.com/cuda.runtime-version.major", "operator": "In", "values": ["12"]},
     {"key": "nvidia.com/cuda.runtime-version.minor", "operator": "Gt", "values": ["3"]}],
    [{"key": "nvidia.com/cuda.runtime-version.major", "operator": "Gt", "values": ["12"]}],
    [{"key": "nvidia.com/cuda.runtime.major", "operator": "In", "values": ["12"]},
     {"key": "nvidia.com/cuda.runtime.minor", "operator": "Gt", "values": ["3"]}],
    [{"key": "nvidia.com/cuda.runtime.major", "operator": "Gt", "values": ["12"]}]])");
  // ...and a compute capability SASS 7.5, 8.0 or 9.0 runs on: the later
  // minors of each major, but not Tegra's 8.7, which runs only its own SASS.
  const json cc = json::parse(R"([
    [{"key": "nvidia.com/gpu.compute.major", "operator": "In", "values": ["7"]},
     {"key": "nvidia.com/gpu.compute.minor", "operator": "Gt", "values": ["4"]}],
    [{"key": "nvidia.com/gpu.compute.major", "operator": "In", "values": ["8"]},
     {"key": "nvidia.com/gpu.compute.minor", "operator": "In",
      "values": ["0", "1", "2", "3", "4", "5", "6", "8", "9"]}],
    [{"key": "nvidia.com/gpu.compute.major", "operator": "In", "values": ["9"]}]])");
  json expected = json::array();
  for (const json& x : cuda) {
    for (const json& y : cc) {
      json both = x;
      both.insert(both.end(), y.begin(), y.end());
      expected.push_back({{"matchExpressions", both}});
    }
  }
  EXPECT_EQ(terms_json(pin->terms), expected) << terms_json(pin->terms).dump(1);
}

TEST(RulePinTerms, WhatCannotBeARange) {
  const Inventory inventory = inventory_of(today());
  {
    Policy policy;
    policy.minor_version_compatibility = true;
    const json pod = pod_with({{"CUDA_VERSION", "12.4.1"}});
    const Decision d = decide(workload_of(pod), inventory, policy);
    auto pin = rule_pin_terms(d, policy, db());
    ASSERT_FALSE(pin);
    EXPECT_NE(pin.error().message.find("minorVersionCompatibility"), std::string::npos);
  }
  {
    const json pod = pod_with({{"NVIDIA_REQUIRE_CUDA", "cuda>=12.4 brand=tesla,driver>=535"}});
    const Decision d = decide(workload_of(pod), inventory);
    auto pin = rule_pin_terms(d, Policy{}, db());
    ASSERT_FALSE(pin);
    EXPECT_NE(pin.error().message.find("judges the driver version or brand"), std::string::npos)
        << pin.error().message;
  }
}

// The contract of the mutation (docs/contract.md §5): today the patched pod's
// candidates are exactly the compatible ones; after a rollout, the same pin
// selects exactly the nodes that can run it then.
TEST(RulePin, PinnedPodJudgedAgainAfterARollout) {
  const Inventory before = inventory_of(today());
  const json pod = pod_with({{"CUDA_VERSION", "12.4.1"}, {"TORCH_CUDA_ARCH_LIST", "7.5;8.0;9.0"}});
  const Workload w = workload_of(pod);
  const Decision d = decide(w, before);
  ASSERT_EQ(d.verdict, Verdict::partial);
  const Policy policy;
  auto pin = pin_affinity(pod, w, d, before, db(), "partial", &policy);
  ASSERT_TRUE(pin) << pin.error().str();
  EXPECT_EQ(pin->scheme,
            "rules on labels nvidia.com/cuda.runtime-version.major, "
            "nvidia.com/cuda.runtime-version.minor (or nvidia.com/cuda.runtime.major, "
            "nvidia.com/cuda.runtime.minor), nvidia.com/gpu.compute.major, "
            "nvidia.com/gpu.compute.minor");
  const json patched = apply_pin(pod, *pin);
  EXPECT_EQ(patched["metadata"]["annotations"]["cudagate.io/pinned"], "partial");
  const Workload pw = workload_of(patched);
  EXPECT_EQ(names(before.candidates(pw.spec), before),
            (std::vector<std::string>{"a100-1", "a100-2", "h100-1"}));
  EXPECT_EQ(decide(pw, before).verdict, Verdict::pass) << "/mutate again has nothing to do";

  // The rollout: one T4 upgraded to 550 (CUDA 12.4), one A100 downgraded to
  // 535, the H100 replaced by a V100 (7.0, which SASS 7.5 cannot run on) on
  // 570, and a new L4 node (8.9) on 560.
  const Inventory after =
      inventory_of({gfd_node("t4-1", "550.54.15", "12.4", "7.5", "Tesla-T4"),
                    gfd_node("t4-2", "535.129.03", "12.2", "7.5", "Tesla-T4"),
                    gfd_node("a100-1", "550.54.15", "12.4", "8.0", "NVIDIA-A100-SXM4-80GB"),
                    gfd_node("a100-2", "535.129.03", "12.2", "8.0", "NVIDIA-A100-SXM4-80GB"),
                    gfd_node("h100-1", "570.124.06", "12.8", "7.0", "Tesla-V100-SXM2-16GB"),
                    gfd_node("l4-1", "560.35.03", "12.6", "8.9", "NVIDIA-L4")});
  const std::vector<std::string> runnable = {"t4-1", "a100-1", "l4-1"};
  EXPECT_EQ(names(after.candidates(pw.spec), after), runnable);
  // What the rules say of the original pod against the new fleet.
  const Decision now = decide(w, after);
  EXPECT_EQ(names(compatible_candidates(w, now, after), after), runnable);
  EXPECT_EQ(decide(pw, after).verdict, Verdict::pass);
}

// `node` with only one of GPU Feature Discovery's CUDA label schemes: the
// newer nvidia.com/cuda.runtime-version.* or the older nvidia.com/cuda.runtime.*.
json with_only_scheme(json node, bool newer) {
  json& labels = node["metadata"]["labels"];
  for (const char* key :
       {"nvidia.com/cuda.runtime-version.full", "nvidia.com/cuda.runtime-version.major",
        "nvidia.com/cuda.runtime-version.minor"}) {
    if (!newer) labels.erase(key);
  }
  for (const char* key : {"nvidia.com/cuda.runtime.major", "nvidia.com/cuda.runtime.minor"}) {
    if (newer) labels.erase(key);
  }
  return node;
}

// A pin written when every compatible node carried the newer labels still
// selects a node that becomes compatible with only the older ones (an older
// GPU Feature Discovery on a pool that was upgraded), and the other way
// round; an incompatible node of either scheme stays out.
TEST(RulePin, MatchesEitherLabelSchemeAfterARollout) {
  for (const bool newer_today : {true, false}) {
    std::vector<json> nodes;
    for (json& node : today()) nodes.push_back(with_only_scheme(std::move(node), newer_today));
    const Inventory before = inventory_of(nodes);
    const json pod =
        pod_with({{"CUDA_VERSION", "12.4.1"}, {"TORCH_CUDA_ARCH_LIST", "7.5;8.0;9.0"}});
    const Workload w = workload_of(pod);
    const Decision d = decide(w, before);
    ASSERT_EQ(d.verdict, Verdict::partial);
    const Policy policy;
    auto pin = pin_affinity(pod, w, d, before, db(), "partial", &policy);
    ASSERT_TRUE(pin) << pin.error().str();
    ASSERT_EQ(pin->scheme.rfind("rules on labels", 0), 0u) << pin->scheme;
    const Workload pw = workload_of(apply_pin(pod, *pin));
    EXPECT_EQ(names(before.candidates(pw.spec), before),
              (std::vector<std::string>{"a100-1", "a100-2", "h100-1"}));

    // The T4s upgraded to 550, one carrying the other scheme; a new L4 on
    // 535 (CUDA 12.2) with the other scheme cannot run the pod.
    const Inventory after = inventory_of(
        {with_only_scheme(gfd_node("t4-1", "550.54.15", "12.4", "7.5", "Tesla-T4"), !newer_today),
         with_only_scheme(gfd_node("t4-2", "550.54.15", "12.4", "7.5", "Tesla-T4"), newer_today),
         with_only_scheme(gfd_node("a100-1", "550.54.15", "12.4", "8.0", "NVIDIA-A100-SXM4-80GB"),
                          newer_today),
         with_only_scheme(gfd_node("l4-1", "535.129.03", "12.2", "8.9", "NVIDIA-L4"),
                          !newer_today)});
    const std::vector<std::string> runnable = {"t4-1", "t4-2", "a100-1"};
    EXPECT_EQ(names(compatible_candidates(w, decide(w, after), after), after), runnable);
    EXPECT_EQ(names(after.candidates(pw.spec), after), runnable) << "newer today: " << newer_today;
  }
}

TEST(RulePin, ExactValuesWithTheReasonWhereRangesCannotBeWritten) {
  const Inventory inventory = inventory_of(today());
  const json pod = pod_with({{"CUDA_VERSION", "12.4.1"}});
  const Workload w = workload_of(pod);
  Policy policy;
  policy.minor_version_compatibility = true;
  const Decision d = decide(w, inventory, policy);
  ASSERT_EQ(d.verdict, Verdict::partial);
  auto pin = pin_affinity(pod, w, d, inventory, db(), "partial", &policy);
  ASSERT_TRUE(pin) << pin.error().str();
  EXPECT_EQ(pin->scheme.rfind("labels ", 0), 0u) << pin->scheme;
  const std::string annotation = pin->patch[1]["value"]["cudagate.io/pinned"];
  EXPECT_EQ(
      annotation.rfind("partial (pinned on today's exact values: minorVersionCompatibility", 0), 0u)
      << annotation;
}

TEST(RulePin, NodesWithoutNumericLabelsFallBackToExactValues) {
  // The A100s are labelled only with cudagate.io/* labels: no range can
  // select them, so the pin names today's values.
  std::vector<json> nodes = today();
  for (json& node : nodes) {
    const std::string name = node["metadata"]["name"];
    if (name.rfind("a100", 0) != 0) continue;
    node["metadata"]["labels"] = {{"kubernetes.io/hostname", name},
                                  {"cudagate.io/driver-version", "550.54.15"},
                                  {"cudagate.io/compute-capability", "8.0"},
                                  {"cudagate.io/gpu-product", "NVIDIA-A100-SXM4-80GB"}};
  }
  const Inventory inventory = inventory_of(nodes);
  const json pod = pod_with({{"CUDA_VERSION", "12.4.1"}, {"TORCH_CUDA_ARCH_LIST", "8.0;9.0"}});
  const Workload w = workload_of(pod);
  const Decision d = decide(w, inventory);
  ASSERT_EQ(d.verdict, Verdict::partial);
  const Policy policy;
  auto pin = pin_affinity(pod, w, d, inventory, db(), "partial", &policy);
  ASSERT_TRUE(pin) << pin.error().str();
  const std::string annotation = pin->patch[1]["value"]["cudagate.io/pinned"];
  EXPECT_NE(annotation.find("lack GPU Feature Discovery's numeric labels"), std::string::npos)
      << annotation;
  const Workload pw = workload_of(apply_pin(pod, *pin));
  EXPECT_EQ(names(inventory.candidates(pw.spec), inventory),
            (std::vector<std::string>{"a100-1", "a100-2", "h100-1"}));
}

}  // namespace
}  // namespace cudagate

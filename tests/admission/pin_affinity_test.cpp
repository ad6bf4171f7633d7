// Pinning partial workloads: the patch for each pod and template shape, the label keys chosen
// per failing rule, and node names as the last resort, fifty at most.
#include "admission/pin_affinity.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "admission/enforcement.h"
#include "policy/objects/node.h"
#include "policy/objects/node_pool.h"
#include "policy/rules/evaluate.h"
#include "tests/support/decide.h"
#include "tests/support/fixtures.h"

namespace cudagate {
namespace {

using test_support::db;
using test_support::decide;
using test_support::fixture;
using test_support::workload_of;

using nlohmann::json;

Inventory inventory_of(const std::string& nodes_json) {
  auto nodes = parse_nodes(nodes_json, "nodes");
  if (!nodes) throw std::runtime_error(nodes.error().str());
  return Inventory::build(*nodes, db());
}

// A small RFC 6902 apply with the API server's (evanphx json-patch)
// semantics for the operations a pin uses: add needs an existing parent and
// replaces an existing member; replace and remove need the member.
json apply_ops(json doc, const json& patch) {
  for (const auto& op : patch) {
    const std::string path = op.at("path");
    const auto slash = path.rfind('/');
    const json::json_pointer parent(path.substr(0, slash));
    std::string key;  // unescaped reference token: ~1 is '/', ~0 is '~'
    for (std::size_t i = slash + 1; i < path.size(); ++i) {
      if (path[i] == '~' && i + 1 < path.size()) {
        key += path[i + 1] == '1' ? '/' : '~';
        ++i;
      } else {
        key += path[i];
      }
    }
    if (!doc.contains(parent)) throw std::runtime_error("doc is missing path: " + path);
    json& target = doc[parent];
    if (!target.is_object()) throw std::runtime_error("parent is not an object: " + path);
    const std::string name = op.at("op");
    if (name == "add") {
      target[key] = op.at("value");
    } else if (name == "replace") {
      if (!target.contains(key)) throw std::runtime_error("doc is missing key: " + path);
      target[key] = op.at("value");
    } else if (name == "remove") {
      if (target.erase(key) == 0) throw std::runtime_error("nonexistent key: " + path);
    } else {
      throw std::runtime_error("Unexpected kind: " + name);
    }
  }
  return doc;
}

json base_pod(const std::vector<std::pair<std::string, std::string>>& env) {
  json pod = json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "resnet-0", "namespace": "ml", "labels": {"app": "resnet"}},
    "spec": {
      "containers": [{"name": "train", "image": "registry.example.com/ml/resnet:1.0",
                      "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
      "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}})");
  for (const auto& [k, v] : env) {
    pod["spec"]["containers"][0]["env"].push_back({{"name", k}, {"value", v}});
  }
  return pod;
}

json arch80_pod() {
  return base_pod({{"CUDA_VERSION", "12.1.1"}, {"TORCH_CUDA_ARCH_LIST", "8.0"}});
}
json cuda124_pod() {
  return base_pod({{"CUDA_VERSION", "12.4.1"}});
}

std::vector<std::string> names_of(const NodeSet& set, const Inventory& inventory) {
  std::vector<std::string> out;
  set.for_each([&](std::size_t i) {
    out.push_back(inventory.node(i).name);
    return true;
  });
  return out;
}

// Pins `object`, applies the patch, and checks the contract: the patched
// workload's candidates are the original's compatible candidates, and
// /mutate on the patched object has nothing more to do.
json pin_and_verify(const json& object, const Inventory& inventory,
                    const std::vector<std::string>& expected_nodes) {
  const Workload w = workload_of(object);
  const Decision d = decide(w, inventory);
  EXPECT_EQ(d.verdict, Verdict::partial);
  auto pin = pin_affinity(object, w, d, inventory, db(), "pinned for the test");
  if (!pin) {
    ADD_FAILURE() << pin.error().str();
    return object;
  }
  EXPECT_EQ(pin->nodes, expected_nodes.size());
  json patched = apply_ops(object, pin->patch);
  const Workload pw = workload_of(patched);
  const NodeSet wanted = compatible_candidates(w, d, inventory);
  EXPECT_EQ(names_of(wanted, inventory), expected_nodes);
  EXPECT_EQ(names_of(inventory.candidates(pw.spec), inventory), expected_nodes);
  const Decision again = decide(pw, inventory);
  EXPECT_EQ(again.verdict, Verdict::pass);
  EXPECT_EQ(
      enforce(again, Policy{}, {Mode::enforce, Endpoint::mutate, w.spec_pointer != "/spec"}).action,
      EnforcementAction::allow);
  EXPECT_EQ(*pw.annotation(kPinnedAnnotation), "pinned for the test");
  return patched;
}

const std::vector<std::string> kA100s = {"gpu-a100-1", "gpu-a100-2", "gpu-a100-3", "gpu-a100-4"};

const json kComputePin = json::parse(R"({"matchExpressions": [
    {"key": "nvidia.com/gpu.compute.major", "operator": "In", "values": ["8"]},
    {"key": "nvidia.com/gpu.compute.minor", "operator": "In", "values": ["0"]}]})");

json required_terms(const json& object, const std::string& spec = "/spec") {
  return object.at(
      json::json_pointer(spec +
                         "/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/"
                         "nodeSelectorTerms"));
}

// `pod` without its required node affinity and pinned annotation, and
// without the members that held only those.
json without_pin(json pod, const std::string& meta = "/metadata",
                 const std::string& spec = "/spec") {
  json& s = pod[json::json_pointer(spec)];
  if (s.contains("affinity") && s["affinity"].is_object()) {
    json& affinity = s["affinity"];
    if (affinity.contains("nodeAffinity") && affinity["nodeAffinity"].is_object()) {
      affinity["nodeAffinity"].erase("requiredDuringSchedulingIgnoredDuringExecution");
      if (affinity["nodeAffinity"].empty()) affinity.erase("nodeAffinity");
    }
    if (affinity.contains("nodeAffinity") && affinity["nodeAffinity"].is_null()) {
      affinity.erase("nodeAffinity");
    }
    if (affinity.empty()) s.erase("affinity");
  }
  if (s.contains("affinity") && s["affinity"].is_null()) s.erase("affinity");
  json& m = pod[json::json_pointer(meta)];
  if (m.contains("annotations") && m["annotations"].is_object()) {
    m["annotations"].erase(std::string(kPinnedAnnotation));
  }
  if (m.contains("annotations") && (m["annotations"].is_null() || m["annotations"].empty())) {
    m.erase("annotations");
  }
  return pod;
}

struct Shape {
  std::string name;
  std::function<void(json&)> make;
  std::vector<std::string> expected_nodes;
  json expected_terms;
};

void PrintTo(const Shape& row, std::ostream* os) {
  *os << row.name;
}

class PinShapes : public testing::TestWithParam<Shape> {};

TEST_P(PinShapes, PatchedCandidatesAreTheCompatibleOnes) {
  const Inventory inventory = inventory_of(fixture("nodes-t4-a100.json"));
  json pod = arch80_pod();
  GetParam().make(pod);
  const json original = pod;
  const json patched = pin_and_verify(pod, inventory, GetParam().expected_nodes);
  EXPECT_EQ(required_terms(patched), GetParam().expected_terms);

  // Nothing else changes: without the pin, the patched pod is the original.
  EXPECT_EQ(without_pin(patched), without_pin(original));
}

json with(json base, const json& extra) {
  for (auto& e : extra["matchExpressions"]) base["matchExpressions"].push_back(e);
  return base;
}

const json kTypeNotIn = json::parse(
    R"({"key": "node.kubernetes.io/instance-type", "operator": "NotIn", "values": ["g5.xlarge"]})");
const json kNameIn =
    json::parse(R"({"key": "metadata.name", "operator": "In", "values": ["gpu-a100-2"]})");
const json kNameNotIn =
    json::parse(R"({"key": "metadata.name", "operator": "NotIn", "values": ["gpu-a100-3"]})");
const json kOsIn =
    json::parse(R"({"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]})");

void set_required(json& pod, const json& terms) {
  pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
      {"nodeSelectorTerms", terms}};
}

INSTANTIATE_TEST_SUITE_P(
    StartingShapes, PinShapes,
    testing::Values(
        Shape{"no_affinity", [](json&) {}, kA100s, json::array({kComputePin})},
        Shape{"null_affinity", [](json& p) { p["spec"]["affinity"] = nullptr; }, kA100s,
              json::array({kComputePin})},
        Shape{"empty_affinity", [](json& p) { p["spec"]["affinity"] = json::object(); }, kA100s,
              json::array({kComputePin})},
        Shape{"pod_anti_affinity_only",
              [](json& p) {
                p["spec"]["affinity"] = json::parse(R"({"podAntiAffinity": {
                  "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1,
                    "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                      "labelSelector": {"matchLabels": {"app": "resnet"}}}}]}})");
              },
              kA100s, json::array({kComputePin})},
        Shape{"null_node_affinity",
              [](json& p) { p["spec"]["affinity"]["nodeAffinity"] = nullptr; }, kA100s,
              json::array({kComputePin})},
        Shape{"preferred_only",
              [](json& p) {
                p["spec"]["affinity"]["nodeAffinity"] = json::parse(
                    R"({"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5,
                       "preference": {"matchExpressions": [{"key": "zone",
                       "operator": "In", "values": ["a"]}]}}]})");
              },
              kA100s, json::array({kComputePin})},
        Shape{"one_expression_term",
              [](json& p) {
                set_required(p, {{{"matchExpressions", {kTypeNotIn}}}});
              },
              kA100s, json::array({with({{"matchExpressions", {kTypeNotIn}}}, kComputePin)})},
        Shape{"expressions_and_fields",
              [](json& p) {
                set_required(p, {{{"matchFields", {kNameIn}}},
                                 {{"matchExpressions", {kOsIn}}, {"matchFields", {kNameNotIn}}}});
              },
              // gpu-a100-2 by name, or any linux node but gpu-a100-3.
              {"gpu-a100-1", "gpu-a100-2", "gpu-a100-4"},
              json::array({with({{"matchFields", {kNameIn}}}, kComputePin),
                           with({{"matchExpressions", {kOsIn}}, {"matchFields", {kNameNotIn}}},
                                kComputePin)})},
        Shape{"metadata_with_annotations",
              [](json& p) {
                p["metadata"]["annotations"] = {{"team", "vision"}};
              },
              kA100s, json::array({kComputePin})},
        Shape{"metadata_null_annotations", [](json& p) { p["metadata"]["annotations"] = nullptr; },
              kA100s, json::array({kComputePin})},
        Shape{"already_pinned_earlier",
              [](json& p) {
                p["metadata"]["annotations"] = {{"cudagate.io/pinned", "an older pin"}};
              },
              kA100s, json::array({kComputePin})}),
    [](const auto& p) { return p.param.name; });

TEST(PinAffinity, PatchOperationsForEachShape) {
  const Inventory inventory = inventory_of(fixture("nodes-t4-a100.json"));
  const auto ops = [&](const json& pod) {
    const Workload w = workload_of(pod);
    auto pin = pin_affinity(pod, w, decide(w, inventory), inventory, db(), "r");
    EXPECT_TRUE(pin.has_value());
    return pin ? pin->patch : json::array();
  };
  json pod = arch80_pod();
  json patch = ops(pod);
  ASSERT_EQ(patch.size(), 2U);
  EXPECT_EQ(patch[0]["op"], "add");
  EXPECT_EQ(patch[0]["path"], "/spec/affinity");
  EXPECT_EQ(patch[1], json::parse(R"({"op": "add", "path": "/metadata/annotations",
                                       "value": {"cudagate.io/pinned": "r"}})"));

  pod["spec"]["affinity"] = json::object();
  EXPECT_EQ(ops(pod)[0]["path"], "/spec/affinity/nodeAffinity");
  pod["spec"]["affinity"]["nodeAffinity"] = json::object();
  EXPECT_EQ(ops(pod)[0]["path"],
            "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution");
  set_required(pod, {{{"matchExpressions", {kOsIn}}}});
  patch = ops(pod);
  EXPECT_EQ(patch[0]["op"], "replace");
  EXPECT_EQ(patch[0]["path"],
            "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/"
            "nodeSelectorTerms");
  pod["metadata"]["annotations"] = {{"a", "b"}};
  EXPECT_EQ(ops(pod)[1]["path"], "/metadata/annotations/cudagate.io~1pinned");
}

TEST(PinAffinity, DeploymentTemplate) {
  const Inventory inventory = inventory_of(fixture("nodes-t4-a100.json"));
  const json object = json::parse(fixture("deployment-arch80.json"))["request"]["object"];
  const json patched = pin_and_verify(object, inventory, kA100s);
  EXPECT_EQ(required_terms(patched, "/spec/template/spec"), json::array({kComputePin}));
  EXPECT_EQ(patched["spec"]["template"]["metadata"]["annotations"]["cudagate.io/pinned"],
            "pinned for the test");
  EXPECT_FALSE(patched["metadata"]["annotations"].contains("cudagate.io/pinned"));
  EXPECT_EQ(without_pin(patched, "/spec/template/metadata", "/spec/template/spec"), object);
}

TEST(PinAffinity, CronJobTemplateWithAnnotations) {
  const Inventory inventory = inventory_of(fixture("nodes-t4-a100.json"));
  const json object = json::parse(fixture("cronjob-arch80-v1beta1.json"))["request"]["object"];
  const Workload w = workload_of(object);
  EXPECT_EQ(w.spec_pointer, "/spec/jobTemplate/spec/template/spec");
  auto pin = pin_affinity(object, w, decide(w, inventory), inventory, db(), "r");
  ASSERT_TRUE(pin.has_value()) << pin.error().str();
  EXPECT_EQ(pin->patch[0]["path"], "/spec/jobTemplate/spec/template/spec/affinity");
  EXPECT_EQ(pin->patch[1]["path"],
            "/spec/jobTemplate/spec/template/metadata/annotations/cudagate.io~1pinned");
  pin_and_verify(object, inventory, kA100s);
}

TEST(PinAffinity, TemplateWithoutMetadata) {
  const Inventory inventory = inventory_of(fixture("nodes-t4-a100.json"));
  json object = json::parse(fixture("deployment-arch80.json"))["request"]["object"];
  object["spec"]["template"].erase("metadata");
  const Workload w = workload_of(object);
  auto pin = pin_affinity(object, w, decide(w, inventory), inventory, db(), "r");
  ASSERT_TRUE(pin.has_value()) << pin.error().str();
  EXPECT_EQ(pin->patch[1], json::parse(R"({"op": "add", "path": "/spec/template/metadata",
      "value": {"annotations": {"cudagate.io/pinned": "r"}}})"));
  pin_and_verify(object, inventory, kA100s);
}

TEST(PinAffinity, MixedLabelSchemesOnComputeCapability) {
  const Inventory inventory = inventory_of(fixture("nodes-mixed-labels.json"));
  const json patched =
      pin_and_verify(arch80_pod(), inventory, {"gpu-a100-1", "gpu-a100-2", "bare-a100-1"});
  EXPECT_EQ(required_terms(patched), json::parse(R"([
      {"matchExpressions": [{"key": "cudagate.io/compute-capability", "operator": "In",
                             "values": ["8.0"]}]},
      {"matchExpressions": [{"key": "nvidia.com/gpu.compute.major", "operator": "In", "values": ["8"]},
                            {"key": "nvidia.com/gpu.compute.minor", "operator": "In", "values": ["0"]}]}])"));
}

TEST(PinAffinity, DriverFailuresPinOnDriverLabels) {
  const Inventory inventory = inventory_of(fixture("nodes-mixed-labels.json"));
  const json patched =
      pin_and_verify(cuda124_pod(), inventory, {"gpu-a100-2", "bare-a100-1", "bare-t4-1"});
  EXPECT_EQ(required_terms(patched), json::parse(R"([
      {"matchExpressions": [{"key": "cudagate.io/driver-version", "operator": "In",
                             "values": ["550.54.15"]}]},
      {"matchExpressions": [{"key": "nvidia.com/cuda.driver.major", "operator": "In", "values": ["550"]},
                            {"key": "nvidia.com/cuda.driver.minor", "operator": "In", "values": ["54"]},
                            {"key": "nvidia.com/cuda.driver.rev", "operator": "In", "values": ["15"]}]}])"));
}

TEST(PinAffinity, InValuesMergeAcrossGroups) {
  // Two compatible drivers on the same label: one term, one In list.
  std::string nodes = R"({"kind": "NodeList", "apiVersion": "v1", "items": [)";
  const char* drivers[] = {"535.129.03", "550.54.15", "560.35.03"};
  for (int i = 0; i < 3; ++i) {
    if (i > 0) nodes += ",";
    nodes += R"({"metadata": {"name": "n)" + std::to_string(i) +
             R"(", "labels": {"cudagate.io/driver-version": ")" + drivers[i] +
             R"(", "cudagate.io/compute-capability": "8.0"}},
                 "status": {"allocatable": {"nvidia.com/gpu": "1"}}})";
  }
  nodes += "]}";
  const Inventory inventory = inventory_of(nodes);
  const json patched = pin_and_verify(cuda124_pod(), inventory, {"n1", "n2"});
  EXPECT_EQ(required_terms(patched), json::parse(R"([{"matchExpressions": [
      {"key": "cudagate.io/driver-version", "operator": "In", "values": ["550.54.15", "560.35.03"]}]}])"));
}

TEST(PinAffinity, EqualFactsFromDifferentLabelSchemes) {
  // One group (equal GPU facts), two ways of labelling it: a sample of the
  // group misses one, so every node is read.
  const Inventory inventory = inventory_of(R"({"kind": "List", "apiVersion": "v1", "items": [
    {"metadata": {"name": "full", "labels": {"nvidia.com/cuda.driver-version.full": "550.54.15",
       "nvidia.com/gpu.compute.major": "8", "nvidia.com/gpu.compute.minor": "0"}},
     "status": {"allocatable": {"nvidia.com/gpu": "1"}}},
    {"metadata": {"name": "legacy", "labels": {"nvidia.com/cuda.driver.major": "550",
       "nvidia.com/cuda.driver.minor": "54", "nvidia.com/cuda.driver.rev": "15",
       "nvidia.com/gpu.compute.major": "8", "nvidia.com/gpu.compute.minor": "0"}},
     "status": {"allocatable": {"nvidia.com/gpu": "1"}}},
    {"metadata": {"name": "old", "labels": {"nvidia.com/cuda.driver-version.full": "535.129.03",
       "nvidia.com/gpu.compute.major": "8", "nvidia.com/gpu.compute.minor": "0"}},
     "status": {"allocatable": {"nvidia.com/gpu": "1"}}}]})");
  ASSERT_EQ(inventory.group_of(0), inventory.group_of(1));
  const json patched = pin_and_verify(cuda124_pod(), inventory, {"full", "legacy"});
  EXPECT_EQ(required_terms(patched).size(), 2U);
}

// Nodes with equal driver, compute capability and product labels whose
// reported CUDA differs: no label sets them apart, so they are named.
std::string twin_nodes(int compatible) {
  std::string nodes = R"({"kind": "NodeList", "apiVersion": "v1", "items": [)";
  for (int i = 0; i <= compatible; ++i) {
    if (i > 0) nodes += ",";
    const bool old = i == 0;
    nodes += R"({"metadata": {"name": ")" + std::string(old ? "old" : "new-") +
             (old ? "" : std::to_string(i)) + R"(", "labels": {
               "nvidia.com/cuda.driver-version.full": "535.129.03",
               "nvidia.com/cuda.runtime-version.full": ")" +
             (old ? "12.2" : "12.4") + R"(",
               "nvidia.com/gpu.compute.major": "8", "nvidia.com/gpu.compute.minor": "0",
               "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}},
               "status": {"allocatable": {"nvidia.com/gpu": "1"}}})";
  }
  return nodes + "]}";
}

TEST(PinAffinity, NodeNamesWhenLabelsCannotTellThemApart) {
  const Inventory inventory = inventory_of(twin_nodes(2));
  json pod = cuda124_pod();
  set_required(pod, {{{"matchExpressions", {kOsIn}}}, {{"matchFields", {kNameNotIn}}}});
  // kOsIn selects no node here; the matchFields term selects every one.
  const json patched = pin_and_verify(pod, inventory, {"new-1", "new-2"});
  EXPECT_EQ(required_terms(patched), json::parse(R"([
      {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}],
       "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["new-1"]}]},
      {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}],
       "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["new-2"]}]},
      {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["gpu-a100-3"]},
                       {"key": "metadata.name", "operator": "In", "values": ["new-1"]}]},
      {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["gpu-a100-3"]},
                       {"key": "metadata.name", "operator": "In", "values": ["new-2"]}]}])"));
}

TEST(PinAffinity, TooManyToNameIsAnError) {
  const Inventory inventory = inventory_of(twin_nodes(static_cast<int>(kMaxPinnedNodeNames) + 1));
  const json pod = cuda124_pod();
  const Workload w = workload_of(pod);
  const Decision d = decide(w, inventory);
  ASSERT_EQ(d.verdict, Verdict::partial);
  const auto pin = pin_affinity(pod, w, d, inventory, db(), "r");
  ASSERT_FALSE(pin.has_value());
  EXPECT_NE(pin.error().str().find("set the 51 compatible nodes apart from the others, and more "
                                   "than 50 nodes would have to be named"),
            std::string::npos)
      << pin.error().str();
}

TEST(PinAffinity, ExactlyFiftyCanBeNamed) {
  const Inventory inventory = inventory_of(twin_nodes(static_cast<int>(kMaxPinnedNodeNames)));
  const json pod = cuda124_pod();
  const Workload w = workload_of(pod);
  const auto pin = pin_affinity(pod, w, decide(w, inventory), inventory, db(), "r");
  ASSERT_TRUE(pin.has_value()) << pin.error().str();
  EXPECT_EQ(pin->terms.size(), kMaxPinnedNodeNames);
  EXPECT_EQ(pin->scheme, "node names");
}

TEST(PinAffinity, SpecPointerMustNameASpec) {
  const Inventory inventory = inventory_of(fixture("nodes-t4-a100.json"));
  const json pod = arch80_pod();
  Workload w = workload_of(pod);
  const Decision d = decide(w, inventory);
  w.spec_pointer = "/spec/template/spec";
  EXPECT_FALSE(pin_affinity(pod, w, d, inventory, db(), "r").has_value());
  w.spec_pointer = "/x";
  EXPECT_FALSE(pin_affinity(pod, w, d, inventory, db(), "r").has_value());
}

struct TokenRow {
  std::string in;
  std::string out;
};

void PrintTo(const TokenRow& row, std::ostream* os) {
  *os << '"' << row.in << '"';
}

class PointerToken : public testing::TestWithParam<TokenRow> {};

TEST_P(PointerToken, Escapes) {
  EXPECT_EQ(json_pointer_token(GetParam().in), GetParam().out);
}

INSTANTIATE_TEST_SUITE_P(Rfc6901, PointerToken,
                         testing::Values(TokenRow{"cudagate.io/pinned", "cudagate.io~1pinned"},
                                         TokenRow{"a~b", "a~0b"}, TokenRow{"~/", "~0~1"},
                                         TokenRow{"plain", "plain"}, TokenRow{"", ""}));

namespace pools {

// A GPU NodePool of Karpenter's AWS provider; `driver` its annotation.
std::string node_pool(const std::string& name, const std::string& driver,
                      const std::string& gpu_names) {
  return "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: " + name +
         "\n  annotations: {cudagate.io/driver-version: \"" + driver +
         "\"}\nspec:\n  template:\n    spec:\n      requirements:\n"
         "        - {key: karpenter.k8s.aws/instance-gpu-name, operator: In, values: [" +
         gpu_names + "]}\n      taints:\n        - {key: nvidia.com/gpu, effect: NoSchedule}\n";
}

// A node with GPU Feature Discovery's labels, `pool` its NodePool or "".
std::string gfd_node(const std::string& name, const std::string& driver_major,
                     const std::string& pool) {
  std::string labels = "{nvidia.com/cuda.driver.major: \"" + driver_major +
                       "\", nvidia.com/cuda.driver.minor: \"0\", nvidia.com/cuda.driver.rev: "
                       "\"0\", nvidia.com/gpu.compute.major: \"7\", nvidia.com/gpu.compute.minor: "
                       "\"5\"";
  // Karpenter's nodes carry their pool's name and the labels of the
  // instance type it launched.
  if (!pool.empty()) {
    labels += ", karpenter.sh/nodepool: " + pool + ", karpenter.k8s.aws/instance-gpu-name: t4";
  }
  labels += "}";
  return "apiVersion: v1\nkind: Node\nmetadata:\n  name: " + name + "\n  labels: " + labels +
         "\nstatus: {allocatable: {nvidia.com/gpu: \"1\"}}\n";
}

Inventory fleet() {
  const std::string text =
      node_pool("gpu", "570.124.06", "t4, a100") + "---\n" + node_pool("old", "535.183.01", "t4") +
      "---\n" + gfd_node("node-new", "570", "") + "---\n" + gfd_node("node-old", "535", "") +
      "---\n" + gfd_node("gpu-stale", "535", "gpu") + "---\n" + gfd_node("gpu-fresh", "570", "gpu");
  auto nodes = parse_nodes(text, "fleet.yaml", &db());
  if (!nodes) throw std::runtime_error(nodes.error().str());
  return Inventory::build(*nodes, db());
}

// The pin of a pod that needs CUDA 12.8 selects exactly the nodes and the
// pools that can run it: the pools by the labels the NodePool defines, so
// that Karpenter launches a node only from the compatible pool
// (pool_admits, its scheduler's rule), and the pool's node that cannot run
// it by name.
TEST(PinAffinityPools, SelectsCompatiblePoolsByTheirOwnLabels) {
  const Inventory inventory = fleet();
  const json pod = base_pod({{"CUDA_VERSION", "12.8.0"}});
  const Workload w = workload_of(pod);
  const Decision d = decide(w, inventory);
  ASSERT_EQ(d.verdict, Verdict::partial);
  const NodeSet wanted = compatible_candidates(w, d, inventory);
  EXPECT_EQ(names_of(wanted, inventory),
            (std::vector<std::string>{"node-new", "gpu-fresh", "NodePool gpu (a100, 2 nodes now)",
                                      "NodePool gpu (t4, 2 nodes now)"}))
      << "order is the inventory's";
  auto pin = pin_affinity(pod, w, d, inventory, db(), "pinned for the test");
  ASSERT_TRUE(pin) << pin.error().str();
  EXPECT_NE(pin->scheme.find("node pools"), std::string::npos) << pin->scheme;
  const Workload patched = workload_of(apply_ops(pod, pin->patch));
  EXPECT_EQ(names_of(inventory.candidates(patched.spec), inventory), names_of(wanted, inventory));
  // Each pool admits the patched pod exactly when it is compatible.
  const std::vector<std::pair<std::string_view, std::int64_t>> one_gpu = {{"nvidia.com/gpu", 1}};
  for (std::size_t i = 0; i < inventory.size(); ++i) {
    if (!inventory.is_pool(i)) continue;
    const Node node = inventory.node(i);
    const bool compatible = node.pool->pool->name == "gpu";
    EXPECT_EQ(pool_admits(node, one_gpu, patched.spec), compatible) << node.name;
  }
  // The terms name karpenter.sh/nodepool, and gpu-stale only to leave it out.
  const std::string terms = pin->patch.dump();
  EXPECT_NE(terms.find("karpenter.sh/nodepool"), std::string::npos) << terms;
  EXPECT_NE(terms.find("gpu-stale"), std::string::npos) << terms;
  EXPECT_EQ(terms.find("\"old\""), std::string::npos) << terms;
}

// Without a pool among the compatible candidates the pin is on GPU
// Feature Discovery's labels, which no NodePool defines: Karpenter
// launches no node for the pod from a pool that cannot run it.
TEST(PinAffinityPools, LabelPinsKeepIncompatiblePoolsOut) {
  const Inventory inventory = fleet();
  json pod = base_pod({{"CUDA_VERSION", "12.8.0"}});
  // Only the nodes: a pod that already names the old pool's label is judged there.
  pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
     ["nodeSelectorTerms"] = json::parse(
         R"([{"matchExpressions": [{"key": "karpenter.sh/nodepool", "operator": "NotIn",
              "values": ["gpu"]}]}])");
  const Workload w = workload_of(pod);
  const Decision d = decide(w, inventory);
  ASSERT_EQ(d.verdict, Verdict::partial);
  auto pin = pin_affinity(pod, w, d, inventory, db(), "pinned for the test");
  ASSERT_TRUE(pin) << pin.error().str();
  const Workload patched = workload_of(apply_ops(pod, pin->patch));
  EXPECT_EQ(names_of(inventory.candidates(patched.spec), inventory),
            (std::vector<std::string>{"node-new"}));
}

}  // namespace pools

}  // namespace
}  // namespace cudagate

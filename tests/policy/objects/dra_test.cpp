// Dynamic Resource Allocation: ResourceSlices as the real capture and the
// upstream API (v1, v1beta1) write them, device kinds per node, claims and
// templates, and decisions of pods that claim GPUs.
#include "policy/objects/dra.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compat-db/compat_db.h"
#include "policy/inventory/inventory.h"
#include "policy/rules/evaluate.h"
#include "tests/support/dra_fixture.h"

namespace cudagate {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

using test_support::db;
using test_support::dra;

const std::vector<Node>& fleet_nodes() {
  return dra().nodes;
}
const Node& fleet_node(const std::string& name) {
  return dra().node(name);
}

// A GPU device of NVIDIA's DRA driver as its kubelet plugin publishes it
// (cmd/gpu-kubelet-plugin/deviceinfo.go of k8s-dra-driver-gpu).
json gpu_device(const std::string& name, const std::string& product, const std::string& cc,
                const std::string& cuda, const std::string& driver) {
  return json{{"name", name},
              {"attributes",
               {{"type", {{"string", "gpu"}}},
                {"uuid", {{"string", "GPU-" + name}}},
                {"productName", {{"string", product}}},
                {"brand", {{"string", "Nvidia"}}},
                {"architecture", {{"string", "Hopper"}}},
                {"cudaComputeCapability", {{"version", cc}}},
                {"cudaDriverVersion", {{"version", cuda}}},
                {"driverVersion", {{"version", driver}}}}}};
}

json slice(const std::string& node, json devices, std::int64_t generation = 1,
           const std::string& api = "resource.k8s.io/v1") {
  return json{{"apiVersion", api},
              {"kind", "ResourceSlice"},
              {"metadata", {{"name", node + "-gpu.nvidia.com-abcde"}}},
              {"spec",
               {{"driver", "gpu.nvidia.com"},
                {"nodeName", node},
                {"pool", {{"name", node}, {"generation", generation}, {"resourceSliceCount", 1}}},
                {"devices", std::move(devices)}}}};
}

ResourceSlice read_slice(const json& object) {
  auto s = resource_slice_from_json(object, "slice");
  EXPECT_TRUE(s) << s.error().str();
  return s ? *s : ResourceSlice{};
}

// --- ResourceSlices -------------------------------------------------------

TEST(ResourceSlices, TheCapturedH100NodeIsOneKindOfTwoDevices) {
  // tests/fixtures/dra: a captured EKS node with eight H100s, trimmed to two;
  // its compute-domain.nvidia.com slice publishes no GPUs.
  const Node& node = fleet_node("ip-10-0-171-111.ec2.internal");
  ASSERT_EQ(node.devices.size(), 1U);
  const DeviceKind& kind = node.devices.front();
  EXPECT_EQ(kind.driver, "gpu.nvidia.com");
  EXPECT_EQ(kind.type, "gpu");
  EXPECT_EQ(kind.count, 2);
  EXPECT_EQ(kind.attribute("gpu.nvidia.com/uuid"), nullptr) << "uuid names one device";
  ASSERT_NE(kind.attribute("gpu.nvidia.com/productName"), nullptr);
  EXPECT_EQ(kind.attribute("gpu.nvidia.com/productName")->value, "NVIDIA H100 80GB HBM3");
  const auto allocatable =
      std::find_if(node.allocatable.begin(), node.allocatable.end(),
                   [](const auto& e) { return e.first == "dra:gpu.nvidia.com:gpu"; });
  ASSERT_NE(allocatable, node.allocatable.end());
  EXPECT_EQ(allocatable->second, 2);
}

TEST(ResourceSlices, FactsOfTheCapturedDevices) {
  // The driver publishes driverVersion as a semantic version: 580.105.8 is
  // the 580.105.08 that nvidia-smi prints, and compares as that driver.
  const GpuFacts f = derive_gpu_facts(fleet_node("ip-10-0-171-111.ec2.internal"), db());
  EXPECT_TRUE(f.has_gpu);
  ASSERT_TRUE(f.driver);
  EXPECT_EQ(*f.driver, *DriverVersion::parse("580.105.08"));
  EXPECT_EQ(f.driver->str(), "580.105.08");
  EXPECT_EQ(f.driver_source, NodeFactSource::dra);
  ASSERT_TRUE(f.max_cuda);
  EXPECT_EQ(*f.max_cuda, CudaVersion(13, 0));
  ASSERT_TRUE(f.cc);
  EXPECT_EQ(*f.cc, ComputeCapability(9, 0));
  EXPECT_EQ(f.product, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(f.devices.size(), 1U);
  // The NVML name is the matrix's H100 (GFD's NVIDIA-H100-80GB-HBM3): its
  // family and brand are known, and the node is no gap in the matrix.
  EXPECT_EQ(f.family, "hopper");
  EXPECT_EQ(f.brand, "unknown");
  EXPECT_TRUE(matrix_gaps(f, db()).empty());
}

TEST(ResourceSlices, EveryProductOfTheDevicesIsKnown) {
  for (const Node& node : fleet_nodes()) {
    for (const DeviceKind& kind : node.devices) {
      const GpuFacts f = device_gpu_facts(kind, db());
      if (f.product.empty()) continue;
      EXPECT_NE(db().product_by_label(f.product), nullptr) << node.name << ": " << f.product;
      EXPECT_TRUE(matrix_gaps(f, db()).empty()) << node.name << ": " << f.product;
    }
  }
}

TEST(ResourceSlices, LabelsOfGpuFeatureDiscoveryComeFirst) {
  Node node = fleet_node("ip-10-0-171-111.ec2.internal");
  node.labels.emplace_back("nvidia.com/cuda.driver-version.full", "570.86.10");
  std::sort(node.labels.begin(), node.labels.end());
  const GpuFacts f = derive_gpu_facts(node, db());
  ASSERT_TRUE(f.driver);
  EXPECT_EQ(f.driver->str(), "570.86.10");
  EXPECT_EQ(f.driver_source, NodeFactSource::gfd);
}

TEST(ResourceSlices, V1beta1KeepsAttributesUnderBasic) {
  const Node& node = fleet_node("dra-beta-0");
  ASSERT_EQ(node.devices.size(), 1U);
  const GpuFacts f = derive_gpu_facts(node, db());
  ASSERT_TRUE(f.max_cuda);
  EXPECT_EQ(*f.max_cuda, CudaVersion(12, 8));
}

TEST(ResourceSlices, OtherVersionsAreRefusedByName) {
  json s = slice("n", json::array(), 1, "resource.k8s.io/v1alpha3");
  auto read = resource_slice_from_json(s, "slices.yaml: items[3]");
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().where, "slices.yaml: items[3]: apiVersion");
  EXPECT_THAT(read.error().message, HasSubstr("resource.k8s.io/v1alpha3"));
}

TEST(ResourceSlices, ErrorsNameTheField) {
  json s = slice(
      "n",
      json::array({gpu_device("gpu-0", "NVIDIA H100 80GB HBM3", "9.0.0", "12.4.0", "550.54.15")}));
  s["spec"]["devices"][0]["attributes"]["driverVersion"] = json{{"version", 550}};
  auto read = resource_slice_from_json(s, "s");
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().where, "s: spec.devices[0].attributes.driverVersion");
  s = slice("n", json::array());
  s["spec"].erase("driver");
  read = resource_slice_from_json(s, "s");
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().where, "s: spec.driver");
}

TEST(ResourceSlices, OnlyTheNewestGenerationOfAPoolCounts) {
  // A driver upgrade republishes the pool: the new generation's slices
  // appear before the old ones go.
  const std::vector<ResourceSlice> slices = {
      read_slice(slice("n",
                       json::array({gpu_device("gpu-0", "NVIDIA A100-SXM4-40GB", "8.0.0", "12.2.0",
                                               "535.129.3")}),
                       1)),
      read_slice(slice("n",
                       json::array({gpu_device("gpu-0", "NVIDIA A100-SXM4-40GB", "8.0.0", "12.4.0",
                                               "550.54.15")}),
                       2))};
  const auto kinds = device_kinds_by_node(slices);
  ASSERT_EQ(kinds.at("n").size(), 1U);
  EXPECT_EQ(kinds.at("n").front().attribute("gpu.nvidia.com/cudaDriverVersion")->value, "12.4.0");
}

TEST(ResourceSlices, ANodeWithTwoProductsHasTwoKinds) {
  const Node& node = fleet_node("dra-mixed-0");
  ASSERT_EQ(node.devices.size(), 2U);
  std::vector<std::string> products;
  for (const DeviceKind& k : node.devices) {
    products.push_back(device_gpu_facts(k, db()).product);
  }
  EXPECT_THAT(products, ::testing::UnorderedElementsAre("NVIDIA L4", "Tesla T4"));
}

TEST(ResourceSlices, PatchedInventoryKeepsDevicesAsARebuildDoes) {
  std::vector<Node> nodes = fleet_nodes();
  const Inventory built = Inventory::build(nodes, db());
  // A driver rollout on the A100 nodes, through their slices.
  Node upgraded = fleet_node("dra-a100-0");
  std::vector<DeviceKind> kinds = upgraded.devices;
  for (DeviceKind& k : kinds) {
    for (DeviceAttribute& a : k.attributes) {
      if (a.name == "gpu.nvidia.com/cudaDriverVersion") a.value = "12.4.0";
      if (a.name == "gpu.nvidia.com/driverVersion") a.value = "550.54.15";
    }
  }
  attach_devices(upgraded, kinds);
  const Inventory patched = built.patched({NodeEdit{upgraded.name, &upgraded}}, db());
  for (Node& n : nodes) {
    if (n.name == upgraded.name) n = upgraded;
  }
  const Inventory rebuilt = Inventory::build(nodes, db());
  const std::size_t a = *patched.index_of(upgraded.name);
  const std::size_t b = *rebuilt.index_of(upgraded.name);
  EXPECT_EQ(patched.groups()[patched.group_of(a)].facts,
            rebuilt.groups()[rebuilt.group_of(b)].facts);
  EXPECT_EQ(patched.node(a).devices, upgraded.devices);
  EXPECT_EQ(patched.groups()[patched.group_of(a)].facts.max_cuda, CudaVersion(12, 4));
}

// --- Claims ---------------------------------------------------------------

ClaimSpec read_claim(const std::string& yaml_or_json) {
  auto claims = parse_claims(yaml_or_json, "claims.yaml");
  EXPECT_TRUE(claims) << claims.error().str();
  EXPECT_EQ(claims ? claims->size() : 0U, 1U);
  return claims && !claims->empty() ? claims->front() : ClaimSpec{};
}

TEST(Claims, V1TemplateExactly) {
  const ClaimSpec c = read_claim(R"(
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: two, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - name: gpus
        exactly:
          deviceClassName: gpu.nvidia.com
          allocationMode: ExactCount
          count: 2
          selectors:
          - cel: {expression: 'device.attributes["gpu.nvidia.com"].architecture == "Hopper"'}
)");
  EXPECT_EQ(c.resource.kind, "ResourceClaimTemplate");
  EXPECT_EQ(c.resource.namespace_, "ml");
  ASSERT_EQ(c.requests.size(), 1U);
  ASSERT_EQ(c.requests[0].ways.size(), 1U);
  EXPECT_EQ(c.requests[0].ways[0].device_class, "gpu.nvidia.com");
  EXPECT_EQ(c.requests[0].ways[0].count, 2);
  EXPECT_EQ(c.requests[0].ways[0].selectors.size(), 1U);
}

TEST(Claims, FirstAvailableAndV1beta1) {
  const ClaimSpec first = read_claim(R"(
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: mig, namespace: ml}
spec:
  devices:
    requests:
    - name: mig
      firstAvailable:
      - {name: big, deviceClassName: mig.nvidia.com}
      - {name: small, deviceClassName: mig.nvidia.com, allocationMode: All}
)");
  ASSERT_EQ(first.requests[0].ways.size(), 2U);
  EXPECT_TRUE(first.requests[0].ways[1].all);
  // Kubernetes 1.32: the request itself names the class.
  const ClaimSpec beta = read_claim(R"(
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: old, namespace: ml}
spec:
  devices:
    requests:
    - {name: gpu, deviceClassName: gpu.nvidia.com}
)");
  EXPECT_EQ(beta.requests[0].ways[0].device_class, "gpu.nvidia.com");
}

TEST(Claims, ErrorsNameTheField) {
  auto bad = parse_claims(R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim",
    "metadata":{"name":"x"},"spec":{"devices":{"requests":[{"name":"gpu",
    "exactly":{"deviceClassName":"gpu.nvidia.com","count":0}}]}}})",
                          "claim.json");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where, "claim.json: spec.devices.requests[0].exactly.count");
  bad = parse_claims(R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim",
    "metadata":{"name":"x"},"spec":{"devices":{"requests":[{"name":"gpu"}]}}})",
                     "claim.json");
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message, HasSubstr("exactly or firstAvailable"));
}

// --- Decisions ------------------------------------------------------------

Policy default_policy() {
  return Policy{};
}

// The pods and a catalog of their claims that a test may change.
struct Judged {
  const std::vector<Workload>& workloads = dra().pods;
  ClaimCatalog claims = dra().claims;
};

Judged read_pods() {
  return Judged{};
}

const Workload& named(const Judged&, const std::string& name) {
  return dra().pod(name);
}

Decision decide(const Workload& w, const Inventory& inventory, const ClaimCatalog* claims,
                const Policy& policy = default_policy()) {
  EvaluationInputs inputs;
  inputs.claims = claims;
  auto d = evaluate(w, inventory, policy, db(), inputs);
  EXPECT_TRUE(d) << d.error().str();
  return d ? *d : Decision{};
}

TEST(DraDecision, ThePodReadsItsClaims) {
  const Judged j = read_pods();
  const Workload& w = named(j, "train-cuda124");
  ASSERT_EQ(w.spec.resource_claims.size(), 1U);
  EXPECT_EQ(w.spec.resource_claims[0].template_name, "one-gpu");
  ASSERT_EQ(w.spec.containers[0].claims.size(), 1U);
  EXPECT_EQ(w.spec.containers[0].claims[0].name, "gpu");
  EXPECT_EQ(gpu_containers(w, default_policy(), &j.claims).size(), 1U);
  EXPECT_TRUE(gpu_containers(w, default_policy(), nullptr).empty())
      << "without the catalog the claim's class is not known";
}

TEST(DraDecision, Cuda124IsDeniedOnSlicesOfCuda122) {
  const Judged j = read_pods();
  std::vector<Node> nodes = {fleet_node("dra-a100-0"), fleet_node("dra-a100-1")};
  const Decision d = decide(named(j, "train-cuda124"), Inventory::build(nodes, db()), &j.claims);
  EXPECT_EQ(d.verdict, Verdict::fail);
  EXPECT_EQ(d.candidates, 2U);
  ASSERT_EQ(d.groups.size(), 1U);
  ASSERT_FALSE(d.groups[0].findings.empty());
  // The message and fix a device-plugin pod gets on the same driver.
  EXPECT_EQ(d.groups[0].findings[0].message,
            "needs CUDA 12.4; driver 535.129.03 supports up to CUDA 12.2");
  EXPECT_THAT(d.groups[0].findings[0].fix, HasSubstr("upgrade the driver to 550.54.14"));
}

TEST(DraDecision, AMixedFleetIsPartialAndCandidatesAreTheDeviceNodes) {
  const Judged j = read_pods();
  const Inventory inventory = Inventory::build(fleet_nodes(), db());
  const Decision d = decide(named(j, "train-cuda124"), inventory, &j.claims);
  EXPECT_EQ(d.verdict, Verdict::partial);
  // Five DRA nodes; the device-plugin node has no DRA devices.
  EXPECT_EQ(d.candidates, 5U);
  EXPECT_EQ(d.compatible, 2U);
  EXPECT_EQ(d.claims.size(), 1U);
  EXPECT_THAT(d.claims[0], HasSubstr("no CEL selectors"));
}

TEST(DraDecision, ANodeIsCompatibleOnlyIfEveryDeviceItCanGiveIs) {
  // dra-mixed-0 holds an L4 (8.9) and a T4 (7.5): an image without sm_75
  // code may be given the T4.
  const Judged j = read_pods();
  const Inventory inventory = Inventory::build({fleet_node("dra-mixed-0")}, db());
  const Decision d = decide(named(j, "train-cuda124"), inventory, &j.claims);
  EXPECT_EQ(d.verdict, Verdict::fail);
  ASSERT_EQ(d.groups.size(), 1U);
  ASSERT_EQ(d.groups[0].findings.size(), 1U);
  EXPECT_THAT(d.groups[0].findings[0].message, HasSubstr("7.5"));
}

TEST(DraDecision, SelectorsNarrowTheDevicesJudged) {
  const Judged j = read_pods();
  const Inventory inventory = Inventory::build(fleet_nodes(), db());
  const Decision d = decide(named(j, "train-h100"), inventory, &j.claims);
  EXPECT_EQ(d.verdict, Verdict::pass);
  EXPECT_EQ(d.candidates, 2U) << "only the nodes with an H100 can be given one";
  EXPECT_THAT(d.claims[0], HasSubstr("CEL selectors evaluated"));
}

TEST(DraDecision, ASelectorOutsideTheSubsetTakesAnyDeviceOfTheClassAndSaysSo) {
  Judged j = read_pods();
  ClaimSpec spec = *j.claims.find("ResourceClaimTemplate", "ml", "h100");
  spec.requests[0].ways[0].selectors = {
      R"(device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0)"};
  j.claims.add(spec);
  const Decision d =
      decide(named(j, "train-h100"), Inventory::build(fleet_nodes(), db()), &j.claims);
  EXPECT_EQ(d.candidates, 5U);
  EXPECT_THAT(d.claims[0], HasSubstr("judged as able to take any device of the class"));
}

TEST(DraDecision, AMissingClaimIsUnknownWithTheReason) {
  const Judged j = read_pods();
  const Decision d =
      decide(named(j, "missing-claim"), Inventory::build(fleet_nodes(), db()), &j.claims);
  EXPECT_EQ(d.verdict, Verdict::unknown);
  EXPECT_TRUE(d.unknown_claim);
  EXPECT_THAT(d.reason, HasSubstr("ResourceClaimTemplate ml/no-such-template"));
}

TEST(DraDecision, AClaimOfAnotherClassIsNoGpu) {
  Judged j = read_pods();
  ClaimSpec spec = *j.claims.find("ResourceClaimTemplate", "ml", "one-gpu");
  spec.requests[0].ways[0].device_class = "nic.example.com";
  j.claims.add(spec);
  const Decision d =
      decide(named(j, "train-cuda124"), Inventory::build(fleet_nodes(), db()), &j.claims);
  EXPECT_EQ(d.verdict, Verdict::skip);
  // The policy decides which classes are GPUs.
  Policy policy;
  policy.dra_device_classes.push_back("nic.example.com");
  const Decision again =
      decide(named(j, "train-cuda124"), Inventory::build(fleet_nodes(), db()), &j.claims, policy);
  EXPECT_NE(again.verdict, Verdict::skip);
}

TEST(DraDecision, DevicePluginPodsStillGoToDevicePluginNodes) {
  const Judged j = read_pods();
  Workload w = named(j, "train-cuda124");
  w.spec.resource_claims.clear();
  w.spec.containers[0].claims.clear();
  w.spec.containers[0].resources = {{"nvidia.com/gpu", 1}};
  w.spec.tolerations.push_back(Toleration{"nvidia.com/gpu", "Exists", "", ""});
  const Decision d = decide(w, Inventory::build(fleet_nodes(), db()), &j.claims);
  EXPECT_EQ(d.candidates, 1U);
  EXPECT_EQ(d.verdict, Verdict::fail) << "gfd-a100-0 runs driver 535 (CUDA 12.2)";
}

}  // namespace
}  // namespace cudagate

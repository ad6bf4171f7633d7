// Reading nodes from every input shape, with errors naming the source, the item and the field,
// and the GPU facts derived from each label scheme and for the fixtures.
#include "policy/objects/node.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace cudagate {
namespace {

using nlohmann::json;

std::string node_fixture(const std::string& name) {
  std::ifstream in(std::string(CUDAGATE_TEST_DATA) + "/nodes/" + name, std::ios::binary);
  EXPECT_TRUE(in) << name;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

DriverVersion driver(std::string_view text) {
  auto d = DriverVersion::parse(text);
  EXPECT_TRUE(d) << text;
  return d ? *d : DriverVersion();
}

Product product(std::string name, std::vector<std::string> gfd_names,
                std::vector<std::string> prefixes, ComputeCapability cc, std::string family,
                std::string brand) {
  Product p;
  p.name = std::move(name);
  p.gfd_names = std::move(gfd_names);
  p.gfd_prefixes = std::move(prefixes);
  p.cc = cc;
  p.family = std::move(family);
  p.brand = std::move(brand);
  p.datacenter = true;
  return p;
}

// A small matrix built by hand: the tests own their facts.
CompatDb node_facts_db() {
  CompatDb db;
  for (const auto& [branch, cuda] : std::vector<std::pair<int, CudaVersion>>{
           {470, {11, 4}}, {525, {12, 0}}, {535, {12, 2}}, {550, {12, 4}}, {570, {12, 8}}}) {
    DriverBranch b;
    b.branch = branch;
    b.cuda = cuda;
    db.driver_branches.push_back(b);
  }
  db.products.push_back(
      product("V100", {"Tesla-V100-SXM2-16GB"}, {"Tesla-V100-"}, {7, 0}, "volta", "tesla"));
  db.products.push_back(product("T4", {"Tesla-T4"}, {}, {7, 5}, "turing", "tesla"));
  db.products.push_back(
      product("A100", {"NVIDIA-A100-SXM4-80GB"}, {"NVIDIA-A100-", "A100-"}, {8, 0}, "ampere", ""));
  db.products.push_back(product("L4", {"NVIDIA-L4"}, {}, {8, 9}, "ada-lovelace", "nvidia"));
  db.products.push_back(
      product("H100", {"NVIDIA-H100-80GB-HBM3"}, {"NVIDIA-H100-"}, {9, 0}, "hopper", "nvidia"));
  db.products.back().aliases = {"H100 SXM"};
  for (const auto& [value, name] : std::vector<std::pair<std::string, std::string>>{
           {"nvidia-tesla-t4", "T4"}, {"nvidia-l4", "L4"}, {"nvidia-h100-80gb", "H100"}}) {
    db.cloud_accelerators.push_back(
        CloudAccelerator{"cloud.google.com/gke-accelerator", value, name, ""});
  }
  db.cloud_accelerators.push_back(
      CloudAccelerator{"k8s.amazonaws.com/accelerator", "nvidia-tesla-a100", "A100", ""});
  return db;
}

Node make_node(std::map<std::string, std::string> labels,
               std::vector<std::pair<std::string, std::int64_t>> allocatable = {
                   {"nvidia.com/gpu", 1}}) {
  Node n;
  n.name = "n";
  n.labels.assign(labels.begin(), labels.end());
  n.allocatable = std::move(allocatable);
  return n;
}

// --- Parsing ---

TEST(Node, FleetJsonAndYamlReadTheSame) {
  auto from_json = parse_nodes(node_fixture("fleet.json"), "fleet.json");
  ASSERT_TRUE(from_json) << from_json.error().str();
  auto from_yaml = parse_nodes(node_fixture("fleet.yaml"), "fleet.yaml");
  ASSERT_TRUE(from_yaml) << from_yaml.error().str();
  ASSERT_EQ(from_json->size(), 13U);
  ASSERT_EQ(from_yaml->size(), from_json->size());
  for (std::size_t i = 0; i < from_json->size(); ++i) {
    const Node& a = (*from_json)[i];
    const Node& b = (*from_yaml)[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.labels, b.labels) << a.name;
    EXPECT_EQ(a.taints, b.taints) << a.name;
    EXPECT_EQ(a.unschedulable, b.unschedulable) << a.name;
    EXPECT_EQ(a.allocatable, b.allocatable) << a.name;
  }
}

TEST(Node, FleetNodeFields) {
  auto nodes = parse_nodes(node_fixture("fleet.json"), "fleet.json");
  ASSERT_TRUE(nodes) << nodes.error().str();
  auto find = [&](std::string_view name) -> const Node& {
    const auto it =
        std::find_if(nodes->begin(), nodes->end(), [&](const Node& n) { return n.name == name; });
    EXPECT_NE(it, nodes->end()) << name;
    return *it;
  };
  const Node& cpu = find("ip-10-0-1-11.ec2.internal");
  EXPECT_TRUE(cpu.allocatable.empty());  // cpu, memory, pods are not extended resources
  EXPECT_TRUE(cpu.taints.empty());

  const Node& t4 = find("ip-10-0-2-21.ec2.internal");
  EXPECT_TRUE(std::is_sorted(t4.labels.begin(), t4.labels.end()));
  ASSERT_NE(t4.label("nvidia.com/gpu.product"), nullptr);
  EXPECT_EQ(*t4.label("nvidia.com/gpu.product"), "Tesla-T4");
  EXPECT_EQ(*t4.label("nvidia.com/cuda.driver-version.revision"), "03");
  EXPECT_EQ(t4.label("nvidia.com/gpu.productx"), nullptr);
  EXPECT_EQ(t4.taints, (std::vector<Taint>{{"nvidia.com/gpu", "true", "NoSchedule"}}));
  EXPECT_EQ(t4.allocatable,
            (std::vector<std::pair<std::string, std::int64_t>>{{"nvidia.com/gpu", 1}}));

  const Node& cordoned = find("ip-10-0-3-32.ec2.internal");
  EXPECT_TRUE(cordoned.unschedulable);
  EXPECT_EQ(cordoned.taints.back(), (Taint{"node.kubernetes.io/unschedulable", "", "NoSchedule"}));

  const Node& mig = find("ip-10-0-4-43.ec2.internal");
  EXPECT_EQ(
      mig.allocatable,
      (std::vector<std::pair<std::string, std::int64_t>>{
          {"nvidia.com/gpu", 0}, {"nvidia.com/mig-1g.10gb", 28}, {"nvidia.com/mig-3g.40gb", 4}}));
}

TEST(Node, InputShapes) {
  const std::string node_a = R"({"kind": "Node", "metadata": {"name": "a"}})";
  const std::string node_b =
      R"({"metadata": {"name": "b"}})";  // list items of the API server lack kind
  struct Row {
    std::string text;
    std::vector<std::string> names;
  };
  const std::vector<Row> rows = {
      {node_a, {"a"}},
      {R"({"kind": "NodeList", "apiVersion": "v1", "items": [)" + node_a + "," + node_b + "]}",
       {"a", "b"}},
      {R"({"kind": "List", "items": [)" + node_a + "]}", {"a"}},
      {R"({"kind": "NodeList", "items": []})", {}},
      {R"({"kind": "NodeList", "items": null})", {}},
      {R"({"items": [)" + node_b + "]}", {"b"}},
      {"[" + node_a + "," + node_b + "]", {"a", "b"}},
      {"kind: Node\nmetadata: {name: a}\n---\nkind: Node\nmetadata: {name: b}\n", {"a", "b"}},
      {"---\nkind: NodeList\nitems:\n- metadata: {name: a}\n---\n---\nkind: Node\nmetadata: {name: "
       "c}\n",
       {"a", "c"}},
      {"metadata: {name: a}\nspec: {}\n", {"a"}},
  };
  for (const auto& row : rows) {
    auto nodes = parse_nodes(row.text, "n");
    ASSERT_TRUE(nodes) << row.text << ": " << nodes.error().str();
    std::vector<std::string> names;
    for (const auto& n : *nodes) names.push_back(n.name);
    EXPECT_EQ(names, row.names) << row.text;
  }
}

TEST(Node, Fields) {
  auto node = node_from_json(json::parse(R"({
    "kind": "Node",
    "metadata": {"name": "gpu-1", "labels": {"z": "1", "a": "2", "m": ""}},
    "spec": {"unschedulable": true, "taints": [
      {"key": "nvidia.com/gpu", "effect": "NoSchedule"},
      {"key": "k", "value": "v", "effect": "NoExecute", "timeAdded": "2025-01-01T00:00:00Z"}]},
    "status": {"allocatable": {"nvidia.com/gpu": "8", "cpu": "15910m", "memory": "1Gi",
                               "nvidia.com/mig-1g.10gb": 7, "example.com/fpga": "1k",
                               "hugepages-2Mi": "0", "kubernetes.io/x": "1.5"}}})"),
                             "");
  ASSERT_TRUE(node) << node.error().str();
  EXPECT_EQ(node->name, "gpu-1");
  EXPECT_EQ(node->labels,
            (std::vector<std::pair<std::string, std::string>>{{"a", "2"}, {"m", ""}, {"z", "1"}}));
  EXPECT_TRUE(node->unschedulable);
  EXPECT_EQ(node->taints,
            (std::vector<Taint>{{"nvidia.com/gpu", "", "NoSchedule"}, {"k", "v", "NoExecute"}}));
  EXPECT_EQ(node->allocatable,
            (std::vector<std::pair<std::string, std::int64_t>>{
                {"example.com/fpga", 1000}, {"nvidia.com/gpu", 8}, {"nvidia.com/mig-1g.10gb", 7}}));
}

struct NodeErrorRow {
  std::string text;
  std::string error;
};

TEST(Node, ErrorsNameTheSourceTheItemAndTheField) {
  const std::vector<NodeErrorRow> rows = {
      {R"({"kind": "NodeList", "items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b", "labels": {"x": 1}}}]})",
       "nodes.json: items[1]: metadata.labels.x: expected a string, got number"},
      {R"({"kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "p"}}]})",
       "nodes.json: items[0]: kind: expected a Node, got \"Pod\""},
      {R"({"kind": "Node", "metadata": {"name": "a"}, "status": {"allocatable": {"nvidia.com/gpu": "0.5"}}})",
       "nodes.json: status.allocatable.nvidia.com/gpu: expected an integer, got \"0.5\""},
      {R"({"kind": "Node", "metadata": {"name": "a"}, "spec": {"unschedulable": "yes"}})",
       "nodes.json: spec.unschedulable: expected a boolean, got string"},
      {R"({"kind": "Node", "metadata": {"name": "a"}, "spec": {"taints": {"key": "x"}}})",
       "nodes.json: spec.taints: expected a list, got object"},
      {R"({"kind": "Node", "metadata": {"name": "a"}, "spec": {"taints": [{"key": 1}]}})",
       "nodes.json: spec.taints[0].key: expected a string, got number"},
      {R"({"kind": "Node", "metadata": {"name": "a"}, "spec": {"taints": ["x"]}})",
       "nodes.json: spec.taints[0]: expected an object, got string"},
      {R"({"kind": "Node", "metadata": {}})", "nodes.json: metadata.name: is required"},
      {R"({"kind": "Node", "metadata": {"name": ""}})", "nodes.json: metadata.name: is required"},
      {R"({"kind": "Node"})", "nodes.json: metadata: is required"},
      {R"({"kind": "Node", "metadata": [1]})",
       "nodes.json: metadata: expected an object, got array"},
      {R"({"kind": "Pod", "metadata": {"name": "p"}})",
       "nodes.json: kind: expected a Node, a ResourceSlice, a NodePool, a NodeList or a List, got "
       "\"Pod\""},
      {R"({"kind": "NodeList", "items": {"a": 1}})",
       "nodes.json: items: expected a list, got object"},
      {R"({"kind": "NodeList", "items": [1]})",
       "nodes.json: items[0]: expected an object, got number"},
      {R"({"kind": "NodeList", "items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "a"}}]})",
       "nodes.json: items[1]: metadata.name: node \"a\" appears twice (first in nodes.json: "
       "items[0])"},
      {R"({"kind": 3})", "nodes.json: kind: expected a string, got number"},
      {R"("text")", "nodes.json: expected a Node, a NodeList or a List, got string"},
      {"", "nodes.json: no nodes: expected a Node, a NodeList or a List of Nodes"},
      {R"({"kind": "Node", "metadata": {"name": "a"},})", "nodes.json:1:"},
  };
  for (const auto& row : rows) {
    auto nodes = parse_nodes(row.text, "nodes.json");
    ASSERT_FALSE(nodes) << row.text;
    EXPECT_EQ(nodes.error().str().substr(0, row.error.size()), row.error) << row.text;
  }
  auto multi = parse_nodes(
      "kind: Node\nmetadata: {name: a}\n---\nkind: Node\nmetadata: {name: b, labels: [x]}\n",
      "nodes.yaml");
  ASSERT_FALSE(multi);
  EXPECT_EQ(multi.error().str(),
            "nodes.yaml: document 2: metadata.labels: expected an object, got array");
  auto twice = parse_nodes(
      "kind: Node\nmetadata: {name: a}\n---\nkind: Node\nmetadata: {name: a}\n", "nodes.yaml");
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().str(),
            "nodes.yaml: document 2: metadata.name: node \"a\" appears twice (first in nodes.yaml: "
            "document 1)");
}

// --- GPU facts ---

struct FactsRow {
  std::string what;
  Node node;
  GpuFacts expected;
};

GpuFacts facts(bool has_gpu, std::optional<std::string> drv, std::optional<CudaVersion> max_cuda,
               std::optional<ComputeCapability> cc, std::string product, std::string family,
               std::optional<std::string> brand, NodeFactSource driver_source,
               NodeFactSource cc_source) {
  GpuFacts f;
  f.has_gpu = has_gpu;
  if (drv) f.driver = driver(*drv);
  f.max_cuda = max_cuda;
  f.cc = cc;
  f.product = std::move(product);
  f.family = std::move(family);
  f.brand = std::move(brand);
  f.driver_source = driver_source;
  f.cc_source = cc_source;
  return f;
}

TEST(Node, GpuFactsFromEachLabelScheme) {
  using S = NodeFactSource;
  const CompatDb db = node_facts_db();
  const std::map<std::string, std::string> gfd = {
      {"nvidia.com/cuda.driver-version.full", "550.107.02"},
      {"nvidia.com/cuda.driver-version.major", "550"},
      {"nvidia.com/cuda.driver-version.minor", "107"},
      {"nvidia.com/cuda.driver-version.revision", "02"},
      {"nvidia.com/cuda.runtime-version.full", "12.5"},
      {"nvidia.com/gpu.compute.major", "8"},
      {"nvidia.com/gpu.compute.minor", "0"},
      {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"},
      {"nvidia.com/gpu.family", "ampere"},
  };
  auto with = [](std::map<std::string, std::string> base,
                 const std::map<std::string, std::string>& changes) {
    for (const auto& [k, v] : changes) {
      if (v == "<absent>") {
        base.erase(k);
      } else {
        base[k] = v;
      }
    }
    return base;
  };
  const std::string absent = "<absent>";
  const std::vector<FactsRow> rows = {
      {"GFD, every label", make_node(gfd),
       facts(true, "550.107.02", CudaVersion{12, 5}, ComputeCapability{8, 0},
             "NVIDIA-A100-SXM4-80GB", "ampere", std::nullopt, S::gfd, S::gfd)},
      {"GFD split driver labels, no .full",
       make_node(with(gfd, {{"nvidia.com/cuda.driver-version.full", absent}})),
       facts(true, "550.107.02", CudaVersion{12, 5}, ComputeCapability{8, 0},
             "NVIDIA-A100-SXM4-80GB", "ampere", std::nullopt, S::gfd, S::gfd)},
      {"GFD two-part driver with an empty revision",
       make_node({{"nvidia.com/cuda.driver-version.major", "570"},
                  {"nvidia.com/cuda.driver-version.minor", "86"},
                  {"nvidia.com/cuda.driver-version.revision", ""}}),
       facts(true, "570.86", CudaVersion{12, 8}, std::nullopt, "", "", std::nullopt, S::gfd,
             S::none)},
      {"deprecated GFD labels",
       make_node({{"nvidia.com/cuda.driver.major", "470"},
                  {"nvidia.com/cuda.driver.minor", "239"},
                  {"nvidia.com/cuda.driver.rev", "06"},
                  {"nvidia.com/cuda.runtime.major", "11"},
                  {"nvidia.com/cuda.runtime.minor", "4"},
                  {"nvidia.com/gpu.product", "Tesla-V100-SXM2-16GB"}}),
       facts(true, "470.239.06", CudaVersion{11, 4}, ComputeCapability{7, 0},
             "Tesla-V100-SXM2-16GB", "volta", "tesla", S::gfd, S::product)},
      {"runtime from split labels",
       make_node({{"nvidia.com/cuda.driver-version.full", "535.129.03"},
                  {"nvidia.com/cuda.runtime-version.major", "12"},
                  {"nvidia.com/cuda.runtime-version.minor", "3"}}),
       facts(true, "535.129.03", CudaVersion{12, 3}, std::nullopt, "", "", std::nullopt, S::gfd,
             S::none)},
      {"max CUDA from the compat-db when GFD has no runtime label",
       make_node({{"nvidia.com/cuda.driver-version.full", "535.129.03"}}),
       facts(true, "535.129.03", CudaVersion{12, 2}, std::nullopt, "", "", std::nullopt, S::gfd,
             S::none)},
      {"a branch between known ones takes the lower one's CUDA",
       make_node({{"cudagate.io/driver-version", "545.23.08"}}),
       facts(true, "545.23.08", CudaVersion{12, 2}, std::nullopt, "", "", std::nullopt, S::cudagate,
             S::none)},
      {"cudagate.io labels",
       make_node({{"cudagate.io/driver-version", "535.129.03"},
                  {"cudagate.io/compute-capability", "7.5"},
                  {"cudagate.io/gpu-product", "T4"}}),
       facts(true, "535.129.03", CudaVersion{12, 2}, ComputeCapability{7, 5}, "T4", "turing",
             "tesla", S::cudagate, S::cudagate)},
      {"GFD wins over cudagate.io",
       make_node(with(gfd, {{"cudagate.io/driver-version", "470.1.2"},
                            {"cudagate.io/compute-capability", "7.0"}})),
       facts(true, "550.107.02", CudaVersion{12, 5}, ComputeCapability{8, 0},
             "NVIDIA-A100-SXM4-80GB", "ampere", std::nullopt, S::gfd, S::gfd)},
      {"malformed GFD driver (Tegra) falls through to cudagate.io",
       make_node({{"nvidia.com/cuda.driver-version.full", "unknown.unknown.unknown"},
                  {"nvidia.com/cuda.driver-version.major", "unknown"},
                  {"nvidia.com/cuda.driver-version.minor", "unknown"},
                  {"cudagate.io/driver-version", "540.4.0"}}),
       facts(true, "540.4.0", CudaVersion{12, 2}, std::nullopt, "", "", std::nullopt, S::cudagate,
             S::none)},
      {"malformed labels leave facts unknown",
       make_node({{"nvidia.com/cuda.driver-version.full", "latest"},
                  {"nvidia.com/cuda.runtime-version.full", "12.x"},
                  {"nvidia.com/gpu.compute.major", "eight"},
                  {"nvidia.com/gpu.compute.minor", "0"},
                  {"cudagate.io/compute-capability", "sm_80"}}),
       facts(true, std::nullopt, std::nullopt, std::nullopt, "", "", std::nullopt, S::none,
             S::none)},
      {"driver older than every branch: max CUDA unknown",
       make_node({{"cudagate.io/driver-version", "418.87.01"}}),
       facts(true, "418.87.01", std::nullopt, std::nullopt, "", "", std::nullopt, S::cudagate,
             S::none)},
      {"cloud accelerator label gives the product and its compute capability",
       make_node({{"cloud.google.com/gke-accelerator", "nvidia-l4"}}),
       facts(true, std::nullopt, std::nullopt, ComputeCapability{8, 9}, "L4", "ada-lovelace",
             "nvidia", S::none, S::cloud)},
      {"second cloud provider's label",
       make_node({{"k8s.amazonaws.com/accelerator", "nvidia-tesla-a100"}}),
       facts(true, std::nullopt, std::nullopt, ComputeCapability{8, 0}, "A100", "ampere",
             std::nullopt, S::none, S::cloud)},
      {"unknown cloud value: nothing",
       make_node({{"cloud.google.com/gke-accelerator", "nvidia-tesla-k520"}}),
       facts(true, std::nullopt, std::nullopt, std::nullopt, "", "", std::nullopt, S::none,
             S::none)},
      {"GFD compute capability wins over the product's",
       make_node({{"cloud.google.com/gke-accelerator", "nvidia-tesla-t4"},
                  {"nvidia.com/gpu.compute.major", "7"},
                  {"nvidia.com/gpu.compute.minor", "5"}}),
       facts(true, std::nullopt, std::nullopt, ComputeCapability{7, 5}, "T4", "turing", "tesla",
             S::none, S::gfd)},
      {"GFD product by prefix, MIG single strategy",
       make_node({{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"}}),
       facts(true, std::nullopt, std::nullopt, ComputeCapability{8, 0},
             "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "ampere", std::nullopt, S::none, S::product)},
      {"GFD product of a shared GPU", make_node({{"nvidia.com/gpu.product", "Tesla-T4-SHARED"}}),
       facts(true, std::nullopt, std::nullopt, ComputeCapability{7, 5}, "Tesla-T4-SHARED", "turing",
             "tesla", S::none, S::product)},
      {"cudagate.io/gpu-product by alias", make_node({{"cudagate.io/gpu-product", "h100 sxm"}}),
       facts(true, std::nullopt, std::nullopt, ComputeCapability{9, 0}, "h100 sxm", "hopper",
             "nvidia", S::none, S::product)},
      {"unknown product keeps its name",
       make_node(
           {{"nvidia.com/gpu.product", "NVIDIA-Future-GPU"}, {"nvidia.com/gpu.family", "rubin"}}),
       facts(true, std::nullopt, std::nullopt, std::nullopt, "NVIDIA-Future-GPU", "rubin",
             std::nullopt, S::none, S::none)},
      {"GFD family 'undefined' yields to the product's",
       make_node({{"nvidia.com/gpu.product", "Tesla-T4"}, {"nvidia.com/gpu.family", "undefined"}}),
       facts(true, std::nullopt, std::nullopt, ComputeCapability{7, 5}, "Tesla-T4", "turing",
             "tesla", S::none, S::product)},
      {"MIG resources only", make_node({}, {{"nvidia.com/gpu", 0}, {"nvidia.com/mig-1g.10gb", 7}}),
       facts(true, std::nullopt, std::nullopt, std::nullopt, "", "", std::nullopt, S::none,
             S::none)},
      {"zero GPUs", make_node({}, {{"nvidia.com/gpu", 0}}),
       facts(false, std::nullopt, std::nullopt, std::nullopt, "", "", std::nullopt, S::none,
             S::none)},
      {"other extended resources are not GPUs",
       make_node({}, {{"amd.com/gpu", 1}, {"nvidia.com/gpu.shared", 4}}),
       facts(false, std::nullopt, std::nullopt, std::nullopt, "", "", std::nullopt, S::none,
             S::none)},
      {"labels without GPUs are still read",
       make_node({{"cudagate.io/driver-version", "550.54.15"}}, {}),
       facts(false, "550.54.15", CudaVersion{12, 4}, std::nullopt, "", "", std::nullopt,
             S::cudagate, S::none)},
  };
  for (const auto& row : rows) {
    const GpuFacts got = derive_gpu_facts(row.node, db);
    EXPECT_EQ(got.has_gpu, row.expected.has_gpu) << row.what;
    EXPECT_EQ(got.driver.has_value(), row.expected.driver.has_value()) << row.what;
    if (got.driver && row.expected.driver) {
      EXPECT_EQ(got.driver->str(), row.expected.driver->str()) << row.what;
    }
    EXPECT_EQ(got.max_cuda, row.expected.max_cuda) << row.what;
    EXPECT_EQ(got.cc, row.expected.cc) << row.what;
    EXPECT_EQ(got.product, row.expected.product) << row.what;
    EXPECT_EQ(got.family, row.expected.family) << row.what;
    EXPECT_EQ(got.brand, row.expected.brand) << row.what;
    EXPECT_EQ(got.driver_source, row.expected.driver_source) << row.what;
    EXPECT_EQ(got.cc_source, row.expected.cc_source) << row.what;
    EXPECT_TRUE(got == row.expected) << row.what;
  }
}

// The matrix's answer for a driver of a branch newer than it knows is a
// floor; GFD's own report of the driver's CUDA always wins over the table.
TEST(Node, ABranchNewerThanTheMatrixGivesAFloor) {
  CompatDb db = node_facts_db();
  const GpuFacts newer = derive_gpu_facts(make_node({{"cudagate.io/driver-version", "640.10.01"},
                                                     {"cudagate.io/compute-capability", "9.0"}}),
                                          db);
  ASSERT_TRUE(newer.max_cuda);
  EXPECT_EQ(newer.max_cuda->str(), "12.8");
  EXPECT_TRUE(newer.max_cuda_floor);
  EXPECT_EQ(max_cuda_text(newer), "at least 12.8 (inferred)");
  const GpuFacts reported =
      derive_gpu_facts(make_node({{"nvidia.com/cuda.driver-version.full", "640.10.01"},
                                  {"nvidia.com/cuda.runtime-version.full", "13.7"},
                                  {"nvidia.com/gpu.compute.major", "9"},
                                  {"nvidia.com/gpu.compute.minor", "0"}}),
                       db);
  EXPECT_EQ(reported.max_cuda->str(), "13.7");
  EXPECT_FALSE(reported.max_cuda_floor);
  EXPECT_EQ(max_cuda_text(reported), "13.7");
  const GpuFacts known = derive_gpu_facts(
      make_node({{"cudagate.io/driver-version", "570.124.06"}, {"cudagate.io/gpu-product", "T4"}}),
      db);
  EXPECT_FALSE(known.max_cuda_floor);
  EXPECT_EQ(max_cuda_text(known), "12.8");

  // What the node names that the matrix does not know.
  const GpuFacts gaps = derive_gpu_facts(make_node({{"cudagate.io/driver-version", "640.10.01"},
                                                    {"nvidia.com/gpu.product", "NVIDIA-X300"},
                                                    {"nvidia.com/gpu.compute.major", "9"},
                                                    {"nvidia.com/gpu.compute.minor", "7"}}),
                                         db);
  EXPECT_EQ(
      matrix_gaps(gaps, db),
      (std::vector<std::pair<std::string, std::string>>{
          {"driver_branch", "640"}, {"product", "NVIDIA-X300"}, {"compute_capability", "9.7"}}));
  EXPECT_TRUE(matrix_gaps(known, db).empty());
}

// A driver newer than the last branch of the GPU's architecture cannot run
// on it: the facts say so, and the node is not judged as if they were fine.
TEST(Node, ADriverPastItsArchitecturesLastBranchIsInconsistent) {
  CompatDb db = node_facts_db();
  db.last_driver_branches.push_back(
      LastDriverBranch{"volta", {ComputeCapability(7, 0)}, 580, "test"});
  const GpuFacts v100 =
      derive_gpu_facts(make_node({{"cudagate.io/driver-version", "590.48.01"},
                                  {"nvidia.com/gpu.product", "Tesla-V100-SXM2-16GB"}}),
                       db);
  EXPECT_EQ(v100.inconsistency,
            "driver 590.48.01 is newer than R580, the last driver branch for volta GPUs (compute "
            "capability 7.0): the node's labels cannot all be true");
  const GpuFacts supported =
      derive_gpu_facts(make_node({{"cudagate.io/driver-version", "580.95.05"},
                                  {"nvidia.com/gpu.product", "Tesla-V100-SXM2-16GB"}}),
                       db);
  EXPECT_EQ(supported.inconsistency, "");
  const GpuFacts turing = derive_gpu_facts(make_node({{"cudagate.io/driver-version", "590.48.01"},
                                                      {"nvidia.com/gpu.product", "Tesla-T4"}}),
                                           db);
  EXPECT_EQ(turing.inconsistency, "");
}

TEST(Node, GpuFactsOfTheFixtures) {
  const CompatDb db = node_facts_db();
  auto fleet = parse_nodes(node_fixture("fleet.yaml"), "fleet.yaml");
  ASSERT_TRUE(fleet) << fleet.error().str();
  std::map<std::string, GpuFacts> by_name;
  for (const Node& n : *fleet) by_name[n.name] = derive_gpu_facts(n, db);
  EXPECT_FALSE(by_name["ip-10-0-1-11.ec2.internal"].has_gpu);
  const GpuFacts& t4_old = by_name["ip-10-0-2-23.ec2.internal"];
  EXPECT_TRUE(t4_old.has_gpu);
  EXPECT_EQ(t4_old.driver->str(), "525.147.05");
  EXPECT_EQ(t4_old.max_cuda, (CudaVersion{12, 0}));
  EXPECT_EQ(t4_old.cc, (ComputeCapability{7, 5}));
  EXPECT_EQ(t4_old.product, "Tesla-T4");
  const GpuFacts& mig = by_name["ip-10-0-4-43.ec2.internal"];
  EXPECT_TRUE(mig.has_gpu);
  EXPECT_EQ(mig.cc, (ComputeCapability{8, 0}));
  const GpuFacts& h100 = by_name["ip-10-0-5-51.ec2.internal"];
  EXPECT_EQ(h100.max_cuda, (CudaVersion{12, 8}));
  EXPECT_EQ(h100.brand, "nvidia");

  auto other = parse_nodes(node_fixture("other-label-schemes.yaml"), "other-label-schemes.yaml");
  ASSERT_TRUE(other) << other.error().str();
  ASSERT_EQ(other->size(), 4U);
  const GpuFacts gke_l4 = derive_gpu_facts((*other)[0], db);
  EXPECT_TRUE(gke_l4.has_gpu);
  EXPECT_FALSE(gke_l4.driver);
  EXPECT_EQ(gke_l4.cc, (ComputeCapability{8, 9}));
  EXPECT_EQ(gke_l4.cc_source, NodeFactSource::cloud);
  const GpuFacts gke_t4 = derive_gpu_facts((*other)[1], db);
  EXPECT_EQ(gke_t4.driver->str(), "535.183.01");
  EXPECT_EQ(gke_t4.driver_source, NodeFactSource::cudagate);
  EXPECT_EQ(gke_t4.max_cuda, (CudaVersion{12, 2}));
  EXPECT_EQ(gke_t4.product, "T4");
  const GpuFacts dgx = derive_gpu_facts((*other)[2], db);
  EXPECT_EQ(dgx.cc, (ComputeCapability{9, 0}));
  EXPECT_EQ(dgx.cc_source, NodeFactSource::cudagate);
  EXPECT_EQ(dgx.product, "H100");
  EXPECT_EQ(dgx.family, "hopper");
  const GpuFacts v100 = derive_gpu_facts((*other)[3], db);
  EXPECT_EQ(v100.driver->str(), "470.239.06");
  EXPECT_EQ(v100.max_cuda, (CudaVersion{11, 4}));
  EXPECT_EQ(v100.cc, (ComputeCapability{7, 0}));
  EXPECT_EQ(v100.cc_source, NodeFactSource::product);
}

TEST(Node, GpuResources) {
  const std::vector<std::string> defaults = {"nvidia.com/gpu"};
  EXPECT_TRUE(is_gpu_resource("nvidia.com/gpu", defaults));
  EXPECT_TRUE(is_gpu_resource("nvidia.com/mig-1g.10gb", defaults));
  EXPECT_TRUE(is_gpu_resource("nvidia.com/mig-3g.40gb", {}));
  EXPECT_FALSE(is_gpu_resource("nvidia.com/gpu", {}));
  EXPECT_FALSE(is_gpu_resource("nvidia.com/gpu.shared", defaults));
  EXPECT_TRUE(
      is_gpu_resource("nvidia.com/gpu.shared", {"nvidia.com/gpu", "nvidia.com/gpu.shared"}));
  EXPECT_FALSE(is_gpu_resource("amd.com/gpu", defaults));
  EXPECT_FALSE(is_gpu_resource("nvidia.com/mig", defaults));
}

}  // namespace
}  // namespace cudagate

// The streaming node list reader against the ordinary one: the same
// inventory for every list it takes, and for everything else it declines,
// so that load_inventory() gives exactly load_inventory_file()'s result
// or error.
#include "inputs/node_loader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "inputs/input_files.h"
#include "tests/support/fixtures.h"

namespace cudagate {
namespace {

using test_support::db;

using nlohmann::json;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A file in the temporary directory, removed at the end of the test.
class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    static int counter = 0;
    path_ = (std::filesystem::temp_directory_path() /
             ("cudagate-node-loader-" + std::to_string(::getpid()) + "-" +
              std::to_string(counter++) + ".json"))
                .string();
    std::ofstream(path_, std::ios::binary) << text;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Everything an inventory answers, as text.
std::string describe(const Inventory& inv) {
  json j;
  j["size"] = inv.size();
  j["gpu"] = inv.gpu_nodes();
  j["unknown"] = inv.unknown_gpu_nodes();
  for (std::size_t i = 0; i < inv.size(); ++i) {
    const Node n = inv.node(i);
    json taints = json::array();
    for (const auto& t : n.taints) taints.push_back({t.key, t.value, t.effect});
    j["nodes"].push_back(
        {n.name, n.labels, taints, n.unschedulable, n.allocatable, inv.group_of(i)});
  }
  for (const auto& g : inv.groups()) {
    j["groups"].push_back({g.facts.driver ? g.facts.driver->str() : "", g.facts.product,
                           g.facts.cc ? g.facts.cc->str() : "", g.members.count()});
  }
  // Candidates through the indexes: labels, taints, resources.
  PodSpec spec;
  j["all"] = inv.candidates(spec).count();
  spec.tolerations = {Toleration{"", "Exists", "", ""}};
  j["tolerating"] = inv.candidates(spec).count();
  spec.node_selector = {{"kubernetes.io/os", "linux"}};
  spec.containers = {ContainerSpec{"c", "", false, {}, {{"nvidia.com/gpu", 4}}, {}}};
  j["four-gpus"] = inv.candidates(spec).count();
  return j.dump();
}

std::string outcome_of(const Expected<Inventory>& inv) {
  return inv ? describe(*inv) : "error: " + inv.error().str();
}

// A node list in kubectl's JSON shape, with values that put strings,
// escapes and multi-byte characters across the reader's 1 MiB chunks.
std::string generated_list(int count, int indent) {
  json items = json::array();
  for (int i = 0; i < count; ++i) {
    const bool gpu = i % 3 != 0;
    json labels = {{"kubernetes.io/hostname", "node-" + std::to_string(i)},
                   {"kubernetes.io/os", "linux"},
                   {"pool", gpu ? "a100" : "cpu"},
                   {"note", std::string(static_cast<std::size_t>(i % 700), '\\') + "\"é✓" +
                                std::string(static_cast<std::size_t>(i % 37), 'x')}};
    if (gpu) {
      labels["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-80GB";
      labels["nvidia.com/cuda.driver-version.full"] = i % 2 == 0 ? "550.90.07" : "535.183.01";
      labels["nvidia.com/gpu.compute.major"] = "8";
      labels["nvidia.com/gpu.compute.minor"] = "0";
    }
    json node = {
        {"apiVersion", "v1"},
        {"kind", "Node"},
        {"metadata",
         {{"name", "node-" + std::to_string(i)},
          {"labels", labels},
          {"annotations", {{"padding", std::string(static_cast<std::size_t>(i % 5000), 'p')}}}}},
        {"spec", json::object()},
        {"status", {{"allocatable", {{"cpu", "8"}, {"nvidia.com/gpu", gpu ? "8" : "0"}}}}}};
    if (gpu) node["spec"]["taints"] = {{{"key", "nvidia.com/gpu"}, {"effect", "NoSchedule"}}};
    if (i % 50 == 7) node["spec"]["unschedulable"] = true;
    items.push_back(node);
  }
  return json{{"apiVersion", "v1"},
              {"items", items},
              {"kind", "List"},
              {"metadata", {{"resourceVersion", ""}}}}
      .dump(indent);
}

// Lists the streaming reader takes: the same inventory as the ordinary read.
TEST(NodeLoader, ReadsListsAsTheOrdinaryReaderDoes) {
  std::vector<std::string> texts = {
      read_file(std::string(CUDAGATE_TEST_DATA) + "/nodes/fleet.json"),
      read_file(std::string(CUDAGATE_TEST_DATA) + "/admission/nodes-t4-a100.json"),
      read_file(std::string(CUDAGATE_TEST_DATA) + "/admission/nodes-mixed-labels.json"),
      generated_list(1200, -1),
      generated_list(300, 4),
      // Members in another order, kind NodeList, no kind, a null kind.
      R"({"kind":"NodeList","items":[{"metadata":{"name":"a","labels":{"z":"1","a":"2"}}}]})",
      R"( {"items" : [ {"metadata":{"name":"a"}} , {"metadata":{"name":"b"}} ] } )",
      R"({"kind":null,"items":[{"metadata":{"name":"a"}}],"metadata":{"continue":"x"}})",
      // Repeated label keys: the last one counts, as for nlohmann::json.
      R"({"items":[{"metadata":{"name":"a","labels":{"k":"1","k":"2"}}}]})",
  };
  for (const std::string& text : texts) {
    const TempFile file(text);
    const auto fast = load_node_list_streaming(file.path(), db());
    ASSERT_TRUE(fast) << text.substr(0, 200);
    const auto reference = load_inventory_file(file.path(), db());
    ASSERT_TRUE(reference) << reference.error().str();
    EXPECT_EQ(describe(*fast), describe(*reference)) << text.substr(0, 200);
    EXPECT_EQ(outcome_of(load_inventory(file.path(), db())), outcome_of(reference));
  }
}

// Everything else is left to the ordinary reader, whose result or error
// load_inventory() then gives.
TEST(NodeLoader, DeclinesWhatItDoesNotTake) {
  const std::string node = R"({"metadata":{"name":"a"}})";
  const std::vector<std::string> texts = {
      read_file(std::string(CUDAGATE_TEST_DATA) + "/nodes/fleet.yaml"),
      "",
      "   ",
      node,                                                     // one Node
      R"({"kind":"Node","metadata":{"name":"a"},"items":[]})",  // a Node, not a list
      "[" + node + "]",                                         // an array
      R"({"items":[]})",                                        // no nodes
      R"({"kind":"List"})",                                     // no items
      R"({"kind":"Pod","items":[)" + node + "]}",
      R"({"kind":5,"items":[)" + node + "]}",
      R"({"items":[)" + node + "," + node + "]}",  // a name twice
      R"({"items":[{"metadata":{"name":"a","labels":{"k":1}}}]})",
      R"({"items":[{"metadata":{"name":""}}]})",
      R"({"items":[{"kind":"Pod","metadata":{"name":"a"}}]})",
      R"({"items":[5]})",
      R"({"items":[)" + node + "]} trailing",
      R"({"items":[)" + node + "]",  // truncated
      R"({"items":[)" + node + "],}",
      R"({"items":[)" + node + "],\"items\":[]}",  // the last items would count
      R"({"it\u0065ms":[)" + node + "]}",
      "\xEF\xBB\xBF{\"items\":[" + node + "]}",
      R"({"items":[)" + node + R"(],"metadata":{bad}})",
      R"({"items":[{"metadata":{"name":"a"},"x":123456789012345678901234567890}]})",
      R"({"items":[{"metadata":{"name":"a"},"deep":)" + std::string(600, '[') +
          std::string(600, ']') + "}]}",
      R"({"items":[{"metadata":{"name":"a"},"deep":)" + std::string(510, '[') +
          std::string(510, ']') + "}]}",
      R"({"items":[{"metadata":{"name":"a","labels":{"k":"\ud800"}}}]})",
      R"({"items":[{"metadata":{"name":"a"},"status":{"allocatable":{"nvidia.com/gpu":"1.5"}}}]})",
  };
  for (const std::string& text : texts) {
    const TempFile file(text);
    EXPECT_FALSE(load_node_list_streaming(file.path(), db())) << text.substr(0, 120);
    EXPECT_EQ(outcome_of(load_inventory(file.path(), db())),
              outcome_of(load_inventory_file(file.path(), db())))
        << text.substr(0, 120);
  }
  // Depth: 2 + 1 + 509 levels is the ordinary reader's limit, 512; one
  // more is refused (above).
  const TempFile deep(R"({"items":[{"metadata":{"name":"a"},"deep":)" + std::string(509, '[') +
                      std::string(509, ']') + "}]}");
  EXPECT_TRUE(load_node_list_streaming(deep.path(), db()));
  EXPECT_TRUE(load_inventory_file(deep.path(), db()));
  EXPECT_FALSE(load_node_list_streaming("/nonexistent/nodes.json", db()));
  EXPECT_EQ(outcome_of(load_inventory("/nonexistent/nodes.json", db())),
            outcome_of(load_inventory_file("/nonexistent/nodes.json", db())));
}

// Long lists, read and indexed side by side in batches, with a fault far
// into the list or a duplicate far from its first: declined whichever side
// finds it, with the ordinary reader's error.
TEST(NodeLoader, DeclinesLongListsWithAFaultAnywhere) {
  const json list = json::parse(generated_list(700, -1));
  std::vector<json> faulty;
  for (const std::size_t at : {std::size_t{1}, std::size_t{130}, std::size_t{699}}) {
    json duplicate = list;
    duplicate["items"][at]["metadata"]["name"] = at == 1 ? "node-0" : "node-3";
    faulty.push_back(duplicate);
    json bad_label = list;
    bad_label["items"][at]["metadata"]["labels"]["k"] = 1;
    faulty.push_back(bad_label);
    json not_an_object = list;
    not_an_object["items"][at] = 5;
    faulty.push_back(not_an_object);
  }
  std::vector<std::string> texts;
  for (const json& j : faulty) texts.push_back(j.dump());
  texts.push_back(list.dump() + " trailing");
  texts.push_back(list.dump().substr(0, list.dump().size() - 1));  // truncated
  for (const std::string& text : texts) {
    const TempFile file(text);
    EXPECT_FALSE(load_node_list_streaming(file.path(), db())) << text.substr(0, 120);
    const std::string reference = outcome_of(load_inventory_file(file.path(), db()));
    EXPECT_EQ(reference.rfind("error: ", 0), 0U) << reference.substr(0, 200);
    EXPECT_EQ(outcome_of(load_inventory(file.path(), db())), reference);
  }
}

}  // namespace
}  // namespace cudagate

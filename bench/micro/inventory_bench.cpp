// Reading the node inventory file: what a start (and a reload) costs.
//   stream     inputs/node_loader.h: item by item, simdjson, indexed at once
//   document   the ordinary reader: the whole file as one nlohmann::json
//              document, then Inventory::build
// The file is gen.py's kind of fleet (fleet.h) in `kubectl get nodes -o
// json`'s shape, with the status and annotations real nodes carry, written
// once to the temporary directory.

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/micro/fleet.h"
#include "inputs/input_files.h"
#include "inputs/node_loader.h"

namespace cudagate::bench {
namespace {

using nlohmann::json;

// The path of a NodeList file of `count` nodes, written on first use, one
// item at a time.
const std::string& node_list_file(int count) {
  static std::map<int, std::string> files;
  auto it = files.find(count);
  if (it != files.end()) return it->second;
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("cudagate-bench-nodes-" + std::to_string(::getpid()) + "-" +
                             std::to_string(count) + ".json"))
                               .string();
  std::ofstream out(path, std::ios::binary);
  out << R"({"apiVersion":"v1","items":[)";
  bool first = true;
  for (const Node& n : fleet(count)) {
    json labels = json::object();
    for (const auto& [k, v] : n.labels) labels[k] = v;
    json taints = json::array();
    for (const auto& t : n.taints) {
      json taint = {{"key", t.key}, {"effect", t.effect}};
      if (!t.value.empty()) taint["value"] = t.value;
      taints.push_back(taint);
    }
    json allocatable = {{"cpu", "95690m"}, {"memory", "1056000000Ki"}, {"pods", "110"}};
    for (const auto& [resource, amount] : n.allocatable) {
      allocatable[resource] = std::to_string(amount);
    }
    json conditions = json::array();
    for (const char* type : {"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"}) {
      conditions.push_back({{"type", type},
                            {"status", std::string(type) == "Ready" ? "True" : "False"},
                            {"lastHeartbeatTime", "2025-11-29T17:31:02Z"},
                            {"lastTransitionTime", "2025-11-20T09:14:07Z"},
                            {"reason", "KubeletReady"},
                            {"message", "kubelet is posting ready status"}});
    }
    json spec = {{"providerID", "aws:///us-east-1a/i-0123456789abcdef0"}};
    if (!taints.empty()) spec["taints"] = taints;
    if (n.unschedulable) spec["unschedulable"] = true;
    const json item = {{"apiVersion", "v1"},
                       {"kind", "Node"},
                       {"metadata",
                        {{"name", n.name},
                         {"labels", labels},
                         {"annotations",
                          {{"node.alpha.kubernetes.io/ttl", "0"},
                           {"volumes.kubernetes.io/controller-managed-attach-detach", "true"}}},
                         {"resourceVersion", "48000017"},
                         {"uid", "0b3f5d7e-9a1c-4e2f-8b6d-1c3e5f7a9b2d"}}},
                       {"spec", spec},
                       {"status",
                        {{"allocatable", allocatable},
                         {"capacity", allocatable},
                         {"conditions", conditions},
                         {"nodeInfo",
                          {{"architecture", "amd64"},
                           {"containerRuntimeVersion", "containerd://1.7.22"},
                           {"kernelVersion", "5.10.227-219.884.amzn2.x86_64"},
                           {"kubeletVersion", "v1.30.4-eks-a737599"},
                           {"osImage", "Amazon Linux 2"}}}}}};
    out << (first ? "" : ",") << item.dump();
    first = false;
  }
  out << R"(],"kind":"List","metadata":{"resourceVersion":""}})";
  out.close();
  return files.emplace(count, path).first->second;
}

// Removes the files at exit.
struct Cleanup {
  ~Cleanup() {
    for (int count : {1000, 10000}) {
      std::filesystem::remove(std::filesystem::temp_directory_path() /
                              ("cudagate-bench-nodes-" + std::to_string(::getpid()) + "-" +
                               std::to_string(count) + ".json"));
    }
  }
} cleanup;

void BM_LoadNodeListStreaming(benchmark::State& state) {
  const std::string& path = node_list_file(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto inventory = load_node_list_streaming(path, db());
    if (!inventory) {
      state.SkipWithError("the streaming reader declined the file");
      return;
    }
    benchmark::DoNotOptimize(inventory);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(std::filesystem::file_size(path)));
  state.counters["nodes"] = static_cast<double>(state.range(0));
}
BENCHMARK(BM_LoadNodeListStreaming)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

void BM_LoadNodeListDocument(benchmark::State& state) {
  const std::string& path = node_list_file(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto inventory = load_inventory_file(path, db());
    if (!inventory) {
      state.SkipWithError(inventory.error().str().c_str());
      return;
    }
    benchmark::DoNotOptimize(inventory);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(std::filesystem::file_size(path)));
  state.counters["nodes"] = static_cast<double>(state.range(0));
}
BENCHMARK(BM_LoadNodeListDocument)->Arg(1000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace cudagate::bench

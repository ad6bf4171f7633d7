#pragma once
// The small cluster the inventory tests build from, one node for each
// situation a pod's candidates depend on (taints, a cordon, selectors'
// labels, GPU and MIG resources), a matrix with just the facts it needs,
// and pods written as the YAML of their spec.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compat-db/compat_db.h"
#include "policy/inventory/inventory.h"
#include "policy/objects/node.h"
#include "policy/objects/pod.h"

namespace cudagate::test_support {

// Driver branches and products enough to derive the cluster's GPU facts.
inline CompatDb inventory_facts_db() {
  CompatDb db;
  for (const auto& [branch, cuda] : std::vector<std::pair<int, CudaVersion>>{
           {525, {12, 0}}, {535, {12, 2}}, {550, {12, 4}}, {570, {12, 8}}}) {
    DriverBranch b;
    b.branch = branch;
    b.cuda = cuda;
    db.driver_branches.push_back(b);
  }
  auto add = [&](std::string name, std::string gfd, ComputeCapability cc, std::string family) {
    Product p;
    p.name = std::move(name);
    p.gfd_names = {std::move(gfd)};
    p.cc = cc;
    p.family = std::move(family);
    db.products.push_back(std::move(p));
  };
  add("T4", "Tesla-T4", {7, 5}, "turing");
  add("L4", "NVIDIA-L4", {8, 9}, "ada-lovelace");
  add("A100", "NVIDIA-A100-SXM4-80GB", {8, 0}, "ampere");
  add("H100", "NVIDIA-H100-80GB-HBM3", {9, 0}, "hopper");
  return db;
}

inline const Taint kInventoryGpuTaint{"nvidia.com/gpu", "true", "NoSchedule"};

// A small cluster with one node for each situation the candidates depend
// on, in this order: cpu-1, t4-1, t4-2 (another driver), a100-1 (dedicated),
// a100-mig, h100-1 (cordoned), h100-2 (NoExecute), odd (no GPU, a gpu.count
// that is no number).
inline std::vector<Node> inventory_cluster() {
  struct Row {
    std::string name;
    std::map<std::string, std::string> labels;
    std::vector<Taint> taints;
    bool unschedulable;
    std::vector<std::pair<std::string, std::int64_t>> allocatable;
  };
  const Taint& gpu = kInventoryGpuTaint;
  const std::vector<Row> rows = {
      {"cpu-1", {{"pool", "cpu"}}, {}, false, {}},
      {"t4-1",
       {{"pool", "t4"}, {"gpu.count", "1"}, {"cudagate.io/driver-version", "535.129.03"}},
       {gpu},
       false,
       {{"nvidia.com/gpu", 1}}},
      {"t4-2",
       {{"pool", "t4"}, {"gpu.count", "1"}, {"cudagate.io/driver-version", "525.147.05"}},
       {gpu},
       false,
       {{"nvidia.com/gpu", 1}}},
      {"a100-1",
       {{"pool", "a100"}, {"gpu.count", "8"}, {"dedicated", "ml"}},
       {gpu, {"dedicated", "ml", "NoSchedule"}},
       false,
       {{"nvidia.com/gpu", 8}}},
      {"a100-mig",
       {{"pool", "a100"}, {"mig", "mixed"}},
       {gpu},
       false,
       {{"nvidia.com/gpu", 0}, {"nvidia.com/mig-1g.10gb", 7}}},
      {"h100-1", {{"pool", "h100"}, {"gpu.count", "8"}}, {gpu}, true, {{"nvidia.com/gpu", 8}}},
      {"h100-2",
       {{"pool", "h100"}, {"gpu.count", "08"}},
       {gpu, {"maintenance", "true", "NoExecute"}, {"soft", "x", "PreferNoSchedule"}},
       false,
       {{"nvidia.com/gpu", 8}}},
      {"odd",
       {{"gpu.count", "many"}, {"zone", "b"}},
       {{"soft", "x", "PreferNoSchedule"}},
       false,
       {}},
  };
  std::vector<Node> out;
  for (const auto& r : rows) {
    Node n;
    n.name = r.name;
    n.labels.assign(r.labels.begin(), r.labels.end());
    n.taints = r.taints;
    n.unschedulable = r.unschedulable;
    n.allocatable = r.allocatable;
    out.push_back(std::move(n));
  }
  return out;
}

using InventoryNames = std::set<std::string>;

// The names of the nodes of `set` (node indexes).
inline InventoryNames inventory_names(const Inventory& inv, const NodeSet& set) {
  InventoryNames out;
  set.for_each([&](std::size_t i) {
    out.insert(inv.node(i).name);
    return true;
  });
  return out;
}

// The names of every node but `excluded`.
inline InventoryNames inventory_all_but(const Inventory& inv, const InventoryNames& excluded) {
  InventoryNames out;
  for (std::size_t i = 0; i < inv.size(); ++i) {
    if (excluded.count(inv.node(i).name) == 0) out.insert(inv.node(i).name);
  }
  return out;
}

// The pod spec of a Pod whose spec is `body` (YAML lines indented by two),
// with one container when `body` gives none.
inline PodSpec inventory_spec_of(const std::string& body) {
  std::string text = "kind: Pod\nmetadata: {name: p}\nspec:\n";
  if (body.find("containers:") == std::string::npos) text += "  containers: [{name: c}]\n";
  text += body;
  auto ws = parse_workloads(text, "pod.yaml");
  EXPECT_TRUE(ws) << text << "\n" << ws.error().str();
  if (!ws || ws->empty()) return {};
  return ws->front().spec;
}

inline const std::string kTolerateAll = "  tolerations: [{operator: Exists}]\n";
inline const std::string kTolerateGpu =
    "  tolerations: [{key: nvidia.com/gpu, operator: Exists}]\n";

// A spec's required node affinity with `terms` (a YAML flow list).
inline std::string inventory_affinity(const std::string& terms) {
  return "  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
         "{nodeSelectorTerms: " +
         terms + "}}}\n";
}

}  // namespace cudagate::test_support

#pragma once
// The benchmark fleet and request bodies, shared by the benchmark files.
//
// The fleet mirrors the load harness's gen.py (the load comparison's input), so
// that the per-request benchmarks and the load test judge the same pod
// against the same kind of inventory: an EKS cluster with a CPU pool and
// T4, L4, A100 and H100 pools, GPU Feature Discovery labels, drivers of the
// R525..R570 branches per pool, GPU nodes tainted nvidia.com/gpu, the
// training pools tainted for their team, 1% of the nodes cordoned. The
// request bodies are gen.py's output, checked in under bench/data (gen.py
// writes them deterministically).

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "compat-db/compat_db.h"
#include "policy/inventory/inventory.h"
#include "policy/objects/node.h"

namespace cudagate::bench {

inline const CompatDb& db() {
  static const CompatDb loaded = [] {
    auto d = load_compat_db(embedded_compat_db_files());
    if (!d) std::abort();
    return std::move(*d);
  }();
  return loaded;
}

// A request body from bench/data ("gpu-pod", "gpu-pod-nomf", "gpu-pod-deny", "cpu-pod").
inline const std::string& body(const std::string& name) {
  static std::map<std::string, std::string> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    std::ifstream in(std::string(CUDAGATE_BENCH_DATA) + "/" + name + ".json", std::ios::binary);
    if (!in) std::abort();
    it = cache.emplace(name, std::string(std::istreambuf_iterator<char>(in), {})).first;
  }
  return it->second;
}

struct Pool {
  const char* name;
  double share;
  const char* product;  // nullptr: no GPU
  const char* family;
  int cc_major;
  int cc_minor;
  int gpus;
  const char* instance_type;
  std::vector<const char*> drivers;  // full versions
  const char* team;                  // dedicated=<team> taint, or nullptr
};

inline const std::vector<Pool>& pools() {
  static const std::vector<Pool> p = {
      {"cpu-general", 0.15, nullptr, nullptr, 0, 0, 0, "m6i.4xlarge", {}, nullptr},
      {"t4-inference",
       0.20,
       "Tesla-T4",
       "turing",
       7,
       5,
       1,
       "g4dn.2xlarge",
       {"525.147.05", "535.183.01"},
       nullptr},
      {"l4-inference",
       0.20,
       "NVIDIA-L4",
       "ada-lovelace",
       8,
       9,
       4,
       "g6.12xlarge",
       {"535.183.01", "550.90.07"},
       nullptr},
      {"a100-train",
       0.25,
       "NVIDIA-A100-SXM4-80GB",
       "ampere",
       8,
       0,
       8,
       "p4de.24xlarge",
       {"550.90.07", "570.124.06"},
       "ml-training"},
      {"h100-train",
       0.20,
       "NVIDIA-H100-80GB-HBM3",
       "hopper",
       9,
       0,
       8,
       "p5.48xlarge",
       {"550.90.07", "570.124.06"},
       "ml-training"},
  };
  return p;
}

// `count` nodes, the same for every call with the same count.
inline std::vector<Node> fleet(int count) {
  std::vector<Node> nodes;
  nodes.reserve(static_cast<std::size_t>(count));
  std::uint64_t state = 0x9e3779b97f4a7c15ULL;
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::uint32_t>(state >> 33);
  };
  const char* zones[] = {"us-east-1a", "us-east-1b", "us-east-1c"};
  for (int i = 0; i < count; ++i) {
    const double x = (i + 0.5) / count;
    double acc = 0;
    const Pool* pool = &pools().back();
    for (const Pool& p : pools()) {
      acc += p.share;
      if (x < acc) {
        pool = &p;
        break;
      }
    }
    const std::string ip = "10-" + std::to_string(next() % 4) + "-" +
                           std::to_string((i / 250) % 256) + "-" + std::to_string(i % 250 + 2);
    Node n;
    n.name = "ip-" + ip + ".ec2.internal";
    const std::string zone = zones[i % 3];
    n.labels = {
        {"beta.kubernetes.io/arch", "amd64"},
        {"beta.kubernetes.io/instance-type", pool->instance_type},
        {"beta.kubernetes.io/os", "linux"},
        {"eks.amazonaws.com/capacityType", "ON_DEMAND"},
        {"eks.amazonaws.com/nodegroup", pool->name},
        {"eks.amazonaws.com/nodegroup-image", "ami-0" + std::to_string(next()) + "f"},
        {"failure-domain.beta.kubernetes.io/region", "us-east-1"},
        {"failure-domain.beta.kubernetes.io/zone", zone},
        {"kubernetes.io/arch", "amd64"},
        {"kubernetes.io/hostname", n.name},
        {"kubernetes.io/os", "linux"},
        {"node.kubernetes.io/instance-type", pool->instance_type},
        {"topology.k8s.aws/zone-id", "use1-az" + std::to_string(i % 3 + 1)},
        {"topology.kubernetes.io/region", "us-east-1"},
        {"topology.kubernetes.io/zone", zone},
        {"pool", pool->name},
    };
    if (pool->product != nullptr) {
      const std::string full = pool->drivers[next() % pool->drivers.size()];
      const auto dot = full.find('.');
      const std::string major = full.substr(0, dot);
      const std::string minor = full.substr(dot + 1, full.find('.', dot + 1) - dot - 1);
      const std::vector<std::pair<std::string, std::string>> gpu = {
          {"feature.node.kubernetes.io/pci-10de.present", "true"},
          {"nvidia.com/cuda.driver-version.full", full},
          {"nvidia.com/cuda.driver-version.major", major},
          {"nvidia.com/cuda.driver-version.minor", minor},
          {"nvidia.com/cuda.driver.major", major},
          {"nvidia.com/cuda.driver.minor", minor},
          {"nvidia.com/gfd.timestamp", "1732094047"},
          {"nvidia.com/gpu.compute.major", std::to_string(pool->cc_major)},
          {"nvidia.com/gpu.compute.minor", std::to_string(pool->cc_minor)},
          {"nvidia.com/gpu.count", std::to_string(pool->gpus)},
          {"nvidia.com/gpu.deploy.device-plugin", "true"},
          {"nvidia.com/gpu.family", pool->family},
          {"nvidia.com/gpu.machine", pool->instance_type},
          {"nvidia.com/gpu.present", "true"},
          {"nvidia.com/gpu.product", pool->product},
          {"nvidia.com/gpu.replicas", "1"},
          {"nvidia.com/mig.strategy", "single"},
      };
      n.labels.insert(n.labels.end(), gpu.begin(), gpu.end());
      n.allocatable = {{"nvidia.com/gpu", pool->gpus}};
      n.taints.push_back(Taint{"nvidia.com/gpu", "true", "NoSchedule"});
      if (pool->team != nullptr) {
        n.labels.emplace_back("dedicated", pool->team);
        n.taints.push_back(Taint{"dedicated", pool->team, "NoSchedule"});
      }
    }
    if (next() % 100 == 0) {
      n.unschedulable = true;
      n.taints.push_back(Taint{"node.kubernetes.io/unschedulable", "", "NoSchedule"});
    }
    std::sort(n.labels.begin(), n.labels.end());
    nodes.push_back(std::move(n));
  }
  return nodes;
}

// The indexed fleet of `count` nodes, built once per count, on a thread of
// its own as the server reads its inventory (inputs/node_loader.h), so that
// building leaves no free chunks in the heap the requests allocate from.
inline const Inventory& inventory(int count) {
  static std::map<int, std::unique_ptr<Inventory>> cache;
  auto& slot = cache[count];
  if (!slot) {
    std::thread([&] {
      slot = std::make_unique<Inventory>(Inventory::build(fleet(count), db()));
    }).join();
  }
  return *slot;
}

}  // namespace cudagate::bench

// One admission decision against generated fleets of 100 to 50,000 nodes,
// and the inventory build that precedes decisions.
//
// The fleet: T4, L4, A100 and H100 pools with GFD labels, drivers spread
// over the R525..R570 branches, every GPU node tainted nvidia.com/gpu
// (as GPU node pools usually are), some nodes tainted for other teams and
// some cordoned. The pod: a training container (CUDA 12.4, arch list 8.0;9.0)
// selecting the training pools and tolerating the GPU taint: with CUDA 12.4
// the decision is `partial` (older drivers fail), with CUDA 12.0 `pass`.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "compat-db/compat_db.h"
#include "policy/inventory/inventory.h"
#include "policy/rules/evaluate.h"

namespace cudagate {
namespace {

const CompatDb& db() {
  static const CompatDb loaded = [] {
    auto d = load_compat_db(embedded_compat_db_files());
    if (!d) std::abort();
    return std::move(*d);
  }();
  return loaded;
}

struct Pool {
  const char* name;
  const char* product;
  const char* cc_major;
  const char* cc_minor;
  const char* family;
  const char* nodegroup;
};

constexpr Pool kPools[] = {
    {"t4", "Tesla-T4", "7", "5", "turing", "inference"},
    {"l4", "NVIDIA-L4", "8", "9", "ada-lovelace", "inference"},
    {"a100", "NVIDIA-A100-SXM4-80GB", "8", "0", "ampere", "training"},
    {"h100", "NVIDIA-H100-80GB-HBM3", "9", "0", "hopper", "training"},
};

constexpr const char* kDrivers[] = {"525.85.12", "535.129.03", "535.183.01", "545.23.08",
                                    "550.54.15", "550.127.05", "555.42.06",  "560.35.03",
                                    "565.57.01", "570.124.06"};

std::vector<Node> generate_fleet(int count) {
  std::vector<Node> nodes;
  nodes.reserve(static_cast<std::size_t>(count));
  std::uint64_t state = 0x9e3779b97f4a7c15ULL;  // fixed seed: every run sees the same fleet
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::uint32_t>(state >> 33);
  };
  for (int i = 0; i < count; ++i) {
    const Pool& pool = kPools[next() % 4];
    const std::string driver = kDrivers[next() % 10];
    Node n;
    n.name = std::string("gpu-") + pool.name + "-" + std::to_string(i);
    const std::string major = driver.substr(0, driver.find('.'));
    n.labels = {
        {"kubernetes.io/hostname", n.name},
        {"kubernetes.io/os", "linux"},
        {"kubernetes.io/arch", "amd64"},
        {"topology.kubernetes.io/zone", std::string("zone-") + static_cast<char>('a' + next() % 3)},
        {"node.kubernetes.io/instance-type", std::string("gpu-") + pool.name + ".xlarge"},
        {"nodegroup", pool.nodegroup},
        {"pool", pool.name},
        {"nvidia.com/gpu.present", "true"},
        {"nvidia.com/gpu.product", pool.product},
        {"nvidia.com/gpu.family", pool.family},
        {"nvidia.com/gpu.count", "8"},
        {"nvidia.com/gpu.compute.major", pool.cc_major},
        {"nvidia.com/gpu.compute.minor", pool.cc_minor},
        {"nvidia.com/cuda.driver-version.full", driver},
        {"nvidia.com/cuda.driver-version.major", major},
    };
    std::sort(n.labels.begin(), n.labels.end());
    n.taints.push_back(Taint{"nvidia.com/gpu", "present", "NoSchedule"});
    if (next() % 20 == 0) n.taints.push_back(Taint{"dedicated", "team-b", "NoSchedule"});
    n.unschedulable = next() % 50 == 0;
    n.allocatable = {{"nvidia.com/gpu", 8}};
    nodes.push_back(std::move(n));
  }
  return nodes;
}

Workload training_pod(const std::string& cuda_version,
                      const std::string& image = "registry.example.com/ml/train:v1") {
  Workload w;
  w.resource = ResourceRef{"v1", "Pod", "ml", "trainer-0"};
  w.spec.node_selector = {{"nodegroup", "training"}};
  w.spec.tolerations = {Toleration{"nvidia.com/gpu", "Exists", "", "NoSchedule"}};
  ContainerSpec c;
  c.name = "train";
  c.image = image;
  c.env = {EnvVar{"CUDA_VERSION", cuda_version}, EnvVar{"TORCH_CUDA_ARCH_LIST", "8.0;9.0"}};
  c.resources = {{"nvidia.com/gpu", 8}};
  w.spec.containers.push_back(std::move(c));
  return w;
}

// Built on a thread of their own, as the server reads its inventory
// (inputs/node_loader.h): building leaves the heap of the thread strewn with
// free chunks that would slow the decisions' allocations down.
const Inventory& inventory_of(int count) {
  static std::map<int, Inventory> cache;
  auto it = cache.find(count);
  if (it == cache.end()) {
    std::optional<Inventory> built;
    std::thread([&] { built.emplace(Inventory::build(generate_fleet(count), db())); }).join();
    it = cache.emplace(count, std::move(*built)).first;
  }
  return it->second;
}

void run_evaluate(benchmark::State& state, const char* cuda_version) {
  const int count = static_cast<int>(state.range(0));
  const Inventory& inventory = inventory_of(count);
  const Workload pod = training_pod(cuda_version);
  const Policy policy;
  Verdict verdict = Verdict::skip;
  std::size_t candidates = 0;
  // As the server decides: with candidate sets and metadata kept by the thread.
  CandidateScratch scratch;
  MetadataMemo memo;
  EvaluationInputs inputs;
  inputs.scratch = &scratch;
  inputs.memo = &memo;
  for (auto _ : state) {
    auto decision = evaluate(pod, inventory, policy, db(), inputs);
    if (!decision) {
      state.SkipWithError(decision.error().str().c_str());
      return;
    }
    verdict = decision->verdict;
    candidates = decision->candidates;
    benchmark::DoNotOptimize(decision);
  }
  state.counters["nodes"] = static_cast<double>(count);
  state.counters["groups"] = static_cast<double>(inventory.groups().size());
  state.counters["candidates"] = static_cast<double>(candidates);
  state.SetLabel(std::string(to_string(verdict)));
}

// CUDA 12.4: drivers older than R550 fail, so about half the groups carry
// findings (message and fix text per group).
void BM_Evaluate(benchmark::State& state) {
  run_evaluate(state, "12.4.1");
}
BENCHMARK(BM_Evaluate)->Arg(100)->Arg(1000)->Arg(10000)->Arg(50000)->Unit(benchmark::kMicrosecond);

// CUDA 12.0 runs on every driver of the fleet: the cost without findings.
void BM_EvaluatePass(benchmark::State& state) {
  run_evaluate(state, "12.0.1");
}
BENCHMARK(BM_EvaluatePass)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(50000)
    ->Unit(benchmark::kMicrosecond);

// A different pod each decision: more distinct images (and CUDA versions)
// in turn than the metadata memo keeps, so that every decision resolves its
// metadata and judges every group afresh.
void BM_EvaluateCold(benchmark::State& state) {
  const int count = static_cast<int>(state.range(0));
  const Inventory& inventory = inventory_of(count);
  constexpr const char* kVersions[] = {"11.8.0", "12.0.1", "12.1.1", "12.2.2", "12.3.2",
                                       "12.4.1", "12.5.1", "12.6.3", "12.8.1"};
  std::vector<Workload> pods;
  pods.reserve(4096);
  for (int i = 0; i < 4096; ++i) {
    pods.push_back(
        training_pod(kVersions[i % 9], "registry.example.com/ml/train:v" + std::to_string(i)));
  }
  const Policy policy;
  CandidateScratch scratch;
  MetadataMemo memo;
  EvaluationInputs inputs;
  inputs.scratch = &scratch;
  inputs.memo = &memo;
  std::size_t next = 0;
  for (auto _ : state) {
    auto decision = evaluate(pods[next], inventory, policy, db(), inputs);
    if (!decision) {
      state.SkipWithError(decision.error().str().c_str());
      return;
    }
    next = (next + 1) % pods.size();
    benchmark::DoNotOptimize(decision);
  }
  state.counters["nodes"] = static_cast<double>(count);
}
BENCHMARK(BM_EvaluateCold)->Arg(1000)->Arg(10000)->Arg(50000)->Unit(benchmark::kMicrosecond);

void BM_InventoryBuild(benchmark::State& state) {
  const std::vector<Node> fleet = generate_fleet(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    Inventory inventory = Inventory::build(fleet, db());
    benchmark::DoNotOptimize(inventory);
  }
  state.counters["nodes"] = static_cast<double>(state.range(0));
}
BENCHMARK(BM_InventoryBuild)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace cudagate

BENCHMARK_MAIN();

// A driver rollout streaming in from the API server's watch: 1,000 node
// events (GPU nodes relabelled by GPU Feature Discovery with a newer driver)
// folded into the inventory in the coalesced batches the server publishes,
// patched or (for comparison) built anew, and decisions made while that
// happens.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "bench/micro/fleet.h"
#include "kube/node_watcher.h"
#include "policy/rules/evaluate.h"
#include "server/live_inventory.h"
#include "server/state.h"

namespace cudagate {
namespace {

constexpr int kEvents = 1000;

// `count` MODIFIED events: the first GPU nodes of the fleet moved to 570.124.06.
std::vector<kube::NodeChange> rollout(int nodes_in_fleet, int count) {
  std::vector<kube::NodeChange> changes;
  for (Node& node : bench::fleet(nodes_in_fleet)) {
    if (static_cast<int>(changes.size()) == count) break;
    if (node.label("nvidia.com/cuda.driver.major") == nullptr) continue;
    for (auto& [key, value] : node.labels) {
      if (key == "nvidia.com/cuda.driver-version.full") value = "570.124.06";
      if (key == "nvidia.com/cuda.driver-version.major" || key == "nvidia.com/cuda.driver.major") {
        value = "570";
      }
      if (key == "nvidia.com/cuda.driver-version.minor" || key == "nvidia.com/cuda.driver.minor") {
        value = "124";
      }
    }
    const std::string name = node.name;
    changes.push_back({kube::NodeChange::Kind::upsert, name, std::move(node)});
  }
  return changes;
}

Workload training_pod() {
  const nlohmann::json pod = nlohmann::json::parse(R"({
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train", "namespace": "ml"},
    "spec": {"containers": [{"name": "train", "image": "registry.example.com/ml/train:v1",
      "env": [{"name": "CUDA_VERSION", "value": "12.4.1"},
              {"name": "TORCH_CUDA_ARCH_LIST", "value": "8.0;9.0"}],
      "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
      "nodeSelector": {"dedicated": "ml-training"},
      "tolerations": [{"operator": "Exists"}]}})");
  auto w = workload_from_json(pod, "pod");
  if (!w) std::abort();
  return std::move(*w);
}

using Fold = Inventory (*)(const Inventory&, const std::vector<kube::NodeChange>&, const CompatDb&);

// 1,000 events applied in batches of `batch` (the server coalesces what
// arrives within 100 ms into one batch): the time for all of them, each
// batch either patched into the inventory (what the server does) or built
// into a new one.
void run_rollout(benchmark::State& state, Fold fold) {
  const int count = static_cast<int>(state.range(0));
  const auto batch = static_cast<std::size_t>(state.range(1));
  const Inventory& fleet = bench::inventory(count);
  const std::vector<kube::NodeChange> events = rollout(count, kEvents);
  for (auto _ : state) {
    Inventory current;
    for (std::size_t at = 0; at < events.size(); at += batch) {
      const std::vector<kube::NodeChange> part(
          events.begin() + static_cast<std::ptrdiff_t>(at),
          events.begin() + static_cast<std::ptrdiff_t>(std::min(events.size(), at + batch)));
      current = fold(at == 0 ? fleet : current, part, bench::db());
    }
    benchmark::DoNotOptimize(current);
  }
  state.counters["nodes"] = count;
  state.counters["events"] = static_cast<double>(events.size());
  const std::size_t batches = (events.size() + batch - 1) / batch;  // the last one partial
  state.counters["batches"] = static_cast<double>(batches);
}

void BM_ApplyRollout(benchmark::State& state) {
  run_rollout(state, apply_node_changes);
}
BENCHMARK(BM_ApplyRollout)
    ->Args({1000, 1})
    ->Args({1000, 100})
    ->Args({10000, 1})
    ->Args({10000, 100})
    ->Args({10000, 1000})
    ->Args({50000, 1})
    ->Args({50000, 100})
    ->Args({50000, 1000})
    ->Unit(benchmark::kMillisecond);

void BM_RebuildRollout(benchmark::State& state) {
  run_rollout(state, rebuild_with_node_changes);
}
BENCHMARK(BM_RebuildRollout)
    ->Args({1000, 100})
    ->Args({10000, 100})
    ->Args({10000, 1000})
    ->Args({50000, 1000})
    ->Unit(benchmark::kMillisecond);

// Decisions while a second thread folds the rollout in, batch after batch,
// and publishes each inventory as the server does (ServerState).
void BM_EvaluateDuringRollout(benchmark::State& state) {
  const int count = static_cast<int>(state.range(0));
  const std::vector<kube::NodeChange> events = rollout(count, kEvents);
  ServerState server(std::make_shared<const CompatDb>(bench::db()),
                     std::make_shared<const Policy>(),
                     std::make_shared<const Inventory>(
                         apply_node_changes(bench::inventory(count), {}, bench::db())));
  std::atomic<bool> done{false};
  std::atomic<int> published{0};
  std::thread writer([&] {
    while (!done.load()) {
      for (std::size_t at = 0; at < events.size() && !done.load(); at += 100) {
        const std::vector<kube::NodeChange> part(
            events.begin() + static_cast<std::ptrdiff_t>(at),
            events.begin() + static_cast<std::ptrdiff_t>(std::min(events.size(), at + 100)));
        auto next = std::make_shared<const Inventory>(
            apply_node_changes(*server.snapshot()->inventory, part, bench::db()));
        server.set_inventory(std::move(next));
        published.fetch_add(1);
      }
    }
  });
  const Workload pod = training_pod();
  CandidateScratch scratch;
  MetadataMemo memo;
  EvaluationInputs inputs;
  inputs.scratch = &scratch;
  inputs.memo = &memo;
  std::vector<double> micros;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const auto snapshot = server.snapshot();
    auto decision = evaluate(pod, *snapshot->inventory, *snapshot->policy, *snapshot->db, inputs);
    micros.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count());
    if (!decision) {
      state.SkipWithError(decision.error().str().c_str());
      break;
    }
    benchmark::DoNotOptimize(decision);
  }
  done.store(true);
  writer.join();
  std::sort(micros.begin(), micros.end());
  if (!micros.empty()) {
    state.counters["p50_us"] = micros[micros.size() / 2];
    state.counters["p99_us"] = micros[micros.size() * 99 / 100];
  }
  state.counters["nodes"] = count;
  state.counters["inventories"] = published.load();
}
BENCHMARK(BM_EvaluateDuringRollout)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(50000)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace cudagate

// parse_workloads must answer every input with workloads or an Error, and
// the candidates of whatever it reads must be computable on an inventory.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "policy/inventory/inventory.h"
#include "policy/objects/pod.h"

namespace {

const cudagate::Inventory& inventory() {
  static const cudagate::Inventory inv = [] {
    constexpr std::string_view kNodes = R"({"kind": "NodeList", "items": [
      {"metadata": {"name": "cpu-1", "labels": {"pool": "cpu", "gpu.count": "0"}}},
      {"metadata": {"name": "t4-1", "labels": {"pool": "t4", "gpu.count": "1", "zone": "a"}},
       "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]},
       "status": {"allocatable": {"nvidia.com/gpu": "1"}}},
      {"metadata": {"name": "a100-1", "labels": {"pool": "a100", "gpu.count": "8"}},
       "spec": {"unschedulable": true, "taints": [{"key": "x", "effect": "NoExecute"}]},
       "status": {"allocatable": {"nvidia.com/gpu": "8", "nvidia.com/mig-1g.10gb": "7"}}}]})";
    auto nodes = cudagate::parse_nodes(kNodes, "nodes");
    return cudagate::Inventory::build(nodes ? *nodes : std::vector<cudagate::Node>{},
                                      cudagate::CompatDb{});
  }();
  return inv;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto workloads = cudagate::parse_workloads(text, "fuzz.yaml");
  if (!workloads) {
    (void)workloads.error().str();
    return 0;
  }
  for (const auto& w : *workloads) {
    (void)w.annotation("cudagate.io/cuda-version");
    const cudagate::NodeSet set = inventory().candidates(w.spec);
    if (set.count() > inventory().size()) __builtin_trap();
  }
  return 0;
}

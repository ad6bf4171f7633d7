// parse_nodes, Inventory::build and candidates must take every input
// without crashing: nodes and Karpenter NodePools come from files people
// write and from the API.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "compat-db/compat_db.h"
#include "policy/inventory/inventory.h"
#include "policy/objects/node.h"
#include "policy/objects/pod.h"
#include "tests/support/embedded_compat_db.h"

namespace {

using cudagate::test_support::db;

// A GPU pod with a selector, an affinity using every operator, tolerations
// and a GPU request: it touches each index of the inventory.
cudagate::PodSpec fixed_pod() {
  cudagate::PodSpec spec;
  spec.node_selector = {{"kubernetes.io/os", "linux"}};
  spec.required_terms = std::vector<cudagate::NodeSelectorTerm>{
      {{{"nvidia.com/gpu.count", "Gt", {"0"}},
        {"pool", "NotIn", {"cpu"}},
        {"zone", "DoesNotExist", {}}},
       {}},
      {{{"nvidia.com/gpu.product", "In", {"Tesla-T4", "NVIDIA-H100-80GB-HBM3"}},
        {"nvidia.com/cuda.driver-version.major", "Lt", {"600"}},
        {"nvidia.com/gpu.present", "Exists", {}}},
       {{"metadata.name", "NotIn", {"node-0"}}}},
  };
  spec.tolerations = {{"nvidia.com/gpu", "Exists", "", "NoSchedule"},
                      {"dedicated", "Equal", "ml", ""}};
  spec.containers = {{"train", "img", false, {}, {{"nvidia.com/gpu", 1}}, {}},
                     {"init", "img", true, {}, {{"nvidia.com/mig-1g.10gb", 1}}, {}}};
  return spec;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto nodes = cudagate::parse_nodes(text, "fuzz.json", &db());
  if (!nodes) {
    (void)nodes.error().str();
    return 0;
  }
  const std::string first = nodes->empty() ? std::string() : nodes->front().name;
  const cudagate::Inventory inv = cudagate::Inventory::build(std::move(*nodes), db());
  static const cudagate::PodSpec pod = fixed_pod();
  const cudagate::NodeSet set = inv.candidates(pod);
  if (set.count() > inv.size()) __builtin_trap();
  cudagate::PodSpec bound = pod;
  bound.node_name = first;
  if (inv.candidates(bound).count() > 1) __builtin_trap();
  std::size_t members = 0;
  for (const auto& group : inv.groups()) members += group.members.count();
  if (members != inv.size()) __builtin_trap();
  return 0;
}

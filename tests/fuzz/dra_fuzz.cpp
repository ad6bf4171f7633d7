// Feeds arbitrary text to the readers of Dynamic Resource Allocation: as a
// node list with ResourceSlices, as claims and templates with the pods that
// name them (judged against a DRA fleet), and as a CEL selector evaluated
// on device kinds. Nothing may crash; errors name a place.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compat-db/compat_db.h"
#include "policy/inventory/inventory.h"
#include "policy/objects/dra.h"
#include "policy/objects/dra_selector.h"
#include "policy/rules/evaluate.h"
#include "tests/support/embedded_compat_db.h"

namespace {

constexpr std::string_view kFleet = R"({"apiVersion":"v1","kind":"List","items":[
{"apiVersion":"v1","kind":"Node","metadata":{"name":"h100"}},
{"apiVersion":"v1","kind":"Node","metadata":{"name":"mixed"}},
{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"s1"},
 "spec":{"driver":"gpu.nvidia.com","nodeName":"h100","pool":{"name":"h100","generation":1},
 "devices":[{"name":"gpu-0","attributes":{"type":{"string":"gpu"},
 "productName":{"string":"NVIDIA H100 80GB HBM3"},"cudaComputeCapability":{"version":"9.0.0"},
 "cudaDriverVersion":{"version":"13.0.0"},"driverVersion":{"version":"580.105.8"}}}]}},
{"apiVersion":"resource.k8s.io/v1beta1","kind":"ResourceSlice","metadata":{"name":"s2"},
 "spec":{"driver":"gpu.nvidia.com","nodeName":"mixed","pool":{"name":"mixed","generation":1},
 "devices":[{"name":"gpu-0","basic":{"attributes":{"type":{"string":"gpu"},
 "productName":{"string":"Tesla T4"},"cudaComputeCapability":{"version":"7.5.0"},
 "cudaDriverVersion":{"version":"12.2.0"},"driverVersion":{"version":"535.129.3"}}}},
 {"name":"mig-0","basic":{"attributes":{"type":{"string":"mig"},"profile":{"string":"1g.10gb"},
 "productName":{"string":"NVIDIA A100-SXM4-40GB"},"cudaComputeCapability":{"version":"8.0.0"},
 "cudaDriverVersion":{"version":"12.2.0"},"driverVersion":{"version":"535.129.3"}}}}]}}]})";

using cudagate::test_support::db;

const cudagate::Inventory& fleet() {
  static const cudagate::Inventory inventory = [] {
    auto nodes = cudagate::parse_nodes(kFleet, "fleet");
    if (!nodes || nodes->size() != 2) __builtin_trap();
    return cudagate::Inventory::build(*nodes, db());
  }();
  return inventory;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cudagate;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  if (auto nodes = parse_nodes(text, "nodes.yaml")) {
    (void)Inventory::build(*nodes, db());
  } else if (nodes.error().where.empty()) {
    __builtin_trap();
  }

  auto claims = parse_claims(text, "pods.yaml");
  if (!claims) {
    if (claims.error().where.empty()) __builtin_trap();
  } else {
    ClaimCatalog catalog;
    for (ClaimSpec& c : *claims) catalog.add(std::move(c));
    if (auto workloads = parse_workloads(text, "pods.yaml")) {
      const Policy policy;
      for (const Workload& w : *workloads) {
        EvaluationInputs inputs;
        inputs.claims = &catalog;
        auto d = evaluate(w, fleet(), policy, db(), inputs);
        if (d && d->candidates < d->compatible) __builtin_trap();
      }
    }
  }

  std::string why;
  if (auto selector = DraSelector::parse(text, &why)) {
    for (std::size_t g = 0; g < fleet().groups().size(); ++g) {
      for (const DeviceKind& kind : fleet().groups()[g].facts.devices)
        (void)selector->matches(kind);
    }
  } else if (why.empty()) {
    __builtin_trap();
  }
  return 0;
}

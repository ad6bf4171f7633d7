// handle_admission must answer every request body: an AdmissionReview
// answer (200) or a JSON error (400), never a crash or a hang. The body is
// read by two parsers, simdjson on the hot path and nlohmann::json as the
// reference; whenever they are given the same bytes they must give the same
// answer, byte for byte, on /validate and on /mutate (patches included).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>
#include <vector>

#include "admission/admission.h"
#include "compat-db/compat_db.h"
#include "policy/inventory.h"
#include "policy/node.h"
#include "policy/policy.h"

namespace {

const cudagate::CompatDb& db() {
  static const cudagate::CompatDb loaded = [] {
    auto d = cudagate::load_compat_db(cudagate::embedded_compat_db_files());
    if (!d) std::abort();
    return std::move(*d);
  }();
  return loaded;
}

// T4s on R535 and A100s on R550, tainted as GPU pools are, and a CPU node:
// enough for every verdict, pins included.
const cudagate::Inventory& fleet() {
  static const cudagate::Inventory inventory = [] {
    constexpr std::string_view kNodes = R"({"kind": "NodeList", "items": [
      {"metadata": {"name": "cpu-1", "labels": {"kubernetes.io/hostname": "cpu-1"}}},
      {"metadata": {"name": "t4-1", "labels": {"kubernetes.io/hostname": "t4-1",
         "nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/gpu.compute.major": "7",
         "nvidia.com/gpu.compute.minor": "5", "nvidia.com/cuda.driver-version.full": "535.129.03",
         "pool": "t4"}},
       "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
       "status": {"allocatable": {"nvidia.com/gpu": "1"}}},
      {"metadata": {"name": "a100-1", "labels": {"kubernetes.io/hostname": "a100-1",
         "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.compute.major": "8",
         "nvidia.com/gpu.compute.minor": "0", "nvidia.com/cuda.driver-version.full": "550.54.15",
         "pool": "a100"}},
       "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
       "status": {"allocatable": {"nvidia.com/gpu": "8"}}}]})";
    auto nodes = cudagate::parse_nodes(kNodes, "nodes");
    if (!nodes) std::abort();
    return cudagate::Inventory::build(std::move(*nodes), db());
  }();
  return inventory;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  static const cudagate::Policy policy;
  const cudagate::AdmissionContext context{db(), policy, fleet()};
  for (const auto endpoint : {cudagate::Endpoint::validate, cudagate::Endpoint::mutate}) {
    const cudagate::AdmissionOutcome fast =
        cudagate::handle_admission(endpoint, "", body, context, cudagate::ReviewParser::fast);
    const cudagate::AdmissionOutcome reference =
        cudagate::handle_admission(endpoint, "", body, context, cudagate::ReviewParser::reference);
    if (fast.http_status != 200 && fast.http_status != 400) std::abort();
    if (!nlohmann::json::accept(fast.body)) std::abort();
    if (fast.http_status != reference.http_status || fast.body != reference.body ||
        fast.verdict != reference.verdict || fast.decision != reference.decision ||
        fast.uid != reference.uid || fast.kind != reference.kind || fast.name != reference.name ||
        fast.namespace_ != reference.namespace_) {
      std::abort();
    }
  }
  return 0;
}

// Feeds arbitrary bytes, as a list page of each collection an audit reads,
// to the page readers: every item is a workload, a named broken item, or
// skipped; nodes likewise. Nothing may crash or give an unnamed error.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "kube/api_calls.h"
#include "kube/cluster_workloads.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto call = cudagate::kube::kClusterAuditLists[data[0] % 7];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const auto page = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (page.is_discarded()) return 0;
  cudagate::WorkloadStream out;
  cudagate::kube::read_workload_page(page, call, out);
  for (const auto& e : out.broken) {
    if (e.where.empty() || e.message.empty()) __builtin_trap();
  }
  std::vector<cudagate::Node> nodes;
  std::vector<cudagate::Error> skipped;
  cudagate::kube::read_node_page(page, nodes, skipped);
  for (const auto& e : skipped) {
    if (e.where.empty()) __builtin_trap();
  }
  return 0;
}

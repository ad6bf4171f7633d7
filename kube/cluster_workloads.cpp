// Workloads and Nodes from list pages, by the mappings files are read with.
#include "kube/cluster_workloads.h"

#include <utility>

#include "policy/json_view.h"

namespace cudagate::kube {
namespace {

// "pods ml/trainer-0", or "nodes gpu-01".
std::string item_name(const ApiCall& call, const nlohmann::json& item) {
  std::string name = std::string(call.resource) + " ";
  const auto meta = item.find("metadata");
  if (meta == item.end() || !meta->is_object()) return name + "?";
  const auto ns = meta->find("namespace");
  if (ns != meta->end() && ns->is_string()) name += ns->get<std::string>() + "/";
  const auto n = meta->find("name");
  name += n != meta->end() && n->is_string() ? n->get<std::string>() : "?";
  return name;
}

const nlohmann::json* items_of(const nlohmann::json& page) {
  if (!page.is_object()) return nullptr;
  const auto items = page.find("items");
  return items != page.end() && items->is_array() ? &*items : nullptr;
}

}  // namespace

void read_workload_page(const nlohmann::json& page, ApiCallId call, WorkloadStream& out) {
  const nlohmann::json* items = items_of(page);
  if (items == nullptr) return;
  const ApiCall& c = api_call(call);
  for (const nlohmann::json& item : *items) {
    const std::size_t before = out.workloads.size();
    read_workload_document(NlohmannView(item), item_name(c, item), out);
    for (std::size_t i = before; i < out.workloads.size(); ++i) out.workloads[i].place.clear();
  }
}

void read_node_page(const nlohmann::json& page, std::vector<Node>& out,
                    std::vector<Error>& skipped) {
  const nlohmann::json* items = items_of(page);
  if (items == nullptr) return;
  const ApiCall& c = api_call(ApiCallId::cluster_list_nodes);
  for (const nlohmann::json& item : *items) {
    auto node = node_from_json(item, item_name(c, item));
    if (node) {
      out.push_back(std::move(*node));
    } else {
      skipped.push_back(node.error());
    }
  }
}

Expected<WorkloadStream> list_cluster_workloads(BlockingApiClient& client,
                                                std::span<const ApiCallId> calls,
                                                const std::string& namespace_) {
  WorkloadStream out;
  for (const ApiCallId call : calls) {
    const std::size_t workloads_before = out.workloads.size();
    const std::size_t broken_before = out.broken.size();
    const std::size_t skipped_before = out.skipped;
    ListOptions options;
    options.namespace_ = namespace_;
    auto error = client.list(call, options, [&](const nlohmann::json& page, bool first) {
      if (first) {
        out.workloads.erase(out.workloads.begin() + static_cast<std::ptrdiff_t>(workloads_before),
                            out.workloads.end());
        out.broken.erase(out.broken.begin() + static_cast<std::ptrdiff_t>(broken_before),
                         out.broken.end());
        out.skipped = skipped_before;
      }
      read_workload_page(page, call, out);
    });
    if (error) return *error;
  }
  return out;
}

Expected<NodeListing> list_cluster_nodes(BlockingApiClient& client, ApiCallId call) {
  NodeListing out;
  auto error = client.list(call, {}, [&](const nlohmann::json& page, bool first) {
    if (first) {
      out.nodes.clear();
      out.skipped.clear();
    }
    read_node_page(page, out.nodes, out.skipped);
  });
  if (error) return *error;
  return out;
}

}  // namespace cudagate::kube

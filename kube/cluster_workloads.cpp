// Workloads and Nodes from list pages, by the mappings files are read with.
#include "kube/cluster_workloads.h"

#include <algorithm>
#include <utility>

#include "policy/objects/json_view.h"

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

// The items of a list page of `call`'s collection, each read by
// `read(item, where)` into `out`, or into `skipped` when it cannot be read.
template <typename T, typename Read>
void read_items(const ApiCall& call, const nlohmann::json& page, const Read& read,
                std::vector<T>& out, std::vector<Error>& skipped) {
  const nlohmann::json* items = items_of(page);
  if (items == nullptr) return;
  for (const nlohmann::json& item : *items) {
    auto value = read(item, item_name(call, item));
    if (value) {
      out.push_back(std::move(*value));
    } else {
      skipped.push_back(value.error());
    }
  }
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
  read_items(api_call(ApiCallId::cluster_list_nodes), page, node_from_json, out, skipped);
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

namespace {

const nlohmann::json* member(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it != object.end() ? &*it : nullptr;
}

// A list of `call`'s collection at the newest of `versions` the server
// serves: the version listed, "" when none is served.
Expected<std::string> list_served(BlockingApiClient& client, ApiCallId call,
                                  std::span<const std::string_view> versions,
                                  const std::string& namespace_, const ListPageHandler& on_page) {
  for (const std::string_view version : versions) {
    ListOptions options;
    options.namespace_ = namespace_;
    options.version = std::string(version);
    auto error = client.list(call, options, on_page);
    if (!error) return std::string(version);
    if (!is_not_found(*error)) return *error;
  }
  return std::string();
}

// Every object of `call`'s cluster-scoped collection, at the newest of
// `versions` the server serves, read by `read(object, where)` into `values`,
// or into `skipped` when it cannot be read. The version listed, "" when
// none is served.
template <typename T, typename Read>
Expected<std::string> list_read(BlockingApiClient& client, ApiCallId call,
                                std::span<const std::string_view> versions, std::vector<T>& values,
                                std::vector<Error>& skipped, const Read& read) {
  return list_served(client, call, versions, "", [&](const nlohmann::json& page, bool first) {
    if (first) {
      values.clear();
      skipped.clear();
    }
    read_items(api_call(call), page, read, values, skipped);
  });
}

}  // namespace

bool made_for_pod(const nlohmann::json& claim) {
  const nlohmann::json* meta = member(claim, "metadata");
  if (meta == nullptr) return false;
  if (const nlohmann::json* annotations = member(*meta, "annotations");
      annotations != nullptr && member(*annotations, "resource.kubernetes.io/pod-claim-name")) {
    return true;
  }
  const nlohmann::json* owners = member(*meta, "ownerReferences");
  if (owners == nullptr || !owners->is_array()) return false;
  return std::any_of(owners->begin(), owners->end(), [](const nlohmann::json& owner) {
    const nlohmann::json* kind = member(owner, "kind");
    const nlohmann::json* api_version = member(owner, "apiVersion");
    return kind != nullptr && *kind == "Pod" && api_version != nullptr && *api_version == "v1";
  });
}

Expected<std::optional<ClaimSpec>> read_claim_object(const nlohmann::json& object) {
  if (made_for_pod(object)) return std::optional<ClaimSpec>();
  const nlohmann::json* kind = member(object, "kind");
  std::string where = kind != nullptr && kind->is_string() ? kind->get<std::string>() : "object";
  if (const nlohmann::json* meta = member(object, "metadata")) {
    const nlohmann::json* ns = member(*meta, "namespace");
    const nlohmann::json* name = member(*meta, "name");
    where += " ";
    if (ns != nullptr && ns->is_string()) where += ns->get<std::string>() + "/";
    where += name != nullptr && name->is_string() ? name->get<std::string>() : "?";
  }
  auto claim = claim_from_json(object, where);
  if (!claim) return claim.error();
  return std::optional<ClaimSpec>(std::move(*claim));
}

Expected<SliceListing> list_cluster_slices(BlockingApiClient& client, ApiCallId call) {
  SliceListing out;
  auto version =
      list_read(client, call, kDraVersions, out.slices, out.skipped, resource_slice_from_json);
  if (!version) return version.error();
  out.version = std::move(*version);
  return out;
}

Expected<NodePoolListing> list_cluster_node_pools(BlockingApiClient& client, ApiCallId call) {
  NodePoolListing out;
  auto version =
      list_read(client, call, kKarpenterVersions, out.pools, out.skipped, node_pool_from_json);
  if (!version) return version.error();
  out.served = !version->empty();
  return out;
}

Expected<ClaimListing> list_cluster_claims(BlockingApiClient& client,
                                           const std::string& namespace_) {
  ClaimListing out;
  for (const ApiCallId call :
       {ApiCallId::cluster_list_resourceclaimtemplates, ApiCallId::cluster_list_resourceclaims}) {
    const std::size_t claims_before = out.claims.size();
    const std::size_t skipped_before = out.skipped.size();
    auto version = list_served(client, call, kDraVersions, namespace_,
                               [&](const nlohmann::json& page, bool first) {
                                 if (first) {
                                   out.claims.resize(claims_before);
                                   out.skipped.resize(skipped_before);
                                 }
                                 const nlohmann::json* items = items_of(page);
                                 if (items == nullptr) return;
                                 for (const nlohmann::json& item : *items) {
                                   auto claim = read_claim_object(item);
                                   if (!claim) {
                                     out.skipped.push_back(claim.error());
                                   } else if (*claim) {
                                     out.claims.push_back(std::move(**claim));
                                   }
                                 }
                               });
    if (!version) return version.error();
  }
  return out;
}

}  // namespace cudagate::kube

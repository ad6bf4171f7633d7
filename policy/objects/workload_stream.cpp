// Reading the workloads of a manifest stream one document and one List item
// at a time, so that one broken object costs only itself.
#include "policy/objects/workload_stream.h"

#include <set>
#include <tuple>
#include <utility>

#include "policy/objects/document.h"
#include "policy/objects/json_view.h"

namespace cudagate {

WorkloadStream read_workload_stream(std::string_view text, std::string_view source) {
  WorkloadStream out;
  for (auto& doc : parse_document_stream(text, source)) {
    if (!doc) {
      out.broken.push_back(doc.error());
      continue;
    }
    read_workload_document(NlohmannView(doc->value), place(source, doc->line, ""), out);
  }
  return out;
}

std::size_t drop_controlled(std::vector<PlacedWorkload>& workloads) {
  // Copies, not views: the workloads move while the set is read.
  using Key = std::tuple<std::string, std::string, std::string>;
  std::set<Key> present;
  for (const auto& w : workloads) {
    const ResourceRef& r = w.workload.resource;
    present.emplace(r.namespace_, r.kind, r.name);
  }
  // "web-5d8f7c9b4" -> "web": the name a generated ReplicaSet or Job was made from.
  auto generator_name = [](std::string_view name) {
    const auto dash = name.rfind('-');
    return dash == std::string_view::npos || dash == 0 ? std::string_view() : name.substr(0, dash);
  };
  auto reported_elsewhere = [&](const PlacedWorkload& w) {
    if (!w.controller) return false;
    const std::string& ns = w.workload.resource.namespace_;
    const ResourceRef& owner = *w.controller;
    if (present.contains(Key{ns, owner.kind, owner.name})) return true;
    const std::string base(generator_name(owner.name));
    if (base.empty()) return false;
    if (owner.kind == "ReplicaSet") return present.contains(Key{ns, "Deployment", base});
    if (owner.kind == "Job") return present.contains(Key{ns, "CronJob", base});
    return false;
  };
  std::vector<PlacedWorkload> kept;
  kept.reserve(workloads.size());
  std::size_t dropped = 0;
  for (auto& w : workloads) {
    if (reported_elsewhere(w)) {
      ++dropped;
    } else {
      kept.push_back(std::move(w));
    }
  }
  workloads = std::move(kept);
  return dropped;
}

}  // namespace cudagate

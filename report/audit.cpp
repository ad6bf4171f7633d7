// The results every audit format counts, and the audit as decision records.
#include "report/audit.h"

#include <algorithm>
#include <utility>

#include "report/decision_record.h"

namespace cudagate {

std::vector<NodeGroupColumn> gpu_node_groups(const Inventory& inventory) {
  std::vector<NodeGroupColumn> out;
  for (const NodeGroup& group : inventory.groups()) {
    if (!group.facts.has_gpu) continue;
    NodeGroupColumn column{group.facts, 0, {}};
    group.members.for_each([&](std::size_t i) {
      if (inventory.is_pool(i)) {
        column.pools.push_back(inventory.node_name(i));
      } else {
        ++column.nodes;
      }
      return true;
    });
    if (column.nodes == 0 && column.pools.empty()) continue;
    out.push_back(std::move(column));
  }
  return out;
}

std::string_view to_string(AuditResult result) {
  switch (result) {
    case AuditResult::pass:
      return "pass";
    case AuditResult::fail:
      return "fail";
    case AuditResult::warn:
      return "warn";
    case AuditResult::error:
      return "error";
    case AuditResult::skip:
      return "skip";
  }
  return "error";
}

AuditResult result_of(const AuditedWorkload& workload) {
  if (workload.error) return AuditResult::error;
  switch (workload.decision.verdict) {
    case Verdict::pass:
      return AuditResult::pass;
    case Verdict::fail:
      return AuditResult::fail;
    case Verdict::skip:
      return AuditResult::skip;
    case Verdict::partial:
    case Verdict::unknown:
    case Verdict::no_candidates:
      return AuditResult::warn;
  }
  return AuditResult::error;
}

bool fails(AuditResult result, FailOn fail_on) {
  switch (fail_on) {
    case FailOn::never:
      return false;
    case FailOn::warn:
      if (result == AuditResult::warn) return true;
      [[fallthrough]];
    case FailOn::fail:
      return result == AuditResult::fail || result == AuditResult::error;
  }
  return false;
}

bool audit_fails(const Audit& audit, FailOn fail_on) {
  return std::any_of(audit.workloads.begin(), audit.workloads.end(),
                     [fail_on](const AuditedWorkload& w) { return fails(result_of(w), fail_on); });
}

void ResultCounts::add(AuditResult result) {
  switch (result) {
    case AuditResult::pass:
      ++pass;
      break;
    case AuditResult::fail:
      ++fail;
      break;
    case AuditResult::warn:
      ++warn;
      break;
    case AuditResult::error:
      ++error;
      break;
    case AuditResult::skip:
      ++skip;
      break;
  }
}

ResultCounts count_results(const Audit& audit) {
  ResultCounts counts;
  for (const auto& w : audit.workloads) counts.add(result_of(w));
  return counts;
}

std::string workload_title(const ResourceRef& resource) {
  std::string out = resource.kind + " ";
  if (!resource.namespace_.empty()) out += resource.namespace_ + "/";
  out += resource.name.empty() ? std::string("(unnamed)") : resource.name;
  return out;
}

nlohmann::json decision_record(const AuditedWorkload& w) {
  if (!w.error) return to_json(w.decision);
  const ResourceRef& r = w.decision.resource;
  return nlohmann::json{{"apiVersion", "cudagate.io/v1alpha1"},
                        {"kind", "Decision"},
                        {"resource",
                         {{"apiVersion", r.api_version},
                          {"kind", r.kind},
                          {"namespace", r.namespace_},
                          {"name", r.name}}},
                        {"verdict", "error"},
                        {"error", w.error->str()}};
}

nlohmann::json decision_records(const Audit& audit) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& w : audit.workloads) out.push_back(decision_record(w));
  return out;
}

}  // namespace cudagate

// Decisions as PolicyReport / Report results: one per workload and rule.
#include "report/policy_report.h"

#include <array>
#include <map>
#include <string_view>
#include <utility>

#include "policy/rules/rule.h"
#include "report/yaml_text.h"

namespace cudagate {
namespace {

using nlohmann::json;

std::string nodes_phrase(std::size_t n) {
  return std::to_string(n) + (n == 1 ? " node" : " nodes");
}

// What one rule says about one judged workload.
struct RuleOutcome {
  AuditResult result = AuditResult::pass;
  std::string message;
  const Finding* finding = nullptr;  // the first finding of the rule
};

RuleOutcome judge_rule(const Decision& decision, Rule rule) {
  std::size_t failing = 0;
  std::size_t unknown = 0;
  const Finding* first = nullptr;
  const Finding* first_failing = nullptr;
  for (const GroupDecision& group : decision.groups) {
    bool fails = false;
    bool unsure = false;
    for (const Finding& f : group.findings) {
      if (f.rule != rule) continue;
      if (first == nullptr) first = &f;
      if (f.unknown) {
        unsure = true;
      } else {
        fails = true;
        if (first_failing == nullptr) first_failing = &f;
      }
    }
    if (fails) {
      failing += group.count;
    } else if (unsure) {
      unknown += group.count;
    }
  }
  RuleOutcome out;
  const std::string of_candidates = " of " + std::to_string(decision.candidates) + " candidate";
  if (failing == 0 && unknown == 0) {
    out.message = "no candidate node fails " + std::string(to_string(rule)) + " (" +
                  std::to_string(decision.candidates) + " candidate" +
                  (decision.candidates == 1 ? ")" : "s)");
    return out;
  }
  out.finding = first_failing != nullptr ? first_failing : first;
  out.result =
      decision.verdict == Verdict::fail && failing != 0 ? AuditResult::fail : AuditResult::warn;
  out.message = out.finding->container + ": " + out.finding->message + " (";
  if (failing != 0) out.message += std::to_string(failing) + of_candidates + " nodes fail";
  if (failing != 0 && unknown != 0) out.message += ", ";
  if (unknown != 0) out.message += std::to_string(unknown) + of_candidates + " nodes unknown";
  out.message += ")";
  if (decision.verdict == Verdict::partial) {
    out.message += "; " + nodes_phrase(decision.compatible) + " can run it";
  }
  return out;
}

json resource_ref(const ResourceRef& r) {
  json out = json::object();
  out["apiVersion"] = r.api_version;
  out["kind"] = r.kind;
  out["name"] = r.name;
  if (!r.namespace_.empty()) out["namespace"] = r.namespace_;
  return out;
}

json result_entry(const AuditedWorkload& w, const RuleInfo& rule, AuditResult result,
                  const std::string& message, const json& properties, std::int64_t timestamp) {
  json out = json::object();
  out["source"] = kReportPolicy;
  out["policy"] = kReportPolicy;
  out["rule"] = rule.name;
  out["result"] = to_string(result);
  out["severity"] = rule.severity;
  out["category"] = rule.category;
  out["message"] = message;
  out["scored"] = true;
  out["timestamp"] = json{{"seconds", timestamp}, {"nanos", 0}};
  out["resources"] = json::array({resource_ref(w.decision.resource)});
  out["properties"] = properties;
  return out;
}

// The workload's results, one per rule.
void add_results(const AuditedWorkload& w, std::int64_t timestamp, json& results,
                 ResultCounts& counts) {
  const Decision& d = w.decision;
  json base = json::object();
  if (!w.place.empty()) base["place"] = w.place;
  const AuditResult overall = result_of(w);
  if (!w.error) {
    base["verdict"] = to_string(d.verdict);
    if (overall != AuditResult::skip) {
      base["candidates"] = std::to_string(d.candidates);
      base["compatible"] = std::to_string(d.compatible);
    }
  }
  for (const RuleInfo& rule : kRuleTable) {
    json properties = base;
    AuditResult result = overall;
    std::string message;
    if (w.error) {
      message = w.error->str();
    } else if (overall == AuditResult::skip) {
      message = d.reason.empty() ? std::string("not checked") : d.reason;
    } else if (d.verdict == Verdict::no_candidates) {
      message = d.reason.empty() ? std::string("no node of the inventory can take it") : d.reason;
    } else {
      RuleOutcome outcome = judge_rule(d, rule.rule);
      result = outcome.result;
      message = std::move(outcome.message);
      if (outcome.finding != nullptr) {
        properties["container"] = outcome.finding->container;
        if (!outcome.finding->fix.empty()) properties["fix"] = outcome.finding->fix;
      }
    }
    counts.add(result);
    results.push_back(result_entry(w, rule, result, message, properties, timestamp));
  }
}

json report_object(ReportApi api, const std::string& namespace_, const ResultCounts& counts,
                   json results) {
  const bool cluster = namespace_.empty();
  json out = json::object();
  if (api == ReportApi::open_reports) {
    out["apiVersion"] = "openreports.io/v1alpha1";
    out["kind"] = cluster ? "ClusterReport" : "Report";
  } else {
    out["apiVersion"] = "wgpolicyk8s.io/v1alpha2";
    out["kind"] = cluster ? "ClusterPolicyReport" : "PolicyReport";
  }
  json metadata = json::object();
  metadata["name"] = kReportPolicy;
  if (!cluster) metadata["namespace"] = namespace_;
  metadata["labels"] = json{{"app.kubernetes.io/managed-by", kReportPolicy}};
  out["metadata"] = std::move(metadata);
  if (api == ReportApi::open_reports) out["source"] = kReportPolicy;
  out["summary"] = json{{"pass", counts.pass},
                        {"fail", counts.fail},
                        {"warn", counts.warn},
                        {"error", counts.error},
                        {"skip", counts.skip}};
  out["results"] = std::move(results);
  return out;
}

}  // namespace

std::vector<json> policy_reports(const Audit& audit, ReportApi api,
                                 std::int64_t timestamp_seconds) {
  return policy_reports(audit, api, timestamp_seconds, 0);
}

std::vector<json> policy_reports(const Audit& audit, ReportApi api, std::int64_t timestamp_seconds,
                                 std::size_t max_results) {
  struct Pending {
    json results = json::array();
    ResultCounts counts;
  };
  // "" (the cluster report) sorts first; each namespace's parts in order.
  std::map<std::string, std::vector<Pending>> by_namespace;
  for (const auto& w : audit.workloads) {
    std::vector<Pending>& parts = by_namespace[w.decision.resource.namespace_];
    Pending one;
    add_results(w, timestamp_seconds, one.results, one.counts);
    if (parts.empty() || (max_results != 0 && !parts.back().results.empty() &&
                          parts.back().results.size() + one.results.size() > max_results)) {
      parts.emplace_back();
    }
    Pending& part = parts.back();
    for (auto& r : one.results) part.results.push_back(std::move(r));
    part.counts.pass += one.counts.pass;
    part.counts.fail += one.counts.fail;
    part.counts.warn += one.counts.warn;
    part.counts.error += one.counts.error;
    part.counts.skip += one.counts.skip;
  }
  std::vector<json> out;
  const auto emit = [&](const std::string& ns, std::vector<Pending>& parts) {
    for (std::size_t i = 0; i < parts.size(); ++i) {
      out.push_back(report_object(api, ns, parts[i].counts, std::move(parts[i].results)));
      if (i > 0) out.back()["metadata"]["name"] = report_part_name(i);
    }
  };
  for (auto& [ns, parts] : by_namespace) {
    if (!ns.empty()) emit(ns, parts);
  }
  if (const auto it = by_namespace.find(""); it != by_namespace.end()) emit("", it->second);
  return out;
}

std::string report_part_name(std::size_t part) {
  if (part == 0) return std::string(kReportPolicy);
  return std::string(kReportPolicy) + "-" + std::to_string(part);
}

std::string policy_reports_yaml(const Audit& audit, ReportApi api, std::int64_t timestamp_seconds) {
  std::string out;
  for (const json& report : policy_reports(audit, api, timestamp_seconds)) {
    out += "---\n";
    out += to_yaml(report);
  }
  return out;
}

}  // namespace cudagate

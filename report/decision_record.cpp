// The decision record of docs/contract.md §7.1, as JSON: what `cudagate
// check --output json` prints and what every report format is rendered
// from.
#include "report/decision_record.h"

#include <string>
#include <utility>

namespace cudagate {
namespace {

using nlohmann::json;

// A value with its source; an unknown value is null, never "".
json sourced(const SourcedValue& v) {
  json out = json::object();
  out["value"] = v.value.empty() ? json(nullptr) : json(v.value);
  out["source"] = v.value.empty() ? std::string("unknown") : v.source;
  return out;
}

template <class T>
json optional_text(const std::optional<T>& v) {
  return v ? json(v->str()) : json(nullptr);
}

json text_or_null(const std::string& v) {
  return v.empty() ? json(nullptr) : json(v);
}

}  // namespace

json facts_json(const GpuFacts& facts) {
  json out = json::object();
  out["driver"] = facts.driver ? json(facts.driver->str()) : json(nullptr);
  out["maxCuda"] = optional_text(facts.max_cuda);
  // A floor inferred for a driver branch newer than the matrix knows.
  if (facts.max_cuda_floor) out["maxCudaInferred"] = true;
  if (!facts.inconsistency.empty()) out["inconsistency"] = facts.inconsistency;
  out["computeCapability"] = optional_text(facts.cc);
  out["product"] = text_or_null(facts.product);
  out["family"] = text_or_null(facts.family);
  if (!facts.devices.empty()) {
    // The node's kinds of DRA devices, each with the attributes judged.
    json devices = json::array();
    for (const DeviceKind& kind : facts.devices) {
      json item = json::object();
      item["driver"] = kind.driver;
      item["type"] = kind.type;
      item["count"] = kind.count;
      json attributes = json::object();
      for (const DeviceAttribute& a : kind.attributes) attributes[a.name] = a.value;
      item["attributes"] = std::move(attributes);
      devices.push_back(std::move(item));
    }
    out["devices"] = std::move(devices);
  }
  return out;
}

json to_json(const Decision& decision) {
  json out = json::object();
  out["apiVersion"] = "cudagate.io/v1alpha1";
  out["kind"] = "Decision";
  out["resource"] = json{{"apiVersion", decision.resource.api_version},
                         {"kind", decision.resource.kind},
                         {"namespace", decision.resource.namespace_},
                         {"name", decision.resource.name}};
  out["verdict"] = to_string(decision.verdict);
  if (!decision.reason.empty()) out["reason"] = decision.reason;

  json containers = json::array();
  for (const ContainerDecision& c : decision.containers) {
    json item = json::object();
    item["name"] = c.name;
    item["image"] = c.image;
    item["gpu"] = c.gpu;
    item["cuda"] = sourced(c.cuda);
    item["archs"] = sourced(c.archs);
    item["require"] = sourced(c.require);
    item["minComputeCapability"] = sourced(c.min_cc);
    containers.push_back(std::move(item));
  }
  out["containers"] = std::move(containers);
  if (!decision.claims.empty()) out["claims"] = decision.claims;
  out["candidates"] = decision.candidates;
  out["compatible"] = decision.compatible;

  json groups = json::array();
  for (const GroupDecision& g : decision.groups) {
    json item = json::object();
    item["count"] = g.count;
    json nodes = json::array();
    for (const std::string_view name : g.nodes) nodes.push_back(std::string(name));
    item["nodes"] = std::move(nodes);
    item.update(facts_json(g.facts));
    item["compatible"] = g.outcome == Outcome::compatible;
    item["outcome"] = to_string(g.outcome);
    json findings = json::array();
    for (const Finding& f : g.findings) {
      json finding = json{{"rule", to_string(f.rule)},
                          {"container", f.container},
                          {"message", f.message},
                          {"fix", f.fix}};
      if (f.unknown) finding["unknown"] = true;
      findings.push_back(std::move(finding));
    }
    item["findings"] = std::move(findings);
    groups.push_back(std::move(item));
  }
  out["groups"] = std::move(groups);
  if (!decision.notes.empty()) out["notes"] = decision.notes;
  return out;
}

}  // namespace cudagate

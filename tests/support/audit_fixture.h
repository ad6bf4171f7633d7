#pragma once
// The audit the report tests render: the manifests of tests/fixtures/audit/manifests
// judged against the node inventory of tests/fixtures/cli/nodes.json (see the README of
// tests/fixtures/audit), read and decided as `cudagate audit` does.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "policy/objects/node.h"
#include "policy/objects/workload_stream.h"
#include "policy/rules/evaluate.h"
#include "report/audit.h"
#include "tests/support/fixtures.h"

namespace cudagate::test_support {

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("missing fixture " + path.string());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline const Inventory& audit_inventory() {
  static const Inventory inventory = [] {
    const std::string text = read_text(std::string(CUDAGATE_TEST_DATA) + "/cli/nodes.json");
    auto nodes = parse_nodes(text, "nodes.json");
    if (!nodes) throw std::runtime_error(nodes.error().str());
    return Inventory::build(*nodes, db());
  }();
  return inventory;
}

// The fixture audit; places are relative to tests/fixtures/audit.
inline Audit fixture_audit() {
  const std::filesystem::path root = std::string(CUDAGATE_TEST_DATA) + "/audit";
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root / "manifests")) {
    const std::string ext = entry.path().extension().string();
    if (entry.is_regular_file() && (ext == ".yaml" || ext == ".json")) {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<PlacedWorkload> workloads;
  Audit audit;
  for (const auto& file : files) {
    const std::string name = std::filesystem::relative(file, root).string();
    WorkloadStream s = read_workload_stream(read_text(file), name);
    for (auto& w : s.workloads) workloads.push_back(std::move(w));
    audit.broken.insert(audit.broken.end(), s.broken.begin(), s.broken.end());
    audit.skipped += s.skipped;
  }
  audit.controlled = drop_controlled(workloads);
  audit.node_groups = gpu_node_groups(audit_inventory());
  const Policy policy;
  for (const auto& w : workloads) {
    AuditedWorkload a;
    a.place = w.place;
    auto d = evaluate(w.workload, audit_inventory(), policy, db(), EvaluationInputs{});
    if (d) {
      a.decision = std::move(*d);
    } else {
      a.decision.resource = w.workload.resource;
      a.error = d.error();
    }
    audit.workloads.push_back(std::move(a));
  }
  return audit;
}

// The workload of `audit` named `name` (any kind); throws when there is none.
inline const AuditedWorkload& workload_named(const Audit& audit, const std::string& name) {
  for (const auto& w : audit.workloads) {
    if (w.decision.resource.name == name) return w;
  }
  throw std::runtime_error("no workload " + name);
}

}  // namespace cudagate::test_support

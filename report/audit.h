#pragma once
// An audit: the decisions over a set of workloads (`cudagate audit`, the
// server's /reports), with what could not be read, as every report format
// (audit_table.h, policy_report.h, junit_report.h, html_report.h) takes it.
// Values only: building one reads nothing and prints nothing.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/inventory/inventory.h"
#include "policy/objects/node.h"
#include "policy/rules/decision.h"
#include "types/expected.h"

namespace cudagate {

struct AuditedWorkload {
  Decision decision;  // resource always set; the rest only when judged
  std::string place;  // where it was read ("deploy.yaml:12"); "" when not from a file
  // Why the workload could not be judged (a value a person wrote that does
  // not parse, such as an annotation "12.x"); the decision is then empty.
  std::optional<Error> error;
};

// One column of the HTML matrix: the GPU nodes of the inventory with equal
// facts (Inventory::groups()), the nodes of the cluster counted and the
// node pools' nodes named.
struct NodeGroupColumn {
  GpuFacts facts;
  std::size_t nodes = 0;
  std::vector<std::string> pools;
};

struct Audit {
  std::vector<AuditedWorkload> workloads;
  std::vector<Error> broken;   // documents or objects that could not be read
  std::size_t skipped = 0;     // objects that are not workloads
  std::size_t controlled = 0;  // objects reported as their controller instead
  // The GPU node groups of the inventory, in the inventory's order. Empty:
  // the HTML matrix takes its columns from the decisions' groups.
  std::vector<NodeGroupColumn> node_groups;
};

// The GPU node groups of `inventory` (groups without GPUs left out).
[[nodiscard]] std::vector<NodeGroupColumn> gpu_node_groups(const Inventory& inventory);

// The result words of PolicyReport and OpenReports, which every format
// also uses to count: pass, fail, warn, error, skip.
enum class AuditResult : unsigned char { pass, fail, warn, error, skip };
[[nodiscard]] std::string_view to_string(AuditResult result);

// A workload's result: pass and skip as they are, fail for fail, warn for
// partial (its pods are pinned), unknown and no-candidates, error when it
// could not be judged.
[[nodiscard]] AuditResult result_of(const AuditedWorkload& workload);

// `--fail-on`: which results make the audit fail (exit 1).
enum class FailOn : unsigned char { fail, warn, never };
// fail: fail and error; warn: those and warn; never: none.
[[nodiscard]] bool fails(AuditResult result, FailOn fail_on);
[[nodiscard]] bool audit_fails(const Audit& audit, FailOn fail_on);

// How many workloads got each result, in AuditResult's order.
struct ResultCounts {
  std::size_t pass = 0, fail = 0, warn = 0, error = 0, skip = 0;
  void add(AuditResult result);
  [[nodiscard]] std::size_t total() const { return pass + fail + warn + error + skip; }
};
[[nodiscard]] ResultCounts count_results(const Audit& audit);

// "Deployment ml/trainer", "Pod trainer" without a namespace.
[[nodiscard]] std::string workload_title(const ResourceRef& resource);

// The decision records of docs/contract.md §7.1 as a JSON array, one per
// judged workload; one that could not be judged is its resource with
// verdict "error" and the message in "error".
[[nodiscard]] nlohmann::json decision_records(const Audit& audit);
// One of them.
[[nodiscard]] nlohmann::json decision_record(const AuditedWorkload& workload);

}  // namespace cudagate

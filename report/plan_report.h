#pragma once
// A rollout plan (policy/plan/rollout_plan.h) in the formats of `cudagate plan`:
// a table for a terminal (breaks first), JSON, JUnit XML (one failing case
// per workload the rollout breaks, for a CI job gating a rollout change)
// and one HTML page with the before/after matrix.
//
// HTML markup the tests read: table#matrix, one tr.workload per workload
// (data-change), one th.group per node group, td.cell.<outcome after>
// (compatible, incompatible, unknown, none) with data-before holding the
// outcome before; section#order when the plan has an order.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "policy/plan/rollout_plan.h"
#include "report/audit.h"

namespace cudagate {

// The table of workloads, then the node groups, then the order.
[[nodiscard]] std::string plan_table(const RolloutPlan& plan, bool colour);
// "5 workloads: 1 breaks, 1 heals, 3 unchanged".
[[nodiscard]] std::string plan_summary(const RolloutPlan& plan);

// {"apiVersion": "cudagate.io/v1alpha1", "kind": "RolloutPlan", "summary",
// "workloads" (change, before and after as docs/contract.md §7.1 decision
// records), "nodeGroups", "order"}.
[[nodiscard]] nlohmann::json plan_json(const RolloutPlan& plan);

[[nodiscard]] std::string plan_junit(const RolloutPlan& plan, std::int64_t timestamp_seconds);
[[nodiscard]] std::string plan_html(const RolloutPlan& plan, std::int64_t timestamp_seconds);

// A judged workload as the audit formats take it.
[[nodiscard]] AuditedWorkload audited(const JudgedWorkload& judged, const std::string& place);

// "T4 driver 535.129.03 (CUDA 12.2) -> 570.124.06 (CUDA 12.8), 2 nodes".
[[nodiscard]] std::string move_text(const NodeMove& move);

}  // namespace cudagate

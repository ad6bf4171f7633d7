#pragma once
// An audit as policy reports, the objects Kyverno and Gatekeeper's tools
// read (kubectl get polr, Policy Reporter): wgpolicyk8s.io/v1alpha2
// PolicyReport and ClusterPolicyReport, or their successor
// openreports.io/v1alpha1 Report and ClusterReport, same fields.
//
// One report per namespace, named "cudagate", holding for each workload one
// result per rule of docs/contract.md §2.5 (cuda-driver, gpu-arch,
// gpu-feature), policy "cudagate": pass when no candidate node fails the
// rule, fail when the workload fails and the rule is why, warn when the
// workload runs on some candidates only or a value is unknown, skip for
// workloads that are not checked, error for those that could not be judged.
// Workloads without a namespace (manifests that leave it to kubectl) go
// into the cluster-scoped report. The summary counts the results.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/audit.h"

namespace cudagate {

enum class ReportApi : unsigned char { policy_report, open_reports };

// The rules every workload gets a result for, in report order.
inline constexpr std::string_view kReportPolicy = "cudagate";

// The reports, namespaced ones first in namespace order, then the cluster
// report when any workload has no namespace. `timestamp_seconds` (Unix
// time) stamps every result: the caller reads the clock.
[[nodiscard]] std::vector<nlohmann::json> policy_reports(const Audit& audit, ReportApi api,
                                                         std::int64_t timestamp_seconds);

// The same with at most `max_results` results a report (0: no bound), as
// the server writes them into a cluster: etcd refuses objects over about
// 1.5 MiB, which a namespace of thousands of workloads would pass. A
// namespace whose results do not fit gets further reports, "cudagate-1",
// "cudagate-2", ... (report_part_name()), each with its own summary; a
// workload's results are never split between two of them.
[[nodiscard]] std::vector<nlohmann::json> policy_reports(const Audit& audit, ReportApi api,
                                                         std::int64_t timestamp_seconds,
                                                         std::size_t max_results);
// "cudagate" for part 0, "cudagate-N" after it.
[[nodiscard]] std::string report_part_name(std::size_t part);

// policy_reports() as one YAML stream, documents separated by "---".
[[nodiscard]] std::string policy_reports_yaml(const Audit& audit, ReportApi api,
                                              std::int64_t timestamp_seconds);

}  // namespace cudagate

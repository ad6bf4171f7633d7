#pragma once
// Keeping the background audit's reports in the cluster: one PolicyReport
// (wgpolicyk8s.io/v1alpha2) or Report (openreports.io/v1alpha1) per
// namespace, as report/policy_report.h renders them (split into numbered
// reports past the results cap), written by server-side apply under the
// field manager "cudagate", so that `kubectl get policyreports -A` and
// Policy Reporter show them.
//
// A write applies every report and then deletes the reports cudagate wrote
// before (label app.kubernetes.io/managed-by=cudagate) that are not among
// them: a namespace whose workloads are gone, or a part no longer needed.
// An applied report replaces its results whole (the CRDs' results list is
// atomic), so the results of workloads that went away go with it.
//
// Blocking: runs on the background audit's thread.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "kube/api_client.h"
#include "report/policy_report.h"
#include "types/expected.h"

namespace cudagate {

struct ReportWrite {
  std::size_t applied = 0;
  std::size_t deleted = 0;
  std::size_t failed = 0;
  std::optional<Error> error;  // the first failure
};

// Writes the namespaced reports among `reports` (cluster-scoped ones are
// left out: workloads listed from a cluster have a namespace).
[[nodiscard]] ReportWrite write_reports(kube::BlockingApiClient& client, ReportApi api,
                                        const std::vector<nlohmann::json>& reports);

}  // namespace cudagate

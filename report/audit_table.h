#pragma once
// An audit as an aligned table for a terminal: one row per workload
// (verdict, workload, compatible of candidate nodes, reason, place), the
// verdict coloured when `colour`, and a summary line last.

#include <string>

#include "report/audit.h"

namespace cudagate {

[[nodiscard]] std::string audit_table(const Audit& audit, bool colour);

// "7 workloads: 1 fail, 2 partial, 3 pass, 1 skip; 2 other objects skipped;
// 1 document could not be read".
[[nodiscard]] std::string audit_summary(const Audit& audit);

}  // namespace cudagate

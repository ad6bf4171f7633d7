#pragma once
// An audit as one self-contained HTML page: inline CSS and SVG, no script,
// font or image from anywhere (a Content-Security-Policy of default-src
// 'none' says so to the browser). A header with the verdict counts; a matrix
// with workloads as rows and node groups (product, driver, max CUDA,
// compute capability, node count) as columns, each cell coloured by the
// workload's outcome on that group, the reason on hover; below it each
// workload that fails or warns with its findings and fixes.
//
// Columns are Audit::node_groups, or when that is empty the distinct GPU
// facts of the decisions' groups. A workload that cannot land on a group's
// nodes (selectors, affinity, taints) shows that cell as "not a candidate".
// The matrix keeps its header and first column in view while it scrolls, so
// that it stays readable with hundreds of workloads and dozens of groups.
//
// Markup the tests read: table#matrix, one tr.workload per workload
// (data-verdict), one th.group per column, td.cell.{compatible,
// incompatible,unknown,none}; section#findings with one article per
// workload listed there.

#include <cstdint>
#include <string>

#include "report/audit.h"

namespace cudagate {

// `timestamp_seconds` (Unix time) is printed as when the audit was made.
[[nodiscard]] std::string html_report(const Audit& audit, std::int64_t timestamp_seconds);

}  // namespace cudagate

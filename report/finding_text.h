#pragma once
// The few lines of text that say why a workload got its verdict, shared by
// the formats that print them (table, JUnit, HTML).

#include <string>

#include "report/audit.h"

namespace cudagate {

// One line: "[cuda-driver] train: needs CUDA 12.4; driver 535.129.03
// supports up to CUDA 12.2" for a workload with findings (the first of its
// first group), the reason of a skip or no-candidates, the error of one
// that could not be judged, "" for a pass.
[[nodiscard]] std::string reason_line(const AuditedWorkload& workload);

// Every group with findings: its outcome, node count and facts, then each
// finding and its fix, one per line.
[[nodiscard]] std::string findings_text(const AuditedWorkload& workload);

// "driver 535.129.03, max CUDA 12.2, compute capability 7.5, Tesla-T4".
[[nodiscard]] std::string facts_text(const GpuFacts& facts);

// `text` cut to at most `limit` bytes at a character boundary, "..." marking the cut.
[[nodiscard]] std::string shorten(const std::string& text, std::size_t limit);

}  // namespace cudagate

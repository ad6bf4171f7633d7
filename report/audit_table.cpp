// The terminal table of an audit.
#include "report/audit_table.h"

#include <algorithm>
#include <array>
#include <map>
#include <vector>

#include "report/finding_text.h"
#include "report/text_table.h"

namespace cudagate {
namespace {

constexpr std::size_t kAuditReasonWidth = 100;

std::string verdict_text(const AuditedWorkload& w) {
  return w.error ? std::string("error") : std::string(to_string(w.decision.verdict));
}

// The ANSI colour of a verdict: red fails, yellow warns, green passes, dim skips.
std::string_view colour_code(const AuditedWorkload& w) {
  switch (result_of(w)) {
    case AuditResult::fail:
    case AuditResult::error:
      return "\x1b[1;31m";
    case AuditResult::warn:
      return "\x1b[1;33m";
    case AuditResult::pass:
      return "\x1b[1;32m";
    case AuditResult::skip:
      return "\x1b[2m";
  }
  return "";
}

std::string nodes_cell(const AuditedWorkload& w) {
  if (w.error || w.decision.verdict == Verdict::skip) return "-";
  return std::to_string(w.decision.compatible) + "/" + std::to_string(w.decision.candidates);
}

}  // namespace

std::string audit_summary(const Audit& audit) {
  std::map<std::string, std::size_t> by_verdict;
  for (const auto& w : audit.workloads) ++by_verdict[verdict_text(w)];
  const std::size_t n = audit.workloads.size();
  std::string out = std::to_string(n) + (n == 1 ? " workload" : " workloads");
  // Worst first, as a reader looks for them.
  static constexpr std::array<std::string_view, 7> kOrder = {
      "error", "fail", "partial", "unknown", "no-candidates", "pass", "skip"};
  bool first = true;
  for (const auto verdict : kOrder) {
    const auto it = by_verdict.find(std::string(verdict));
    if (it == by_verdict.end()) continue;
    out += first ? ": " : ", ";
    out += std::to_string(it->second) + " " + std::string(verdict);
    first = false;
  }
  if (audit.controlled != 0) {
    out += "; " + std::to_string(audit.controlled) + " reported as their controller";
  }
  if (audit.skipped != 0) {
    out += "; " + std::to_string(audit.skipped) +
           (audit.skipped == 1 ? " other object skipped" : " other objects skipped");
  }
  if (!audit.broken.empty()) {
    out +=
        "; " + std::to_string(audit.broken.size()) +
        (audit.broken.size() == 1 ? " document could not be read" : " documents could not be read");
  }
  return out;
}

std::string audit_table(const Audit& audit, bool colour) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"VERDICT", "WORKLOAD", "NODES", "REASON", "SOURCE"});
  for (const auto& w : audit.workloads) {
    rows.push_back({verdict_text(w), workload_title(w.decision.resource), nodes_cell(w),
                    shorten(reason_line(w), kAuditReasonWidth), w.place});
  }
  std::string out;
  if (colour) {
    out = text_table(rows, [&](std::size_t row, const std::string& cell) {
      if (row == 0) return "\x1b[1m" + cell + "\x1b[0m";
      return std::string(colour_code(audit.workloads[row - 1])) + cell + "\x1b[0m";
    });
  } else {
    out = text_table(rows);
  }
  out += "\n" + audit_summary(audit) + "\n";
  return out;
}

}  // namespace cudagate

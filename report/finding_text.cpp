// Findings as lines of text for the report formats.
#include "report/finding_text.h"

namespace cudagate {

std::string facts_text(const GpuFacts& facts) {
  std::string out = "driver " + (facts.driver ? facts.driver->str() : std::string("unknown"));
  out += ", max CUDA " + max_cuda_text(facts);
  out += ", compute capability " + (facts.cc ? facts.cc->str() : std::string("unknown"));
  out += ", " + (facts.product.empty() ? std::string("unknown product") : facts.product);
  return out;
}

std::string reason_line(const AuditedWorkload& workload) {
  if (workload.error) return workload.error->str();
  const Decision& d = workload.decision;
  if (d.verdict == Verdict::skip || d.verdict == Verdict::no_candidates) return d.reason;
  for (const GroupDecision& group : d.groups) {
    if (group.findings.empty()) continue;
    const Finding& f = group.findings.front();
    return "[" + std::string(to_string(f.rule)) + "] " + f.container + ": " + f.message;
  }
  return "";
}

std::string findings_text(const AuditedWorkload& workload) {
  if (workload.error) return workload.error->str() + "\n";
  std::string out;
  for (const GroupDecision& group : workload.decision.groups) {
    if (group.findings.empty()) continue;
    out += std::string(to_string(group.outcome)) + " on " + std::to_string(group.count) +
           (group.count == 1 ? " node" : " nodes");
    if (!group.nodes.empty()) {
      out += " (";
      for (std::size_t i = 0; i < group.nodes.size() && i < 3; ++i) {
        if (i != 0) out += ", ";
        out += group.nodes[i];
      }
      if (group.count > 3) out += ", ...";
      out += ")";
    }
    out += ": " + facts_text(group.facts) + "\n";
    for (const Finding& f : group.findings) {
      out += "  [" + std::string(to_string(f.rule)) + "] " + f.container + ": " + f.message + "\n";
      if (!f.fix.empty()) out += "    fix: " + f.fix + "\n";
    }
  }
  return out;
}

std::string shorten(const std::string& text, std::size_t limit) {
  if (text.size() <= limit) return text;
  std::size_t cut = limit < 3 ? 0 : limit - 3;
  // Back up to the start of a UTF-8 character.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "...";
}

}  // namespace cudagate

// The HTML compatibility matrix of an audit.
#include "report/html_report.h"

#include <algorithm>
#include <array>
#include <map>
#include <string_view>
#include <vector>

#include "report/finding_text.h"
#include "report/html_page.h"
#include "report/utc_time.h"
#include "report/xml_escape.h"

namespace cudagate {
namespace {

std::string verdict_of(const AuditedWorkload& w) {
  return w.error ? std::string("error") : std::string(to_string(w.decision.verdict));
}

std::vector<NodeGroupColumn> columns_of(const Audit& audit) {
  if (!audit.node_groups.empty()) return audit.node_groups;
  std::vector<NodeGroupColumn> out;
  for (const auto& w : audit.workloads) {
    for (const GroupDecision& g : w.decision.groups) {
      if (!g.facts.has_gpu) continue;
      auto it = std::find_if(out.begin(), out.end(),
                             [&](const NodeGroupColumn& c) { return c.facts == g.facts; });
      if (it == out.end()) {
        out.push_back(NodeGroupColumn{g.facts, g.count, {}});
      } else {
        it->nodes = std::max(it->nodes, g.count);
      }
    }
  }
  return out;
}

// The hover text of one cell: the outcome and each finding with its fix.

std::string cell(const AuditedWorkload& w, const NodeGroupColumn& column) {
  const GroupDecision* found = nullptr;
  if (!w.error) {
    for (const GroupDecision& g : w.decision.groups) {
      if (g.facts == column.facts) {
        found = &g;
        break;
      }
    }
  }
  if (found == nullptr) {
    const bool skipped = w.error || w.decision.verdict == Verdict::skip;
    return std::string("<td class=\"cell none\" title=\"") +
           (skipped ? "not checked" : "not a candidate: selectors, affinity, taints or resources") +
           "\">\xE2\x80\x93</td>";
  }
  return "<td class=\"cell " + std::string(to_string(found->outcome)) + "\" title=\"" +
         xml_escape(html_cell_title(*found)) + "\">" +
         std::string(html_outcome_mark(found->outcome)) + "</td>";
}

}  // namespace

std::string html_report(const Audit& audit, std::int64_t timestamp_seconds) {
  const std::vector<NodeGroupColumn> columns = columns_of(audit);
  std::map<std::string, std::size_t> by_verdict;
  for (const auto& w : audit.workloads) ++by_verdict[verdict_of(w)];
  static constexpr std::array<std::string_view, 7> kOrder = {
      "fail", "error", "partial", "unknown", "no-candidates", "pass", "skip"};
  std::vector<std::pair<std::string, std::size_t>> counts;
  for (const auto v : kOrder) {
    if (const auto it = by_verdict.find(std::string(v)); it != by_verdict.end()) {
      counts.emplace_back(it->first, it->second);
    }
  }

  std::string out;
  out.reserve(4096 + audit.workloads.size() * (200 + columns.size() * 80));
  out += html_page_start("cudagate audit");
  out += "<header>\n<h1>cudagate audit</h1>\n";
  out += "<p class=\"meta\">" + std::to_string(audit.workloads.size()) + " workloads against " +
         std::to_string(columns.size()) + " GPU node groups, " + utc_time_text(timestamp_seconds) +
         " UTC";
  if (audit.skipped != 0) out += "; " + std::to_string(audit.skipped) + " other objects skipped";
  if (audit.controlled != 0) {
    out += "; " + std::to_string(audit.controlled) + " reported as their controller";
  }
  if (!audit.broken.empty()) {
    out += "; " + std::to_string(audit.broken.size()) + " documents could not be read";
  }
  out += "</p>\n<ul class=\"counts\">";
  for (const auto& [verdict, n] : counts) {
    out += "<li class=\"" + xml_escape(verdict) + "\">" + std::to_string(n) + " " +
           xml_escape(verdict) + "</li>";
  }
  out += "</ul>\n" + html_counts_bar(counts, audit.workloads.size()) + "\n</header>\n";

  out += "<h2>Workloads by node group</h2>\n";
  out +=
      "<p class=\"legend\"><span class=\"cell\" style=\"background:#c8e6c9\">\xE2\x9C\x93 "
      "compatible</span><span style=\"background:#ffcdd2\">\xE2\x9C\x97 incompatible</span>"
      "<span style=\"background:#fff59d\">? unknown</span><span style=\"background:#eceff1\">"
      "\xE2\x80\x93 not a candidate</span> Hover a cell for the reason.</p>\n";
  out +=
      "<div class=\"scroll\">\n<table id=\"matrix\">\n<thead><tr><th class=\"corner\" "
      "scope=\"col\">Workload</th><th scope=\"col\">Verdict</th>";
  for (const auto& c : columns)
    out += html_group_header(c.facts, html_group_members(c.nodes, c.pools));
  out += "</tr></thead>\n<tbody>\n";
  std::vector<std::size_t> listed;
  for (std::size_t i = 0; i < audit.workloads.size(); ++i) {
    const AuditedWorkload& w = audit.workloads[i];
    const std::string verdict = verdict_of(w);
    const AuditResult result = result_of(w);
    const bool detailed =
        result == AuditResult::fail || result == AuditResult::warn || result == AuditResult::error;
    if (detailed) listed.push_back(i);
    const std::string title = workload_title(w.decision.resource);
    out += "<tr class=\"workload\" data-verdict=\"" + xml_escape(verdict) +
           "\"><th scope=\"row\" title=\"" +
           xml_escape(w.place.empty() ? title : title + " (" + w.place + ")") + "\">";
    if (detailed) {
      out += "<a href=\"#w" + std::to_string(i) + "\">" + xml_escape(title) + "</a>";
    } else {
      out += xml_escape(title);
    }
    out +=
        "</th><td class=\"verdict " + xml_escape(verdict) + "\">" + xml_escape(verdict) + "</td>";
    for (const auto& c : columns) out += cell(w, c);
    out += "</tr>\n";
  }
  out += "</tbody>\n</table>\n</div>\n";

  out += "<section id=\"findings\">\n<h2>Findings and fixes</h2>\n";
  if (listed.empty()) out += "<p class=\"empty\">No workload fails or warns.</p>\n";
  for (const std::size_t i : listed) {
    const AuditedWorkload& w = audit.workloads[i];
    const std::string verdict = verdict_of(w);
    out += "<article id=\"w" + std::to_string(i) + "\" class=\"" + xml_escape(verdict) + "\"><h3>" +
           xml_escape(workload_title(w.decision.resource)) + " \xE2\x80\x94 " + xml_escape(verdict);
    if (!w.place.empty()) out += " <span class=\"place\">" + xml_escape(w.place) + "</span>";
    out += "</h3>\n";
    if (w.error) {
      out += "<p>" + xml_escape(w.error->str()) + "</p>\n</article>\n";
      continue;
    }
    const Decision& d = w.decision;
    if (d.verdict == Verdict::no_candidates) {
      out += "<p>" +
             xml_escape(d.reason.empty() ? "no node of the inventory can take it" : d.reason) +
             "</p>\n";
    } else {
      out += "<p>" + std::to_string(d.compatible) + " of " + std::to_string(d.candidates) +
             " candidate nodes can run it.</p>\n";
    }
    for (const GroupDecision& g : d.groups) {
      if (g.findings.empty()) continue;
      out += "<p><b>" + xml_escape(to_string(g.outcome)) + "</b> on " + std::to_string(g.count) +
             (g.count == 1 ? " node" : " nodes") + ": " + xml_escape(facts_text(g.facts)) +
             "</p>\n<ul>";
      for (const Finding& f : g.findings) {
        out += "<li>[" + xml_escape(to_string(f.rule)) + "] " + xml_escape(f.container) + ": " +
               xml_escape(f.message);
        if (!f.fix.empty()) out += "<br><span class=\"fix\">fix: " + xml_escape(f.fix) + "</span>";
        out += "</li>";
      }
      out += "</ul>\n";
    }
    out += "</article>\n";
  }
  out += "</section>\n" + html_page_end();
  return out;
}

}  // namespace cudagate

// The HTML compatibility matrix of an audit.
#include "report/html_report.h"

#include <algorithm>
#include <array>
#include <map>
#include <string_view>
#include <vector>

#include "report/finding_text.h"
#include "report/utc_time.h"
#include "report/xml_escape.h"

namespace cudagate {
namespace {

constexpr std::string_view kStyle = R"css(
:root { color-scheme: light; --pass: #2e7d32; --fail: #c62828; --warn: #ef6c00;
  --unknown: #f9a825; --skip: #757575; --none: #eceff1; --line: #cfd8dc; }
* { box-sizing: border-box; }
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0;
  color: #212121; background: #fafafa; }
header { padding: 16px 24px; background: #fff; border-bottom: 1px solid var(--line); }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 24px 24px 8px; }
.meta { color: #616161; margin: 0 0 12px; }
.counts { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin: 0; padding: 0;
  list-style: none; }
.counts li { padding: 4px 10px; border-radius: 12px; background: #eee; font-weight: 600; }
.counts .pass { background: #e8f5e9; color: var(--pass); }
.counts .fail, .counts .error { background: #ffebee; color: var(--fail); }
.counts .partial, .counts .unknown, .counts .no-candidates { background: #fff3e0; color: var(--warn); }
.counts .skip { color: var(--skip); }
.bar { display: block; margin-top: 12px; }
.scroll { overflow: auto; max-height: 80vh; margin: 0 24px; border: 1px solid var(--line);
  background: #fff; }
table { border-collapse: separate; border-spacing: 0; }
th, td { border-bottom: 1px solid var(--line); border-right: 1px solid var(--line); }
thead th { position: sticky; top: 0; background: #f5f5f5; z-index: 2; vertical-align: bottom;
  font-weight: 600; text-align: left; padding: 6px; }
th.group { font-size: 11px; font-weight: 500; min-width: 9em; max-width: 11em; }
th.group b { display: block; font-size: 12px; word-break: break-word; }
th.group span { display: block; color: #616161; white-space: nowrap; }
tbody th { position: sticky; left: 0; background: #fff; z-index: 1; text-align: left;
  font-weight: 500; padding: 3px 8px; white-space: nowrap; max-width: 28em; overflow: hidden;
  text-overflow: ellipsis; }
thead th.corner { left: 0; z-index: 3; }
td.verdict { padding: 3px 8px; font-weight: 600; white-space: nowrap; }
td.verdict.pass { color: var(--pass); }
td.verdict.fail, td.verdict.error { color: var(--fail); }
td.verdict.partial, td.verdict.unknown, td.verdict.no-candidates { color: var(--warn); }
td.verdict.skip { color: var(--skip); }
td.cell { text-align: center; padding: 3px; font-weight: 700; }
td.cell.compatible { background: #c8e6c9; color: #1b5e20; }
td.cell.incompatible { background: #ffcdd2; color: #b71c1c; }
td.cell.unknown { background: #fff59d; color: #6d4c00; }
td.cell.none { background: var(--none); color: #90a4ae; font-weight: 400; }
tbody tr:hover th, tbody tr:hover td.verdict { background: #e3f2fd; }
a { color: #1565c0; text-decoration: none; }
a:hover { text-decoration: underline; }
.legend { margin: 8px 24px; color: #616161; }
.legend span { display: inline-block; padding: 0 8px; margin-right: 6px; border-radius: 3px; }
#findings article { background: #fff; margin: 0 24px 12px; padding: 8px 16px;
  border: 1px solid var(--line); border-left: 4px solid var(--warn); }
#findings article.fail, #findings article.error { border-left-color: var(--fail); }
#findings h3 { font-size: 14px; margin: 4px 0; }
#findings .place { color: #616161; font-weight: 400; }
#findings ul { margin: 4px 0 8px; padding-left: 20px; }
#findings .fix { color: #1b5e20; }
.empty { margin: 0 24px; color: #616161; }
)css";

std::string esc(std::string_view text) {
  return xml_escape(text);
}

std::string verdict_of(const AuditedWorkload& w) {
  return w.error ? std::string("error") : std::string(to_string(w.decision.verdict));
}

std::string_view outcome_mark(Outcome outcome) {
  switch (outcome) {
    case Outcome::compatible:
      return "\xE2\x9C\x93";  // check mark
    case Outcome::incompatible:
      return "\xE2\x9C\x97";  // ballot x
    case Outcome::unknown:
      return "?";
  }
  return "?";
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
        out.push_back(NodeGroupColumn{g.facts, g.count});
      } else {
        it->nodes = std::max(it->nodes, g.count);
      }
    }
  }
  return out;
}

std::string or_unknown(const std::string& s) {
  return s.empty() ? std::string("unknown") : s;
}

std::string column_header(const NodeGroupColumn& c) {
  const GpuFacts& f = c.facts;
  std::string out = "<th class=\"group\" scope=\"col\" title=\"" + esc(facts_text(f)) + ", " +
                    std::to_string(c.nodes) + (c.nodes == 1 ? " node" : " nodes") + "\">";
  out += "<b>" + esc(or_unknown(f.product)) + "</b>";
  out += "<span>driver " + esc(f.driver ? f.driver->str() : "unknown") + "</span>";
  out += "<span>CUDA " + esc(f.max_cuda ? f.max_cuda->str() : "unknown") + "</span>";
  out += "<span>cc " + esc(f.cc ? f.cc->str() : "unknown") + "</span>";
  out += "<span>" + std::to_string(c.nodes) + (c.nodes == 1 ? " node" : " nodes") + "</span>";
  out += "</th>";
  return out;
}

// The hover text of one cell: the outcome and each finding with its fix.
std::string cell_title(const GroupDecision& g) {
  std::string out = std::string(to_string(g.outcome)) + " on " + std::to_string(g.count) +
                    (g.count == 1 ? " node" : " nodes");
  for (const Finding& f : g.findings) {
    out += "\n[" + f.rule + "] " + f.container + ": " + f.message;
    if (!f.fix.empty()) out += "\nfix: " + f.fix;
  }
  return out;
}

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
         esc(cell_title(*found)) + "\">" + std::string(outcome_mark(found->outcome)) + "</td>";
}

// A stacked bar of the verdict counts, as inline SVG.
std::string counts_bar(const std::vector<std::pair<std::string, std::size_t>>& counts,
                       std::size_t total) {
  static const std::map<std::string, std::string_view> kColour = {
      {"pass", "#2e7d32"},    {"fail", "#c62828"},    {"error", "#8e0000"},
      {"partial", "#ef6c00"}, {"unknown", "#f9a825"}, {"no-candidates", "#ffb74d"},
      {"skip", "#bdbdbd"}};
  constexpr double kWidth = 600;
  std::string out =
      "<svg class=\"bar\" width=\"600\" height=\"14\" viewBox=\"0 0 600 14\" "
      "role=\"img\" aria-label=\"verdicts\">";
  double x = 0;
  for (const auto& [verdict, n] : counts) {
    if (total == 0) break;
    const double w = kWidth * static_cast<double>(n) / static_cast<double>(total);
    out += "<rect x=\"" + std::to_string(x) + "\" y=\"0\" width=\"" + std::to_string(w) +
           "\" height=\"14\" fill=\"" + std::string(kColour.at(verdict)) + "\"><title>" +
           std::to_string(n) + " " + esc(verdict) + "</title></rect>";
    x += w;
  }
  if (total == 0) out += "<rect x=\"0\" y=\"0\" width=\"600\" height=\"14\" fill=\"#eceff1\"/>";
  out += "</svg>";
  return out;
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
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out +=
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>cudagate audit</title>\n<style>";
  out += kStyle;
  out += "</style>\n</head>\n<body>\n<header>\n<h1>cudagate audit</h1>\n";
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
    out += "<li class=\"" + esc(verdict) + "\">" + std::to_string(n) + " " + esc(verdict) + "</li>";
  }
  out += "</ul>\n" + counts_bar(counts, audit.workloads.size()) + "\n</header>\n";

  out += "<h2>Workloads by node group</h2>\n";
  out +=
      "<p class=\"legend\"><span class=\"cell\" style=\"background:#c8e6c9\">\xE2\x9C\x93 "
      "compatible</span><span style=\"background:#ffcdd2\">\xE2\x9C\x97 incompatible</span>"
      "<span style=\"background:#fff59d\">? unknown</span><span style=\"background:#eceff1\">"
      "\xE2\x80\x93 not a candidate</span> Hover a cell for the reason.</p>\n";
  out +=
      "<div class=\"scroll\">\n<table id=\"matrix\">\n<thead><tr><th class=\"corner\" "
      "scope=\"col\">Workload</th><th scope=\"col\">Verdict</th>";
  for (const auto& c : columns) out += column_header(c);
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
    out += "<tr class=\"workload\" data-verdict=\"" + esc(verdict) +
           "\"><th scope=\"row\" title=\"" +
           esc(w.place.empty() ? title : title + " (" + w.place + ")") + "\">";
    if (detailed) {
      out += "<a href=\"#w" + std::to_string(i) + "\">" + esc(title) + "</a>";
    } else {
      out += esc(title);
    }
    out += "</th><td class=\"verdict " + esc(verdict) + "\">" + esc(verdict) + "</td>";
    for (const auto& c : columns) out += cell(w, c);
    out += "</tr>\n";
  }
  out += "</tbody>\n</table>\n</div>\n";

  out += "<section id=\"findings\">\n<h2>Findings and fixes</h2>\n";
  if (listed.empty()) out += "<p class=\"empty\">No workload fails or warns.</p>\n";
  for (const std::size_t i : listed) {
    const AuditedWorkload& w = audit.workloads[i];
    const std::string verdict = verdict_of(w);
    out += "<article id=\"w" + std::to_string(i) + "\" class=\"" + esc(verdict) + "\"><h3>" +
           esc(workload_title(w.decision.resource)) + " \xE2\x80\x94 " + esc(verdict);
    if (!w.place.empty()) out += " <span class=\"place\">" + esc(w.place) + "</span>";
    out += "</h3>\n";
    if (w.error) {
      out += "<p>" + esc(w.error->str()) + "</p>\n</article>\n";
      continue;
    }
    const Decision& d = w.decision;
    if (d.verdict == Verdict::no_candidates) {
      out += "<p>" + esc(d.reason.empty() ? "no node of the inventory can take it" : d.reason) +
             "</p>\n";
    } else {
      out += "<p>" + std::to_string(d.compatible) + " of " + std::to_string(d.candidates) +
             " candidate nodes can run it.</p>\n";
    }
    for (const GroupDecision& g : d.groups) {
      if (g.findings.empty()) continue;
      out += "<p><b>" + esc(to_string(g.outcome)) + "</b> on " + std::to_string(g.count) +
             (g.count == 1 ? " node" : " nodes") + ": " + esc(facts_text(g.facts)) + "</p>\n<ul>";
      for (const Finding& f : g.findings) {
        out += "<li>[" + esc(f.rule) + "] " + esc(f.container) + ": " + esc(f.message);
        if (!f.fix.empty()) out += "<br><span class=\"fix\">fix: " + esc(f.fix) + "</span>";
        out += "</li>";
      }
      out += "</ul>\n";
    }
    out += "</article>\n";
  }
  out += "</section>\n</body>\n</html>\n";
  return out;
}

}  // namespace cudagate

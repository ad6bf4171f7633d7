// The shared parts of cudagate's HTML pages.
#include "report/html_page.h"

#include <map>

#include "report/finding_text.h"
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

std::string or_unknown(const std::string& s) {
  return s.empty() ? std::string("unknown") : s;
}

}  // namespace

std::string html_page_start(std::string_view title, std::string_view extra_css) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out +=
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>" + xml_escape(title) + "</title>\n<style>";
  out += kStyle;
  out += extra_css;
  out += "</style>\n</head>\n<body>\n";
  return out;
}

std::string html_page_end() {
  return "</body>\n</html>\n";
}

std::string_view html_outcome_mark(Outcome outcome) {
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

std::string html_group_members(std::size_t nodes, const std::vector<std::string>& pools) {
  std::string out;
  if (nodes != 0 || pools.empty()) {
    out = std::to_string(nodes) + (nodes == 1 ? " node" : " nodes");
  }
  for (const std::string& pool : pools) {
    if (!out.empty()) out += ", ";
    out += pool;
  }
  return out;
}

std::string html_group_header(const GpuFacts& f, std::string_view members,
                              std::string_view caption) {
  std::string out = "<th class=\"group\" scope=\"col\" title=\"" + xml_escape(facts_text(f)) +
                    ", " + xml_escape(members) + "\">";
  if (!caption.empty()) out += "<i>" + xml_escape(caption) + "</i>";
  out += "<b>" + xml_escape(or_unknown(f.product)) + "</b>";
  out += "<span>driver " + xml_escape(f.driver ? f.driver->str() : "unknown") + "</span>";
  out += "<span>CUDA " + xml_escape(max_cuda_text(f)) + "</span>";
  out += "<span>cc " + xml_escape(f.cc ? f.cc->str() : "unknown") + "</span>";
  out += "<span>" + xml_escape(members) + "</span>";
  out += "</th>";
  return out;
}

std::string html_cell_title(const GroupDecision& g) {
  std::string out = std::string(to_string(g.outcome)) + " on " + std::to_string(g.count) +
                    (g.count == 1 ? " node" : " nodes");
  for (const Finding& f : g.findings) {
    out += "\n[" + std::string(to_string(f.rule)) + "] " + f.container + ": " + f.message;
    if (!f.fix.empty()) out += "\nfix: " + f.fix;
  }
  return out;
}

// A stacked bar of the verdict counts, as inline SVG.
std::string html_counts_bar(const std::vector<std::pair<std::string, std::size_t>>& counts,
                            std::size_t total) {
  static const std::map<std::string, std::string, std::less<>> kColour = {
      {"pass", "#2e7d32"},    {"fail", "#c62828"},    {"error", "#8e0000"},
      {"partial", "#ef6c00"}, {"unknown", "#f9a825"}, {"no-candidates", "#ffb74d"},
      {"skip", "#bdbdbd"},    {"breaks", "#c62828"},  {"heals", "#2e7d32"},
      {"narrows", "#ef6c00"}, {"widens", "#66bb6a"},  {"unchanged", "#bdbdbd"}};
  auto colour_of = [](const std::string& name) {
    const auto it = kColour.find(name);
    return it == kColour.end() ? std::string("#90a4ae") : it->second;
  };
  constexpr double kWidth = 600;
  std::string out =
      "<svg class=\"bar\" width=\"600\" height=\"14\" viewBox=\"0 0 600 14\" "
      "role=\"img\" aria-label=\"verdicts\">";
  double x = 0;
  for (const auto& [verdict, n] : counts) {
    if (total == 0) break;
    const double w = kWidth * static_cast<double>(n) / static_cast<double>(total);
    out += "<rect x=\"" + std::to_string(x) + "\" y=\"0\" width=\"" + std::to_string(w) +
           "\" height=\"14\" fill=\"" + colour_of(verdict) + "\"><title>" + std::to_string(n) +
           " " + xml_escape(verdict) + "</title></rect>";
    x += w;
  }
  if (total == 0) out += "<rect x=\"0\" y=\"0\" width=\"600\" height=\"14\" fill=\"#eceff1\"/>";
  out += "</svg>";
  return out;
}

}  // namespace cudagate

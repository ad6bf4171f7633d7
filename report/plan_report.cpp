// The rollout plan's formats, built from the audit formats' parts.
#include "report/plan_report.h"

#include <algorithm>
#include <array>
#include <map>
#include <vector>

#include "report/decision_record.h"
#include "report/finding_text.h"
#include "report/html_page.h"
#include "report/junit_report.h"
#include "report/text_table.h"
#include "report/utc_time.h"
#include "report/xml_escape.h"

namespace cudagate {
namespace {

using nlohmann::json;

constexpr std::size_t kPlanReasonWidth = 90;
constexpr std::size_t kShownNodes = 3;

constexpr std::array<PlanChange, 5> kChangeOrder = {PlanChange::breaks, PlanChange::narrows,
                                                    PlanChange::heals, PlanChange::widens,
                                                    PlanChange::unchanged};

std::size_t rank(PlanChange c) {
  return static_cast<std::size_t>(std::find(kChangeOrder.begin(), kChangeOrder.end(), c) -
                                  kChangeOrder.begin());
}

// Workload indices, breaks first, then narrows, heals, widens, unchanged;
// input order within each.
std::vector<std::size_t> by_change(const RolloutPlan& plan) {
  std::vector<std::size_t> order(plan.workloads.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return rank(plan.workloads[a].change) < rank(plan.workloads[b].change);
  });
  return order;
}

std::string verdict_of(const JudgedWorkload& j) {
  return j.error ? std::string("error") : std::string(to_string(j.decision.verdict));
}

std::string verdict_cell(const JudgedWorkload& j) {
  std::string out = verdict_of(j);
  if (!j.error && j.decision.verdict != Verdict::skip) {
    out +=
        " " + std::to_string(j.decision.compatible) + "/" + std::to_string(j.decision.candidates);
  }
  return out;
}

// The reason worth reading: after for what got worse or stayed, before for what healed.
std::string reason_of(const PlannedWorkload& w) {
  const JudgedWorkload& j =
      w.change == PlanChange::heals || w.change == PlanChange::widens ? w.before : w.after;
  std::string reason = reason_line(audited(j, w.place));
  if (w.change == PlanChange::heals || w.change == PlanChange::widens) {
    reason = reason.empty() ? std::string() : "was: " + reason;
  }
  if (w.image_changed) reason = "image changed" + (reason.empty() ? "" : "; " + reason);
  return reason;
}

std::string short_facts(const GpuFacts& f) {
  std::string out = f.product.empty() ? std::string("unknown GPU") : f.product;
  out += " driver " + (f.driver ? f.driver->str() : std::string("unknown"));
  out += " (CUDA " + max_cuda_text(f) + ")";
  return out;
}

std::string node_names(const NodeMove& m) {
  std::string out;
  for (std::size_t i = 0; i < m.nodes.size() && i < kShownNodes; ++i) {
    out += (i == 0 ? "" : ", ") + m.nodes[i];
  }
  if (m.nodes.size() > kShownNodes) out += ", +" + std::to_string(m.nodes.size() - kShownNodes);
  return out;
}

std::string change_colour(PlanChange c) {
  switch (c) {
    case PlanChange::breaks:
      return "\x1b[1;31m";
    case PlanChange::narrows:
      return "\x1b[1;33m";
    case PlanChange::heals:
    case PlanChange::widens:
      return "\x1b[1;32m";
    case PlanChange::unchanged:
      return "\x1b[2m";
  }
  return "";
}

std::string rebuild_line(const RolloutPlan& plan, const Rebuild& r) {
  std::string out = workload_title(plan.workloads[r.workload].after.decision.resource);
  if (!r.container.empty()) out += " (container " + r.container + ")";
  if (r.rule) out += " [" + std::string(to_string(*r.rule)) + "]";
  return out + ": " + r.fix;
}

json move_json(const NodeMove& m) {
  json out = json::object();
  out["before"] = m.before ? facts_json(*m.before) : json(nullptr);
  out["after"] = m.after ? facts_json(*m.after) : json(nullptr);
  out["change"] = !m.before     ? "added"
                  : !m.after    ? "removed"
                  : m.changes() ? "changed"
                                : "unchanged";
  out["nodes"] = m.nodes;
  out["runsBefore"] = m.runs_before;
  out["runsAfter"] = m.runs_after;
  return out;
}

}  // namespace

AuditedWorkload audited(const JudgedWorkload& judged, const std::string& place) {
  AuditedWorkload out;
  out.decision = judged.decision;
  out.place = place;
  out.error = judged.error;
  return out;
}

std::string move_text(const NodeMove& m) {
  const std::string n = std::to_string(m.nodes.size()) + (m.nodes.size() == 1 ? " node" : " nodes");
  if (!m.before) return "add " + n + ": " + short_facts(*m.after);
  if (!m.after) return "remove " + n + ": " + short_facts(*m.before);
  if (!m.changes()) return short_facts(*m.before) + ", " + n + ", unchanged";
  std::string out = short_facts(*m.before) + " -> ";
  const bool same_gpu = m.before->product == m.after->product && m.before->cc == m.after->cc;
  out += same_gpu
             ? "driver " + (m.after->driver ? m.after->driver->str() : std::string("unknown")) +
                   " (CUDA " + max_cuda_text(*m.after) + ")"
             : short_facts(*m.after);
  return out + ", " + n;
}

std::string plan_summary(const RolloutPlan& plan) {
  const std::size_t n = plan.workloads.size();
  std::string out = std::to_string(n) + (n == 1 ? " workload" : " workloads");
  bool first = true;
  for (const PlanChange c : kChangeOrder) {
    const std::size_t k = plan.count(c);
    if (k == 0) continue;
    out += (first ? ": " : ", ") + std::to_string(k) + " " + std::string(to_string(c));
    first = false;
  }
  std::size_t moving = 0;
  for (const NodeMove& m : plan.moves) moving += m.changes() ? 1 : 0;
  out +=
      "; " + std::to_string(moving) + (moving == 1 ? " node group changes" : " node groups change");
  return out;
}

std::string plan_table(const RolloutPlan& plan, bool colour) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"CHANGE", "WORKLOAD", "BEFORE", "AFTER", "REASON", "SOURCE"});
  const std::vector<std::size_t> order = by_change(plan);
  for (const std::size_t i : order) {
    const PlannedWorkload& w = plan.workloads[i];
    rows.push_back({std::string(to_string(w.change)), workload_title(w.after.decision.resource),
                    verdict_cell(w.before), verdict_cell(w.after),
                    shorten(reason_of(w), kPlanReasonWidth), w.place});
  }
  std::string out;
  if (colour) {
    out = text_table(rows, [&](std::size_t row, const std::string& cell) {
      if (row == 0) return "\x1b[1m" + cell + "\x1b[0m";
      return change_colour(plan.workloads[order[row - 1]].change) + cell + "\x1b[0m";
    });
  } else {
    out = text_table(rows);
  }

  std::vector<std::vector<std::string>> groups;
  groups.push_back({"NODE GROUP", "BEFORE", "AFTER", "RUNS", "NODES"});
  for (const NodeMove& m : plan.moves) {
    groups.push_back(
        {!m.before     ? "added"
         : !m.after    ? "removed"
         : m.changes() ? "changed"
                       : "unchanged",
         m.before ? short_facts(*m.before) : "-", m.after ? short_facts(*m.after) : "-",
         std::to_string(m.runs_before) + " -> " + std::to_string(m.runs_after), node_names(m)});
  }
  out += "\n" + text_table(groups);

  if (plan.order) {
    out += "\nOrder:\n";
    std::size_t step = 1;
    for (const std::size_t m : plan.order->first) {
      out += "  " + std::to_string(step++) + ". " + move_text(plan.moves[m]) + ": breaks nothing\n";
    }
    if (plan.order->first.empty()) out += "  no node group can move without breaking a workload\n";
    for (const BlockedMove& b : plan.order->blocked) {
      out += "  blocked: " + move_text(plan.moves[b.move]) + ": would break " +
             std::to_string(b.breaks.size()) + (b.breaks.size() == 1 ? " workload" : " workloads") +
             "; rebuild first:\n";
      for (const Rebuild& r : b.rebuilds) out += "    - " + rebuild_line(plan, r) + "\n";
    }
  }
  out += "\n" + plan_summary(plan) + "\n";
  return out;
}

json plan_json(const RolloutPlan& plan) {
  json out = json::object();
  out["apiVersion"] = "cudagate.io/v1alpha1";
  out["kind"] = "RolloutPlan";
  json summary = json::object();
  for (const PlanChange c : kChangeOrder) summary[std::string(to_string(c))] = plan.count(c);
  out["summary"] = std::move(summary);
  json workloads = json::array();
  for (const std::size_t i : by_change(plan)) {
    const PlannedWorkload& w = plan.workloads[i];
    json item = json::object();
    item["change"] = to_string(w.change);
    item["place"] = w.place;
    item["imageChanged"] = w.image_changed;
    item["before"] = decision_record(audited(w.before, w.place));
    item["after"] = decision_record(audited(w.after, w.place));
    workloads.push_back(std::move(item));
  }
  out["workloads"] = std::move(workloads);
  json groups = json::array();
  for (const NodeMove& m : plan.moves) groups.push_back(move_json(m));
  out["nodeGroups"] = std::move(groups);
  if (plan.order) {
    json order = json::object();
    json first = json::array();
    for (const std::size_t m : plan.order->first) first.push_back(move_json(plan.moves[m]));
    order["first"] = std::move(first);
    json blocked = json::array();
    for (const BlockedMove& b : plan.order->blocked) {
      json item = move_json(plan.moves[b.move]);
      json breaks = json::array();
      for (const std::size_t i : b.breaks) {
        breaks.push_back(workload_title(plan.workloads[i].after.decision.resource));
      }
      item["breaks"] = std::move(breaks);
      json rebuilds = json::array();
      for (const Rebuild& r : b.rebuilds) {
        rebuilds.push_back(
            json{{"workload", workload_title(plan.workloads[r.workload].after.decision.resource)},
                 {"container", r.container},
                 {"rule", r.rule ? to_string(*r.rule) : std::string_view()},
                 {"fix", r.fix}});
      }
      item["rebuild"] = std::move(rebuilds);
      blocked.push_back(std::move(item));
    }
    order["blocked"] = std::move(blocked);
    out["order"] = std::move(order);
  }
  return out;
}

std::string plan_junit(const RolloutPlan& plan, std::int64_t timestamp_seconds) {
  const std::string timestamp = utc_time_text(timestamp_seconds);
  std::map<std::string, JunitSuite> suites;
  for (const PlannedWorkload& w : plan.workloads) {
    const ResourceRef& r = w.after.decision.resource;
    JunitSuite& suite = suites[r.namespace_];
    ++suite.tests;
    std::string& b = suite.body;
    b += "    <testcase classname=\"" +
         xml_escape(r.namespace_.empty() ? std::string("cudagate.plan")
                                         : "cudagate.plan." + r.namespace_) +
         "\" name=\"" + xml_escape(workload_title(r)) + "\" time=\"0\"" +
         junit_place_attributes(w.place) + ">\n";
    const std::string line = "before " + verdict_cell(w.before) + ", after " +
                             verdict_cell(w.after) + " (" + std::string(to_string(w.change)) + ")";
    if (w.change == PlanChange::breaks) {
      ++suite.failures;
      b += "      <failure type=\"breaks\" message=\"" + xml_escape(line + ": " + reason_of(w)) +
           "\">" + xml_escape(findings_text(audited(w.after, w.place))) + "</failure>\n";
    } else {
      b += "      <system-out>" + xml_escape(line) + "</system-out>\n";
    }
    b += "    </testcase>\n";
  }
  JunitSuite total;
  for (const auto& [name, s] : suites) {
    total.tests += s.tests;
    total.failures += s.failures;
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<testsuites name=\"cudagate plan\" tests=\"" + std::to_string(total.tests) +
         "\" failures=\"" + std::to_string(total.failures) +
         "\" errors=\"0\" skipped=\"0\" time=\"0\">\n";
  for (const auto& [name, s] : suites) {
    junit_open_suite(out, name.empty() ? std::string("no namespace") : name, s, timestamp);
    out += s.body + "  </testsuite>\n";
  }
  out += "</testsuites>\n";
  return out;
}

namespace {

constexpr std::string_view kPlanStyle = R"css(
th.group i { display: block; font-style: normal; text-transform: uppercase; color: #455a64; }
td.change { padding: 3px 8px; font-weight: 600; white-space: nowrap; }
td.change.breaks { color: var(--fail); } td.change.narrows { color: var(--warn); }
td.change.heals, td.change.widens { color: var(--pass); } td.change.unchanged { color: var(--skip); }
td.cell.breaks { outline: 2px solid var(--fail); outline-offset: -2px; }
td.cell.heals { outline: 2px solid var(--pass); outline-offset: -2px; }
#order ol, #order ul { margin: 4px 24px 12px; }
#order .blocked { color: var(--fail); }
)css";

std::string outcome_word(const std::optional<Outcome>& o) {
  return o ? std::string(to_string(*o)) : std::string("none");
}

std::string mark(const std::optional<Outcome>& o) {
  return o ? std::string(html_outcome_mark(*o)) : std::string("\xE2\x80\x93");
}

std::string plan_cell(const PlannedWorkload& w, const NodeMove& m, const PlanCell& c) {
  std::string title = "before: " + outcome_word(c.before) + ", after: " + outcome_word(c.after);
  if (c.after && *c.after != Outcome::compatible && m.after) {
    for (const GroupDecision& g : w.after.decision.groups) {
      if (g.facts == *m.after) title += "\n" + html_cell_title(g);
    }
  }
  std::string classes = "cell " + outcome_word(c.after);
  const bool was = c.before == Outcome::compatible;
  const bool is = c.after == Outcome::compatible;
  if (was && !is) classes += " breaks";
  if (!was && is) classes += " heals";
  return "<td class=\"" + classes + "\" data-before=\"" + outcome_word(c.before) + "\" title=\"" +
         xml_escape(title) + "\">" + mark(c.before) + " \xE2\x86\x92 " + mark(c.after) + "</td>";
}

std::string group_header(const NodeMove& m) {
  const std::string members = html_group_members(m.nodes.size() - m.pools.size(), m.pools);
  if (!m.before) return html_group_header(*m.after, members, "added");
  if (!m.after) return html_group_header(*m.before, members, "removed");
  if (!m.changes()) return html_group_header(*m.before, members, "unchanged");
  std::string caption = "to driver " + (m.after->driver ? m.after->driver->str() : "unknown");
  if (m.after->product != m.before->product) caption = "to " + m.after->product;
  return html_group_header(*m.before, members, caption);
}

}  // namespace

std::string plan_html(const RolloutPlan& plan, std::int64_t timestamp_seconds) {
  std::vector<std::pair<std::string, std::size_t>> counts;
  for (const PlanChange c : kChangeOrder) {
    if (const std::size_t k = plan.count(c); k != 0) counts.emplace_back(to_string(c), k);
  }
  std::string out = html_page_start("cudagate plan", kPlanStyle);
  out += "<header>\n<h1>cudagate plan</h1>\n<p class=\"meta\">" + xml_escape(plan_summary(plan)) +
         ", " + utc_time_text(timestamp_seconds) + " UTC</p>\n<ul class=\"counts\">";
  for (const auto& [change, n] : counts) {
    const std::string cls = change == "breaks" ? "fail" : change == "heals" ? "pass" : "skip";
    out += "<li class=\"" + cls + "\">" + std::to_string(n) + " " + xml_escape(change) + "</li>";
  }
  out += "</ul>\n" + html_counts_bar(counts, plan.workloads.size()) + "\n</header>\n";
  out += "<h2>Workloads by node group, before \xE2\x86\x92 after</h2>\n";
  out +=
      "<p class=\"legend\">Each cell: the outcome on the group's nodes before \xE2\x86\x92 after "
      "(\xE2\x9C\x93 compatible, \xE2\x9C\x97 incompatible, ? unknown, \xE2\x80\x93 not a "
      "candidate or no node); the colour is the outcome after. Hover a cell for the reason.</p>\n";
  out +=
      "<div class=\"scroll\">\n<table id=\"matrix\">\n<thead><tr><th class=\"corner\" "
      "scope=\"col\">Workload</th><th scope=\"col\">Change</th><th scope=\"col\">Before</th>"
      "<th scope=\"col\">After</th>";
  for (const NodeMove& m : plan.moves) out += group_header(m);
  out += "</tr></thead>\n<tbody>\n";
  for (const std::size_t i : by_change(plan)) {
    const PlannedWorkload& w = plan.workloads[i];
    const std::string change(to_string(w.change));
    const std::string title = workload_title(w.after.decision.resource);
    std::string full_title = title;  // "title (place)"
    if (!w.place.empty()) {
      full_title += " (";
      full_title += w.place;
      full_title += ')';
    }
    out += "<tr class=\"workload\" data-change=\"";
    out += change;
    out += "\"><th scope=\"row\" title=\"";
    out += xml_escape(full_title);
    out += "\">";
    out += xml_escape(title);
    out += "</th><td class=\"change ";
    out += change;
    out += "\">";
    out += change;
    out += "</td><td class=\"verdict ";
    out += xml_escape(verdict_of(w.before));
    out += "\">";
    out += xml_escape(verdict_cell(w.before));
    out += "</td><td class=\"verdict ";
    out += xml_escape(verdict_of(w.after));
    out += "\" title=\"";
    out += xml_escape(reason_of(w));
    out += "\">";
    out += xml_escape(verdict_cell(w.after));
    out += "</td>";
    for (std::size_t m = 0; m < plan.moves.size(); ++m) {
      out += plan_cell(w, plan.moves[m], w.cells[m]);
    }
    out += "</tr>\n";
  }
  out += "</tbody>\n</table>\n</div>\n";
  if (plan.order) {
    out += "<section id=\"order\">\n<h2>Order</h2>\n<ol>";
    for (const std::size_t m : plan.order->first) {
      out += "<li>" + xml_escape(move_text(plan.moves[m])) + ": breaks nothing</li>";
    }
    out += "</ol>\n";
    for (const BlockedMove& b : plan.order->blocked) {
      out += "<p class=\"blocked\">Blocked: " + xml_escape(move_text(plan.moves[b.move])) +
             " would break " + std::to_string(b.breaks.size()) +
             (b.breaks.size() == 1 ? " workload" : " workloads") + "; rebuild first:</p>\n<ul>";
      for (const Rebuild& r : b.rebuilds)
        out += "<li>" + xml_escape(rebuild_line(plan, r)) + "</li>";
      out += "</ul>\n";
    }
    out += "</section>\n";
  }
  out += html_page_end();
  return out;
}

}  // namespace cudagate

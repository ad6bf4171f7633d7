// A rollout plan in the formats of `cudagate plan`, on a plan written out by hand (one
// workload that breaks, one that heals, one unchanged; a driver upgrade and an unchanged
// group): the table (breaks first, the node groups, the order, the summary), JSON, JUnit with
// one failure per workload the rollout breaks, the HTML before/after matrix, and the text of
// each kind of move. (tests/e2e/plan_test.py checks the same formats on a planned fleet.)
#include "report/plan_report.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "report/decision_record.h"
#include "report/finding_text.h"
#include "report/html_page.h"
#include "report/xml_escape.h"
#include "tests/support/occurrences.h"

namespace cudagate {
namespace {

using nlohmann::json;
using test_support::occurrences;

GpuFacts plan_facts(const char* product, const char* driver, CudaVersion cuda,
                    ComputeCapability cc) {
  GpuFacts f;
  f.has_gpu = true;
  f.product = product;
  f.driver = *DriverVersion::parse(driver);
  f.max_cuda = cuda;
  f.cc = cc;
  return f;
}

const GpuFacts& plan_t4_535() {
  static const GpuFacts f = plan_facts("Tesla-T4", "535.129.03", {12, 2}, {7, 5});
  return f;
}
const GpuFacts& plan_t4_570() {
  static const GpuFacts f = plan_facts("Tesla-T4", "570.124.06", {12, 8}, {7, 5});
  return f;
}
const GpuFacts& plan_a100() {
  static const GpuFacts f = plan_facts("NVIDIA-A100-SXM4-80GB", "550.90.07", {12, 4}, {8, 0});
  return f;
}

const Finding kPlanArchFinding{Rule::gpu_arch, "train",
                               "compiled for 8.0; no kernel image for compute capability 7.5",
                               "add 7.5 to the arch list", false};
const Finding kPlanDriverFinding{Rule::cuda_driver, "main",
                                 "needs CUDA 12.4; driver 535.129.03 supports up to CUDA 12.2",
                                 "upgrade the driver to 550.54.14 or newer", false};

JudgedWorkload judged(const ResourceRef& resource, Verdict verdict, std::size_t compatible,
                      const GpuFacts& facts, std::optional<Finding> finding) {
  JudgedWorkload j;
  j.decision.resource = resource;
  j.decision.verdict = verdict;
  j.decision.candidates = 2;
  j.decision.compatible = compatible;
  GroupDecision group;
  group.count = 2;
  group.facts = facts;
  group.outcome = finding ? Outcome::incompatible : Outcome::compatible;
  if (finding) group.findings.push_back(*finding);
  j.decision.groups.push_back(group);
  return j;
}

// Workloads in input order: serve (unchanged), train (breaks: the upgraded
// T4s lose its kernels; its image changes too), <heal> (heals: the new
// driver has its CUDA). Moves: the T4s from 535 to 570, the A100 unchanged.
RolloutPlan hand_plan() {
  const ResourceRef serve{"apps/v1", "Deployment", "ml", "serve"};
  const ResourceRef train{"batch/v1", "Job", "ml", "train"};
  const ResourceRef heal{"apps/v1", "Deployment", "web", "<heal>"};
  RolloutPlan plan;
  PlannedWorkload w;
  w.place = "serve.yaml:1";
  w.before = judged(serve, Verdict::pass, 2, plan_t4_535(), std::nullopt);
  w.after = judged(serve, Verdict::pass, 2, plan_t4_570(), std::nullopt);
  w.change = PlanChange::unchanged;
  w.cells = {{Outcome::compatible, Outcome::compatible}, {}};
  plan.workloads.push_back(w);

  w.place = "train.yaml:3";
  w.before = judged(train, Verdict::pass, 2, plan_t4_535(), std::nullopt);
  w.after = judged(train, Verdict::fail, 0, plan_t4_570(), kPlanArchFinding);
  w.change = PlanChange::breaks;
  w.image_changed = true;
  w.cells = {{Outcome::compatible, Outcome::incompatible}, {}};
  plan.workloads.push_back(w);

  w.place = "";
  w.before = judged(heal, Verdict::fail, 0, plan_t4_535(), kPlanDriverFinding);
  w.after = judged(heal, Verdict::pass, 2, plan_t4_570(), std::nullopt);
  w.change = PlanChange::heals;
  w.image_changed = false;
  w.cells = {{Outcome::incompatible, Outcome::compatible}, {}};
  plan.workloads.push_back(w);

  NodeMove t4;
  t4.before = plan_t4_535();
  t4.after = plan_t4_570();
  t4.nodes = {"t4-1", "t4-2"};
  t4.runs_before = 2;
  t4.runs_after = 2;
  NodeMove a100;
  a100.before = plan_a100();
  a100.after = plan_a100();
  a100.nodes = {"a100-1"};
  a100.runs_before = 1;
  a100.runs_after = 1;
  plan.moves = {t4, a100};
  return plan;
}

// The T4 move blocked until train is rebuilt, and nothing safe to move.
RolloutPlan blocked_plan() {
  RolloutPlan plan = hand_plan();
  plan.order =
      RolloutOrder{{},
                   {BlockedMove{0,
                                {1},
                                {Rebuild{1, "train", Rule::gpu_arch, "add 7.5 to the arch list"},
                                 Rebuild{1, "", std::nullopt, "no rebuild helps"}}}}};
  return plan;
}

// A line of a text table, its cells split where two spaces or more part them.
std::vector<std::string> plan_cells(const std::string& line) {
  std::vector<std::string> out;
  const std::regex gap(" {2,}");
  for (std::sregex_token_iterator it(line.begin(), line.end(), gap, -1), end; it != end; ++it) {
    out.push_back(*it);
  }
  return out;
}

std::vector<std::string> plan_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(PlanReport, MoveText) {
  NodeMove move;
  move.nodes = {"t4-1", "t4-2"};
  move.before = plan_t4_535();
  move.after = plan_t4_570();
  EXPECT_EQ(move_text(move),
            "Tesla-T4 driver 535.129.03 (CUDA 12.2) -> driver 570.124.06 (CUDA 12.8), 2 nodes");
  move.after = plan_a100();
  EXPECT_EQ(move_text(move),
            "Tesla-T4 driver 535.129.03 (CUDA 12.2) -> NVIDIA-A100-SXM4-80GB driver 550.90.07 "
            "(CUDA 12.4), 2 nodes");
  move.nodes = {"a100-1"};
  move.before = plan_a100();
  EXPECT_EQ(move_text(move),
            "NVIDIA-A100-SXM4-80GB driver 550.90.07 (CUDA 12.4), 1 node, unchanged");
  move.before.reset();
  EXPECT_EQ(move_text(move), "add 1 node: NVIDIA-A100-SXM4-80GB driver 550.90.07 (CUDA 12.4)");
  move.before = plan_t4_535();
  move.after.reset();
  EXPECT_EQ(move_text(move), "remove 1 node: Tesla-T4 driver 535.129.03 (CUDA 12.2)");
  GpuFacts unknown;
  unknown.has_gpu = true;
  move.before = unknown;
  EXPECT_EQ(move_text(move), "remove 1 node: unknown GPU driver unknown (CUDA unknown)");
}

TEST(PlanReport, Summary) {
  RolloutPlan plan = hand_plan();
  EXPECT_EQ(plan_summary(plan),
            "3 workloads: 1 breaks, 1 heals, 1 unchanged; 1 node group changes");
  plan.workloads.resize(1);
  plan.moves[1].after.reset();
  EXPECT_EQ(plan_summary(plan), "1 workload: 1 unchanged; 2 node groups change");
  EXPECT_EQ(plan_summary(RolloutPlan{}), "0 workloads; 0 node groups change");
}

TEST(PlanReport, TableListsBreaksFirstThenGroupsOrderAndSummary) {
  const std::string text = plan_table(blocked_plan(), false);
  const std::vector<std::string> lines = plan_lines(text);
  ASSERT_EQ(lines.size(), 16U) << text;
  using Cells = std::vector<std::string>;
  // Cut to 90 bytes: the rest is in the JSON and JUnit formats.
  const std::string cut_reason =
      "image changed; [gpu-arch] train: compiled for 8.0; no kernel image for compute "
      "capabili...";
  const std::string was_reason =
      "was: [cuda-driver] main: needs CUDA 12.4; driver 535.129.03 supports up to CUDA 12.2";
  const std::string blocked_line =
      "  blocked: Tesla-T4 driver 535.129.03 (CUDA 12.2) -> driver 570.124.06 (CUDA 12.8), 2 "
      "nodes: would break 1 workload; rebuild first:";
  EXPECT_EQ(plan_cells(lines[0]),
            (Cells{"CHANGE", "WORKLOAD", "BEFORE", "AFTER", "REASON", "SOURCE"}));
  EXPECT_EQ(plan_cells(lines[1]),
            (Cells{"breaks", "Job ml/train", "pass 2/2", "fail 0/2", cut_reason, "train.yaml:3"}));
  // What healed shows why it failed before; a workload read from no file has no source.
  EXPECT_EQ(plan_cells(lines[2]),
            (Cells{"heals", "Deployment web/<heal>", "fail 0/2", "pass 2/2", was_reason}));
  EXPECT_EQ(plan_cells(lines[3]),
            (Cells{"unchanged", "Deployment ml/serve", "pass 2/2", "pass 2/2", "serve.yaml:1"}));
  EXPECT_EQ(lines[4], "");
  EXPECT_EQ(plan_cells(lines[5]), (Cells{"NODE GROUP", "BEFORE", "AFTER", "RUNS", "NODES"}));
  EXPECT_EQ(plan_cells(lines[6]),
            (Cells{"changed", "Tesla-T4 driver 535.129.03 (CUDA 12.2)",
                   "Tesla-T4 driver 570.124.06 (CUDA 12.8)", "2 -> 2", "t4-1, t4-2"}));
  EXPECT_EQ(plan_cells(lines[7]),
            (Cells{"unchanged", "NVIDIA-A100-SXM4-80GB driver 550.90.07 (CUDA 12.4)",
                   "NVIDIA-A100-SXM4-80GB driver 550.90.07 (CUDA 12.4)", "1 -> 1", "a100-1"}));
  const std::vector<std::string> order(lines.begin() + 8, lines.end());
  EXPECT_EQ(order,
            (std::vector<std::string>{
                "", "Order:", "  no node group can move without breaking a workload", blocked_line,
                "    - Job ml/train (container train) [gpu-arch]: add 7.5 to the arch list",
                "    - Job ml/train: no rebuild helps", "",
                "3 workloads: 1 breaks, 1 heals, 1 unchanged; 1 node group changes"}));
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
}

TEST(PlanReport, TableOrderAndNodeNames) {
  RolloutPlan plan = hand_plan();
  plan.moves[0].nodes = {"t4-1", "t4-2", "t4-3", "t4-4", "t4-5"};
  plan.order = RolloutOrder{{1, 0}, {}};
  const std::string text = plan_table(plan, false);
  EXPECT_NE(text.find("  t4-1, t4-2, t4-3, +2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nOrder:\n"
                      "  1. NVIDIA-A100-SXM4-80GB driver 550.90.07 (CUDA 12.4), 1 node, unchanged: "
                      "breaks nothing\n"
                      "  2. Tesla-T4 driver 535.129.03 (CUDA 12.2) -> driver 570.124.06 (CUDA "
                      "12.8), 5 nodes: breaks nothing\n\n3 workloads:"),
            std::string::npos)
      << text;
  // Without an order, none is printed.
  EXPECT_EQ(plan_table(hand_plan(), false).find("Order:"), std::string::npos);
}

TEST(PlanReport, ColourMarksTheChanges) {
  const std::string text = plan_table(hand_plan(), true);
  EXPECT_NE(text.find("\x1b[1mCHANGE\x1b[0m"), std::string::npos);
  EXPECT_NE(text.find("\x1b[1;31mbreaks\x1b[0m"), std::string::npos);
  EXPECT_NE(text.find("\x1b[1;32mheals\x1b[0m"), std::string::npos);
  EXPECT_NE(text.find("\x1b[2munchanged\x1b[0m"), std::string::npos);
  // The node group table is not coloured.
  EXPECT_NE(text.find("\nNODE GROUP  "), std::string::npos);
}

TEST(PlanReport, Json) {
  const RolloutPlan plan = blocked_plan();
  const json j = plan_json(plan);
  EXPECT_EQ(j["apiVersion"].get<std::string>(), "cudagate.io/v1alpha1");
  EXPECT_EQ(j["kind"].get<std::string>(), "RolloutPlan");
  EXPECT_EQ(j["summary"],
            (json{{"breaks", 1}, {"heals", 1}, {"narrows", 0}, {"widens", 0}, {"unchanged", 1}}));
  ASSERT_EQ(j["workloads"].size(), 3U);
  const std::vector<std::size_t> by_change = {1, 2, 0};
  for (std::size_t k = 0; k < by_change.size(); ++k) {
    const PlannedWorkload& w = plan.workloads[by_change[k]];
    const json& item = j["workloads"][k];
    EXPECT_EQ(item["change"].get<std::string>(), to_string(w.change)) << k;
    EXPECT_EQ(item["place"].get<std::string>(), w.place) << k;
    EXPECT_EQ(item["imageChanged"].get<bool>(), w.image_changed) << k;
    EXPECT_EQ(item["before"], decision_record(audited(w.before, w.place))) << k;
    EXPECT_EQ(item["after"], decision_record(audited(w.after, w.place))) << k;
  }
  ASSERT_EQ(j["nodeGroups"].size(), 2U);
  EXPECT_EQ(j["nodeGroups"][0], (json{{"before", facts_json(plan_t4_535())},
                                      {"after", facts_json(plan_t4_570())},
                                      {"change", "changed"},
                                      {"nodes", {"t4-1", "t4-2"}},
                                      {"runsBefore", 2},
                                      {"runsAfter", 2}}));
  EXPECT_EQ(j["nodeGroups"][1]["change"].get<std::string>(), "unchanged");
  EXPECT_EQ(j["order"]["first"], json::array());
  ASSERT_EQ(j["order"]["blocked"].size(), 1U);
  const json& blocked = j["order"]["blocked"][0];
  EXPECT_EQ(blocked["change"].get<std::string>(), "changed");
  EXPECT_EQ(blocked["breaks"], (json{"Job ml/train"}));
  EXPECT_EQ(blocked["rebuild"], (json{{{"workload", "Job ml/train"},
                                       {"container", "train"},
                                       {"rule", "gpu-arch"},
                                       {"fix", "add 7.5 to the arch list"}},
                                      {{"workload", "Job ml/train"},
                                       {"container", ""},
                                       {"rule", ""},
                                       {"fix", "no rebuild helps"}}}));

  RolloutPlan changed = hand_plan();
  changed.moves[0].before.reset();
  changed.moves[1].after.reset();
  const json groups = plan_json(changed)["nodeGroups"];
  EXPECT_EQ(groups[0]["change"].get<std::string>(), "added");
  EXPECT_TRUE(groups[0]["before"].is_null());
  EXPECT_EQ(groups[1]["change"].get<std::string>(), "removed");
  EXPECT_TRUE(groups[1]["after"].is_null());
  EXPECT_FALSE(plan_json(hand_plan()).contains("order"));
}

// One case per workload, a failure for each that breaks; suites by namespace.
TEST(PlanReport, JunitFailsWhatBreaks) {
  const RolloutPlan plan = hand_plan();
  const std::string xml = plan_junit(plan, 1764584444);
  EXPECT_TRUE(
      xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites "
                      "name=\"cudagate plan\" tests=\"3\" failures=\"1\" errors=\"0\" "
                      "skipped=\"0\" time=\"0\">\n"))
      << xml;
  EXPECT_TRUE(xml.ends_with("</testsuites>\n"));
  EXPECT_EQ(occurrences(xml, "<testsuite "), 2U);
  EXPECT_NE(xml.find("<testsuite name=\"ml\" tests=\"2\" failures=\"1\" errors=\"0\" "
                     "skipped=\"0\" time=\"0\" timestamp=\"2025-12-01T10:20:44\">"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<testsuite name=\"web\" tests=\"1\" failures=\"0\""), std::string::npos);
  EXPECT_EQ(occurrences(xml, "<testcase "), 3U);
  EXPECT_EQ(occurrences(xml, "<failure "), 1U);
  EXPECT_NE(xml.find("<testcase classname=\"cudagate.plan.ml\" name=\"Job ml/train\" time=\"0\" "
                     "file=\"train.yaml\" line=\"3\">\n      <failure type=\"breaks\" "
                     "message=\"before pass 2/2, after fail 0/2 (breaks): image changed; "
                     "[gpu-arch] train: compiled for 8.0; no kernel image for compute capability "
                     "7.5\">" +
                     xml_escape(findings_text(audited(plan.workloads[1].after, "train.yaml:3"))) +
                     "</failure>"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<testcase classname=\"cudagate.plan.web\" name=\"Deployment "
                     "web/&lt;heal&gt;\" time=\"0\">\n      <system-out>before fail 0/2, after "
                     "pass 2/2 (heals)</system-out>"),
            std::string::npos)
      << xml;
  EXPECT_EQ(xml.find("<heal>"), std::string::npos);

  RolloutPlan no_namespace = hand_plan();
  for (PlannedWorkload& w : no_namespace.workloads) w.after.decision.resource.namespace_.clear();
  const std::string flat = plan_junit(no_namespace, 0);
  EXPECT_NE(flat.find("<testsuite name=\"no namespace\" tests=\"3\" failures=\"1\""),
            std::string::npos)
      << flat;
  EXPECT_EQ(occurrences(flat, "classname=\"cudagate.plan\""), 3U);
}

TEST(PlanReport, HtmlMatrixBeforeAndAfter) {
  const RolloutPlan plan = blocked_plan();
  const std::string html = plan_html(plan, 1764584444);
  EXPECT_TRUE(html.starts_with("<!DOCTYPE html>"));
  EXPECT_TRUE(html.ends_with(html_page_end()));
  EXPECT_NE(html.find("<title>cudagate plan</title>"), std::string::npos);
  EXPECT_NE(html.find("3 workloads: 1 breaks, 1 heals, 1 unchanged; 1 node group changes, "
                      "2025-12-01T10:20:44 UTC"),
            std::string::npos);
  EXPECT_NE(html.find("<li class=\"fail\">1 breaks</li><li class=\"pass\">1 heals</li>"
                      "<li class=\"skip\">1 unchanged</li>"),
            std::string::npos);
  EXPECT_EQ(occurrences(html, "<table id=\"matrix\">"), 1U);
  EXPECT_EQ(occurrences(html, "<tr class=\"workload\""), 3U);
  // Breaks first, then heals, then unchanged.
  const auto breaks = html.find("<tr class=\"workload\" data-change=\"breaks\">");
  const auto heals = html.find("<tr class=\"workload\" data-change=\"heals\">");
  const auto unchanged = html.find("<tr class=\"workload\" data-change=\"unchanged\">");
  ASSERT_NE(unchanged, std::string::npos);
  EXPECT_LT(breaks, heals);
  EXPECT_LT(heals, unchanged);
  EXPECT_EQ(occurrences(html, "<th class=\"group\""), 2U);
  EXPECT_NE(html.find(html_group_header(plan_t4_535(), "2 nodes", "to driver 570.124.06")),
            std::string::npos);
  EXPECT_NE(html.find(html_group_header(plan_a100(), "1 node", "unchanged")), std::string::npos);
  EXPECT_EQ(occurrences(html, "<td class=\"cell "), 6U);
  // The colour is the outcome after; a cell that got worse or better says so.
  EXPECT_NE(html.find("<td class=\"cell incompatible breaks\" data-before=\"compatible\" "
                      "title=\"before: compatible, after: incompatible\n" +
                      xml_escape(html_cell_title(plan.workloads[1].after.decision.groups[0])) +
                      "\">\xE2\x9C\x93 \xE2\x86\x92 \xE2\x9C\x97</td>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<td class=\"cell compatible heals\" data-before=\"incompatible\" "
                      "title=\"before: incompatible, after: compatible\">\xE2\x9C\x97 \xE2\x86\x92 "
                      "\xE2\x9C\x93</td>"),
            std::string::npos);
  EXPECT_EQ(occurrences(html,
                        "<td class=\"cell none\" data-before=\"none\" title=\"before: none, "
                        "after: none\">\xE2\x80\x93 \xE2\x86\x92 \xE2\x80\x93</td>"),
            3U);
  EXPECT_NE(html.find("<th scope=\"row\" title=\"Job ml/train (train.yaml:3)\">Job ml/train</th>"),
            std::string::npos);
  EXPECT_NE(html.find("<th scope=\"row\" title=\"Deployment web/&lt;heal&gt;\">Deployment "
                      "web/&lt;heal&gt;</th>"),
            std::string::npos);
  EXPECT_EQ(html.find("<heal>"), std::string::npos);
  EXPECT_NE(html.find("<section id=\"order\">"), std::string::npos);
  EXPECT_NE(html.find("<p class=\"blocked\">Blocked: Tesla-T4 driver 535.129.03 (CUDA 12.2) "
                      "-&gt; driver 570.124.06 (CUDA 12.8), 2 nodes would break 1 workload; "
                      "rebuild first:</p>\n<ul><li>Job ml/train (container train) [gpu-arch]: "
                      "add 7.5 to the arch list</li>"),
            std::string::npos)
      << html;
  EXPECT_EQ(plan_html(hand_plan(), 0).find("<section id=\"order\">"), std::string::npos);
}

TEST(PlanReport, AuditedKeepsTheDecisionPlaceAndError) {
  JudgedWorkload j = judged(ResourceRef{"v1", "Pod", "ml", "p"}, Verdict::fail, 0, plan_t4_535(),
                            kPlanDriverFinding);
  const AuditedWorkload a = audited(j, "p.yaml:4");
  EXPECT_EQ(a.decision, j.decision);
  EXPECT_EQ(a.place, "p.yaml:4");
  EXPECT_FALSE(a.error);
  j.error = Error{"p.yaml:4", "bad annotation"};
  const AuditedWorkload broken = audited(j, "");
  ASSERT_TRUE(broken.error);
  EXPECT_EQ(broken.error->str(), "p.yaml:4: bad annotation");
  EXPECT_EQ(broken.place, "");
}

}  // namespace
}  // namespace cudagate

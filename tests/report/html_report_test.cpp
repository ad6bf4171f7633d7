// The HTML report's markup: self-contained, one row per workload and one column per GPU node
// group, cells by outcome with the reason on hover, and the findings below. (Chromium renders
// it in tests/e2e/html_report_test.py.)
#include "report/html_report.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/support/audit_fixture.h"
#include "tests/support/occurrences.h"

namespace cudagate {
namespace {

using test_support::occurrences;

TEST(HtmlReport, MatrixOfWorkloadsAndNodeGroups) {
  const Audit audit = test_support::fixture_audit();
  const std::string html = html_report(audit, 1764584444);
  EXPECT_TRUE(html.starts_with("<!DOCTYPE html>"));
  EXPECT_EQ(occurrences(html, "<tr class=\"workload\""), audit.workloads.size());
  EXPECT_EQ(occurrences(html, "<th class=\"group\""), 4U);
  EXPECT_EQ(occurrences(html, "<td class=\"cell "), audit.workloads.size() * 4);
  EXPECT_EQ(occurrences(html, "<tr class=\"workload\" data-verdict=\"fail\">"), 1U);
  EXPECT_NE(html.find("2025-12-01T10:20:44 UTC"), std::string::npos);
  EXPECT_NE(html.find("<b>Tesla-T4</b><span>driver 535.129.03</span><span>CUDA 12.2</span>"
                      "<span>cc 7.5</span><span>2 nodes</span>"),
            std::string::npos);
  // The trainer is pinned to the T4s: incompatible there, not a candidate elsewhere.
  EXPECT_NE(html.find("<td class=\"cell incompatible\" title=\"incompatible on 2 nodes\n"
                      "[cuda-driver] train: needs CUDA 12.4"),
            std::string::npos);
}

// A column names the node pools its nodes stand for (html_group_members(),
// tested in html_page_test.cpp).
TEST(HtmlReport, ColumnsCountNodesAndNameNodePools) {
  Audit audit = test_support::fixture_audit();
  NodeGroupColumn& column = audit.node_groups.front();
  column.pools = {"NodePool gpu-t4 (0 nodes now)"};
  const std::string html = html_report(audit, 0);
  EXPECT_NE(
      html.find("<span>" + std::to_string(column.nodes) + (column.nodes == 1 ? " node" : " nodes") +
                ", NodePool gpu-t4 (0 nodes now)</span></th>"),
      std::string::npos);
}

TEST(HtmlReport, FindingsListEveryWorkloadThatFailsOrWarns) {
  const Audit audit = test_support::fixture_audit();
  const std::string html = html_report(audit, 0);
  const ResultCounts counts = count_results(audit);
  EXPECT_EQ(occurrences(html, "<article id=\"w"), counts.fail + counts.warn + counts.error);
  EXPECT_NE(html.find("fix: upgrade the driver to 550.54.14 or newer"), std::string::npos);
}

TEST(HtmlReport, SelfContained) {
  const std::string html = html_report(test_support::fixture_audit(), 0);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_NE(html.find("content=\"default-src 'none'; style-src 'unsafe-inline'\""),
            std::string::npos);
}

TEST(HtmlReport, TextIsEscaped) {
  Audit audit;
  AuditedWorkload w;
  w.decision.resource = ResourceRef{"v1", "Pod", "ml", "<img src=x>"};
  w.error = Error{"a.yaml:1", "bad \"value\" <b>"};
  audit.workloads.push_back(w);
  const std::string html = html_report(audit, 0);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("Pod ml/&lt;img src=x&gt;"), std::string::npos);
  EXPECT_NE(html.find("bad &quot;value&quot; &lt;b&gt;"), std::string::npos);
}

TEST(HtmlReport, ColumnsFromTheDecisionsWithoutAnInventory) {
  Audit audit = test_support::fixture_audit();
  audit.node_groups.clear();
  const std::string html = html_report(audit, 0);
  // Every GPU group some workload is a candidate for.
  EXPECT_EQ(occurrences(html, "<th class=\"group\""), 4U);
}

}  // namespace
}  // namespace cudagate

// The parts every HTML page shares: a self-contained document whose policy loads nothing, node
// group headers and what a column stands for, outcome marks, a cell's hover text and the
// stacked bar of counts, with every text escaped.
#include "report/html_page.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "report/finding_text.h"
#include "report/xml_escape.h"
#include "tests/support/occurrences.h"

namespace cudagate {
namespace {

using test_support::occurrences;

GpuFacts html_page_t4() {
  GpuFacts f;
  f.has_gpu = true;
  f.driver = *DriverVersion::parse("535.129.03");
  f.max_cuda = CudaVersion(12, 2);
  f.cc = ComputeCapability(7, 5);
  f.product = "Tesla-T4";
  return f;
}

TEST(HtmlPage, SelfContainedDocument) {
  const std::string start = html_page_start("audit <of> \"ml\" & more", "td.x { color: red; }");
  EXPECT_TRUE(start.starts_with("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n")) << start;
  EXPECT_TRUE(start.ends_with("</style>\n</head>\n<body>\n")) << start;
  EXPECT_NE(start.find("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
                       "'none'; style-src 'unsafe-inline'\">"),
            std::string::npos);
  EXPECT_NE(start.find("<title>audit &lt;of&gt; &quot;ml&quot; &amp; more</title>"),
            std::string::npos);
  // The page's own style comes after the shared one, so that it can override it.
  EXPECT_NE(start.find("td.x { color: red; }</style>"), std::string::npos);
  EXPECT_EQ(occurrences(start, "<style>"), 1U);
  // Nothing is loaded from elsewhere: no scripts, links or fetched images.
  for (const char* outside : {"<script", "http://", "https://", "url(", "<link"}) {
    EXPECT_EQ(start.find(outside), std::string::npos) << outside;
  }
  EXPECT_EQ(html_page_start("t").find("td.x"), std::string::npos);
  EXPECT_EQ(html_page_end(), "</body>\n</html>\n");
}

// Moved from html_report_test.cpp: what a column stands for, nodes counted
// and node pools named.
TEST(HtmlPage, GroupMembersCountNodesAndNamePools) {
  EXPECT_EQ(html_group_members(2, {}), "2 nodes");
  EXPECT_EQ(html_group_members(1, {}), "1 node");
  EXPECT_EQ(html_group_members(0, {}), "0 nodes");
  EXPECT_EQ(html_group_members(0, {"NodePool gpu-t4 (0 nodes now)"}),
            "NodePool gpu-t4 (0 nodes now)");
  EXPECT_EQ(html_group_members(2, {"NodePool gpu (a100, 2 nodes now)", "pool gke-a100"}),
            "2 nodes, NodePool gpu (a100, 2 nodes now), pool gke-a100");
}

TEST(HtmlPage, GroupHeader) {
  const GpuFacts t4 = html_page_t4();
  EXPECT_EQ(html_group_header(t4, "2 nodes"),
            "<th class=\"group\" scope=\"col\" title=\"driver 535.129.03, max CUDA 12.2, compute "
            "capability 7.5, Tesla-T4, 2 nodes\"><b>Tesla-T4</b><span>driver 535.129.03</span>"
            "<span>CUDA 12.2</span><span>cc 7.5</span><span>2 nodes</span></th>");
  // A caption is the first line.
  EXPECT_TRUE(html_group_header(t4, "2 nodes", "before")
                  .starts_with("<th class=\"group\" scope=\"col\" title=\"driver 535.129.03, max "
                               "CUDA 12.2, compute capability 7.5, Tesla-T4, 2 nodes\"><i>before"
                               "</i><b>Tesla-T4</b>"));

  // What is not known says so; what is given is escaped.
  GpuFacts odd;
  odd.has_gpu = true;
  odd.product = "<GPU & co>";
  const std::string header = html_group_header(odd, "1 node, pool \"a\"", "to <b>");
  EXPECT_EQ(header,
            "<th class=\"group\" scope=\"col\" title=\"" + xml_escape(facts_text(odd)) +
                ", 1 node, pool &quot;a&quot;\"><i>to &lt;b&gt;</i><b>&lt;GPU &amp; co&gt;</b>"
                "<span>driver unknown</span><span>CUDA unknown</span><span>cc unknown</span>"
                "<span>1 node, pool &quot;a&quot;</span></th>");
  EXPECT_NE(html_group_header(GpuFacts{}, "").find("<b>unknown</b>"), std::string::npos);
}

TEST(HtmlPage, OutcomeMarks) {
  EXPECT_EQ(html_outcome_mark(Outcome::compatible), "\xE2\x9C\x93");
  EXPECT_EQ(html_outcome_mark(Outcome::incompatible), "\xE2\x9C\x97");
  EXPECT_EQ(html_outcome_mark(Outcome::unknown), "?");
}

TEST(HtmlPage, CellTitleListsFindingsWithTheirFixes) {
  GroupDecision group;
  group.outcome = Outcome::incompatible;
  group.count = 2;
  group.findings = {
      Finding{Rule::cuda_driver, "train", "needs CUDA 12.4", "upgrade the driver", false},
      Finding{Rule::gpu_arch, "sidecar", "the arch list is unknown", "", true},
  };
  EXPECT_EQ(html_cell_title(group),
            "incompatible on 2 nodes\n[cuda-driver] train: needs CUDA 12.4\nfix: upgrade the "
            "driver\n[gpu-arch] sidecar: the arch list is unknown");
  GroupDecision one;
  one.count = 1;
  EXPECT_EQ(html_cell_title(one), "compatible on 1 node");
}

// Each count a rectangle as wide as its share of 600 pixels, coloured by
// its name; nothing counted is one grey bar.
TEST(HtmlPage, CountsBar) {
  const std::string bar = html_counts_bar({{"pass", 3}, {"fail", 1}, {"<odd>", 0}}, 4);
  EXPECT_TRUE(
      bar.starts_with("<svg class=\"bar\" width=\"600\" height=\"14\" viewBox=\"0 0 600 "
                      "14\" role=\"img\" aria-label=\"verdicts\">"))
      << bar;
  EXPECT_TRUE(bar.ends_with("</svg>")) << bar;
  EXPECT_NE(
      bar.find("<rect x=\"" + std::to_string(0.0) + "\" y=\"0\" width=\"" + std::to_string(450.0) +
               "\" height=\"14\" fill=\"#2e7d32\"><title>3 pass</title></rect>"),
      std::string::npos)
      << bar;
  EXPECT_NE(bar.find("<rect x=\"" + std::to_string(450.0) + "\" y=\"0\" width=\"" +
                     std::to_string(150.0) +
                     "\" height=\"14\" fill=\"#c62828\"><title>1 fail</title></rect>"),
            std::string::npos)
      << bar;
  // A name without a colour of its own gets the neutral one, escaped.
  EXPECT_NE(bar.find("fill=\"#90a4ae\"><title>0 &lt;odd&gt;</title>"), std::string::npos) << bar;
  EXPECT_EQ(occurrences(bar, "<rect "), 3U);

  const std::vector<std::pair<std::string, std::size_t>> plan = {
      {"breaks", 1}, {"heals", 1}, {"narrows", 1}, {"widens", 1}, {"unchanged", 1}};
  const std::string changes = html_counts_bar(plan, 5);
  for (const char* colour : {"#c62828", "#2e7d32", "#ef6c00", "#66bb6a", "#bdbdbd"}) {
    EXPECT_EQ(occurrences(changes, std::string("fill=\"") + colour + "\""), 1U) << colour;
  }

  EXPECT_EQ(html_counts_bar({{"pass", 0}}, 0),
            "<svg class=\"bar\" width=\"600\" height=\"14\" viewBox=\"0 0 600 14\" role=\"img\" "
            "aria-label=\"verdicts\"><rect x=\"0\" y=\"0\" width=\"600\" height=\"14\" "
            "fill=\"#eceff1\"/></svg>");
}

}  // namespace
}  // namespace cudagate

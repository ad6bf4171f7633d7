// The audit as PolicyReport and OpenReports objects: one report per namespace, the cluster
// report for workloads without one, one result per rule and workload, summaries that count
// the results, and YAML that reads back as the same objects.
#include "report/policy_report.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "policy/objects/document.h"
#include "tests/support/audit_fixture.h"

namespace cudagate {
namespace {

using nlohmann::json;
using test_support::fixture_audit;

constexpr std::int64_t kTime = 1764584444;

const json* result_for(const std::vector<json>& reports, const std::string& name,
                       const std::string& rule) {
  for (const auto& report : reports) {
    for (const auto& r : report["results"]) {
      if (r["resources"][0]["name"] == name && r["rule"] == rule) return &r;
    }
  }
  return nullptr;
}

TEST(PolicyReport, OneReportPerNamespaceThenTheClusterReport) {
  const auto reports = policy_reports(fixture_audit(), ReportApi::policy_report, kTime);
  std::vector<std::string> kinds;
  for (const auto& r : reports) {
    EXPECT_EQ(r["apiVersion"], "wgpolicyk8s.io/v1alpha2");
    EXPECT_EQ(r["metadata"]["name"], "cudagate");
    kinds.push_back(r["kind"].get<std::string>() + ":" +
                    r["metadata"].value("namespace", std::string("-")));
  }
  EXPECT_EQ(kinds, (std::vector<std::string>{"PolicyReport:ml", "PolicyReport:research",
                                             "PolicyReport:serving", "ClusterPolicyReport:-"}));
}

TEST(PolicyReport, SummaryCountsTheResults) {
  for (const auto& report : policy_reports(fixture_audit(), ReportApi::policy_report, kTime)) {
    std::map<std::string, int> counted;
    std::set<std::string> rules;
    for (const auto& r : report["results"]) {
      ++counted[r["result"].get<std::string>()];
      rules.insert(r["rule"].get<std::string>());
      EXPECT_EQ(r["policy"], "cudagate");
      EXPECT_EQ(r["source"], "cudagate");
      EXPECT_EQ(r["timestamp"], (json{{"seconds", kTime}, {"nanos", 0}}));
      for (const auto& [key, value] : r["properties"].items()) {
        EXPECT_TRUE(value.is_string()) << key;
      }
    }
    EXPECT_EQ(rules, (std::set<std::string>{"cuda-driver", "gpu-arch", "gpu-feature"}));
    for (const char* word : {"pass", "fail", "warn", "error", "skip"}) {
      EXPECT_EQ(report["summary"][word].get<int>(), counted[word]) << word;
    }
  }
}

TEST(PolicyReport, ResultsNameTheRuleThatFailsAndItsFix) {
  const auto reports = policy_reports(fixture_audit(), ReportApi::policy_report, kTime);
  const json* driver = result_for(reports, "trainer", "cuda-driver");
  ASSERT_NE(driver, nullptr);
  EXPECT_EQ((*driver)["result"], "fail");
  EXPECT_EQ((*driver)["severity"], "high");
  EXPECT_NE((*driver)["message"].get<std::string>().find("needs CUDA 12.4"), std::string::npos);
  EXPECT_NE((*driver)["properties"]["fix"].get<std::string>().find("upgrade the driver"),
            std::string::npos);
  EXPECT_EQ((*driver)["properties"]["place"], "manifests/trainer.yaml:1");
  EXPECT_EQ((*result_for(reports, "trainer", "gpu-feature"))["result"], "pass");

  // Partial: runs on some candidates, so a warning on the rule that fails elsewhere.
  EXPECT_EQ((*result_for(reports, "inference", "cuda-driver"))["result"], "warn");
  EXPECT_EQ((*result_for(reports, "inference", "gpu-arch"))["result"], "pass");
  EXPECT_EQ((*result_for(reports, "bf16-finetune", "gpu-feature"))["result"], "warn");
  EXPECT_EQ((*result_for(reports, "web", "cuda-driver"))["result"], "skip");
  EXPECT_EQ((*result_for(reports, "typo", "gpu-arch"))["result"], "error");
  // The pod of the embedder Deployment is reported as the Deployment only.
  EXPECT_EQ(result_for(reports, "embedder-6b9f8d7c5-x2x4q", "cuda-driver"), nullptr);
  EXPECT_NE(result_for(reports, "embedder", "cuda-driver"), nullptr);
}

TEST(PolicyReport, OpenReportsHasTheSameResultsUnderItsOwnKinds) {
  const Audit audit = fixture_audit();
  const auto old_api = policy_reports(audit, ReportApi::policy_report, kTime);
  const auto open = policy_reports(audit, ReportApi::open_reports, kTime);
  ASSERT_EQ(open.size(), old_api.size());
  for (std::size_t i = 0; i < open.size(); ++i) {
    EXPECT_EQ(open[i]["apiVersion"], "openreports.io/v1alpha1");
    EXPECT_EQ(open[i]["source"], "cudagate");
    EXPECT_EQ(open[i]["results"], old_api[i]["results"]);
    EXPECT_EQ(open[i]["summary"], old_api[i]["summary"]);
  }
  EXPECT_EQ(open.front()["kind"], "Report");
  EXPECT_EQ(open.back()["kind"], "ClusterReport");
}

TEST(PolicyReport, YamlStreamReadsBackAsTheReports) {
  const Audit audit = fixture_audit();
  const std::string text = policy_reports_yaml(audit, ReportApi::policy_report, kTime);
  auto docs = parse_documents(text, "reports.yaml");
  ASSERT_TRUE(docs) << docs.error().str();
  const auto reports = policy_reports(audit, ReportApi::policy_report, kTime);
  ASSERT_EQ(docs->size(), reports.size());
  for (std::size_t i = 0; i < reports.size(); ++i) EXPECT_EQ((*docs)[i], reports[i]);
}

TEST(PolicyReport, AnEmptyAuditHasNoReports) {
  EXPECT_TRUE(policy_reports(Audit{}, ReportApi::policy_report, kTime).empty());
  EXPECT_EQ(policy_reports_yaml(Audit{}, ReportApi::open_reports, kTime), "");
}

TEST(PolicyReport, SplitReportsHoldAtMostTheCapAndWholeWorkloads) {
  const Audit audit = fixture_audit();
  const auto whole = policy_reports(audit, ReportApi::policy_report, kTime);
  const auto split = policy_reports(audit, ReportApi::policy_report, kTime, 4);
  ASSERT_GT(split.size(), whole.size());
  std::map<std::string, std::size_t> results_by_namespace;
  std::map<std::string, std::vector<std::string>> names_by_namespace;
  for (const auto& report : split) {
    const std::string ns = report["metadata"].value("namespace", std::string("-"));
    // 3 results a workload: a cap of 4 holds one workload a report.
    EXPECT_LE(report["results"].size(), 4U);
    EXPECT_EQ(report["results"].size(), 3U);
    std::set<std::string> workloads;
    std::map<std::string, std::size_t> counted;
    for (const auto& r : report["results"]) {
      workloads.insert(r["resources"][0]["name"].get<std::string>());
      ++counted[r["result"].get<std::string>()];
    }
    EXPECT_EQ(workloads.size(), 1U);
    for (const char* key : {"pass", "fail", "warn", "error", "skip"}) {
      EXPECT_EQ(report["summary"][key].get<std::size_t>(), counted[key]) << key;
    }
    results_by_namespace[ns] += report["results"].size();
    names_by_namespace[ns].push_back(report["metadata"]["name"].get<std::string>());
  }
  for (const auto& report : whole) {
    const std::string ns = report["metadata"].value("namespace", std::string("-"));
    EXPECT_EQ(results_by_namespace[ns], report["results"].size()) << ns;
    const auto& names = names_by_namespace[ns];
    for (std::size_t i = 0; i < names.size(); ++i) EXPECT_EQ(names[i], report_part_name(i));
  }
  EXPECT_EQ(report_part_name(0), "cudagate");
  EXPECT_EQ(report_part_name(2), "cudagate-2");
  // No cap, or one larger than any namespace: the reports of policy_reports().
  EXPECT_EQ(policy_reports(audit, ReportApi::policy_report, kTime, 0), whole);
  EXPECT_EQ(policy_reports(audit, ReportApi::policy_report, kTime, 100000), whole);
}

}  // namespace
}  // namespace cudagate

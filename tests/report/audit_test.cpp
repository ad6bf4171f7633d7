// What every audit format counts: results per verdict, --fail-on, the node groups, and the
// decision records of an audit with a workload that could not be judged.
#include "report/audit.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/audit_fixture.h"

namespace cudagate {
namespace {

using test_support::fixture_audit;
using test_support::workload_named;

AuditedWorkload with_verdict(Verdict v) {
  AuditedWorkload w;
  w.decision.verdict = v;
  return w;
}

TEST(Audit, ResultOfEachVerdict) {
  const std::vector<std::pair<Verdict, AuditResult>> rows = {
      {Verdict::pass, AuditResult::pass},          {Verdict::fail, AuditResult::fail},
      {Verdict::partial, AuditResult::warn},       {Verdict::unknown, AuditResult::warn},
      {Verdict::no_candidates, AuditResult::warn}, {Verdict::skip, AuditResult::skip}};
  for (const auto& [verdict, result] : rows) {
    EXPECT_EQ(result_of(with_verdict(verdict)), result) << to_string(verdict);
  }
  AuditedWorkload errored = with_verdict(Verdict::pass);
  errored.error = Error{"x", "bad"};
  EXPECT_EQ(result_of(errored), AuditResult::error);
}

TEST(Audit, FailOnThresholds) {
  struct Row {
    AuditResult result;
    bool on_fail, on_warn, on_never;
  };
  const std::vector<Row> rows = {{AuditResult::pass, false, false, false},
                                 {AuditResult::skip, false, false, false},
                                 {AuditResult::warn, false, true, false},
                                 {AuditResult::fail, true, true, false},
                                 {AuditResult::error, true, true, false}};
  for (const Row& r : rows) {
    EXPECT_EQ(fails(r.result, FailOn::fail), r.on_fail) << to_string(r.result);
    EXPECT_EQ(fails(r.result, FailOn::warn), r.on_warn) << to_string(r.result);
    EXPECT_EQ(fails(r.result, FailOn::never), r.on_never) << to_string(r.result);
  }
}

TEST(Audit, FixtureVerdicts) {
  const Audit audit = fixture_audit();
  EXPECT_EQ(audit.workloads.size(), 9U);
  EXPECT_EQ(audit.skipped, 2U);     // a Service and a ConfigMap
  EXPECT_EQ(audit.controlled, 1U);  // the embedder's pod
  EXPECT_TRUE(audit.broken.empty());
  EXPECT_EQ(workload_named(audit, "trainer").decision.verdict, Verdict::fail);
  EXPECT_EQ(workload_named(audit, "inference").decision.verdict, Verdict::partial);
  EXPECT_EQ(workload_named(audit, "notebook").decision.verdict, Verdict::pass);
  EXPECT_EQ(workload_named(audit, "web").decision.verdict, Verdict::skip);
  EXPECT_TRUE(workload_named(audit, "typo").error.has_value());
  const ResultCounts counts = count_results(audit);
  EXPECT_EQ(counts.fail, 1U);
  EXPECT_EQ(counts.error, 1U);
  EXPECT_EQ(counts.total(), 9U);
  EXPECT_TRUE(audit_fails(audit, FailOn::fail));
  EXPECT_FALSE(audit_fails(audit, FailOn::never));
}

TEST(Audit, GpuNodeGroupsLeaveOutNodesWithoutGpus) {
  const auto groups = gpu_node_groups(test_support::audit_inventory());
  ASSERT_EQ(groups.size(), 4U);  // the two T4s share their facts
  std::size_t nodes = 0;
  for (const auto& g : groups) {
    EXPECT_TRUE(g.facts.has_gpu);
    nodes += g.nodes;
  }
  EXPECT_EQ(nodes, 5U);
}

TEST(Audit, GpuNodeGroupsNameTheNodePools) {
  // examples/node-pools: a CPU node and two Karpenter NodePools at zero.
  std::ifstream in(std::string(CUDAGATE_SOURCE_DIR) + "/examples/node-pools/nodes.yaml");
  std::stringstream text;
  text << in.rdbuf();
  auto nodes = parse_nodes(text.str(), "nodes.yaml", &test_support::db());
  ASSERT_TRUE(nodes) << nodes.error().str();
  const auto groups = gpu_node_groups(Inventory::build(*nodes, test_support::db()));
  ASSERT_EQ(groups.size(), 2U);
  std::vector<std::string> pools;
  for (const auto& g : groups) {
    EXPECT_EQ(g.nodes, 0U);
    ASSERT_EQ(g.pools.size(), 1U);
    pools.push_back(g.pools.front());
  }
  EXPECT_EQ(pools, (std::vector<std::string>{"NodePool gpu-t4 (0 nodes now)",
                                             "NodePool gpu-h100 (0 nodes now)"}));
}

TEST(Audit, DecisionRecordsMarkWhatCouldNotBeJudged) {
  const Audit audit = fixture_audit();
  const nlohmann::json records = decision_records(audit);
  ASSERT_EQ(records.size(), audit.workloads.size());
  bool found = false;
  for (const auto& r : records) {
    EXPECT_EQ(r["apiVersion"], "cudagate.io/v1alpha1");
    EXPECT_EQ(r["kind"], "Decision");
    if (r["resource"]["name"] == "typo") {
      found = true;
      EXPECT_EQ(r["verdict"], "error");
      EXPECT_NE(r["error"].get<std::string>().find("cudagate.io/cuda-version"), std::string::npos);
    } else {
      EXPECT_TRUE(r.contains("groups")) << r.dump();
    }
  }
  EXPECT_TRUE(found);
}

TEST(Audit, WorkloadTitle) {
  EXPECT_EQ(workload_title(ResourceRef{"v1", "Pod", "ml", "a"}), "Pod ml/a");
  EXPECT_EQ(workload_title(ResourceRef{"batch/v1", "Job", "", "b"}), "Job b");
  EXPECT_EQ(workload_title(ResourceRef{"v1", "Pod", "", ""}), "Pod (unnamed)");
}

}  // namespace
}  // namespace cudagate

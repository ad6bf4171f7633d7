// The rollout plan on the fixture fleet and workloads of tests/fixtures/plan
// (its README lists them): what each change does to each workload, the
// node groups before and after, and the order.
#include "policy/plan/rollout_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "policy/plan/fleet_change.h"
#include "tests/support/fixtures.h"

namespace cudagate {
namespace {

using test_support::db;

std::string plan_fixture(const std::string& path) {
  std::ifstream in(std::string(CUDAGATE_TEST_DATA) + "/plan/" + path);
  if (!in) throw std::runtime_error("missing fixture " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Fixture {
  std::vector<Node> nodes;
  std::vector<Workload> workloads;
  Policy policy;

  Fixture() {
    nodes = *parse_nodes(plan_fixture("nodes.yaml"), "nodes.yaml");
    std::vector<std::string> files;
    for (const auto& e :
         std::filesystem::directory_iterator(std::string(CUDAGATE_TEST_DATA) + "/plan/workloads")) {
      files.push_back(e.path().filename().string());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      auto parsed = parse_workloads(plan_fixture("workloads/" + f), f);
      if (!parsed) throw std::runtime_error(parsed.error().str());
      std::vector<Workload> read_here = std::move(parsed).value();
      for (Workload& w : read_here) workloads.push_back(std::move(w));
    }
  }

  RolloutPlan plan(const FleetChanges& changes, bool order = false) const {
    auto after = apply_fleet_changes(nodes, changes, db());
    if (!after) throw std::runtime_error(after.error().str());
    PlanInputs in;
    in.before_nodes = &nodes;
    in.after_nodes = &*after;
    in.before_workloads = &workloads;
    in.after_workloads = &workloads;
    in.order = order;
    return plan_rollout(in, policy, db());
  }
};

const PlannedWorkload& find(const RolloutPlan& plan, const std::string& name) {
  for (const auto& w : plan.workloads) {
    if (w.before.decision.resource.name == name) return w;
  }
  throw std::runtime_error("no workload " + name);
}

FleetChanges drivers(const std::string& text) {
  FleetChanges c;
  c.drivers.push_back(*DriverChange::parse(text));
  return c;
}

TEST(RolloutPlan, T4To570HealsCuda124Images) {
  const Fixture f;
  const RolloutPlan plan = f.plan(drivers("pool=t4=570.124.06"));
  const PlannedWorkload& w = find(plan, "serve-cuda124");
  EXPECT_EQ(w.change, PlanChange::heals);
  EXPECT_EQ(w.before.decision.verdict, Verdict::fail);
  EXPECT_EQ(w.after.decision.verdict, Verdict::pass);
  EXPECT_EQ(plan.count(PlanChange::breaks), 0U);
  EXPECT_EQ(plan.count(PlanChange::heals), 1U);
  ASSERT_FALSE(plan.moves.empty());
  const NodeMove& t4 = plan.moves.front();  // changing groups first
  EXPECT_TRUE(t4.changes());
  EXPECT_EQ(t4.nodes, (std::vector<std::string>{"t4-1", "t4-2"}));
  EXPECT_EQ(t4.after->max_cuda->str(), "12.8");
  EXPECT_EQ(t4.runs_after, t4.runs_before + 1);
}

TEST(RolloutPlan, A100ToANewDriverMajorBreaksNothing) {
  const Fixture f;
  const RolloutPlan plan = f.plan(drivers("pool=a100=580.65.06"));
  EXPECT_EQ(plan.count(PlanChange::breaks), 0U);
  EXPECT_EQ(plan.count(PlanChange::narrows), 0U);
  EXPECT_EQ(find(plan, "trainer-sm80").after.decision.verdict, Verdict::pass);
  EXPECT_EQ(plan.moves.front().after->max_cuda->str(), "13.0");
}

TEST(RolloutPlan, H100ReplacementBreaksAnSm80OnlyBuildAndTheOrderSaysWhatToBuild) {
  const Fixture f;
  FleetChanges c;
  c.removals.emplace_back(*LabelSelector::parse("pool=a100"), "pool=a100");
  c.additions = *parse_nodes(plan_fixture("h100-pool.yaml"), "h100-pool.yaml");
  const RolloutPlan plan = f.plan(c, /*order=*/true);
  const PlannedWorkload& w = find(plan, "trainer-sm80");
  EXPECT_EQ(w.change, PlanChange::breaks);
  EXPECT_EQ(w.after.decision.verdict, Verdict::fail);
  EXPECT_EQ(find(plan, "a100-cuda124").change, PlanChange::unchanged);
  ASSERT_TRUE(plan.order);
  // The H100s can be added first; the A100s cannot go until the trainer is rebuilt.
  ASSERT_EQ(plan.order->first.size(), 1U);
  EXPECT_FALSE(plan.moves[plan.order->first[0]].before);
  ASSERT_EQ(plan.order->blocked.size(), 1U);
  const BlockedMove& b = plan.order->blocked[0];
  EXPECT_FALSE(plan.moves[b.move].after);
  ASSERT_EQ(b.rebuilds.size(), 1U);
  EXPECT_EQ(b.rebuilds[0].rule, Rule::gpu_arch);
  EXPECT_NE(b.rebuilds[0].fix.find("TORCH_CUDA_ARCH_LIST=\"8.0;9.0\""), std::string::npos)
      << b.rebuilds[0].fix;
}

TEST(RolloutPlan, RemovingTheLastCompatibleGroupLeavesNoCandidates) {
  const Fixture f;
  FleetChanges c;
  c.removals.emplace_back(*LabelSelector::parse("pool=l4"), "pool=l4");
  const RolloutPlan plan = f.plan(c, true);
  const PlannedWorkload& w = find(plan, "l4-inference");
  EXPECT_EQ(w.before.decision.verdict, Verdict::pass);
  EXPECT_EQ(w.after.decision.verdict, Verdict::no_candidates);
  EXPECT_EQ(w.change, PlanChange::breaks);
  ASSERT_EQ(plan.order->blocked.size(), 1U);
  EXPECT_NE(plan.order->blocked[0].rebuilds[0].fix.find("no node it may run on remains"),
            std::string::npos);
}

TEST(RolloutPlan, TwoMovesThatEachBreakNothingAloneAreOrderedAndTheSecondBlocked) {
  // any-gpu runs everywhere; with its arch list cut to 8.9 it runs on the L4 only,
  // so removing the L4s breaks it whatever else moves.
  Fixture f;
  for (Workload& w : f.workloads) {
    if (w.resource.name != "any-gpu") continue;
    for (EnvVar& e : w.spec.containers[0].env) {
      if (e.name == "TORCH_CUDA_ARCH_LIST") e.value = "8.9";
    }
  }
  FleetChanges c = drivers("pool=t4=570.124.06");
  c.removals.emplace_back(*LabelSelector::parse("pool=l4"), "pool=l4");
  const RolloutPlan plan = f.plan(c, true);
  ASSERT_EQ(plan.order->first.size(), 1U);
  EXPECT_TRUE(plan.moves[plan.order->first[0]].after);  // the driver change
  ASSERT_EQ(plan.order->blocked.size(), 1U);
  EXPECT_EQ(plan.order->blocked[0].breaks.size(), 2U);  // l4-inference and any-gpu
}

TEST(RolloutPlan, ChangeBetween) {
  auto judged = [](Verdict v, std::size_t compatible) {
    JudgedWorkload j;
    j.decision.verdict = v;
    j.decision.compatible = compatible;
    return j;
  };
  EXPECT_EQ(change_between(judged(Verdict::pass, 2), judged(Verdict::fail, 0)), PlanChange::breaks);
  EXPECT_EQ(change_between(judged(Verdict::pass, 2), judged(Verdict::no_candidates, 0)),
            PlanChange::breaks);
  EXPECT_EQ(change_between(judged(Verdict::fail, 0), judged(Verdict::partial, 1)),
            PlanChange::heals);
  EXPECT_EQ(change_between(judged(Verdict::pass, 2), judged(Verdict::partial, 1)),
            PlanChange::narrows);
  EXPECT_EQ(change_between(judged(Verdict::partial, 1), judged(Verdict::pass, 1)),
            PlanChange::widens);
  EXPECT_EQ(change_between(judged(Verdict::fail, 0), judged(Verdict::fail, 0)),
            PlanChange::unchanged);
  EXPECT_EQ(change_between(judged(Verdict::skip, 0), judged(Verdict::skip, 0)),
            PlanChange::unchanged);
  JudgedWorkload error = judged(Verdict::skip, 0);
  error.error = Error{"x", "bad"};
  EXPECT_EQ(change_between(judged(Verdict::pass, 1), error), PlanChange::breaks);
}

}  // namespace
}  // namespace cudagate

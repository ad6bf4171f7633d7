// `cudagate plan`: the fixture fleet and workloads of tests/fixtures/plan under driver, node
// pool and image changes, byte for byte with the golden files, what each change does to each
// workload, the exit status when something breaks, and the one-line errors of bad changes.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "tests/support/cli_run.h"

namespace cudagate {
namespace {

using nlohmann::json;
using test_support::cli_lines;
using test_support::CliRun;
using test_support::CliRunOptions;
using test_support::run_cli;
using test_support::test_data;

// The A100 pool replaced by H100s.
const std::vector<std::string> kH100Pool = {"--remove-nodes", "pool=a100", "--add-nodes",
                                            "h100-pool.yaml"};

// `cudagate plan --offline -f workloads --nodes nodes.yaml ARGS`, run from
// tests/fixtures/plan as the golden files were made (places relative),
// with their timestamps.
CliRun run_plan(const std::vector<std::string>& args) {
  std::vector<std::string> all = {"plan", "--offline", "-f", "workloads", "--nodes", "nodes.yaml"};
  all.insert(all.end(), args.begin(), args.end());
  CliRunOptions options;
  options.cwd = test_data("plan");
  options.env = {{"SOURCE_DATE_EPOCH", "1764584444"}};
  return run_cli(add_plan_command, all, options);
}

std::vector<std::string> plus(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// {workload name: change} of a JSON plan.
std::map<std::string, std::string> plan_changes(const json& plan) {
  std::map<std::string, std::string> out;
  for (const auto& w : plan["workloads"]) out[w["after"]["resource"]["name"]] = w["change"];
  return out;
}

TEST(PlanCommand, EveryCaseMatchesItsGoldenFile) {
  struct Row {
    std::string golden;
    std::vector<std::string> args;
    int status;
  };
  const std::vector<Row> rows = {
      {"t4-570.txt", {"--set-driver", "pool=t4=570.124.06"}, 0},
      {"a100-580.txt", {"--set-driver", "pool in (a100)=580.65.06"}, 0},
      {"h100-order.txt", plus(kH100Pool, {"--order"}), 1},
      {"h100-order.json", plus(kH100Pool, {"--order", "--format", "json"}), 1},
      {"h100.junit.xml", plus(kH100Pool, {"--format", "junit"}), 1},
      {"h100.html", plus(kH100Pool, {"--order", "--format", "html"}), 1},
  };
  for (const auto& row : rows) {
    const auto run = run_plan(row.args);
    EXPECT_EQ(run.status, row.status) << row.golden << "\n" << run.err;
    EXPECT_EQ(run.err, "") << row.golden;
    EXPECT_EQ(run.out, test_support::file_text(test_data("plan/golden/" + row.golden)))
        << row.golden;
  }
}

TEST(PlanCommand, NewerT4DriverHealsTheCuda124Image) {
  const auto run = run_plan({"--set-driver", "pool=t4=570.124.06", "--format", "json"});
  ASSERT_EQ(run.status, 0) << run.err;
  const auto plan = json::parse(run.out);
  const auto changes = plan_changes(plan);
  EXPECT_EQ(changes.at("serve-cuda124"), "heals");
  for (const auto& [name, change] : changes) EXPECT_NE(change, "breaks") << name;
  const auto& t4 = plan["nodeGroups"][0];
  EXPECT_EQ(t4["change"], "changed");
  EXPECT_EQ(t4["before"]["maxCuda"], "12.2");
  EXPECT_EQ(t4["after"]["maxCuda"], "12.8");
  EXPECT_EQ(t4["after"]["driver"], "570.124.06");
}

TEST(PlanCommand, ANewDriverMajorOnTheA100sChangesNothing) {
  const auto run = run_plan({"--set-driver", "pool=a100=580.65.06", "--format", "json"});
  ASSERT_EQ(run.status, 0) << run.err;
  const auto plan = json::parse(run.out);
  for (const auto& [name, change] : plan_changes(plan)) EXPECT_EQ(change, "unchanged") << name;
  EXPECT_EQ(plan["nodeGroups"][0]["after"]["maxCuda"], "13.0");
}

TEST(PlanCommand, WhatBreaksExitsOne) {
  const auto run = run_plan(plus(kH100Pool, {"--format", "json"}));
  ASSERT_EQ(run.status, 1) << run.err;
  const auto plan = json::parse(run.out);
  const auto changes = plan_changes(plan);
  EXPECT_EQ(changes.at("trainer-sm80"), "breaks");
  EXPECT_EQ(changes.at("a100-cuda124"), "unchanged");
  ASSERT_FALSE(plan["workloads"].empty());
  const auto& first = plan["workloads"][0];  // breaks come first
  EXPECT_EQ(first["change"], "breaks");
  EXPECT_EQ(first["after"]["verdict"], "fail");
  EXPECT_EQ(first["after"]["groups"][0]["findings"][0]["rule"], "gpu-arch");

  // The last pool an L4 workload can run on, removed: no candidates.
  const auto removed = run_plan({"--remove-nodes", "pool=l4", "--format", "json"});
  ASSERT_EQ(removed.status, 1) << removed.err;
  bool seen = false;
  const auto removed_plan = json::parse(removed.out);
  for (const auto& w : removed_plan["workloads"]) {
    if (w["after"]["resource"]["name"] != "l4-inference") continue;
    seen = true;
    EXPECT_EQ(w["before"]["verdict"], "pass");
    EXPECT_EQ(w["after"]["verdict"], "no-candidates");
    EXPECT_EQ(w["change"], "breaks");
  }
  EXPECT_TRUE(seen);
}

TEST(PlanCommand, OrderNamesWhatMovesFirstAndWhatToRebuild) {
  const auto run = run_plan(
      plus(kH100Pool, {"--set-driver", "pool=t4=570.124.06", "--order", "--format", "json"}));
  ASSERT_EQ(run.status, 1) << run.err;
  const auto order = json::parse(run.out)["order"];
  std::vector<std::string> first;
  for (const auto& move : order["first"]) first.push_back(move["change"]);
  EXPECT_EQ(first, (std::vector<std::string>{"added", "changed"}));
  ASSERT_EQ(order["blocked"].size(), 1U);
  const auto& blocked = order["blocked"][0];
  EXPECT_EQ(blocked["change"], "removed");
  EXPECT_EQ(blocked["breaks"], json::array({"Deployment ml/trainer-sm80"}));
  EXPECT_NE(
      blocked["rebuild"][0]["fix"].get<std::string>().find("TORCH_CUDA_ARCH_LIST=\"8.0;9.0\""),
      std::string::npos);
}

TEST(PlanCommand, SetImageJudgesTheNewImage) {
  const auto run =
      run_plan({"--set-image",
                "inference/Deployment/serve-cuda124:main=pytorch/pytorch:2.1.2-cuda12.1-"
                "cudnn8-runtime",
                "--format", "json"});
  ASSERT_EQ(run.status, 0) << run.err;
  const auto plan = json::parse(run.out);
  const auto& w = plan["workloads"][0];
  EXPECT_EQ(w["change"], "heals");
  EXPECT_EQ(w["imageChanged"], true);
  EXPECT_EQ(w["after"]["containers"][0]["cuda"]["value"], "12.1");
}

TEST(PlanCommand, BadChangesAndInputsAreOneLineNamingTheFlag) {
  struct Row {
    std::vector<std::string> args;
    std::string fragment;
  };
  const std::vector<Row> rows = {
      {{}, "nothing to plan: give --set-driver, --remove-nodes, --add-nodes or --set-image"},
      {{"--set-driver", "pool=t5=570.124.06"},
       "--set-driver \"pool=t5=570.124.06\": selects no node"},
      {{"--set-driver", "pool in t4=570.124.06"}, "expected '(' to open the set of values"},
      {{"--set-driver", "pool=t4=5x"}, "expected a driver version"},
      {{"--remove-nodes", "pool="}, "--remove-nodes \"pool=\": selects no node"},
      {{"--set-image", "Deployment/nope=x:1"}, "matches no workload"},
      {{"--set-image", "trainer=x:1"}, "[NAMESPACE/]KIND/NAME"},
      {{"--add-nodes", "nodes.yaml"}, "already in the inventory"},
      {{"--add-nodes", "missing.yaml"}, "missing.yaml: cannot read: No such file or directory"},
      {{"--set-driver", "pool=t4=570.124.06", "--format", "yaml"}, "--format"},
      {{"--set-driver", "pool=t4=570.124.06", "--kubeconfig", "kc.yaml"},
       "--kubeconfig: only with --cluster"},
      {{"--set-driver", "pool=t4=570.124.06", "--cluster"},
       "--cluster: give either -f or --cluster, not both"},
      {{"--set-driver", "pool=t4=570.124.06", "--add-nodes", "-", "-f", "-"},
       "stdin (\"-\") can be read only once, by one -f, --nodes or --add-nodes"},
  };
  for (const auto& row : rows) {
    const auto run = run_plan(row.args);
    EXPECT_EQ(run.status, 2) << row.fragment << "\n" << run.out;
    EXPECT_EQ(run.out, "") << row.fragment;
    const auto lines = cli_lines(run.err);
    ASSERT_EQ(lines.size(), 1U) << run.err;
    EXPECT_TRUE(lines[0].starts_with("cudagate: error: ")) << lines[0];
    EXPECT_NE(lines[0].find(row.fragment), std::string::npos) << lines[0];
  }
}

TEST(PlanCommand, InputsThatAreMissingOrUnreadable) {
  const test_support::CliTempDir dir;
  CliRunOptions options;
  options.env = {{"SOURCE_DATE_EPOCH", "1764584444"}, {"KUBECONFIG", std::nullopt}};
  struct Row {
    std::vector<std::string> args;
    std::string fragment;
  };
  const std::string nodes = test_data("plan/nodes.yaml");
  const std::vector<Row> rows = {
      {{"plan", "--set-driver", "pool=t4=570.124.06", "--nodes", nodes}, "-f: required"},
      {{"plan", "--set-driver", "pool=t4=570.124.06", "-f", test_data("plan/workloads")},
       "--nodes: required"},
      {{"plan", "--set-driver", "pool=t4=570.124.06", "-f", dir.path("gone"), "--nodes", nodes},
       dir.path("gone") + ": no such file or directory"},
      {{"plan", "--set-driver", "pool=t4=570.124.06", "--cluster", "--kubeconfig",
        dir.path("kubeconfig")},
       dir.path("kubeconfig") + ": "},
  };
  for (const auto& row : rows) {
    const auto run = run_cli(add_plan_command, row.args, options);
    EXPECT_EQ(run.status, 2) << row.fragment;
    EXPECT_EQ(run.out, "");
    const auto lines = cli_lines(run.err);
    ASSERT_EQ(lines.size(), 1U) << run.err;
    EXPECT_TRUE(lines[0].starts_with("cudagate: error: ")) << lines[0];
    EXPECT_NE(lines[0].find(row.fragment), std::string::npos) << lines[0];
  }
}

}  // namespace
}  // namespace cudagate

// `cudagate check`: the decision of an image, flags or manifests against one node or an
// inventory (tests/fixtures/cli, examples/), as text and JSON, its exit status for pass,
// findings and bad input, and the one error line that names the flag, file or field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
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
using test_support::CliTempDir;
using test_support::run_cli;
using test_support::test_data;

// `cudagate check --offline ARGS`: judged from what the pods and references
// say, whatever registries the machine can reach.
CliRun run_check(std::vector<std::string> args, const CliRunOptions& options = {}) {
  args.insert(args.begin(), {"check", "--offline"});
  return run_cli(add_check_command, args, options);
}

std::string cli_nodes() {
  return test_data("cli/nodes.json");
}

// The group of `decision` that lists `node`; null when none does.
const json* check_group_of(const json& decision, const std::string& node) {
  for (const auto& group : decision["groups"]) {
    for (const auto& name : group["nodes"]) {
      if (name == node) return &group;
    }
  }
  return nullptr;
}

std::set<std::string> check_rules_of(const json& group) {
  std::set<std::string> rules;
  for (const auto& finding : group["findings"]) rules.insert(finding["rule"]);
  return rules;
}

TEST(CheckCommand, ImageOnOneNodeOfFlagsPassesThroughForwardCompatibility) {
  // nvcr.io/nvidia/pytorch:24.01-py3 is CUDA 12.3; driver 535.129.03 on a
  // T4, a data-center GPU, runs it through forward compatibility.
  const auto run = run_check({"--image", "nvcr.io/nvidia/pytorch:24.01-py3", "--driver",
                              "535.129.03", "--gpu", "T4", "-o", "json"});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.err, "");
  const auto decision = json::parse(run.out);
  EXPECT_EQ(decision["apiVersion"], "cudagate.io/v1alpha1");
  EXPECT_EQ(decision["kind"], "Decision");
  EXPECT_EQ(
      decision["resource"],
      json({{"apiVersion", "v1"}, {"kind", "Pod"}, {"namespace", "default"}, {"name", "check"}}));
  EXPECT_EQ(decision["verdict"], "pass");
  EXPECT_EQ(decision["candidates"], 1);
  EXPECT_EQ(decision["compatible"], 1);
  const auto& container = decision["containers"][0];
  EXPECT_EQ(container["name"], "main");
  EXPECT_EQ(container["image"], "nvcr.io/nvidia/pytorch:24.01-py3");
  EXPECT_EQ(container["cuda"], json({{"value", "12.3"}, {"source", "inference"}}));
  const json* node = check_group_of(decision, "flag-node");
  ASSERT_NE(node, nullptr) << decision.dump(1);
  EXPECT_EQ((*node)["driver"], "535.129.03");
  EXPECT_EQ((*node)["maxCuda"], "12.2");
  EXPECT_EQ((*node)["computeCapability"], "7.5");

  const auto text = run_check(
      {"--image", "nvcr.io/nvidia/pytorch:24.01-py3", "--driver", "535.129.03", "--gpu", "T4"});
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_TRUE(text.out.starts_with("PASS  Pod default/check: 1 of 1 candidate nodes can run it\n"))
      << text.out;
  EXPECT_NE(text.out.find("  compatible  1 node: flag-node\n"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find('\x1b'), std::string::npos) << "colour on a file";
}

TEST(CheckCommand, FlagsAgainstTheInventoryArePartial) {
  // CUDA 12.4 with SASS for 8.0 and 9.0: the T4s fail both rules, the A100
  // on driver 525 fails cuda-driver, the A100 on 550 and the H100 run it.
  const auto run =
      run_check({"--cuda", "12.4", "--arch-list", "8.0;9.0", "--nodes", cli_nodes(), "-o", "json"});
  ASSERT_EQ(run.status, 1) << run.err;
  EXPECT_EQ(run.err, "");
  const auto decision = json::parse(run.out);
  EXPECT_EQ(decision["verdict"], "partial");
  EXPECT_EQ(decision["candidates"], 5);
  EXPECT_EQ(decision["compatible"], 2);
  EXPECT_EQ(decision["containers"][0]["cuda"], json({{"value", "12.4"}, {"source", "flag"}}));
  EXPECT_EQ(decision["containers"][0]["archs"], json({{"value", "8.0;9.0"}, {"source", "flag"}}));
  const json* t4 = check_group_of(decision, "gpu-t4-1");
  ASSERT_NE(t4, nullptr);
  EXPECT_EQ((*t4)["count"], 2);
  EXPECT_EQ(check_rules_of(*t4), (std::set<std::string>{"cuda-driver", "gpu-arch"}));
  const json* old_a100 = check_group_of(decision, "gpu-a100-2");
  ASSERT_NE(old_a100, nullptr);
  EXPECT_EQ(check_rules_of(*old_a100), std::set<std::string>{"cuda-driver"});
  EXPECT_NE((*old_a100)["findings"][0]["fix"].get<std::string>().find("550.54.14"),
            std::string::npos);
  EXPECT_EQ(check_group_of(decision, "cpu-1"), nullptr);

  const auto text = run_check({"--cuda", "12.4", "--arch-list", "8.0;9.0", "--nodes", cli_nodes()});
  ASSERT_EQ(text.status, 1);
  EXPECT_TRUE(text.out.starts_with("PARTIAL  Pod default/check: 2 of 5 candidate nodes can run it"))
      << text.out;
  EXPECT_NE(text.out.find("\n    cuda     12.4  (flag)\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("\n  incompatible  2 nodes: gpu-t4-1, gpu-t4-2\n    driver 535.129.03, "
                          "max CUDA 12.2, compute capability 7.5"),
            std::string::npos)
      << text.out;
  // Incompatible groups before compatible ones.
  EXPECT_LT(text.out.find("  incompatible  "), text.out.find("  compatible  "));
}

TEST(CheckCommand, ManifestVerdictsAndExitStatus) {
  struct Row {
    std::string file;
    std::string kind;
    std::string name;
    std::string verdict;
    int status;
    std::size_t candidates;
    std::size_t compatible;
  };
  const std::vector<Row> rows = {
      {"pod.yaml", "Pod", "trainer", "fail", 1, 2, 0},
      {"pod-pass.yaml", "Pod", "notebook", "pass", 0, 5, 5},
      {"deployment.yaml", "Deployment", "inference", "partial", 1, 5, 4},
  };
  for (const auto& row : rows) {
    const auto run =
        run_check({"-f", test_data("cli/" + row.file), "--nodes", cli_nodes(), "-o", "json"});
    EXPECT_EQ(run.status, row.status) << row.file << "\n" << run.err;
    EXPECT_EQ(run.err, "") << row.file;
    const auto decision = json::parse(run.out);
    EXPECT_EQ(decision["resource"]["kind"], row.kind) << row.file;
    EXPECT_EQ(decision["resource"]["name"], row.name) << row.file;
    EXPECT_EQ(decision["verdict"], row.verdict) << row.file;
    EXPECT_EQ(decision["candidates"], row.candidates) << row.file;
    EXPECT_EQ(decision["compatible"], row.compatible) << row.file;
  }
}

TEST(CheckCommand, SeveralWorkloadsGetAnArrayAndASummary) {
  const auto run =
      run_check({"-f", test_data("cli/multi.yaml"), "--nodes", cli_nodes(), "-o", "json"});
  ASSERT_EQ(run.status, 1) << run.err;
  std::vector<std::string> got;
  for (const auto& d : json::parse(run.out)) {
    got.push_back(d["resource"]["kind"].get<std::string>() + " " +
                  d["resource"]["name"].get<std::string>() + " " + d["verdict"].get<std::string>());
  }
  EXPECT_EQ(got, (std::vector<std::string>{"Pod notebook pass", "Deployment inference partial",
                                           "Pod web skip"}));

  const auto text = run_check({"-f", test_data("cli/multi.yaml"), "--nodes", cli_nodes()});
  ASSERT_EQ(text.status, 1);
  EXPECT_TRUE(text.out.starts_with("PASS  Pod research/notebook")) << text.out;
  EXPECT_NE(text.out.find("\n\nPARTIAL  Deployment serving/inference"), std::string::npos);
  EXPECT_NE(text.out.find("\n\nSKIP  Pod serving/web: no GPU container"), std::string::npos)
      << text.out;
  EXPECT_TRUE(text.out.ends_with("\n3 workloads: 1 pass, 1 partial, 1 skip\n")) << text.out;

  // Pass and skip alone exit 0; the files are read in the order given.
  const auto list =
      run_check({"-f", test_data("cli/pods-list.json"), "-f", test_data("cli/pod-pass.yaml"),
                 "--nodes", cli_nodes(), "-o", "json"});
  ASSERT_EQ(list.status, 0) << list.err;
  std::vector<std::string> verdicts;
  for (const auto& d : json::parse(list.out)) verdicts.push_back(d["verdict"]);
  EXPECT_EQ(verdicts, (std::vector<std::string>{"pass", "skip", "pass"}));
}

TEST(CheckCommand, ManifestFromStdin) {
  CliRunOptions options;
  options.stdin_text = test_support::file_text(test_data("cli/pod-pass.yaml"));
  const auto run = run_check({"-f", "-", "--nodes", cli_nodes(), "-o", "json"}, options);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(json::parse(run.out)["resource"]["name"], "notebook");
}

TEST(CheckCommand, ExamplesWithTheirPolicy) {
  // examples/pods: each file's comment states its verdict.
  const std::vector<std::pair<std::string, std::pair<std::string, int>>> rows = {
      {"notebook.yaml", {"pass", 0}},
      {"finetune-t4.yaml", {"fail", 1}},
      {"train-sm90.yaml", {"partial", 1}},
      {"inference-deployment.yaml", {"partial", 1}},
  };
  for (const auto& [file, expected] : rows) {
    const auto run = run_check({"-f", test_support::source_file("examples/pods/" + file), "--nodes",
                                test_support::source_file("examples/nodes.yaml"), "--config",
                                test_support::source_file("examples/policy.yaml"), "-o", "json"});
    EXPECT_EQ(run.status, expected.second) << file << "\n" << run.err;
    const auto decision = json::parse(run.out);
    EXPECT_EQ(decision["verdict"], expected.first) << file;
    // gpu-a100-04 is cordoned and cpu-01 has no GPU: never a candidate.
    EXPECT_EQ(check_group_of(decision, "gpu-a100-04"), nullptr) << file;
    EXPECT_EQ(check_group_of(decision, "cpu-01"), nullptr) << file;
  }
}

TEST(CheckCommand, UnknownImageIsUnknownWithAHint) {
  const auto run = run_check({"--image", "ubuntu:22.04", "--driver", "550.54.15", "--gpu", "T4"});
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(run.out.starts_with("UNKNOWN  Pod default/check")) << run.out;
  EXPECT_NE(run.out.find("\n    cuda     unknown\n"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("note: nothing is known about the image"), std::string::npos);
}

TEST(CheckCommand, OneNodeOfFlags) {
  struct Row {
    std::vector<std::string> args;
    std::string verdict;
    int status;
    std::set<std::string> rules;    // of the flag node's findings
    std::set<std::string> unknown;  // of those that say a value is unknown
  };
  const std::vector<Row> rows = {
      // BF16 needs 8.0; a T4 is 7.5.
      {{"--cuda", "12.1", "--min-compute-capability", "8.0", "--driver", "550.54.15", "--gpu",
        "T4"},
       "fail",
       1,
       {"gpu-feature"},
       {}},
      // The GPU Feature Discovery label value names the product too.
      {{"--cuda", "12.2", "--driver", "535.129.03", "--gpu", "Tesla-T4"}, "pass", 0, {}, {}},
      // Without --gpu the CUDA rule still decides; the capability is unknown.
      {{"--cuda", "12.4", "--driver", "535.129.03"},
       "fail",
       1,
       {"cuda-driver", "gpu-arch"},
       {"gpu-arch"}},
  };
  for (const auto& row : rows) {
    auto args = row.args;
    args.insert(args.end(), {"-o", "json"});
    const auto run = run_check(args);
    EXPECT_EQ(run.status, row.status) << row.args[1] << "\n" << run.err;
    const auto decision = json::parse(run.out);
    EXPECT_EQ(decision["verdict"], row.verdict) << row.args[1];
    const json* node = check_group_of(decision, "flag-node");
    ASSERT_NE(node, nullptr);
    EXPECT_EQ(check_rules_of(*node), row.rules) << row.args[1];
    std::set<std::string> unknown;
    for (const auto& finding : (*node)["findings"]) {
      if (finding.value("unknown", false)) unknown.insert(finding["rule"].get<std::string>());
    }
    EXPECT_EQ(unknown, row.unknown) << row.args[1];
  }
}

TEST(CheckCommand, ClaimsOutputAddsTheSelectorToTheTemplate) {
  const auto run = run_check(
      {"--nodes", test_data("dra/fleet.yaml"), "-f", test_data("dra/pods.yaml"), "-o", "claims"});
  ASSERT_EQ(run.status, 0) << run.err;
  const auto list = json::parse(run.out);
  EXPECT_EQ(list["apiVersion"], "v1");
  EXPECT_EQ(list["kind"], "List");
  const json* one_gpu = nullptr;
  for (const auto& item : list["items"]) {
    if (item["metadata"]["name"] == "one-gpu") one_gpu = &item;
  }
  ASSERT_NE(one_gpu, nullptr) << run.out;
  const auto& selectors =
      (*one_gpu)["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"];
  ASSERT_FALSE(selectors.empty());
  EXPECT_NE(selectors.back()["cel"]["expression"].get<std::string>().find(
                "cudaDriverVersion.compareTo(semver(\"12.4.0\")) >= 0"),
            std::string::npos)
      << selectors;
  EXPECT_NE(
      (*one_gpu)["metadata"]["annotations"]["cudagate.io/device-selector"].get<std::string>().find(
          "train-cuda124"),
      std::string::npos);
}

// Bad usage and unreadable input: status 2, nothing on stdout, one line on
// stderr naming what to fix.
struct CheckUsageRow {
  std::vector<std::string> args;
  std::vector<std::string> fragments;  // each in the line
  std::string line;                    // the whole line, when given
};

void expect_check_usage_error(const CheckUsageRow& row, const CliRunOptions& options = {}) {
  const auto run = run_check(row.args, options);
  const std::string what = row.args.empty() ? "" : row.args.front() + " " + row.args.back();
  EXPECT_EQ(run.status, 2) << what << "\n" << run.out;
  EXPECT_EQ(run.out, "") << what;
  const auto lines = cli_lines(run.err);
  ASSERT_EQ(lines.size(), 1U) << what << "\n" << run.err;
  EXPECT_TRUE(lines[0].starts_with("cudagate: error: ")) << lines[0];
  if (!row.line.empty()) {
    EXPECT_EQ(lines[0], row.line);
  }
  for (const auto& fragment : row.fragments) {
    EXPECT_NE(lines[0].find(fragment), std::string::npos) << lines[0] << "\nlacks " << fragment;
  }
}

TEST(CheckCommand, UnreadableOrInvalidFilesNameTheFile) {
  const CliTempDir dir;
  const std::string missing = dir.path("nodes.json");
  const std::string config_map =
      dir.write("config.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n");
  const std::vector<CheckUsageRow> rows = {
      {{"--cuda", "12.4", "--nodes", missing},
       {},
       "cudagate: error: " + missing + ": cannot read: No such file or directory"},
      {{"-f", dir.path("pod.yaml"), "--nodes", cli_nodes()},
       {},
       "cudagate: error: " + dir.path("pod.yaml") + ": cannot read: No such file or directory"},
      {{"-f", dir.dir(), "--nodes", cli_nodes()}, {dir.dir(), "cannot read: Is a directory"}, ""},
      {{"-f", test_data("cli/invalid.yaml"), "--nodes", cli_nodes()}, {"invalid.yaml:"}, ""},
      {{"--cuda", "12.4", "--nodes", test_data("cli/invalid.json")}, {"invalid.json"}, ""},
      {{"-f", test_data("cli/no-containers.yaml"), "--nodes", cli_nodes()},
       {"no-containers.yaml", "spec.containers"},
       ""},
      {{"-f", test_data("cli/bad-annotation.yaml"), "--nodes", cli_nodes()},
       {"bad-annotation.yaml", "Pod ml/bad", "cudagate.io/cuda-version", "\"12.x\""},
       ""},
      {{"-f", config_map, "--nodes", cli_nodes()}, {config_map, "found none"}, ""},
      {{"--cuda", "12.4", "--driver", "550.54.15", "--config", test_data("cli/bad-policy.yaml")},
       {"bad-policy.yaml", "archMatching"},
       ""},
      {{"--cuda", "12.4", "--driver", "550.54.15", "--config", dir.path("policy.yaml")},
       {},
       "cudagate: error: " + dir.path("policy.yaml") + ": cannot read: No such file or directory"},
  };
  for (const auto& row : rows) expect_check_usage_error(row);
}

TEST(CheckCommand, BadFlagValuesNameTheFlag) {
  const std::vector<CheckUsageRow> rows = {
      {{"--cuda", "12.x", "--nodes", cli_nodes()},
       {},
       "cudagate: error: --cuda: expected a CUDA version like 12.4 or 12.4.1, got \"12.x\""},
      {{"--cuda", "12.4", "--arch-list", "8.0;Amprere", "--nodes", cli_nodes()},
       {"--arch-list", "Amprere"},
       ""},
      {{"--arch-list", "8.0;9.x", "--driver", "550.54.15"}, {"--arch-list", "9.x"}, ""},
      {{"--cuda", "12.4", "--min-compute-capability", "eight", "--driver", "550.54.15"},
       {"--min-compute-capability", "\"eight\""},
       ""},
      {{"--cuda", "12.4", "--driver", "550.54.15", "--gpu", "Z100"},
       {"--gpu", "\"Z100\"", "such as ", "cudagate db show lists them all"},
       ""},
      {{"--cuda", "12.4", "--driver", "latest"}, {"--driver", "\"latest\""}, ""},
      {{"--image", "Not An Image", "--driver", "550.54.15"}, {"--image"}, ""},
      {{"--cuda", "12.4", "--driver", "550.54.15", "--output", "yaml"}, {"--output", "yaml"}, ""},
      {{"--cuda", "12.4", "--driver", "550.54.15", "--frobnicate"}, {"--frobnicate"}, ""},
      {{"--cuda", "12.4", "--driver", "550.54.15", "--log-level", "loud"}, {"--log-level"}, ""},
  };
  for (const auto& row : rows) expect_check_usage_error(row);
}

TEST(CheckCommand, FlagsThatExcludeOrNeedEachOther) {
  const std::vector<CheckUsageRow> rows = {
      {{"--cuda", "12.4"}, {"--nodes: required"}, ""},
      {{"--cuda", "12.4", "--driver", "550.54.15", "--nodes", cli_nodes()},
       {"--nodes", "--driver"},
       ""},
      {{"--driver", "550.54.15"}, {"nothing to check"}, ""},
      {{"--image", "nvidia/cuda:12.4.1-base-ubuntu22.04", "-f", test_data("cli/pod.yaml"),
        "--nodes", cli_nodes()},
       {"--image", "-f"},
       ""},
      {{"-f", "-", "--nodes", "-"}, {"stdin"}, ""},
  };
  for (const auto& row : rows) expect_check_usage_error(row);
}

}  // namespace
}  // namespace cudagate

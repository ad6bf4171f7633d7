// `cudagate audit`: the fixture manifests (tests/fixtures/audit) against tests/fixtures/cli's
// nodes in every format, byte for byte with the golden files; folders, stdin and broken
// documents; the exit status at each --fail-on; and the one-line errors of bad usage.
#include <gtest/gtest.h>

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

// The reports' timestamps of the golden files.
constexpr const char* kAuditEpoch = "1764584444";

// `cudagate audit --offline ARGS`, judged from the manifests alone, with
// the golden files' timestamps.
CliRun run_audit(std::vector<std::string> args, CliRunOptions options = {}) {
  args.insert(args.begin(), {"audit", "--offline"});
  options.env.emplace_back("SOURCE_DATE_EPOCH", kAuditEpoch);
  return run_cli(add_audit_command, args, options);
}

std::string audit_nodes() {
  return test_data("cli/nodes.json");
}

std::vector<std::string> audit_names(const json& records) {
  std::vector<std::string> out;
  for (const auto& r : records) out.push_back(r["resource"]["name"]);
  return out;
}

TEST(AuditCommand, EveryFormatMatchesItsGoldenFile) {
  // Run from tests/fixtures/audit, as the golden files were made, so that
  // places are relative.
  const std::vector<std::pair<std::string, std::string>> formats = {
      {"table", "audit.txt"},
      {"json", "audit.json"},
      {"policyreport", "policyreport.yaml"},
      {"openreports", "openreports.yaml"},
      {"junit", "junit.xml"},
      {"html", "audit.html"},
  };
  CliRunOptions options;
  options.cwd = test_data("audit");
  for (const auto& [format, golden] : formats) {
    const auto run =
        run_audit({"manifests", "--nodes", "../cli/nodes.json", "--format", format}, options);
    EXPECT_EQ(run.status, 1) << format << "\n" << run.err;  // a fail and an error
    EXPECT_EQ(run.err, "") << format;
    EXPECT_EQ(run.out, test_support::file_text(test_data("audit/golden/" + golden))) << format;
  }
}

TEST(AuditCommand, BrokenDocumentsAreReportedAndTheRestAudited) {
  const auto run =
      run_audit({test_data("audit/broken"), "--nodes", audit_nodes(), "--format", "json"});
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(audit_names(json::parse(run.out)),
            (std::vector<std::string>{"notebook", "first", "last"}));
  const auto lines = cli_lines(run.err);
  ASSERT_EQ(lines.size(), 3U) << run.err;
  for (const auto& line : lines) EXPECT_TRUE(line.starts_with("cudagate: error: ")) << line;
  EXPECT_NE(lines[0].find("broken/mixed.yaml:23: invalid YAML"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("broken/mixed.yaml:25: spec.containers"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("broken/truncated.json:2:26: invalid JSON"), std::string::npos)
      << lines[2];

  // JUnit shows them as the errored cases of an "inputs" suite.
  const auto junit =
      run_audit({test_data("audit/broken"), "--nodes", audit_nodes(), "--format", "junit"});
  EXPECT_EQ(junit.status, 2);
  EXPECT_NE(junit.out.find(
                "<testsuite name=\"inputs\" tests=\"3\" failures=\"0\" errors=\"3\" skipped=\"0\""),
            std::string::npos)
      << junit.out;
}

TEST(AuditCommand, ManifestsFromStdin) {
  CliRunOptions options;
  options.stdin_text = test_support::file_text(test_data("audit/manifests/trainer.yaml"));
  const auto run = run_audit({"-", "--nodes", audit_nodes(), "--format", "json"}, options);
  EXPECT_EQ(run.status, 1) << run.err;
  std::vector<std::string> got;
  for (const auto& r : json::parse(run.out)) {
    got.push_back(r["resource"]["name"].get<std::string>() + " " + r["verdict"].get<std::string>());
  }
  EXPECT_EQ(got, (std::vector<std::string>{"trainer fail", "bf16-finetune partial", "typo error"}));
  const auto table = run_audit({"-", "--nodes", audit_nodes()}, options);
  EXPECT_EQ(table.status, 1);
  EXPECT_NE(table.out.find("<stdin>:1\n"), std::string::npos) << table.out;
}

TEST(AuditCommand, OwnedPodsAreReportedAsTheirController) {
  const std::string file = test_data("audit/manifests/cluster/kubectl-get.json");
  const auto run = run_audit({file, "--nodes", audit_nodes(), "--format", "json"});
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(audit_names(json::parse(run.out)),
            (std::vector<std::string>{"notebook", "embedder", "redis", "nightly-eval"}));
  const auto table = run_audit({file, "--nodes", audit_nodes()});
  EXPECT_EQ(table.status, 0);
  const auto lines = cli_lines(table.out);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back(), "4 workloads: 1 partial, 2 pass, 1 skip; 1 reported as their controller");
}

TEST(AuditCommand, OtherKindsAreSkippedAndCounted) {
  const auto run = run_audit({test_data("audit/manifests/charts"), "--nodes", audit_nodes()});
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.err, "");
  const auto lines = cli_lines(run.out);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back(), "2 workloads: 1 partial, 1 skip; 2 other objects skipped");
}

TEST(AuditCommand, ExamplesAgainstTheirFleetAndPolicy) {
  const auto run =
      run_audit({test_support::source_file("examples/pods"), "--nodes",
                 test_support::source_file("examples/nodes.yaml"), "--config",
                 test_support::source_file("examples/policy.yaml"), "--format", "json"});
  EXPECT_EQ(run.status, 1) << run.err;
  std::vector<std::string> got;
  for (const auto& r : json::parse(run.out)) {
    got.push_back(r["resource"]["name"].get<std::string>() + " " + r["verdict"].get<std::string>());
  }
  // Files in name order; each file's comment states its verdict.
  EXPECT_EQ(got, (std::vector<std::string>{"llm-finetune fail", "inference partial",
                                           "notebook pass", "train-sm90 partial"}));
}

TEST(AuditCommand, ExitStatusAtEachFailOn) {
  struct Row {
    std::string path;
    int by_default;
    int on_fail;
    int on_warn;
    int on_never;
  };
  const std::vector<Row> rows = {
      {"audit/manifests", 1, 1, 1, 0},         // a fail and an error
      {"audit/manifests/charts", 0, 0, 1, 0},  // partial at worst
      {"audit/broken/good.yaml", 0, 0, 0, 0},  // pass only
      {"audit/broken", 2, 2, 2, 2},            // unreadable documents
  };
  for (const auto& row : rows) {
    const auto status = [&](const char* fail_on) {
      std::vector<std::string> args = {test_data(row.path), "--nodes", audit_nodes(), "--format",
                                       "json"};
      if (fail_on != nullptr) args.insert(args.end(), {"--fail-on", fail_on});
      return run_audit(args).status;
    };
    EXPECT_EQ(status(nullptr), row.by_default) << row.path;
    EXPECT_EQ(status("fail"), row.on_fail) << row.path;
    EXPECT_EQ(status("warn"), row.on_warn) << row.path;
    EXPECT_EQ(status("never"), row.on_never) << row.path;
  }
}

TEST(AuditCommand, BadUsageIsOneLineAndNoReport) {
  const test_support::CliTempDir dir;
  const std::string missing = dir.path("no/such/dir");
  struct Row {
    std::vector<std::string> args;
    std::vector<std::pair<std::string, std::string>> env;
    std::string fragment;
  };
  const std::string manifests = test_data("audit/manifests");
  const std::vector<Row> rows = {
      {{missing, "--nodes", audit_nodes()}, {}, missing + ": no such file or directory"},
      {{manifests}, {}, "--nodes: required"},
      {{"--nodes", audit_nodes()}, {}, "PATH: required"},
      {{"-", "--nodes", "-"}, {}, "stdin (\"-\") can be read only once"},
      {{manifests, "--nodes", dir.path("nodes.json")},
       {},
       dir.path("nodes.json") + ": cannot read: No such file or directory"},
      {{manifests, "--nodes", test_data("cli/invalid.json")}, {}, "invalid.json"},
      {{manifests, "--nodes", audit_nodes(), "--config", test_data("cli/bad-policy.yaml")},
       {},
       "archMatching"},
      {{manifests, "--nodes", audit_nodes(), "--format", "xml"}, {}, "--format"},
      {{manifests, "--nodes", audit_nodes(), "--fail-on", "x"}, {}, "--fail-on"},
      {{manifests, "--nodes", audit_nodes(), "--namespace", "ml"},
       {},
       "--namespace: only with --cluster"},
      {{"--cluster", manifests}, {}, "--cluster: give either PATHs or --cluster, not both"},
      {{manifests, "--nodes", audit_nodes()},
       {{"SOURCE_DATE_EPOCH", "yesterday"}},
       "SOURCE_DATE_EPOCH: expected seconds since 1970, got \"yesterday\""},
  };
  for (const auto& row : rows) {
    CliRunOptions options;
    for (const auto& [name, value] : row.env) options.env.emplace_back(name, value);
    auto args = row.args;
    args.insert(args.begin(), {"audit", "--offline"});
    if (row.env.empty()) options.env.emplace_back("SOURCE_DATE_EPOCH", kAuditEpoch);
    const auto run = run_cli(add_audit_command, args, options);
    EXPECT_EQ(run.status, 2) << row.fragment << "\n" << run.out;
    EXPECT_EQ(run.out, "") << row.fragment;
    const auto lines = cli_lines(run.err);
    ASSERT_EQ(lines.size(), 1U) << run.err;
    EXPECT_TRUE(lines[0].starts_with("cudagate: error: ")) << lines[0];
    EXPECT_NE(lines[0].find(row.fragment), std::string::npos) << lines[0];
  }
}

TEST(AuditCommand, ClusterWithoutAReadableKubeconfigEndsBeforeAnyRequest) {
  const test_support::CliTempDir dir;
  const std::string missing = dir.path("kubeconfig");
  CliRunOptions options;
  options.env = {{"KUBECONFIG", std::nullopt}};
  const auto run = run_cli(add_audit_command,
                           {"audit", "--offline", "--cluster", "--kubeconfig", missing}, options);
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.out, "");
  const auto lines = cli_lines(run.err);
  ASSERT_EQ(lines.size(), 1U) << run.err;
  EXPECT_TRUE(lines[0].starts_with("cudagate: error: " + missing + ": ")) << lines[0];
}

}  // namespace
}  // namespace cudagate

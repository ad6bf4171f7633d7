// `cudagate explain`, offline: the pods and events of tests/fixtures/explain on the nodes of
// tests/fixtures/plan, the failures recognised with their rule and fix as JSON and text, the
// exit status, and the one-line errors of bad input; `explain pod NAME` up to its first request.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
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

std::string explain_nodes() {
  return test_data("plan/nodes.yaml");
}

// `cudagate explain --offline -f POD --nodes <plan nodes> [--events] -o OUTPUT`.
CliRun run_explain(const std::string& pod, bool events, const std::string& output,
                   std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"explain", "--offline",     "-f", test_data("explain/" + pod),
                                   "--nodes", explain_nodes(), "-o", output};
  if (events) args.insert(args.end(), {"--events", test_data("explain/events.yaml")});
  args.insert(args.end(), extra.begin(), extra.end());
  return run_cli(add_explain_command, args);
}

TEST(ExplainCommand, CrashLoopNoKernelImageIsTheArchRuleWithItsFix) {
  const auto run = run_explain("pod-crashloop.yaml", true, "json");
  ASSERT_EQ(run.status, 1) << run.err;
  EXPECT_EQ(run.err, "");
  const auto out = json::parse(run.out);
  EXPECT_EQ(out["apiVersion"], "cudagate.io/v1alpha1");
  EXPECT_EQ(out["kind"], "Explanation");
  EXPECT_EQ(out["pod"], json({{"namespace", "ml"},
                              {"name", "train-sm80-7d9f8b6c4-x2x7q"},
                              {"node", "t4-1"},
                              {"phase", "Running"}}));
  ASSERT_EQ(out["failures"].size(), 1U);
  const auto& failure = out["failures"][0];
  EXPECT_EQ(failure["kind"], "no-kernel-image");
  EXPECT_EQ(failure["rule"], "gpu-arch");
  EXPECT_EQ(failure["reproduced"], true);
  EXPECT_NE(
      failure["origin"].get<std::string>().find("last terminated (Error, exit code 1), 5 restarts"),
      std::string::npos)
      << failure["origin"];
  EXPECT_NE(
      failure["findings"][0]["fix"].get<std::string>().find("TORCH_CUDA_ARCH_LIST=\"7.5;8.0\""),
      std::string::npos)
      << failure["findings"][0]["fix"];
  EXPECT_EQ(out["decision"]["verdict"], "fail");
  // BackOff is a warning event cudagate does not recognise; Normal events are not listed.
  ASSERT_EQ(out["unrecognised"].size(), 1U);
  EXPECT_EQ(out["unrecognised"][0]["origin"], "event Warning BackOff (x24) from kubelet");
}

TEST(ExplainCommand, ToolkitRefusalIsTheDriverRuleAndWhatAdmissionWouldDo) {
  const auto run = run_explain("pod-runcontainererror.yaml", true, "json");
  ASSERT_EQ(run.status, 1) << run.err;
  const auto out = json::parse(run.out);
  std::vector<std::string> failures;
  for (const auto& f : out["failures"]) {
    const std::string origin = f["origin"];
    failures.push_back(origin.substr(0, origin.find(':')) + " | " + f["kind"].get<std::string>() +
                       " | " + f["condition"].get<std::string>());
  }
  EXPECT_EQ(failures, (std::vector<std::string>{
                          "container main | requirement-unsatisfied | cuda>=12.4",
                          "event Warning Failed (x4) from kubelet | requirement-unsatisfied | "
                          "cuda>=12.4"}));
  const auto& finding = out["failures"][0]["findings"][0];
  EXPECT_EQ(finding["rule"], "cuda-driver");
  EXPECT_NE(
      finding["message"].get<std::string>().find("driver 535.129.03 supports up to CUDA 12.2"),
      std::string::npos);
  EXPECT_NE(finding["fix"].get<std::string>().find("upgrade the driver to 550.54.14 or newer"),
            std::string::npos);
  const auto& notes = out["admission"]["notes"];
  ASSERT_GE(notes.size(), 2U);
  EXPECT_TRUE(notes[0].get<std::string>().starts_with(
      "with this policy (mode enforce), /validate denies it"))
      << notes[0];
  EXPECT_NE(notes[1].get<std::string>().find(
                "/mutate in mode enforce (policy mutate: true) pins it to the 3 nodes"),
            std::string::npos)
      << notes[1];

  // Without the events, the container status alone.
  const auto alone = run_explain("pod-runcontainererror.yaml", false, "json");
  EXPECT_EQ(alone.status, 1);
  EXPECT_EQ(json::parse(alone.out)["failures"].size(), 1U);
}

TEST(ExplainCommand, Bf16NotReproducedNamesTheAnnotation) {
  const auto run = run_explain("pod-bf16.yaml", true, "json");
  ASSERT_EQ(run.status, 0) << run.err;  // cudagate finds the pod compatible with its node
  const auto out = json::parse(run.out);
  ASSERT_EQ(out["failures"].size(), 1U);
  const auto& failure = out["failures"][0];
  EXPECT_EQ(failure["kind"], "bf16-unsupported");
  EXPECT_EQ(failure["rule"], "gpu-feature");
  EXPECT_EQ(failure["reproduced"], false);
  EXPECT_NE(failure["hint"].get<std::string>().find("cudagate.io/min-compute-capability: \"8.0\""),
            std::string::npos)
      << failure["hint"];
  EXPECT_EQ(out["decision"]["verdict"], "pass");
}

TEST(ExplainCommand, TextReadsLikeCheck) {
  const auto run = run_explain("pod-runcontainererror.yaml", true, "text");
  ASSERT_EQ(run.status, 1) << run.err;
  const auto lines = cli_lines(run.out);
  ASSERT_FALSE(lines.empty());
  EXPECT_TRUE(
      lines[0].starts_with("Pod inference/serve-cuda124-6b7c9d5f8-p4q2r on node t4-2: "
                           "driver 535.129.03, max CUDA 12.2"))
      << lines[0];
  for (const char* text :
       {"\nReported failures\n",
        "-> requirement-unsatisfied: nvidia-container-cli refused the container",
        "cudagate finds the same: [cuda-driver] main: needs CUDA 12.4",
        "values: cuda 12.4 (inference), archs unknown",
        "\nWhat cudagate decides for this pod on t4-2\n",
        "FAIL  Pod inference/serve-cuda124-6b7c9d5f8-p4q2r: 0 of 1 candidate nodes",
        "\nAt admission\n  with this policy (mode enforce), /validate denies it"}) {
    EXPECT_NE(run.out.find(text), std::string::npos) << "lacks " << text << "\n" << run.out;
  }
  EXPECT_EQ(run.out.find('\x1b'), std::string::npos);
}

TEST(ExplainCommand, AnUnrecognisedErrorIsSaidSoWithTheDecisionAnyway) {
  const auto run = run_explain("pod-sandbox.yaml", true, "text");
  ASSERT_EQ(run.status, 0) << run.err;
  for (const char* text :
       {"event Warning FailedCreatePodSandBox (x7) from kubelet:",
        "nvml error: driver/library version mismatch", "-> not a failure cudagate recognises",
        "None of these messages is a CUDA compatibility failure",
        "PASS  Pod ml/notebook-0: 1 of 1 candidate nodes can run it"}) {
    EXPECT_NE(run.out.find(text), std::string::npos) << "lacks " << text << "\n" << run.out;
  }
  const auto out = json::parse(run_explain("pod-sandbox.yaml", true, "json").out);
  EXPECT_EQ(out["failures"], json::array());
  EXPECT_EQ(out["unrecognised"].size(), 1U);
}

// Status 2, nothing on stdout and one error line holding each fragment.
void expect_explain_error(const std::vector<std::string>& args,
                          const std::vector<std::string>& fragments,
                          const CliRunOptions& options = {}) {
  const auto run = run_cli(add_explain_command, args, options);
  EXPECT_EQ(run.status, 2) << fragments.front() << "\n" << run.out;
  EXPECT_EQ(run.out, "") << fragments.front();
  const auto lines = cli_lines(run.err);
  ASSERT_EQ(lines.size(), 1U) << run.err;
  EXPECT_TRUE(lines[0].starts_with("cudagate: error: ")) << lines[0];
  for (const auto& fragment : fragments) {
    EXPECT_NE(lines[0].find(fragment), std::string::npos) << lines[0] << "\nlacks " << fragment;
  }
}

TEST(ExplainCommand, BadInputNamesTheFileOrFlag) {
  const CliTempDir dir;
  const std::string missing = dir.path("pod.yaml");
  const std::string two_pods = dir.write(
      "two.yaml", test_support::file_text(test_data("explain/pod-bf16.yaml")) + "\n---\n" +
                      test_support::file_text(test_data("explain/pod-sandbox.yaml")));
  const std::string crashloop = test_data("explain/pod-crashloop.yaml");
  expect_explain_error(
      {"explain", "--offline", "-f", test_data("explain/events.yaml"), "--nodes", explain_nodes()},
      {"events.yaml: expected one Pod", "found 0"});
  expect_explain_error({"explain", "--offline", "-f", two_pods, "--nodes", explain_nodes()},
                       {two_pods + ": expected one Pod", "found 2"});
  expect_explain_error({"explain", "--offline", "-f", missing, "--nodes", explain_nodes()},
                       {missing + ": cannot read: No such file or directory"});
  expect_explain_error(
      {"explain", "--offline", "-f", crashloop, "--nodes", test_data("cli/nodes.json")},
      {test_data("cli/nodes.json"),
       "node \"t4-1\" (the pod's spec.nodeName) is not in the node list"});
  expect_explain_error({"explain", "--offline", "--nodes", explain_nodes()}, {"-f: required"});
  expect_explain_error({"explain", "--offline", "-f", crashloop}, {"--nodes: required"});
  expect_explain_error({"explain", "--offline", "-f", crashloop, "--nodes", explain_nodes(),
                        "--events", dir.path("events.yaml")},
                       {dir.path("events.yaml") + ": cannot read"});
  expect_explain_error({"explain", "--offline", "-f", crashloop, "--nodes", explain_nodes(),
                        "--config", test_data("cli/bad-policy.yaml")},
                       {"bad-policy.yaml", "archMatching"});
  expect_explain_error(
      {"explain", "--offline", "-f", crashloop, "--nodes", explain_nodes(), "-o", "yaml"},
      {"--output"});
  expect_explain_error({"explain", "--offline", "-f", crashloop, "--nodes", explain_nodes(),
                        "--kubeconfig", "kc.yaml"},
                       {"--kubeconfig: only with `explain pod NAME`"});
  expect_explain_error(
      {"explain", "--offline", "-f", crashloop, "--nodes", explain_nodes(), "--in-cluster"},
      {"--in-cluster: only with `explain pod NAME`"});
}

TEST(ExplainCommand, PodFromTheApiServerEndsBeforeAnyRequestWhenItsFlagsAreWrong) {
  const CliTempDir dir;
  const std::string missing = dir.path("kubeconfig");
  CliRunOptions no_env;
  no_env.env = {{"KUBECONFIG", std::nullopt}};
  expect_explain_error({"explain", "node", "t4-1", "--kubeconfig", missing},
                       {"explain: expected `explain pod NAME`, or -f POD.yaml"}, no_env);
  expect_explain_error(
      {"explain", "pod", "a", "-f", test_data("explain/pod-bf16.yaml"), "--kubeconfig", missing},
      {"-f: cannot be combined with `explain pod NAME`"}, no_env);
  expect_explain_error({"explain", "pod", "a", "--in-cluster", "--kubeconfig", missing},
                       {"--in-cluster: give one of --in-cluster and --kubeconfig"}, no_env);
  expect_explain_error({"explain", "pod", "trainer", "-n", "ml", "--kubeconfig", missing},
                       {missing + ": "}, no_env);
}

}  // namespace
}  // namespace cudagate

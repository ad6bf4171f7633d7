// A live cluster as what a command judges (cli/cluster_inputs.h), without an API server: the
// cluster flags and their checks, the choice between files and the cluster, the cluster's
// configuration errors, and the inventory calls each command is listed under.
#include "cli/cluster_inputs.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/cli_run.h"
#include "tests/support/embedded_compat_db.h"

namespace cudagate::cli {
namespace {

using test_support::cli_lines;
using test_support::CliRun;
using test_support::CliRunOptions;
using test_support::CliTempDir;
using test_support::run_captured;
using test_support::test_data;

// `args` parsed by a command that has the cluster flags.
ClusterOptions parsed_cluster_options(std::vector<std::string> args) {
  CLI::App command{"test"};
  ClusterOptions options;
  add_cluster_options(command, options, "Judge what runs in a live cluster");
  args.insert(args.begin(), "test");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  command.parse(static_cast<int>(argv.size()), argv.data());
  return options;
}

TEST(ClusterOptionsFlags, EachFlagSetsItsField) {
  const ClusterOptions none = parsed_cluster_options({});
  EXPECT_FALSE(none.cluster);
  EXPECT_FALSE(none.in_cluster);
  EXPECT_EQ(none.kubeconfig, "");
  EXPECT_EQ(none.namespace_, "");
  EXPECT_FALSE(none.all_namespaces);

  const ClusterOptions some =
      parsed_cluster_options({"--cluster", "--kubeconfig", "kc.yaml", "-n", "ml"});
  EXPECT_TRUE(some.cluster);
  EXPECT_EQ(some.kubeconfig, "kc.yaml");
  EXPECT_EQ(some.namespace_, "ml");
  EXPECT_EQ(parsed_cluster_options({"--namespace", "serving"}).namespace_, "serving");

  const ClusterOptions all = parsed_cluster_options({"--cluster", "--in-cluster", "-A"});
  EXPECT_TRUE(all.in_cluster);
  EXPECT_TRUE(all.all_namespaces);
  EXPECT_TRUE(parsed_cluster_options({"--all-namespaces"}).all_namespaces);
}

TEST(ClusterOptionsFlags, HelpDescribesClusterAsTheCommandSays) {
  CLI::App command{"test"};
  ClusterOptions options;
  add_cluster_options(command, options, "Audit what runs in a live cluster");
  const std::string help = command.help();
  EXPECT_NE(help.find("Audit what runs in a live cluster"), std::string::npos) << help;
  for (const char* flag :
       {"--cluster", "--in-cluster", "--kubeconfig", "--namespace", "--all-namespaces"}) {
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
  }
}

CliRun checked(const ClusterOptions& options, bool has_inputs) {
  return run_captured([&] {
    check_cluster_options(options, has_inputs, "PATHs");
    return 0;
  });
}

ClusterOptions cluster_options(bool cluster, bool in_cluster, std::string kubeconfig,
                               std::string namespace_, bool all_namespaces) {
  ClusterOptions options;
  options.cluster = cluster;
  options.in_cluster = in_cluster;
  options.kubeconfig = std::move(kubeconfig);
  options.namespace_ = std::move(namespace_);
  options.all_namespaces = all_namespaces;
  return options;
}

TEST(CheckClusterOptions, FlagsThatAgreePass) {
  struct Row {
    ClusterOptions options;
    bool has_inputs;
  };
  const std::vector<Row> rows = {
      {cluster_options(false, false, "", "", false), true},   // files only
      {cluster_options(false, false, "", "", false), false},  // the command says what is missing
      {cluster_options(true, false, "", "", false), false},
      {cluster_options(true, true, "", "ml", false), false},
      {cluster_options(true, false, "kc.yaml", "", true), false},
  };
  for (const auto& row : rows) {
    const auto run = checked(row.options, row.has_inputs);
    EXPECT_EQ(run.status, 0) << run.err;
    EXPECT_EQ(run.err, "");
  }
}

TEST(CheckClusterOptions, FlagsThatDisagreeEndTheCommandNamingTheFlag) {
  struct Row {
    ClusterOptions options;
    bool has_inputs;
    std::string line;
  };
  const std::vector<Row> rows = {
      {cluster_options(true, false, "", "", false), true,
       "--cluster: give either PATHs or --cluster, not both"},
      {cluster_options(false, true, "", "", false), false, "--in-cluster: only with --cluster"},
      {cluster_options(false, false, "kc.yaml", "", false), true,
       "--kubeconfig: only with --cluster"},
      {cluster_options(false, false, "", "ml", false), true, "--namespace: only with --cluster"},
      {cluster_options(true, true, "kc.yaml", "", false), false,
       "--in-cluster: give one of --in-cluster and --kubeconfig"},
      {cluster_options(true, false, "", "ml", true), false,
       "--all-namespaces: give one of --namespace and --all-namespaces"},
  };
  for (const auto& row : rows) {
    const auto run = checked(row.options, row.has_inputs);
    EXPECT_EQ(run.status, 2) << row.line;
    EXPECT_EQ(run.out, "");
    EXPECT_EQ(run.err, "cudagate: error: " + row.line + "\n");
  }
  // -A alone is a cluster flag too.
  const auto run = checked(cluster_options(false, false, "", "", true), true);
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.err, "cudagate: error: --all-namespaces: only with --cluster\n");
}

TEST(ReadJudgedInputs, FilesWithoutClusterAreReadFromDisk) {
  JudgedInputs read;
  const auto run = run_captured([&] {
    read = read_judged_inputs(ClusterOptions{}, {test_data("cli/multi.yaml")},
                              test_data("cli/nodes.json"), test_support::db());
    return 0;
  });
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(read.inventory.size(), 6U);
  EXPECT_EQ(read.inventory.gpu_nodes(), 5U);
  ASSERT_EQ(read.manifests.workloads.size(), 3U);
  EXPECT_EQ(read.manifests.workloads[0].workload.resource.name, "notebook");
  EXPECT_EQ(read.manifests.workloads[0].place, test_data("cli/multi.yaml") + ":1");
  EXPECT_EQ(read.manifests.skipped, 1U);  // the ConfigMap
}

TEST(ReadJudgedInputs, UnreadableFilesEndTheCommandNamingThem) {
  const CliTempDir dir;
  const std::string nodes = dir.path("nodes.json");
  const std::string manifests = dir.path("manifests");
  struct Row {
    std::vector<std::string> paths;
    std::string nodes;
    std::string line;
  };
  const std::vector<Row> rows = {
      {{test_data("cli/pod.yaml")}, nodes, nodes + ": cannot read: No such file or directory"},
      {{manifests}, test_data("cli/nodes.json"), manifests + ": no such file or directory"},
  };
  for (const auto& row : rows) {
    const auto run = run_captured([&] {
      (void)read_judged_inputs(ClusterOptions{}, row.paths, row.nodes, test_support::db());
      return 0;
    });
    EXPECT_EQ(run.status, 2) << row.line;
    EXPECT_EQ(run.err, "cudagate: error: " + row.line + "\n");
  }
}

// read_judged_inputs with --cluster whose configuration cannot be had: the
// command ends before any request is made.
CliRun judged_from_cluster(const ClusterOptions& cluster, const CliRunOptions& options) {
  return run_captured(
      [&] {
        (void)read_judged_inputs(cluster, {}, "", test_support::db());
        return 0;
      },
      options);
}

TEST(ReadJudgedInputs, TheClustersConfigurationErrorsNameItsSource) {
  const CliTempDir dir;
  const std::string missing = dir.path("kubeconfig");
  const std::string not_a_kubeconfig = dir.write("list.yaml", "- one\n- two\n");
  const std::string no_context =
      dir.write("no-context.yaml",
                "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n"
                "current-context: nowhere\n");
  CliRunOptions no_env;
  no_env.env = {{"KUBECONFIG", std::nullopt},
                {"KUBERNETES_SERVICE_HOST", std::nullopt},
                {"KUBERNETES_SERVICE_PORT", std::nullopt}};
  struct Row {
    ClusterOptions cluster;
    std::vector<std::string> fragments;
  };
  const std::vector<Row> rows = {
      {cluster_options(true, false, missing, "", false), {missing + ": "}},
      {cluster_options(true, false, not_a_kubeconfig, "", false),
       {not_a_kubeconfig + ": ", "expected a kubeconfig"}},
      {cluster_options(true, false, no_context, "", false), {no_context, "nowhere"}},
      // Not in a pod: no service host.
      {cluster_options(true, true, "", "", false),
       {"--in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set"}},
  };
  for (const auto& row : rows) {
    const auto run = judged_from_cluster(row.cluster, no_env);
    EXPECT_EQ(run.status, 2) << row.fragments.front();
    const auto lines = cli_lines(run.err);
    ASSERT_EQ(lines.size(), 1U) << run.err;
    EXPECT_TRUE(lines[0].starts_with("cudagate: error: ")) << lines[0];
    for (const auto& fragment : row.fragments) {
      EXPECT_NE(lines[0].find(fragment), std::string::npos) << lines[0] << "\nlacks " << fragment;
    }
  }
}

TEST(ReadJudgedInputs, WithoutKubeconfigFlagTheEnvironmentChooses) {
  const CliTempDir dir;
  const std::string a = dir.path("a.yaml");
  const std::string b = dir.path("b.yaml");
  CliRunOptions kubeconfig_env;
  kubeconfig_env.env = {{"KUBECONFIG", a + ":" + b}};
  auto run = judged_from_cluster(cluster_options(true, false, "", "", false), kubeconfig_env);
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.err,
            "cudagate: error: KUBECONFIG: none of the files exists: " + a + ":" + b + "\n");

  // The first file of $KUBECONFIG that exists is the one read.
  const std::string broken = dir.write("b.yaml", "- not a kubeconfig\n");
  run = judged_from_cluster(cluster_options(true, false, "", "", false), kubeconfig_env);
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find(broken + ": "), std::string::npos) << run.err;

  // Neither the flag nor $KUBECONFIG: ~/.kube/config.
  CliRunOptions home_env;
  home_env.env = {{"KUBECONFIG", std::nullopt}, {"HOME", dir.dir()}};
  run = judged_from_cluster(cluster_options(true, false, "", "", false), home_env);
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find(dir.dir() + "/.kube/config: "), std::string::npos) << run.err;
}

TEST(InventoryCalls, EachCommandListsUnderItsOwnRows) {
  struct Row {
    InventoryCalls calls;
    std::string when;
  };
  for (const Row& row :
       {Row{kClusterInventoryCalls, "audit-cluster"}, Row{kExplainInventoryCalls, "explain"}}) {
    const kube::ApiCall& nodes = kube::api_call(row.calls.nodes);
    const kube::ApiCall& slices = kube::api_call(row.calls.slices);
    const kube::ApiCall& pools = kube::api_call(row.calls.pools);
    EXPECT_EQ(nodes.when, row.when);
    EXPECT_EQ(slices.when, row.when);
    EXPECT_EQ(pools.when, row.when);
    EXPECT_EQ(nodes.verb, "list");
    EXPECT_EQ(slices.verb, "list");
    EXPECT_EQ(pools.verb, "list");
    EXPECT_EQ(nodes.resource, "nodes");
    EXPECT_EQ(slices.resource, "resourceslices");
    EXPECT_EQ(slices.group, "resource.k8s.io");
    EXPECT_EQ(pools.resource, "nodepools");
    EXPECT_EQ(pools.group, "karpenter.sh");
  }
}

}  // namespace
}  // namespace cudagate::cli

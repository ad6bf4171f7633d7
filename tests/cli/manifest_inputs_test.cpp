// The manifests `audit` and `plan` judge (cli/manifest_inputs.h): the files of paths and folders
// in name order, the workloads, claims, skipped objects and broken documents read from them
// (JSON and YAML alike), and the reports' time from SOURCE_DATE_EPOCH.
#include "cli/manifest_inputs.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/cli_run.h"

namespace cudagate::cli {
namespace {

using test_support::cli_lines;
using test_support::CliRunOptions;
using test_support::CliTempDir;
using test_support::run_captured;
using test_support::test_data;

std::vector<std::string> names_of(const ManifestInputs& in) {
  std::vector<std::string> out;
  for (const auto& w : in.workloads) {
    out.push_back(w.workload.resource.kind + " " + w.workload.resource.name);
  }
  return out;
}

TEST(ManifestFiles, FoldersAreWalkedInNameOrderForManifestsOnly) {
  const CliTempDir dir;
  std::filesystem::create_directories(dir.path("deep/er"));
  for (const char* name : {"b.yaml", "a.json", "deep/c.yml", "deep/er/d.yaml", "notes.txt",
                           "deep/README.md", "chart.yaml.bak"}) {
    dir.write(name, "");
  }
  const std::string single = test_data("cli/pod.yaml");
  std::vector<std::string> files;
  const auto run = run_captured([&] {
    files = manifest_files({"-", dir.dir(), single});
    return 0;
  });
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(files,
            (std::vector<std::string>{"-", dir.path("a.json"), dir.path("b.yaml"),
                                      dir.path("deep/c.yml"), dir.path("deep/er/d.yaml"), single}));
}

TEST(ManifestFiles, AFileIsTakenWhateverItsName) {
  const CliTempDir dir;
  const std::string notes = dir.write("NOTES.txt", "");
  std::vector<std::string> files;
  const auto run = run_captured([&] {
    files = manifest_files({notes});
    return 0;
  });
  ASSERT_EQ(run.status, 0);
  EXPECT_EQ(files, std::vector<std::string>{notes});
}

TEST(ManifestFiles, AMissingPathEndsTheCommand) {
  const CliTempDir dir;
  const std::string missing = dir.path("no/such/dir");
  const auto run = run_captured([&] {
    (void)manifest_files({test_data("cli/pod.yaml"), missing});
    return 0;
  });
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(run.err, "cudagate: error: " + missing + ": no such file or directory\n");
}

TEST(ReadManifestInputs, TheAuditFixtures) {
  const std::string root = test_data("audit/manifests");
  ManifestInputs in;
  const auto run = run_captured([&] {
    in = read_manifest_inputs(manifest_files({root}));
    return 0;
  });
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.err, "");
  // The embedder's pod is reported as its Deployment; the Service and the
  // ConfigMap of the chart are skipped; NOTES.txt is not read.
  EXPECT_EQ(names_of(in), (std::vector<std::string>{
                              "Deployment inference", "Deployment web", "Pod notebook",
                              "Deployment embedder", "StatefulSet redis", "CronJob nightly-eval",
                              "Pod trainer", "Job bf16-finetune", "Pod typo"}));
  EXPECT_EQ(in.controlled, 1U);
  EXPECT_EQ(in.skipped, 2U);
  EXPECT_TRUE(in.broken.empty());
  EXPECT_EQ(in.claims.size(), 0U);
  ASSERT_EQ(in.workloads.size(), 9U);
  EXPECT_EQ(in.workloads[0].place, root + "/charts/serving.yaml:16");
  EXPECT_EQ(in.workloads[2].place, root + "/cluster/kubectl-get.json:1: items[0]");
  EXPECT_EQ(in.workloads[6].place, root + "/trainer.yaml:1");
}

TEST(ReadManifestInputs, BrokenDocumentsAreRecordedAndTheRestRead) {
  const std::string root = test_data("audit/broken");
  const CliTempDir dir;
  const std::string missing = dir.path("gone.yaml");
  ManifestInputs in;
  const auto run = run_captured([&] {
    auto files = manifest_files({root});
    files.push_back(missing);  // listed, then gone before it is read
    in = read_manifest_inputs(files);
    return 0;
  });
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.err, "");  // recorded, not printed
  EXPECT_EQ(names_of(in), (std::vector<std::string>{"Pod notebook", "Pod first", "Pod last"}));
  ASSERT_EQ(in.broken.size(), 4U);
  EXPECT_EQ(in.broken[0].where, root + "/mixed.yaml:23");
  EXPECT_NE(in.broken[0].message.find("invalid YAML"), std::string::npos) << in.broken[0].str();
  EXPECT_NE(in.broken[1].str().find(root + "/mixed.yaml:25: spec.containers"), std::string::npos)
      << in.broken[1].str();
  EXPECT_NE(in.broken[2].str().find(root + "/truncated.json:2:26: invalid JSON"), std::string::npos)
      << in.broken[2].str();
  EXPECT_EQ(in.broken[3].str(), missing + ": cannot read: No such file or directory");
}

TEST(ReadManifestInputs, JsonAndYamlGiveTheSameWorkloadsAndErrors) {
  // The same List as JSON (read with simdjson) and as YAML (the stream
  // reader), with an item of a wrong kind type and a pod whose containers
  // are not a list.
  auto list = nlohmann::json::parse(
      test_support::file_text(test_data("audit/manifests/cluster/kubectl-get.json")));
  list["items"].insert(list["items"].begin() + 2,
                       nlohmann::json{{"apiVersion", "v1"},
                                      {"kind", "Pod"},
                                      {"metadata", {{"name", "bad"}, {"namespace", "ml"}}},
                                      {"spec", {{"containers", 3}}}});
  list["items"].insert(list["items"].begin(), nlohmann::json{{"apiVersion", "v1"}, {"kind", 7}});
  const CliTempDir dir;
  // JSON is a subset of YAML: the same text, one line a document, read by
  // the YAML reader when it does not start with a brace.
  const std::string as_json = dir.write("list.json", list.dump(2));
  const std::string as_yaml = dir.write("list.yaml", "# kubectl get -A -o yaml\n" + list.dump());
  ManifestInputs json_in;
  ManifestInputs yaml_in;
  const auto run = run_captured([&] {
    json_in = read_manifest_inputs({as_json});
    yaml_in = read_manifest_inputs({as_yaml});
    return 0;
  });
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(names_of(json_in),
            (std::vector<std::string>{"Pod notebook", "Deployment embedder", "StatefulSet redis",
                                      "CronJob nightly-eval"}));
  EXPECT_EQ(names_of(yaml_in), names_of(json_in));
  ASSERT_EQ(json_in.broken.size(), 2U);
  EXPECT_EQ(json_in.broken[0].str(), as_json + ":1: items[0]: kind: expected a string, got number");
  EXPECT_EQ(json_in.broken[1].str(),
            as_json + ":1: items[3]: spec.containers: expected a list, got number");
  ASSERT_EQ(yaml_in.broken.size(), 2U);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(yaml_in.broken[i].message, json_in.broken[i].message);
  }
  EXPECT_EQ(json_in.controlled, yaml_in.controlled);
}

TEST(ReadManifestInputs, ClaimsOfTheFilesAreCatalogued) {
  ManifestInputs in;
  const auto run = run_captured([&] {
    in = read_manifest_inputs({test_data("dra/pods.yaml")});
    return 0;
  });
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(in.claims.find("ResourceClaimTemplate", "ml", "one-gpu"), nullptr);
  EXPECT_NE(in.claims.find("ResourceClaimTemplate", "ml", "h100"), nullptr);
  EXPECT_NE(in.claims.find("ResourceClaim", "ml", "isolated-gpu"), nullptr);
  EXPECT_EQ(in.claims.find("ResourceClaim", "ml", "one-gpu"), nullptr);
  EXPECT_FALSE(in.workloads.empty());
}

TEST(ReadManifestInputs, StdinIsNamedAsSuch) {
  CliRunOptions options;
  options.stdin_text = test_support::file_text(test_data("cli/pod.yaml"));
  ManifestInputs in;
  const auto run = run_captured(
      [&] {
        in = read_manifest_inputs(manifest_files({"-"}));
        return 0;
      },
      options);
  ASSERT_EQ(run.status, 0) << run.err;
  ASSERT_EQ(in.workloads.size(), 1U);
  EXPECT_EQ(in.workloads[0].place, "<stdin>:1");
}

TEST(ReportTime, FromSourceDateEpochOrTheClock) {
  std::int64_t time = 0;
  CliRunOptions fixed;
  fixed.env = {{"SOURCE_DATE_EPOCH", "1764584444"}};
  auto run = run_captured(
      [&] {
        time = report_time();
        return 0;
      },
      fixed);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(time, 1764584444);

  for (const std::optional<std::string>& unset :
       {std::optional<std::string>(), std::optional<std::string>("")}) {
    CliRunOptions clock;
    clock.env = {{"SOURCE_DATE_EPOCH", unset}};
    const auto seconds = [] {
      return std::chrono::duration_cast<std::chrono::seconds>(
                 std::chrono::system_clock::now().time_since_epoch())
          .count();
    };
    const std::int64_t before = seconds();
    run = run_captured(
        [&] {
          time = report_time();
          return 0;
        },
        clock);
    ASSERT_EQ(run.status, 0) << run.err;
    EXPECT_GE(time, before);
    EXPECT_LE(time, seconds());
  }
}

TEST(ReportTime, ABadSourceDateEpochEndsTheCommand) {
  for (const std::string value : {"soon", "-5", "1764584444s", "12 34"}) {
    CliRunOptions options;
    options.env = {{"SOURCE_DATE_EPOCH", value}};
    const auto run = run_captured(
        [] {
          (void)report_time();
          return 0;
        },
        options);
    EXPECT_EQ(run.status, 2) << value;
    const auto lines = cli_lines(run.err);
    ASSERT_EQ(lines.size(), 1U) << run.err;
    EXPECT_EQ(lines[0], "cudagate: error: SOURCE_DATE_EPOCH: expected seconds since 1970, got \"" +
                            value + "\"");
  }
}

}  // namespace
}  // namespace cudagate::cli

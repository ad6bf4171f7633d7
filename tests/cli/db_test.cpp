// `cudagate db show` and `db lint`: the matrix as tables and as JSON in the input files' shape,
// each value the loaded matrix's; lint of good, broken and partial files; and the one-line
// errors naming file, entry and field.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "compat-db/compat_db_json.h"
#include "tests/support/cli_run.h"
#include "tests/support/embedded_compat_db.h"

namespace cudagate {
namespace {

using test_support::cli_lines;
using test_support::CliRun;
using test_support::CliRunOptions;
using test_support::CliTempDir;
using test_support::run_cli;

CliRun run_db(const std::vector<std::string>& args, const CliRunOptions& options = {}) {
  return run_cli(add_db_command, args, options);
}

// The embedded matrix as `db show -o json` writes it.
std::string db_json_text() {
  return compat_db_to_json(test_support::db())
             .dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
         "\n";
}

// Status 2, nothing on stdout and one error line holding each fragment.
void expect_db_error(const CliRun& run, const std::vector<std::string>& fragments) {
  EXPECT_EQ(run.status, 2) << fragments.front() << "\n" << run.out;
  EXPECT_EQ(run.out, "") << fragments.front();
  const auto lines = cli_lines(run.err);
  ASSERT_EQ(lines.size(), 1U) << run.err;
  EXPECT_TRUE(lines[0].starts_with("cudagate: error: ")) << lines[0];
  for (const auto& fragment : fragments) {
    EXPECT_NE(lines[0].find(fragment), std::string::npos) << lines[0] << "\nlacks " << fragment;
  }
}

TEST(DbCommand, ShowTextHasEverySectionWithItsCount) {
  const auto run = run_db({"db", "show"});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.err, "");
  const CompatDb& db = test_support::db();
  const std::string& out = run.out;
  EXPECT_TRUE(out.starts_with("compat-db revision " + db.revision + " (embedded), as of " +
                              (db.as_of.empty() ? std::string("an unknown date") : db.as_of) +
                              "\n"))
      << out.substr(0, 200);
  for (const auto& [what, entry] : newest_entries(db)) {
    EXPECT_NE(out.find("\n  newest " + what + ": " + entry + "\n"), std::string::npos) << what;
  }
  const std::vector<std::pair<std::string, std::size_t>> sections = {
      {"CUDA releases and the oldest driver each runs on", db.cuda_releases.size()},
      {"Minor version compatibility", db.minor_version_compat.size()},
      {"Driver branches", db.driver_branches.size()},
      {"The last driver branch of each GPU architecture", db.last_driver_branches.size()},
      {"Compute capabilities each CUDA release can target", db.cuda_targets.size()},
      {"GPU products", db.products.size()},
      {"Cloud accelerator labels", db.cloud_accelerators.size()},
      {"Named architectures", db.architectures.size()},
      {"Tegra capabilities (SASS runs only on exactly its own capability)", db.tegra.size()},
      {"nvidia/cuda images", db.cuda_images.size()},
      {"NGC framework releases (nvcr.io/nvidia/pytorch:YY.MM-py3 and siblings)",
       db.ngc_releases.size()},
      {"Image inference rules", db.image_rules.size()},
      {"PyTorch's own builds (wheels and pytorch/pytorch images)", db.torch_builds.size()},
  };
  std::size_t last = 0;
  for (const auto& [title, count] : sections) {
    const auto at = out.find("\n\n" + title + " (" + std::to_string(count) + ")\n");
    EXPECT_NE(at, std::string::npos) << title;
    EXPECT_GT(at, last) << title << " out of order";
    if (at != std::string::npos) last = at;
  }
  // Rows of known entries, columns padded, sources cited by number.
  for (const char* row :
       {R"(\n  12\.4\.1 +12\.4 Update 1 +550\.54\.15 +\[\d+\]\n)", R"(\n  R535 +12\.2 )",
        R"(\n  T4 +7\.5 +turing )", R"(\n  24\.01 +12\.3\.2 )", R"(\n  sources:\n    \[1\] )"}) {
    EXPECT_TRUE(std::regex_search(out, std::regex(row))) << row;
  }
  EXPECT_EQ(out.find('\x1b'), std::string::npos);
}

TEST(DbCommand, ShowJsonIsTheInputFilesShape) {
  const auto run = run_db({"db", "show", "--output", "json"});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, db_json_text());
  const auto document = nlohmann::json::parse(run.out);
  EXPECT_EQ(document["schemaVersion"], 1);
  for (const char* section : {"cudaReleases", "minorVersionCompat", "driverBranches", "cudaTargets",
                              "products", "cloudAccelerators", "architectures", "tegraCapabilities",
                              "cudaImages", "ngcReleases", "imageRules"}) {
    ASSERT_TRUE(document[section].is_array()) << section;
    EXPECT_FALSE(document[section].empty()) << section;
    for (const auto& entry : document[section]) {
      EXPECT_FALSE(entry["source"].get<std::string>().empty()) << section;
    }
  }
}

TEST(DbCommand, LintOfShowOutputAndTheSameMatrixBack) {
  const CliTempDir dir;
  const std::string file = dir.write("x.json", db_json_text());
  const auto lint = run_db({"db", "lint", file});
  ASSERT_EQ(lint.status, 0) << lint.err;
  EXPECT_EQ(lint.err, "");
  const CompatDb& db = test_support::db();
  EXPECT_TRUE(lint.out.starts_with(file + ": ok (" + std::to_string(db.cuda_releases.size()) +
                                   " CUDA releases, "))
      << lint.out;
  EXPECT_NE(lint.out.find(", " + std::to_string(db.products.size()) + " products, "),
            std::string::npos)
      << lint.out;
  EXPECT_TRUE(lint.out.ends_with(" PyTorch builds)\n")) << lint.out;
  EXPECT_EQ(cli_lines(lint.out).size(), 1U);

  // The file as --compat-db gives the same matrix, named by its path.
  const auto again = run_db({"db", "show", "-o", "json", "--compat-db", file});
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(again.out, db_json_text());
  const auto text = run_db({"db", "show", "--compat-db", file});
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_TRUE(text.out.starts_with("compat-db revision ")) << text.out.substr(0, 200);
  EXPECT_NE(cli_lines(text.out)[0].find(" (" + file + "), as of "), std::string::npos)
      << cli_lines(text.out)[0];
}

TEST(DbCommand, LintOfTheSourceFilesTogether) {
  std::vector<std::string> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(test_support::source_file("compat-db"))) {
    if (entry.path().extension() == ".json") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GT(files.size(), 1U);
  std::vector<std::string> args = {"db", "lint"};
  args.insert(args.end(), files.begin(), files.end());
  const auto run = run_db(args);
  ASSERT_EQ(run.status, 0) << run.err;
  std::string names;
  for (const auto& f : files) names += (names.empty() ? "" : ", ") + f;
  EXPECT_TRUE(run.out.starts_with(names + ": ok (")) << run.out;
}

TEST(DbCommand, LintFromStdin) {
  CliRunOptions options;
  options.stdin_text = db_json_text();
  const auto run = run_db({"db", "lint", "-"}, options);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(run.out.starts_with("<stdin>: ok (")) << run.out;
}

TEST(DbCommand, BrokenMatricesNameFileEntryAndField) {
  const CliTempDir dir;
  auto broken = compat_db_to_json(test_support::db());
  broken["products"][2]["computeCapability"] = "eight";
  const std::string broken_file = dir.write("broken.json", broken.dump());
  auto partial = compat_db_to_json(test_support::db());
  partial.erase("ngcReleases");
  const std::string partial_file = dir.write("partial.json", partial.dump());
  const std::string missing = dir.path("no-such-db.json");
  const std::string invalid = test_support::test_data("cli/invalid.json");

  expect_db_error(run_db({"db", "lint", broken_file}),
                  {broken_file, "products[2]", "computeCapability", "\"eight\""});
  // The same file as --compat-db of show is refused the same way.
  expect_db_error(run_db({"db", "show", "--compat-db", broken_file}),
                  {broken_file, "products[2]", "computeCapability"});
  expect_db_error(run_db({"db", "lint", partial_file}), {"ngcReleases"});
  expect_db_error(run_db({"db", "lint", invalid}), {invalid});
  const auto unreadable = run_db({"db", "lint", missing});
  expect_db_error(unreadable, {missing});
  EXPECT_EQ(unreadable.err,
            "cudagate: error: " + missing + ": cannot read: No such file or directory\n");
}

TEST(DbCommand, UsageErrors) {
  expect_db_error(run_db({"db", "lint"}), {"FILE"});
  expect_db_error(run_db({"db"}), {"subcommand"});
  expect_db_error(run_db({"db", "show", "-o", "yaml"}), {"--output"});
  expect_db_error(run_db({"db", "show", "--frobnicate"}), {"--frobnicate"});
}

TEST(DbCommand, HelpListsTheCommonFlags) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"db", "show", "--help"},
                                               std::vector<std::string>{"db", "lint", "--help"}}) {
    const auto run = run_db(args);
    EXPECT_EQ(run.status, 0);
    for (const char* flag : {"--config", "--nodes", "--compat-db", "--log-level", "--log-format"}) {
      EXPECT_NE(run.out.find(flag), std::string::npos) << args[1] << " " << flag;
    }
  }
}

}  // namespace
}  // namespace cudagate

// `cudagate version`: the version, build and compat-db lines in text and JSON, each value the
// one the build and the loaded matrix give, and its usage errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "compat-db/compat_db_json.h"
#include "tests/support/cli_run.h"
#include "tests/support/embedded_compat_db.h"

namespace cudagate {
namespace {

using test_support::cli_lines;
using test_support::CliTempDir;
using test_support::run_cli;

// The version and build type the build passes in (server/CMakeLists.txt),
// which `version` reports and no test spells out.
constexpr std::string_view kVersionOfBuild = CUDAGATE_VERSION;
constexpr std::string_view kBuildTypeOfBuild = CUDAGATE_BUILD_TYPE;

TEST(VersionCommand, TextNamesTheBuildAndTheEmbeddedMatrix) {
  const auto run = run_cli(add_version_command, {"version"});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.err, "");
  const CompatDb& db = test_support::db();
  const auto lines = cli_lines(run.out);
  ASSERT_GE(lines.size(), 5U) << run.out;
  EXPECT_EQ(lines[0], "cudagate " + std::string(kVersionOfBuild));
  // The build type first, then each sanitizer the build has, if any.
  EXPECT_TRUE(lines[1].starts_with("build:     " + std::string(kBuildTypeOfBuild))) << lines[1];
  EXPECT_TRUE(lines[2].starts_with("compiler:  ")) << lines[2];
  EXPECT_EQ(lines[3], "compat-db: " + db.revision + " (embedded)");
  EXPECT_EQ(lines[4], "as of:     " + (db.as_of.empty() ? std::string("undated") : db.as_of));
  const auto newest = newest_entries(db);
  ASSERT_FALSE(newest.empty());
  ASSERT_EQ(lines.size(), 5 + newest.size()) << run.out;
  for (std::size_t i = 0; i < newest.size(); ++i) {
    EXPECT_EQ(lines[5 + i], "newest " + newest[i].first + ": " + newest[i].second);
  }
}

TEST(VersionCommand, JsonHoldsTheSameValues) {
  const auto run = run_cli(add_version_command, {"version", "--output", "json"});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.err, "");
  const auto info = nlohmann::json::parse(run.out);
  const CompatDb& db = test_support::db();
  std::vector<std::string> keys;
  for (const auto& [key, value] : info.items()) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, (std::vector<std::string>{"buildType", "compatDb", "compiler", "sanitizers",
                                            "version"}));
  EXPECT_EQ(info["version"], kVersionOfBuild);
  EXPECT_EQ(info["buildType"], kBuildTypeOfBuild);
  EXPECT_TRUE(info["compiler"].is_string());
  ASSERT_TRUE(info["sanitizers"].is_array());
  for (const auto& name : info["sanitizers"]) {
    EXPECT_TRUE(name == "address" || name == "undefined") << name;
  }
  const auto& matrix = info["compatDb"];
  EXPECT_EQ(matrix["revision"], db.revision);
  EXPECT_EQ(matrix["source"], "embedded");
  if (db.as_of.empty()) {
    EXPECT_TRUE(matrix["asOf"].is_null());
  } else {
    EXPECT_EQ(matrix["asOf"], db.as_of);
  }
  nlohmann::json newest = nlohmann::json::object();
  for (const auto& [what, entry] : newest_entries(db)) newest[what] = entry;
  EXPECT_EQ(matrix["newest"], newest);
}

TEST(VersionCommand, TextAndJsonAgreeOnTheSanitizers) {
  const auto info =
      nlohmann::json::parse(run_cli(add_version_command, {"version", "-o", "json"}).out);
  std::string build = info["buildType"];
  for (const auto& name : info["sanitizers"])
    build += ", " + name.get<std::string>() + " sanitizer";
  const auto lines = cli_lines(run_cli(add_version_command, {"version"}).out);
  ASSERT_GE(lines.size(), 2U);
  EXPECT_EQ(lines[1], "build:     " + build);
}

TEST(VersionCommand, RevisionAndSourceFollowTheCompatDbFile) {
  // The embedded matrix with one source edited: another revision, the one
  // the matrix loader reads from the file.
  auto document = compat_db_to_json(test_support::db());
  document["products"][0]["source"] =
      document["products"][0]["source"].get<std::string>() + " (edited)";
  const std::string text = document.dump();
  const CliTempDir dir;
  const std::string file = dir.write("edited.json", text);
  const auto loaded = load_compat_db({CompatDbFile{file, text}});
  ASSERT_TRUE(loaded) << loaded.error().str();
  ASSERT_NE(loaded->revision, test_support::db().revision);

  const auto run = run_cli(add_version_command, {"version", "-o", "json", "--compat-db", file});
  ASSERT_EQ(run.status, 0) << run.err;
  const auto info = nlohmann::json::parse(run.out);
  EXPECT_EQ(info["compatDb"]["revision"], loaded->revision);
  EXPECT_EQ(info["compatDb"]["source"], file);

  const auto text_run = run_cli(add_version_command, {"version", "--compat-db", file});
  ASSERT_EQ(text_run.status, 0) << text_run.err;
  EXPECT_NE(text_run.out.find("\ncompat-db: " + loaded->revision + " (" + file + ")\n"),
            std::string::npos)
      << text_run.out;
}

TEST(VersionCommand, UsageErrorsAreOneLineAndStatusTwo) {
  const CliTempDir dir;
  const std::string missing = dir.path("no-such-db.json");
  const std::string broken = dir.write("broken.json", "{\"schemaVersion\": 1,");
  struct Row {
    std::vector<std::string> args;
    std::string line;  // the whole line, or a fragment it must hold when `exact` is false
    bool exact;
  };
  const std::vector<Row> rows = {
      {{"version", "--compat-db", missing},
       "cudagate: error: " + missing + ": cannot read: No such file or directory",
       true},
      {{"version", "--compat-db", broken}, broken, false},
      {{"version", "--output", "yaml"}, "--output", false},
      {{"version", "--log-level", "loud"}, "--log-level", false},
      {{"version", "--frobnicate"}, "--frobnicate", false},
  };
  for (const auto& row : rows) {
    const auto run = run_cli(add_version_command, row.args);
    EXPECT_EQ(run.status, 2) << row.args.back();
    EXPECT_EQ(run.out, "") << row.args.back();
    const auto lines = cli_lines(run.err);
    ASSERT_EQ(lines.size(), 1U) << run.err;
    EXPECT_TRUE(lines[0].starts_with("cudagate: error: ")) << lines[0];
    if (row.exact) {
      EXPECT_EQ(lines[0], row.line);
    } else {
      EXPECT_NE(lines[0].find(row.line), std::string::npos) << lines[0];
    }
  }
}

TEST(VersionCommand, HelpIsUsageOnStdoutWithStatusZero) {
  const auto run = run_cli(add_version_command, {"version", "--help"});
  EXPECT_EQ(run.status, 0);
  EXPECT_NE(run.out.find("Usage"), std::string::npos) << run.out;
  for (const char* flag :
       {"--output", "--config", "--nodes", "--compat-db", "--log-level", "--log-format"}) {
    EXPECT_NE(run.out.find(flag), std::string::npos) << flag;
  }
}

}  // namespace
}  // namespace cudagate

// `cudagate api-calls`: the table of kube/api_calls.h printed as JSON, one call a line, with
// nothing on stderr; the common flags it accepts and its usage errors.
#include "kube/api_calls.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "tests/support/cli_run.h"

namespace cudagate {
namespace {

using test_support::cli_lines;
using test_support::run_cli;

TEST(ApiCallsCommand, PrintsEveryRowOfTheTableInOrder) {
  const auto run = run_cli(add_api_calls_command, {"api-calls"});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.err, "");
  // Exactly what the table's own writer gives.
  EXPECT_EQ(run.out, kube::api_calls_json());

  const auto rows = nlohmann::json::parse(run.out);
  ASSERT_TRUE(rows.is_array());
  ASSERT_EQ(rows.size(), kube::kApiCalls.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const kube::ApiCall& call = kube::kApiCalls[i];
    const auto& row = rows[i];
    EXPECT_EQ(row.size(), 5U) << row;
    EXPECT_EQ(row["verb"], call.verb) << i;
    EXPECT_EQ(row["group"], call.group) << i;
    EXPECT_EQ(row["resource"], call.resource) << i;
    EXPECT_EQ(row["when"], call.when) << i;
    nlohmann::json rbac = nlohmann::json::array({call.verb});
    if (!call.also.empty()) rbac.push_back(call.also);
    EXPECT_EQ(row["rbac"], rbac) << i;
  }
  // "[", one line a call, "]".
  const auto lines = cli_lines(run.out);
  ASSERT_EQ(lines.size(), kube::kApiCalls.size() + 2);
  EXPECT_EQ(lines.front(), "[");
  EXPECT_EQ(lines.back(), "]");
}

TEST(ApiCallsCommand, NamesWhatEachFeatureCalls) {
  const auto rows = nlohmann::json::parse(run_cli(add_api_calls_command, {"api-calls"}).out);
  std::vector<std::string> explain;
  bool applies_create = false;
  for (const auto& row : rows) {
    if (row["when"] == "explain")
      explain.push_back(row["verb"].get<std::string>() + " " + row["resource"].get<std::string>());
    if (row["verb"] == "patch") {
      // A server-side apply may create the object: RBAC must grant both.
      EXPECT_EQ(row["rbac"], nlohmann::json::array({"patch", "create"})) << row;
      applies_create = true;
    }
  }
  EXPECT_TRUE(applies_create);
  EXPECT_EQ(explain, (std::vector<std::string>{"get pods", "list events", "list nodes",
                                               "list resourceslices", "list nodepools"}));
}

TEST(ApiCallsCommand, AcceptsTheCommonFlagsAndRefusesBadOnes) {
  // Accepted as by every subcommand; none changes the output.
  const auto run =
      run_cli(add_api_calls_command, {"api-calls", "--log-level", "error", "--log-format", "json"});
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, kube::api_calls_json());

  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"api-calls", "--log-format", "xml"},
        std::vector<std::string>{"api-calls", "--verbs"}}) {
    const auto bad = run_cli(add_api_calls_command, args);
    EXPECT_EQ(bad.status, 2) << args[1];
    EXPECT_EQ(bad.out, "");
    const auto lines = cli_lines(bad.err);
    ASSERT_EQ(lines.size(), 1U) << bad.err;
    EXPECT_TRUE(lines[0].starts_with("cudagate: error: ")) << lines[0];
    EXPECT_NE(lines[0].find(args[1]), std::string::npos) << lines[0];
  }
}

}  // namespace
}  // namespace cudagate

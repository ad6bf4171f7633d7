// What the inventory names that the matrix does not know: the matrix's one-line summary, the
// gaps and inconsistent nodes exported as metrics with their node counts (back to zero once
// gone), and logged once a value, again only when the value comes back or the matrix changes.
#include "server/matrix_gaps.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "policy/objects/node.h"
#include "tests/support/captured_log.h"
#include "tests/support/embedded_compat_db.h"

namespace cudagate {
namespace {

using nlohmann::json;

json matrix_gaps_node(const std::string& name, const json& labels) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"status", {{"allocatable", {{"nvidia.com/gpu", "1"}}}}}};
}

// Two nodes with a GPU, driver branch and compute capability no matrix names.
const json kMatrixGapsFuture = {
    {"nvidia.com/gpu.present", "true"},    {"nvidia.com/gpu.product", "NVIDIA-Z9000"},
    {"nvidia.com/gpu.count", "1"},         {"nvidia.com/gpu.compute.major", "15"},
    {"nvidia.com/gpu.compute.minor", "0"}, {"nvidia.com/cuda.driver-version.full", "999.10.01"}};
// A Volta GPU with a driver past Volta's last branch.
const json kMatrixGapsInconsistent = {{"nvidia.com/gpu.present", "true"},
                                      {"nvidia.com/gpu.product", "Tesla-V100-SXM2-16GB"},
                                      {"nvidia.com/gpu.count", "1"},
                                      {"nvidia.com/cuda.driver-version.full", "590.48.01"}};

Inventory matrix_gaps_inventory(const std::vector<json>& nodes) {
  auto parsed = parse_nodes(json{{"kind", "List"}, {"items", nodes}}.dump(), "nodes.json");
  if (!parsed) throw std::runtime_error(parsed.error().str());
  return Inventory::build(*parsed, test_support::db());
}

// spdlog's default logger writes into a string for the test's length.
class MatrixGapsTest : public ::testing::Test {
 protected:
  // The lines logged since the last call.
  std::vector<std::string> logged() { return log_.lines(); }

  test_support::CapturedLog log_{"matrix-gaps-test"};
  WebhookMetrics metrics_{"test", "rev"};
};

bool matrix_gaps_has(const std::string& text, const std::string& series) {
  return text.find(series + "\n") != std::string::npos;
}

TEST_F(MatrixGapsTest, SummaryNamesTheMatrixAndItsNewestEntries) {
  const CompatDb& db = test_support::db();
  const std::string summary = matrix_summary(db, "embedded");
  EXPECT_TRUE(summary.starts_with("compat-db " + db.revision + " (embedded), as of " + db.as_of +
                                  "; newest CUDA release " + db.cuda_releases.back().label))
      << summary;
  EXPECT_NE(summary.find(", driver branch " + std::to_string(db.driver_branches.back().branch) +
                         " (CUDA "),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find(", compute capability " + db.newest_capability()->str()),
            std::string::npos)
      << summary;

  CompatDb undated = db;
  undated.as_of.clear();
  EXPECT_NE(matrix_summary(undated, "/etc/db.json").find("(/etc/db.json), as of an unknown date"),
            std::string::npos);
}

TEST_F(MatrixGapsTest, GapsAreExportedAndLoggedOnceAValue) {
  const CompatDb& db = test_support::db();
  const Inventory future = matrix_gaps_inventory(
      {matrix_gaps_node("z-1", kMatrixGapsFuture), matrix_gaps_node("z-2", kMatrixGapsFuture)});
  const Inventory known = matrix_gaps_inventory({});
  MatrixGaps gaps;

  gaps.publish(future, db, metrics_);
  std::string text = metrics_.render();
  for (const char* series :
       {R"(cudagate_compat_db_unknown_nodes{kind="driver_branch",value="999"} 2)",
        R"(cudagate_compat_db_unknown_nodes{kind="product",value="NVIDIA-Z9000"} 2)",
        R"(cudagate_compat_db_unknown_nodes{kind="compute_capability",value="15.0"} 2)",
        "cudagate_inventory_inconsistent_nodes 0"}) {
    EXPECT_TRUE(matrix_gaps_has(text, series)) << series << "\n" << text;
  }
  const auto first = logged();
  ASSERT_EQ(first.size(), 3U);
  // In the order of the kinds' names.
  const std::vector<std::string> starts = {"warning 2 nodes have compute capability 15.0, which ",
                                           "warning 2 nodes have driver branch 999, which ",
                                           "warning 2 nodes have GPU product NVIDIA-Z9000, which "};
  for (std::size_t i = 0; i < starts.size(); ++i) {
    EXPECT_TRUE(first[i].starts_with(starts[i])) << first[i];
    EXPECT_NE(first[i].find(db.describe()), std::string::npos) << first[i];
  }

  // The same values again: nothing new to say.
  gaps.publish(future, db, metrics_);
  EXPECT_TRUE(logged().empty());

  // Gone: their series read zero, and nothing is logged.
  gaps.publish(known, db, metrics_);
  text = metrics_.render();
  EXPECT_TRUE(matrix_gaps_has(
      text, R"(cudagate_compat_db_unknown_nodes{kind="product",value="NVIDIA-Z9000"} 0)"))
      << text;
  EXPECT_TRUE(logged().empty());

  // Back: logged again.
  gaps.publish(future, db, metrics_);
  EXPECT_EQ(logged().size(), 3U);

  // Another matrix that does not know them either: logged again, naming it.
  CompatDb newer = db;
  newer.revision = "fedcba9876543210";
  gaps.publish(future, newer, metrics_);
  const auto again = logged();
  ASSERT_EQ(again.size(), 3U);
  EXPECT_NE(again[0].find(newer.describe()), std::string::npos) << again[0];
}

TEST_F(MatrixGapsTest, InconsistentNodesAreCountedAndLogged) {
  const CompatDb& db = test_support::db();
  const Inventory inventory =
      matrix_gaps_inventory({matrix_gaps_node("volta-1", kMatrixGapsInconsistent)});
  ASSERT_EQ(inventory.groups().size(), 1U);
  const std::string why = inventory.groups()[0].facts.inconsistency;
  ASSERT_FALSE(why.empty()) << "the matrix no longer finds a Volta GPU on 590 inconsistent";

  MatrixGaps gaps;
  gaps.publish(inventory, db, metrics_);
  EXPECT_TRUE(matrix_gaps_has(metrics_.render(), "cudagate_inventory_inconsistent_nodes 1"))
      << metrics_.render();
  EXPECT_EQ(logged(), (std::vector<std::string>{"warning 1 nodes are judged unknown: " + why}));
  gaps.publish(inventory, db, metrics_);
  EXPECT_TRUE(logged().empty());

  gaps.publish(matrix_gaps_inventory({}), db, metrics_);
  EXPECT_TRUE(matrix_gaps_has(metrics_.render(), "cudagate_inventory_inconsistent_nodes 0"));
}

}  // namespace
}  // namespace cudagate

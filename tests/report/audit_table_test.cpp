// The terminal table: a header, one aligned row per workload, colour only when asked, and the
// summary line last.
#include "report/audit_table.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/support/audit_fixture.h"

namespace cudagate {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(AuditTable, AlignedRowsAndASummaryLast) {
  const Audit audit = test_support::fixture_audit();
  const auto lines = lines_of(audit_table(audit, false));
  ASSERT_EQ(lines.size(), 1 + audit.workloads.size() + 2);
  EXPECT_TRUE(lines[0].starts_with("VERDICT  WORKLOAD ")) << lines[0];
  const auto column = lines[0].find("NODES");
  for (std::size_t i = 1; i <= audit.workloads.size(); ++i) {
    EXPECT_EQ(lines[i].find_first_not_of(' ', column - 2), column) << lines[i];
  }
  EXPECT_EQ(lines[lines.size() - 2], "");
  EXPECT_EQ(lines.back(),
            "9 workloads: 1 error, 1 fail, 3 partial, 2 pass, 2 skip; 1 reported as their "
            "controller; 2 other objects skipped");
  EXPECT_EQ(audit_table(audit, false).find('\x1b'), std::string::npos);
}

TEST(AuditTable, ColourMarksTheVerdicts) {
  const std::string text = audit_table(test_support::fixture_audit(), true);
  EXPECT_NE(text.find("\x1b[1;31mfail\x1b[0m"), std::string::npos);
  EXPECT_NE(text.find("\x1b[1;32mpass\x1b[0m"), std::string::npos);
  EXPECT_NE(text.find("\x1b[1;33mpartial\x1b[0m"), std::string::npos);
}

TEST(AuditTable, SummaryOfAnEmptyAuditWithBrokenInput) {
  Audit audit;
  audit.broken.push_back(Error{"x.yaml:1", "invalid YAML"});
  audit.skipped = 1;
  EXPECT_EQ(audit_summary(audit),
            "0 workloads; 1 other object skipped; 1 document could not be read");
}

}  // namespace
}  // namespace cudagate

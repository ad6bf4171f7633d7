// The audit as JUnit XML: a case per workload, failures by --fail-on, errors for what could not
// be judged or read, counts that add up, and text escaped.
#include "report/junit_report.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/support/audit_fixture.h"
#include "tests/support/occurrences.h"

namespace cudagate {
namespace {

using test_support::fixture_audit;
using test_support::occurrences;

TEST(JunitReport, CountsFollowFailOn) {
  const Audit audit = fixture_audit();
  const std::string on_fail = junit_report(audit, FailOn::fail, 0);
  EXPECT_TRUE(on_fail.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites "));
  EXPECT_NE(on_fail.find("<testsuites name=\"cudagate audit\" tests=\"9\" failures=\"1\" "
                         "errors=\"1\" skipped=\"2\""),
            std::string::npos)
      << on_fail;
  EXPECT_EQ(occurrences(on_fail, "<testcase "), 9U);
  EXPECT_EQ(occurrences(on_fail, "<failure "), 1U);
  EXPECT_EQ(occurrences(on_fail, "<skipped "), 2U);
  EXPECT_EQ(occurrences(on_fail, "<error "), 1U);
  // Partial workloads pass under --fail-on fail and fail under --fail-on warn.
  const std::string on_warn = junit_report(audit, FailOn::warn, 0);
  EXPECT_EQ(occurrences(on_warn, "<failure "), 4U);
  EXPECT_NE(on_warn.find("failures=\"4\""), std::string::npos);
  EXPECT_EQ(junit_report(audit, FailOn::never, 0), on_fail);
}

TEST(JunitReport, CasesNameTheWorkloadAndItsFile) {
  const std::string xml = junit_report(fixture_audit(), FailOn::fail, 1764584444);
  EXPECT_NE(xml.find("<testcase classname=\"cudagate.ml\" name=\"Pod ml/trainer\" time=\"0\" "
                     "file=\"manifests/trainer.yaml\" line=\"1\">"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<testsuite name=\"no namespace\""), std::string::npos);
  EXPECT_NE(xml.find("timestamp=\"2025-12-01T10:20:44\""), std::string::npos);
  EXPECT_NE(xml.find("<failure type=\"fail\" message=\"[cuda-driver] train: needs CUDA 12.4"),
            std::string::npos);
  EXPECT_NE(xml.find("fix: upgrade the driver"), std::string::npos);
}

TEST(JunitReport, UnreadableDocumentsAreErroredCases) {
  Audit audit;
  audit.broken.push_back(Error{"bad.yaml:3", "invalid YAML: <oops> & \"more\""});
  const std::string xml = junit_report(audit, FailOn::fail, 0);
  EXPECT_NE(xml.find("<testsuite name=\"inputs\" tests=\"1\" failures=\"0\" errors=\"1\""),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("name=\"bad.yaml:3\" time=\"0\" file=\"bad.yaml\" line=\"3\""),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("message=\"invalid YAML: &lt;oops&gt; &amp; &quot;more&quot;\""),
            std::string::npos);
}

}  // namespace
}  // namespace cudagate

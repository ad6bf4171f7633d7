#pragma once
// An audit as JUnit XML, for CI pipelines: one test case per workload
// (classname "cudagate.<namespace>", name "Kind namespace/name"), grouped in
// one test suite per namespace ("no namespace" for manifests without one), and a suite "inputs"
// with one errored case per document that could not be read. A workload whose result fails the
// audit under `fail_on` (FailOn::never counts as FailOn::fail, so that the
// failures still show) is a <failure> with the findings and fixes; one that
// could not be judged an <error>; a skipped one <skipped>. Other results
// pass, their findings in <system-out>.

#include <cstddef>
#include <cstdint>
#include <string>

#include "report/audit.h"

namespace cudagate {

// The parts other JUnit reports (the rollout plan's) share.
struct JunitSuite {
  std::string body;  // the <testcase> elements
  std::size_t tests = 0, failures = 0, errors = 0, skipped = 0;
};
// Appends the <testsuite ...> start tag of `suite` named `name`.
void junit_open_suite(std::string& out, const std::string& name, const JunitSuite& suite,
                      const std::string& timestamp);
// "deploy.yaml:12" -> ` file="deploy.yaml" line="12"`, as several JUnit readers show them.
[[nodiscard]] std::string junit_place_attributes(const std::string& place);

// `timestamp_seconds` (Unix time, UTC) stamps the suites.
[[nodiscard]] std::string junit_report(const Audit& audit, FailOn fail_on,
                                       std::int64_t timestamp_seconds);

}  // namespace cudagate

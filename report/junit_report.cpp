// The audit as JUnit XML: suites per namespace, one case per workload.
#include "report/junit_report.h"

#include <cstdint>
#include <map>
#include <vector>

#include "report/finding_text.h"
#include "report/utc_time.h"
#include "report/xml_escape.h"

namespace cudagate {
namespace {

using Suite = JunitSuite;

}  // namespace

void junit_open_suite(std::string& out, const std::string& name, const JunitSuite& suite,
                      const std::string& timestamp) {
  out += "  <testsuite name=\"" + xml_escape(name) + "\" tests=\"" + std::to_string(suite.tests) +
         "\" failures=\"" + std::to_string(suite.failures) + "\" errors=\"" +
         std::to_string(suite.errors) + "\" skipped=\"" + std::to_string(suite.skipped) +
         "\" time=\"0\" timestamp=\"" + timestamp + "\">\n";
}

std::string junit_place_attributes(const std::string& place) {
  if (place.empty()) return "";
  std::string file = place;
  std::string line;
  const auto colon = place.rfind(':');
  if (colon != std::string::npos && colon + 1 < place.size() &&
      place.find_first_not_of("0123456789", colon + 1) == std::string::npos) {
    file = place.substr(0, colon);
    line = place.substr(colon + 1);
  } else if (const auto sep = place.find(": "); sep != std::string::npos) {
    return junit_place_attributes(place.substr(0, sep));
  }
  std::string out = " file=\"" + xml_escape(file) + "\"";
  if (!line.empty()) out += " line=\"" + line + "\"";
  return out;
}

std::string junit_report(const Audit& audit, FailOn fail_on, std::int64_t timestamp_seconds) {
  const FailOn threshold = fail_on == FailOn::never ? FailOn::fail : fail_on;
  const std::string timestamp = utc_time_text(timestamp_seconds);
  std::map<std::string, Suite> suites;
  for (const AuditedWorkload& w : audit.workloads) {
    const std::string& ns = w.decision.resource.namespace_;
    Suite& suite = suites[ns];
    ++suite.tests;
    const AuditResult result = result_of(w);
    std::string& b = suite.body;
    b += "    <testcase classname=\"" +
         xml_escape(ns.empty() ? std::string("cudagate") : "cudagate." + ns) + "\" name=\"" +
         xml_escape(workload_title(w.decision.resource)) + "\" time=\"0\"" +
         junit_place_attributes(w.place) + ">\n";
    const std::string reason = reason_line(w);
    if (result == AuditResult::error) {
      ++suite.errors;
      b += "      <error type=\"error\" message=\"" + xml_escape(reason) + "\"/>\n";
    } else if (result == AuditResult::skip) {
      ++suite.skipped;
      b += "      <skipped message=\"" + xml_escape(reason) + "\"/>\n";
    } else if (fails(result, threshold)) {
      ++suite.failures;
      b += "      <failure type=\"" + std::string(to_string(w.decision.verdict)) + "\" message=\"" +
           xml_escape(reason) + "\">" + xml_escape(findings_text(w)) + "</failure>\n";
    } else if (const std::string text = findings_text(w); !text.empty()) {
      b += "      <system-out>" + xml_escape(text) + "</system-out>\n";
    }
    b += "    </testcase>\n";
  }
  Suite inputs;
  for (const Error& e : audit.broken) {
    ++inputs.tests;
    ++inputs.errors;
    inputs.body += "    <testcase classname=\"cudagate.inputs\" name=\"" + xml_escape(e.where) +
                   "\" time=\"0\"" + junit_place_attributes(e.where) +
                   ">\n      <error type=\"invalid\" message=\"" + xml_escape(e.message) +
                   "\"/>\n    </testcase>\n";
  }

  Suite total;
  for (const auto& [name, s] : suites) {
    total.tests += s.tests;
    total.failures += s.failures;
    total.errors += s.errors;
    total.skipped += s.skipped;
  }
  total.tests += inputs.tests;
  total.errors += inputs.errors;

  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<testsuites name=\"cudagate audit\" tests=\"" + std::to_string(total.tests) +
         "\" failures=\"" + std::to_string(total.failures) + "\" errors=\"" +
         std::to_string(total.errors) + "\" skipped=\"" + std::to_string(total.skipped) +
         "\" time=\"0\">\n";
  for (const auto& [name, s] : suites) {
    junit_open_suite(out, name.empty() ? std::string("no namespace") : name, s, timestamp);
    out += s.body;
    out += "  </testsuite>\n";
  }
  if (inputs.tests != 0) {
    junit_open_suite(out, "inputs", inputs, timestamp);
    out += inputs.body;
    out += "  </testsuite>\n";
  }
  out += "</testsuites>\n";
  return out;
}

}  // namespace cudagate

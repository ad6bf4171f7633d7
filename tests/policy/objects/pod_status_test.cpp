// Pod status and events as kubectl prints them (tests/fixtures/explain).
#include "policy/objects/pod_status.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "policy/objects/document.h"

namespace cudagate {
namespace {

std::string explain_fixture(const std::string& name) {
  std::ifstream in(std::string(CUDAGATE_TEST_DATA) + "/explain/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

PodReport pod(const std::string& name) {
  auto docs = parse_documents(explain_fixture(name), name);
  auto report = pod_report_from_json(docs->front(), name);
  if (!report) throw std::runtime_error(report.error().str());
  return *report;
}

TEST(PodStatus, CrashLoopWithTheLastTermination) {
  const PodReport p = pod("pod-crashloop.yaml");
  EXPECT_EQ(p.namespace_, "ml");
  EXPECT_EQ(p.node_name, "t4-1");
  ASSERT_EQ(p.containers.size(), 1U);
  const ContainerReport& c = p.containers[0];
  EXPECT_EQ(c.state, "waiting");
  EXPECT_EQ(c.reason, "CrashLoopBackOff");
  EXPECT_EQ(c.last_reason, "Error");
  EXPECT_EQ(c.last_exit_code, 1);
  EXPECT_EQ(c.restarts, 5);
  EXPECT_NE(c.last_message.find("no kernel image is available"), std::string::npos);
}

TEST(PodStatus, EventsOfThePodOnly) {
  const PodReport p = pod("pod-runcontainererror.yaml");
  auto events = read_pod_events(explain_fixture("events.yaml"), "events.yaml", p);
  ASSERT_TRUE(events) << events.error().str();
  ASSERT_EQ(events->size(), 1U);
  EXPECT_EQ((*events)[0].reason, "Failed");
  EXPECT_EQ((*events)[0].count, 4);
  EXPECT_EQ((*events)[0].source, "kubelet");
  EXPECT_EQ((*events)[0].where, "events.yaml: items[2]");
}

TEST(PodStatus, EventsK8sIoV1) {
  PodReport p;
  p.name = "x";
  p.namespace_ = "ns";
  auto events = read_pod_events(
      R"({"apiVersion":"events.k8s.io/v1","kind":"EventList","items":[{"regarding":{"kind":"Pod",
      "name":"x","namespace":"ns"},"reason":"Failed","note":"unsatisfied condition: cuda>=12.4",
      "type":"Warning","reportingController":"kubelet","series":{"count":3},"deprecatedCount":3}]})",
      "e.json", p);
  ASSERT_TRUE(events) << events.error().str();
  ASSERT_EQ(events->size(), 1U);
  EXPECT_EQ((*events)[0].message, "unsatisfied condition: cuda>=12.4");
  EXPECT_EQ((*events)[0].source, "kubelet");
  EXPECT_EQ((*events)[0].count, 3);
}

TEST(PodStatus, WrongTypesNameTheField) {
  auto r = pod_report_from_json(
      nlohmann::json::parse(R"({"kind":"Pod","status":{"containerStatuses":[{"name":"main",
      "restartCount":"five"}]}})"),
      "pod.yaml");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().str(),
            "pod.yaml: status.containerStatuses[0].restartCount: expected an integer, got string");
  PodReport p;
  p.name = "x";
  auto e = read_pod_events(R"({"kind":"List","items":[{"kind":"Event","involvedObject":7}]})",
                           "e.json", p);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().str(), "e.json: items[0]: involvedObject: expected an object, got number");
}

}  // namespace
}  // namespace cudagate

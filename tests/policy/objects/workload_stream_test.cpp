// Reading the workloads of a manifest stream for an audit: every shape, broken documents
// reported with their place while the others are read, other kinds counted, and workloads
// reported as their controllers.
#include "policy/objects/workload_stream.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cudagate {
namespace {

constexpr std::string_view kPod = R"(apiVersion: v1
kind: Pod
metadata:
  name: a
  namespace: ml
spec:
  containers:
  - name: main
    image: nginx
)";

std::vector<std::string> names(const WorkloadStream& s) {
  std::vector<std::string> out;
  for (const auto& w : s.workloads) out.push_back(w.workload.resource.name + "@" + w.place);
  return out;
}

std::vector<std::string> errors(const WorkloadStream& s) {
  std::vector<std::string> out;
  for (const auto& e : s.broken) out.push_back(e.str());
  return out;
}

TEST(WorkloadStream, MultiDocumentYamlWithOtherKindsAndEmptyDocuments) {
  const std::string text = std::string("# rendered\n---\n") + std::string(kPod) +
                           "---\n---\napiVersion: v1\nkind: Service\nmetadata: {name: s}\n";
  const auto s = read_workload_stream(text, "chart.yaml");
  EXPECT_EQ(names(s), (std::vector<std::string>{"a@chart.yaml:3"}));
  EXPECT_EQ(s.skipped, 1U);
  EXPECT_TRUE(s.broken.empty());
}

TEST(WorkloadStream, BrokenDocumentsAreReportedAndTheOthersRead) {
  const std::string text = std::string(kPod) + "---\nkind: Pod\nmetadata: [x\n---\n" +
                           "kind: Pod\nmetadata: {name: b}\nspec: {containers: []}\n---\n" +
                           "just text\n---\nmetadata: {name: c}\n---\n" + std::string(kPod);
  const auto s = read_workload_stream(text, "m.yaml");
  EXPECT_EQ(names(s), (std::vector<std::string>{"a@m.yaml:1", "a@m.yaml:22"}));
  const auto e = errors(s);
  ASSERT_EQ(e.size(), 4U) << ::testing::PrintToString(e);
  EXPECT_TRUE(e[0].starts_with("m.yaml:12: invalid YAML")) << e[0];
  EXPECT_TRUE(e[1].starts_with("m.yaml:14: spec.containers")) << e[1];
  EXPECT_EQ(e[2], "m.yaml:18: expected a Kubernetes object, got string");
  EXPECT_EQ(e[3], "m.yaml:20: kind: is required");
}

TEST(WorkloadStream, ListsAndJsonArrays) {
  const std::string list = R"({"apiVersion": "v1", "kind": "List", "items": [
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
     "spec": {"containers": [{"name": "c", "image": "x"}]}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad"}, "spec": {"containers": 3}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ml"},
     "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}}]})";
  const auto s = read_workload_stream(list, "l.json");
  EXPECT_EQ(names(s), (std::vector<std::string>{"p@l.json:1: items[0]", "d@l.json:1: items[3]"}));
  EXPECT_EQ(s.skipped, 1U);
  ASSERT_EQ(s.broken.size(), 1U);
  EXPECT_EQ(s.broken[0].where, "l.json:1: items[2]: spec.containers");

  const auto a = read_workload_stream(
      R"([{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "x"}]}}, 7])",
      "a.json");
  EXPECT_EQ(names(a), (std::vector<std::string>{"p@a.json:1: [0]"}));
  EXPECT_EQ(errors(a), (std::vector<std::string>{"a.json:1: [1]: expected a Kubernetes object, "
                                                 "got number"}));
}

TEST(WorkloadStream, AJsonSyntaxErrorIsTheWholeFile) {
  const auto s = read_workload_stream("{\"kind\": \"Pod\",\n \"x\": }", "p.json");
  EXPECT_TRUE(s.workloads.empty());
  ASSERT_EQ(s.broken.size(), 1U);
  EXPECT_EQ(s.broken[0].where, "p.json:2:7");
}

PlacedWorkload placed(std::string kind, std::string name, std::string owner_kind = "",
                      std::string owner = "") {
  PlacedWorkload w;
  w.workload.resource = ResourceRef{"v1", std::move(kind), "ml", std::move(name)};
  if (!owner_kind.empty())
    w.controller = ResourceRef{"", std::move(owner_kind), "", std::move(owner)};
  return w;
}

TEST(WorkloadStream, ControlledWorkloadsAreReportedAsTheirControllers) {
  std::vector<PlacedWorkload> ws;
  ws.push_back(placed("Deployment", "web"));
  ws.push_back(placed("Pod", "web-5d8f7c9b4-abcde", "ReplicaSet", "web-5d8f7c9b4"));
  ws.push_back(placed("CronJob", "nightly"));
  ws.push_back(placed("Job", "nightly-29000000", "Job", "x"));  // owner not present: kept
  ws.push_back(placed("Pod", "nightly-29000000-q", "Job", "nightly-29000000"));
  ws.push_back(placed("Pod", "db-0", "StatefulSet", "db"));  // its StatefulSet is not here
  ws.push_back(placed("Pod", "other-abc-1", "ReplicaSet", "other-abc"));
  const std::size_t dropped = drop_controlled(ws);
  EXPECT_EQ(dropped, 2U);
  std::vector<std::string> kept;
  for (const auto& w : ws) kept.push_back(w.workload.resource.name);
  EXPECT_EQ(kept, (std::vector<std::string>{"web", "nightly", "nightly-29000000", "db-0",
                                            "other-abc-1"}));
}

TEST(WorkloadStream, ReadsTheControllerReference) {
  const auto s = read_workload_stream(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {
      "name": "p", "namespace": "ml", "ownerReferences": [
        {"apiVersion": "v1", "kind": "Node", "name": "n1"},
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "controller": true}]},
      "spec": {"containers": [{"name": "c", "image": "x"}]}})",
                                      "p.json");
  ASSERT_EQ(s.workloads.size(), 1U);
  ASSERT_TRUE(s.workloads[0].controller);
  EXPECT_EQ(s.workloads[0].controller->kind, "ReplicaSet");
  EXPECT_EQ(s.workloads[0].controller->name, "web-1");
}

}  // namespace
}  // namespace cudagate

// Reading workloads: Pods and every controller's template, lists and multi-document files,
// scheduling fields, resource quantities, and errors naming the document and the field.
#include "policy/objects/pod.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "policy/objects/document.h"
#include "policy/objects/node.h"
#include "policy/objects/workload_reader.h"

namespace cudagate {
namespace {

using nlohmann::json;

std::string workload_fixture(const std::string& name) {
  std::ifstream in(std::string(CUDAGATE_TEST_DATA) + "/workloads/" + name, std::ios::binary);
  EXPECT_TRUE(in) << name;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Workload one_workload(const std::string& text, const std::string& source = "w.yaml") {
  auto ws = parse_workloads(text, source);
  EXPECT_TRUE(ws) << ws.error().str();
  if (!ws || ws->size() != 1) {
    ADD_FAILURE() << "expected one workload";
    return {};
  }
  return ws->front();
}

TEST(Pod, GpuPodFixture) {
  const Workload w = one_workload(workload_fixture("pod-gpu.yaml"), "pod-gpu.yaml");
  EXPECT_EQ(w.resource.api_version, "v1");
  EXPECT_EQ(w.resource.kind, "Pod");
  EXPECT_EQ(w.resource.namespace_, "ml");
  EXPECT_EQ(w.resource.name, "trainer-0");
  EXPECT_EQ(w.spec_pointer, "/spec");

  ASSERT_EQ(w.spec.containers.size(), 3U);
  EXPECT_EQ(w.spec.containers[0].name, "fetch-dataset");
  EXPECT_TRUE(w.spec.containers[0].init);
  EXPECT_TRUE(w.spec.containers[0].resources.empty());  // cpu and memory are not extended
  EXPECT_EQ(w.spec.containers[1].name, "train");
  EXPECT_FALSE(w.spec.containers[1].init);
  EXPECT_EQ(w.spec.containers[2].name, "metrics");

  const ContainerSpec& train = w.spec.containers[1];
  EXPECT_EQ(train.image, "nvcr.io/nvidia/pytorch:24.05-py3");
  ASSERT_EQ(train.env.size(), 4U);
  EXPECT_EQ(train.env[0].name, "CUDA_VERSION");
  EXPECT_EQ(train.env[0].value, "12.4.1");
  EXPECT_EQ(train.env[1].value, "8.0;8.6;9.0");
  EXPECT_EQ(train.env[2].name, "RANK");
  EXPECT_FALSE(train.env[2].value.has_value());  // valueFrom
  EXPECT_EQ(train.env[3].value, "");             // neither: the empty string
  ASSERT_EQ(train.resources.size(), 1U);
  EXPECT_EQ(train.resources[0], (std::pair<std::string, std::int64_t>{"nvidia.com/gpu", 8}));

  ASSERT_EQ(w.spec.node_selector.size(), 1U);
  EXPECT_EQ(w.spec.node_selector[0].first, "eks.amazonaws.com/nodegroup");
  EXPECT_EQ(w.spec.node_selector[0].second, "h100-train");
  ASSERT_TRUE(w.spec.required_terms.has_value());
  ASSERT_EQ(w.spec.required_terms->size(), 1U);
  const NodeSelectorTerm& term = (*w.spec.required_terms)[0];
  ASSERT_EQ(term.match_expressions.size(), 1U);  // the preferred term is not read
  EXPECT_EQ(
      term.match_expressions[0],
      (NodeSelectorRequirement{
          "nvidia.com/gpu.product", "In", {"NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"}}));
  EXPECT_TRUE(term.match_fields.empty());
  ASSERT_EQ(w.spec.tolerations.size(), 2U);
  EXPECT_EQ(w.spec.tolerations[0].key, "nvidia.com/gpu");
  EXPECT_EQ(w.spec.tolerations[0].op, "Exists");
  EXPECT_EQ(w.spec.tolerations[0].effect, "NoSchedule");
  EXPECT_EQ(w.spec.tolerations[1].value, "ml-training");

  ASSERT_NE(w.annotation("cudagate.io/arch-list"), nullptr);
  EXPECT_EQ(*w.annotation("cudagate.io/arch-list"), "8.0;9.0");
  EXPECT_EQ(w.annotation("cudagate.io/cuda-version"), nullptr);
}

TEST(Pod, MigPodFixture) {
  const Workload w = one_workload(workload_fixture("pod-mig.yaml"));
  ASSERT_EQ(w.spec.containers.size(), 1U);
  EXPECT_EQ(w.spec.containers[0].resources,
            (std::vector<std::pair<std::string, std::int64_t>>{{"nvidia.com/mig-1g.10gb", 1}}));
  ASSERT_EQ(w.spec.tolerations.size(), 1U);
  EXPECT_EQ(w.spec.tolerations[0].key, "");
  EXPECT_EQ(w.spec.tolerations[0].op, "Exists");
  EXPECT_FALSE(w.spec.required_terms.has_value());
}

struct KindRow {
  std::string file;
  std::string kind;
  std::string api_version;
  std::string pointer;
  std::string first_container;
};

TEST(Pod, EveryControllerKind) {
  const std::vector<KindRow> rows = {
      {"deployment.yaml", "Deployment", "apps/v1", "/spec/template/spec", "vllm"},
      {"replicaset.yaml", "ReplicaSet", "apps/v1", "/spec/template/spec", "vllm"},
      {"statefulset.yaml", "StatefulSet", "apps/v1", "/spec/template/spec", "ray"},
      {"daemonset.yaml", "DaemonSet", "apps/v1", "/spec/template/spec", "burn"},
      {"job.yaml", "Job", "batch/v1", "/spec/template/spec", "eval"},
      {"cronjob.yaml", "CronJob", "batch/v1", "/spec/jobTemplate/spec/template/spec", "finetune"},
  };
  for (const auto& row : rows) {
    const Workload w = one_workload(workload_fixture(row.file), row.file);
    EXPECT_EQ(w.resource.kind, row.kind) << row.file;
    EXPECT_EQ(w.resource.api_version, row.api_version) << row.file;
    EXPECT_EQ(w.spec_pointer, row.pointer) << row.file;
    ASSERT_FALSE(w.spec.containers.empty()) << row.file;
    EXPECT_EQ(w.spec.containers[0].name, row.first_container) << row.file;
    EXPECT_FALSE(w.spec.containers[0].resources.empty()) << row.file;
    // The pointer leads to the pod spec in the original object.
    auto docs = parse_documents(workload_fixture(row.file), row.file);
    ASSERT_TRUE(docs);
    const json& spec = (*docs)[0].at(json::json_pointer(w.spec_pointer));
    EXPECT_EQ(spec["containers"][0]["name"], row.first_container) << row.file;
  }
}

TEST(Pod, TemplateAnnotationsOverlayTheObjects) {
  const Workload d = one_workload(workload_fixture("deployment.yaml"));
  ASSERT_NE(d.annotation("cudagate.io/cuda-version"), nullptr);
  EXPECT_EQ(*d.annotation("cudagate.io/cuda-version"), "12.4");  // the template's wins
  ASSERT_NE(d.annotation("deployment.kubernetes.io/revision"), nullptr);
  EXPECT_EQ(*d.annotation("cudagate.io/arch-list.vllm"), "8.9");
  EXPECT_TRUE(std::is_sorted(d.annotations.begin(), d.annotations.end()));

  const Workload c = one_workload(workload_fixture("cronjob.yaml"));
  ASSERT_NE(c.annotation("cudagate.io/min-compute-capability"), nullptr);
  EXPECT_EQ(*c.annotation("cudagate.io/min-compute-capability"), "8.0");
  ASSERT_NE(c.annotation("owner"), nullptr);
  EXPECT_EQ(*c.annotation("owner"), "ml-platform");
}

TEST(Pod, DaemonSetPodsTolerateWhatTheControllerAdds) {
  const Workload w = one_workload(workload_fixture("daemonset.yaml"));
  auto has = [&](std::string_view key, std::string_view effect) {
    return std::any_of(w.spec.tolerations.begin(), w.spec.tolerations.end(),
                       [&](const Toleration& t) {
                         return t.key == key && t.op == "Exists" && t.effect == effect;
                       });
  };
  EXPECT_TRUE(has("nvidia.com/gpu", "NoSchedule"));
  EXPECT_TRUE(has("node.kubernetes.io/unschedulable", "NoSchedule"));
  EXPECT_TRUE(has("node.kubernetes.io/not-ready", "NoExecute"));
  EXPECT_TRUE(has("node.kubernetes.io/unreachable", "NoExecute"));
  EXPECT_TRUE(has("node.kubernetes.io/memory-pressure", "NoSchedule"));
  EXPECT_TRUE(has("node.kubernetes.io/network-unavailable", "NoSchedule"));  // hostNetwork

  // A Deployment's pods get no such tolerations.
  const Workload d = one_workload(workload_fixture("deployment.yaml"));
  EXPECT_EQ(d.spec.tolerations.size(), 1U);
}

TEST(Pod, StatefulSetAffinityOperators) {
  const Workload w = one_workload(workload_fixture("statefulset.yaml"));
  ASSERT_TRUE(w.spec.required_terms);
  const auto& exprs = (*w.spec.required_terms)[0].match_expressions;
  ASSERT_EQ(exprs.size(), 2U);
  EXPECT_EQ(exprs[0].op, "Gt");
  EXPECT_EQ(exprs[0].values, std::vector<std::string>{"3"});
  EXPECT_EQ(w.spec.containers[0].resources[0].second, 4);
}

TEST(Pod, MultiDocumentFileSkipsOtherKinds) {
  auto ws = parse_workloads(workload_fixture("multi.yaml"), "multi.yaml");
  ASSERT_TRUE(ws) << ws.error().str();
  ASSERT_EQ(ws->size(), 1U);
  EXPECT_EQ((*ws)[0].resource.kind, "Deployment");
  EXPECT_EQ((*ws)[0].resource.name, "triton");
}

TEST(Pod, KubectlListOfPodsAndDeployments) {
  auto ws = parse_workloads(workload_fixture("list.json"), "list.json");
  ASSERT_TRUE(ws) << ws.error().str();
  ASSERT_EQ(ws->size(), 3U);
  EXPECT_EQ((*ws)[0].resource.name, "checkout-api");
  EXPECT_EQ((*ws)[1].resource.name, "trainer-0");
  EXPECT_EQ((*ws)[1].spec.node_name, "ip-10-0-5-51.ec2.internal");
  EXPECT_EQ((*ws)[1].spec.tolerations.size(), 4U);
  EXPECT_EQ((*ws)[2].resource.kind, "Deployment");
}

TEST(Pod, InitContainersComeFirstAndEphemeralOnesAreIgnored) {
  const Workload w = one_workload(R"(
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: a}, {name: b}]
  initContainers: [{name: i1}, {name: i2}]
  ephemeralContainers: [{name: debug}]
)");
  ASSERT_EQ(w.spec.containers.size(), 4U);
  EXPECT_EQ(w.spec.containers[0].name, "i1");
  EXPECT_TRUE(w.spec.containers[1].init);
  EXPECT_EQ(w.spec.containers[2].name, "a");
  EXPECT_FALSE(w.spec.containers[3].init);
}

TEST(Pod, LimitsWinOverRequests) {
  const Workload w = one_workload(R"(
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: c
    resources:
      requests: {nvidia.com/gpu: 1, example.com/fpga: 2, cpu: 1, requests.nvidia.com/x: 1}
      limits: {nvidia.com/gpu: "2", hugepages-2Mi: 1Gi, kubernetes.io/foo: 1, node.kubernetes.io/bar: 1}
)");
  EXPECT_EQ(w.spec.containers[0].resources,
            (std::vector<std::pair<std::string, std::int64_t>>{
                {"example.com/fpga", 2}, {"nvidia.com/gpu", 2}, {"requests.nvidia.com/x", 1}}));
}

TEST(Pod, GenerateNameStandsInForAMissingName) {
  const Workload w = one_workload(R"(
kind: Pod
metadata: {generateName: llm-serve-7c9d5f8b6-, namespace: inference}
spec: {containers: [{name: c}]}
)");
  EXPECT_EQ(w.resource.name, "llm-serve-7c9d5f8b6-");
}

TEST(Pod, RequiredAffinityWithoutTermsSelectsNothing) {
  const Workload w = one_workload(R"(
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c}]
  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {}}}
)");
  ASSERT_TRUE(w.spec.required_terms.has_value());
  EXPECT_TRUE(w.spec.required_terms->empty());
}

TEST(Pod, MatchFieldsAreRead) {
  const Workload w = one_workload(R"(
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c}]
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchFields: [{key: metadata.name, operator: In, values: [node-1]}]
        - matchExpressions: [{key: a, operator: Exists}]
)");
  ASSERT_TRUE(w.spec.required_terms);
  ASSERT_EQ(w.spec.required_terms->size(), 2U);
  EXPECT_EQ((*w.spec.required_terms)[0].match_fields[0],
            (NodeSelectorRequirement{"metadata.name", "In", {"node-1"}}));
  EXPECT_TRUE((*w.spec.required_terms)[1].match_expressions[0].values.empty());
}

struct WorkloadErrorRow {
  std::string text;
  std::string error;  // the whole Error::str()
};

TEST(Pod, ErrorsNameTheField) {
  const std::string pod = "kind: Pod\nmetadata: {name: p}\n";
  const std::vector<WorkloadErrorRow> rows = {
      {pod + "spec: {containers: [{name: c, env: [{name: A, value: a}, {name: B, value: b}, "
             "{name: C, value: 8}]}]}\n",
       "w.yaml: spec.containers[0].env[2].value: expected a string, got number"},
      {pod + "spec: {containers: [{name: c, env: [{name: A, value: yes}]}]}\n",
       "w.yaml: spec.containers[0].env[0].value: expected a string, got boolean"},
      {pod + "spec: {containers: [{name: c, env: [{value: a}]}]}\n",
       "w.yaml: spec.containers[0].env[0].name: is required"},
      {pod + "spec: {containers: [{name: c, env: {A: b}}]}\n",
       "w.yaml: spec.containers[0].env: expected a list, got object"},
      {pod + "spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: \"1.5\"}}}]}\n",
       "w.yaml: spec.containers[0].resources.limits.nvidia.com/gpu: expected an integer, got "
       "\"1.5\""},
      {pod + "spec: {containers: [{name: c, resources: {requests: {nvidia.com/gpu: 500m}}}]}\n",
       "w.yaml: spec.containers[0].resources.requests.nvidia.com/gpu: expected an integer, got "
       "\"500m\""},
      {pod + "spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1.5}}}]}\n",
       "w.yaml: spec.containers[0].resources.limits.nvidia.com/gpu: expected an integer, got 1.5"},
      {pod + "spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: -1}}}]}\n",
       "w.yaml: spec.containers[0].resources.limits.nvidia.com/gpu: must not be negative, got -1"},
      {pod + "spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: [1]}}}]}\n",
       "w.yaml: spec.containers[0].resources.limits.nvidia.com/gpu: expected an integer, got "
       "array"},
      {pod + "spec: {containers: [{name: c, resources: {limits: 1}}]}\n",
       "w.yaml: spec.containers[0].resources.limits: expected an object, got number"},
      {pod + "spec: {initContainers: [{name: i, resources: {limits: {nvidia.com/gpu: x}}}], "
             "containers: [{name: c}]}\n",
       "w.yaml: spec.initContainers[0].resources.limits.nvidia.com/gpu: expected an integer, got "
       "\"x\""},
      {pod + "spec: {containers: []}\n",
       "w.yaml: spec.containers: a pod needs at least one container"},
      {pod + "spec: {}\n", "w.yaml: spec.containers: a pod needs at least one container"},
      {pod, "w.yaml: spec: is required"},
      {pod + "spec: {containers: [c]}\n",
       "w.yaml: spec.containers[0]: expected an object, got string"},
      {pod + "spec: {containers: [{image: x}]}\n", "w.yaml: spec.containers[0].name: is required"},
      {pod + "spec: {containers: [{name: c, image: 5}]}\n",
       "w.yaml: spec.containers[0].image: expected a string, got number"},
      {pod + "spec: {nodeName: 1, containers: [{name: c}]}\n",
       "w.yaml: spec.nodeName: expected a string, got number"},
      {pod + "spec: {nodeSelector: {gpu: true}, containers: [{name: c}]}\n",
       "w.yaml: spec.nodeSelector.gpu: expected a string, got boolean"},
      {pod + "spec: {nodeSelector: [a], containers: [{name: c}]}\n",
       "w.yaml: spec.nodeSelector: expected an object, got array"},
      {pod + "spec: {tolerations: [{key: a, value: 1}], containers: [{name: c}]}\n",
       "w.yaml: spec.tolerations[0].value: expected a string, got number"},
      {pod + "spec: {tolerations: {key: a}, containers: [{name: c}]}\n",
       "w.yaml: spec.tolerations: expected a list, got object"},
      {pod + "spec:\n  containers: [{name: c}]\n  affinity: {nodeAffinity: "
             "{requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: "
             "[{matchExpressions: "
             "[{key: a, operator: In, values: [x, 2]}]}]}}}\n",
       "w.yaml: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
       "nodeSelectorTerms[0].matchExpressions[0].values[1]: expected a string, got number"},
      {pod + "spec:\n  containers: [{name: c}]\n  affinity: {nodeAffinity: "
             "{requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchFields: "
             "[{key: metadata.name, operator: 1}]}]}}}\n",
       "w.yaml: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
       "nodeSelectorTerms[0].matchFields[0].operator: expected a string, got number"},
      {pod + "spec:\n  containers: [{name: c}]\n  affinity: {nodeAffinity: "
             "{requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: x}}}\n",
       "w.yaml: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
       "nodeSelectorTerms: expected a list, got string"},
      // Only cudagate's own annotations are read; another key's odd value is left out.
      {"kind: Pod\nmetadata: {name: p, annotations: {a: 1, cudagate.io/arch-list: 8.0}}\n"
       "spec: {containers: [{name: c}]}\n",
       "w.yaml: metadata.annotations.cudagate.io/arch-list: expected a string, got number"},
      {"kind: Pod\nmetadata: {name: 5}\nspec: {containers: [{name: c}]}\n",
       "w.yaml: metadata.name: expected a string, got number"},
      {"kind: Deployment\nmetadata: {name: d}\nspec: {replicas: 1}\n",
       "w.yaml: spec.template: is required"},
      {"kind: Deployment\nmetadata: {name: d}\nspec: {template: {spec: {containers: [{name: c, "
       "env: "
       "[{name: A, value: 1}]}]}}}\n",
       "w.yaml: spec.template.spec.containers[0].env[0].value: expected a string, got number"},
      {"kind: Deployment\nmetadata: {name: d}\nspec: {template: {metadata: {annotations: [x]}, "
       "spec: "
       "{containers: [{name: c}]}}}\n",
       "w.yaml: spec.template.metadata.annotations: expected an object, got array"},
      {"kind: CronJob\nmetadata: {name: d}\nspec: {jobTemplate: {spec: {template: {spec: "
       "{containers: "
       "[]}}}}}\n",
       "w.yaml: spec.jobTemplate.spec.template.spec.containers: a pod needs at least one "
       "container"},
      {"kind: CronJob\nmetadata: {name: d}\nspec: {jobTemplate: {spec: 3}}\n",
       "w.yaml: spec.jobTemplate.spec: expected an object, got number"},
      {"kind: [Pod]\n", "w.yaml: kind: expected a string, got array"},
  };
  for (const auto& row : rows) {
    auto ws = parse_workloads(row.text, "w.yaml");
    ASSERT_FALSE(ws) << row.text;
    EXPECT_EQ(ws.error().str(), row.error) << row.text;
  }
}

TEST(Pod, ErrorsNameTheDocumentAndTheItem) {
  const std::string good = "kind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c}]}\n";
  const std::string bad = "kind: Pod\nmetadata: {name: b}\nspec: {}\n";
  auto multi = parse_workloads(good + "---\n" + bad, "pods.yaml");
  ASSERT_FALSE(multi);
  EXPECT_EQ(multi.error().str(),
            "pods.yaml: document 2: spec.containers: a pod needs at least one container");

  const std::string list = R"({"apiVersion": "v1", "kind": "List", "items": [
    {"kind": "Service", "metadata": {"name": "s"}},
    {"kind": "Pod", "metadata": {"name": "a"}, "spec": {"containers": [{"name": "c"}]}},
    {"kind": "ConfigMap"},
    {"kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [
      {"name": "c", "resources": {"limits": {"nvidia.com/gpu": "0.5"}}}]}}}}]})";
  auto listed = parse_workloads(list, "all.json");
  ASSERT_FALSE(listed);
  EXPECT_EQ(listed.error().str(),
            "all.json: items[3]: spec.template.spec.containers[0].resources.limits.nvidia.com/gpu: "
            "expected an integer, got \"0.5\"");

  auto in_doc = parse_workloads(good + "---\n{kind: PodList, items: [" +
                                    "{kind: Pod, metadata: {name: x}, spec: {containers: 1}}]}\n",
                                "m.yaml");
  ASSERT_FALSE(in_doc);
  EXPECT_EQ(in_doc.error().str(),
            "m.yaml: document 2: items[0]: spec.containers: expected a list, got number");

  auto not_object = parse_workloads("kind: List\nitems: [3]\n", "l.yaml");
  ASSERT_FALSE(not_object);
  EXPECT_EQ(not_object.error().str(), "l.yaml: items[0]: expected an object, got number");

  auto syntax = parse_workloads("kind: Pod\nspec: [\n", "s.yaml");
  ASSERT_FALSE(syntax);
  EXPECT_EQ(syntax.error().where, "s.yaml:3");
}

TEST(Pod, ItemsOfListsAndOtherDocumentsAreCounted) {
  const std::string text = R"(
apiVersion: v1
kind: PodList
items:
- {kind: Pod, metadata: {name: a}, spec: {containers: [{name: c}]}}
- {metadata: {name: no-kind}}
- {kind: Pod, metadata: {name: b}, spec: {containers: [{name: c}]}}
---
just: values
---
- {kind: Job, metadata: {name: j}, spec: {template: {spec: {containers: [{name: c}]}}}}
---
plain text
)";
  auto ws = parse_workloads(text, "mixed.yaml");
  ASSERT_TRUE(ws) << ws.error().str();
  ASSERT_EQ(ws->size(), 3U);
  EXPECT_EQ((*ws)[0].resource.name, "a");
  EXPECT_EQ((*ws)[1].resource.name, "b");
  EXPECT_EQ((*ws)[2].resource.kind, "Job");

  auto empty = parse_workloads("", "empty.yaml");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

TEST(Pod, InvalidFixturesAreRejected) {
  auto fraction =
      parse_workloads(workload_fixture("invalid/gpu-fraction.yaml"), "gpu-fraction.yaml");
  ASSERT_FALSE(fraction);
  EXPECT_EQ(fraction.error().str(),
            "gpu-fraction.yaml: spec.containers[0].resources.limits.nvidia.com/gpu: expected an "
            "integer, got \"500m\"");
  auto env = parse_workloads(workload_fixture("invalid/env-number.yaml"), "env-number.yaml");
  ASSERT_FALSE(env);
  EXPECT_EQ(env.error().str(),
            "env-number.yaml: spec.containers[0].env[0].value: expected a string, got number");
}

TEST(Pod, WorkloadFromJsonRefusesOtherKinds) {
  auto w = workload_from_json(json{{"kind", "Service"}}, "request");
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().str(),
            "request: kind: expected a Pod, Deployment, ReplicaSet, StatefulSet, DaemonSet, Job or "
            "CronJob, got \"Service\"");
  auto not_object = workload_from_json(json::array(), "");
  ASSERT_FALSE(not_object);
  EXPECT_EQ(not_object.error().str(), "expected an object, got array");
}

TEST(Pod, WorkloadKinds) {
  for (const char* kind :
       {"Pod", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob"}) {
    EXPECT_TRUE(is_workload_kind(kind)) << kind;
  }
  for (const char* kind : {"", "pod", "Service", "PodTemplate", "List", "PodList", "Node"}) {
    EXPECT_FALSE(is_workload_kind(kind)) << kind;
  }
}

TEST(Pod, ExtendedResourceNames) {
  for (const char* name :
       {"nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "amd.com/gpu", "example.com/foo",
        "kubernetes.io.example.com/x", "notkubernetes.io/x"}) {
    EXPECT_TRUE(is_extended_resource(name)) << name;
  }
  for (const char* name :
       {"cpu", "memory", "hugepages-2Mi", "ephemeral-storage", "kubernetes.io/batch-cpu",
        "node.kubernetes.io/x", "a.b.kubernetes.io/y"}) {
    EXPECT_FALSE(is_extended_resource(name)) << name;
  }
}

struct QuantityRow {
  json value;
  bool ok;
  std::int64_t count;
  std::string error;
};

TEST(Pod, CountQuantities) {
  const std::vector<QuantityRow> rows = {
      {1, true, 1, ""},
      {0, true, 0, ""},
      {"1", true, 1, ""},
      {"8", true, 8, ""},
      {"+2", true, 2, ""},
      {"007", true, 7, ""},
      {"1000m", true, 1, ""},
      {"2k", true, 2000, ""},
      {"1.5k", true, 1500, ""},
      {"1Ki", true, 1024, ""},
      {"0.5Ki", true, 512, ""},
      {"1e3", true, 1000, ""},
      {"1E", true, 1000000000000000000, ""},
      {"2.0", true, 2, ""},
      {"0.0", true, 0, ""},
      {2.0, true, 2, ""},
      {"9223372036854775807", true, 9223372036854775807LL, ""},
      {"1.5", false, 0, "expected an integer, got \"1.5\""},
      {"500m", false, 0, "expected an integer, got \"500m\""},
      {"1500m", false, 0, "expected an integer, got \"1500m\""},
      {"1n", false, 0, "expected an integer, got \"1n\""},
      {"", false, 0, "expected an integer, got \"\""},
      {"one", false, 0, "expected an integer, got \"one\""},
      {"1 ", false, 0, "expected an integer, got \"1 \""},
      {"1x", false, 0, "expected an integer, got \"1x\""},
      {"1e", false, 0, "expected an integer, got \"1e\""},
      {"1e-1", false, 0, "expected an integer, got \"1e-1\""},
      {".", false, 0, "expected an integer, got \".\""},
      {"-1", false, 0, "must not be negative, got \"-1\""},
      {-3, false, 0, "must not be negative, got -3"},
      {1.5, false, 0, "expected an integer, got 1.5"},
      {"9223372036854775808", false, 0, "quantity \"9223372036854775808\" is too large"},
      {"100000000000000000000000", false, 0, "quantity \"100000000000000000000000\" is too large"},
      {"1e999", false, 0, "quantity \"1e999\" is too large"},
      {"16Ei", false, 0, "quantity \"16Ei\" is too large"},
      {18446744073709551615ULL, false, 0, "quantity 18446744073709551615 is too large"},
      {true, false, 0, "expected an integer, got boolean"},
      {nullptr, false, 0, "expected an integer, got null"},
  };
  for (const auto& row : rows) {
    auto got = parse_count_quantity(row.value);
    ASSERT_EQ(static_cast<bool>(got), row.ok) << row.value.dump();
    if (row.ok) {
      EXPECT_EQ(*got, row.count) << row.value.dump();
    } else {
      EXPECT_EQ(got.error().str(), row.error) << row.value.dump();
    }
  }
}

// asks_for_gpu() reads only where a GPU request can stand, and never fails.
TEST(Pod, AsksForGpu) {
  const auto gpu = [](std::string_view name) {
    return is_gpu_resource(name, std::vector<std::string>{"nvidia.com/gpu"});
  };
  const auto asks = [&](const std::string& text, std::string_view kind = "") {
    const json object = json::parse(text);
    return workload_reader::asks_for_gpu(NlohmannView(object), kind, gpu);
  };
  struct Row {
    std::string object;
    std::string_view kind;
    bool asks;
  };
  const Row rows[] = {
      {R"({"kind":"Pod","spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":1}}}]}})",
       "", true},
      // Requests alone, init containers, and a quantity of the wrong type all still ask.
      {R"({"kind":"Pod","spec":{"containers":[{"resources":{"requests":{"nvidia.com/gpu":"x"}}}]}})",
       "", true},
      {R"({"kind":"Pod","spec":{"initContainers":[{"resources":{"limits":{"nvidia.com/mig-1g.10gb":1}}}],"containers":5}})",
       "", true},
      // The kind comes from the caller when the object names none.
      {R"({"spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":1}}}]}})", "Pod", true},
      {R"({"spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":1}}}]}})", "", false},
      {R"({"kind":"Deployment","spec":{"template":{"spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":1}}}]}}}})",
       "", true},
      {R"({"kind":"CronJob","spec":{"jobTemplate":{"spec":{"template":{"spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":1}}}]}}}}}})",
       "", true},
      // Nothing that asks: other resources, odd shapes, other kinds.
      {R"({"kind":"Pod","spec":{"containers":[{"resources":{"limits":{"cpu":"1"}}}]}})", "", false},
      {R"({"kind":"Pod","spec":{"containers":[]}})", "", false},
      {R"({"kind":"Pod","spec":"x"})", "", false},
      {R"({"kind":"Pod","spec":{"containers":[5,{"resources":[1]},{"resources":{"limits":7}}]}})",
       "", false},
      {R"({"kind":"Deployment","spec":{"template":5}})", "", false},
      // A step of the way to the pod spec missing: nothing to read, no crash.
      {R"({"kind":"Deployment","spec":{}})", "", false},
      {R"({"kind":"Deployment"})", "", false},
      {R"({"kind":"CronJob","spec":{"jobTemplate":{}}})", "", false},
      {R"({"kind":"ConfigMap","spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":1}}}]}})",
       "", false},
      {R"([1,2])", "Pod", false},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(asks(row.object, row.kind), row.asks) << row.object;
  }
}

}  // namespace
}  // namespace cudagate

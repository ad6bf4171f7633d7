// evaluate() against fleets: the driver table row by row, arch lists, unknown nodes and images,
// candidates, skips, annotations, and the memo giving the decisions made without it.
#include "policy/rules/evaluate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compat-db/compat_db.h"
#include "tests/support/embedded_compat_db.h"
#include "tests/support/scan_facts.h"

namespace cudagate {
namespace {

using ::testing::HasSubstr;

using test_support::db;
using test_support::kTorchCudaLib;
using test_support::scan_of;
using test_support::scanned_code;
using test_support::scanned_config;

using Pairs = std::vector<std::pair<std::string, std::string>>;

// A GPU node labelled by GPU Feature Discovery. `runtime` adds GFD's
// nvidia.com/cuda.runtime-version labels; without it the maximum CUDA
// version comes from compat-db's driver branch table.
Node gfd_node(const std::string& name, const std::string& product, const std::string& cc,
              const std::string& driver, const std::string& runtime = "") {
  Node n;
  n.name = name;
  const std::string pool = name.substr(0, name.rfind('-'));
  n.labels = {{"kubernetes.io/hostname", name},
              {"pool", pool},
              {"nvidia.com/gpu.product", product},
              {"nvidia.com/gpu.count", "1"},
              {"nvidia.com/gpu.compute.major", cc.substr(0, cc.find('.'))},
              {"nvidia.com/gpu.compute.minor", cc.substr(cc.find('.') + 1)},
              {"nvidia.com/cuda.driver-version.full", driver}};
  const auto first = driver.find('.');
  const auto second = driver.find('.', first + 1);
  n.labels.emplace_back("nvidia.com/cuda.driver-version.major", driver.substr(0, first));
  n.labels.emplace_back("nvidia.com/cuda.driver-version.minor",
                        driver.substr(first + 1, second - first - 1));
  if (second != std::string::npos) {
    n.labels.emplace_back("nvidia.com/cuda.driver-version.revision", driver.substr(second + 1));
  }
  if (!runtime.empty()) {
    n.labels.emplace_back("nvidia.com/cuda.runtime-version.full", runtime);
    n.labels.emplace_back("nvidia.com/cuda.runtime-version.major",
                          runtime.substr(0, runtime.find('.')));
    n.labels.emplace_back("nvidia.com/cuda.runtime-version.minor",
                          runtime.substr(runtime.find('.') + 1));
  }
  std::sort(n.labels.begin(), n.labels.end());
  n.allocatable = {{"nvidia.com/gpu", 1}};
  return n;
}

Node t4(const std::string& name, const std::string& driver, const std::string& runtime = "") {
  return gfd_node(name, "Tesla-T4", "7.5", driver, runtime);
}
Node a100(const std::string& name, const std::string& driver) {
  return gfd_node(name, "NVIDIA-A100-SXM4-80GB", "8.0", driver);
}
Node a10g(const std::string& name, const std::string& driver) {
  return gfd_node(name, "NVIDIA-A10G", "8.6", driver);
}
Node h100(const std::string& name, const std::string& driver) {
  return gfd_node(name, "NVIDIA-H100-80GB-HBM3", "9.0", driver);
}

// A GPU node with no GPU labels at all: driver and capability unknown.
Node bare_gpu_node(const std::string& name) {
  Node n;
  n.name = name;
  n.labels = {{"kubernetes.io/hostname", name}, {"pool", "bare"}};
  n.allocatable = {{"nvidia.com/gpu", 4}};
  return n;
}

Inventory fleet(const std::vector<Node>& nodes) {
  return Inventory::build(nodes, db());
}

struct PodEnv {
  std::string name;
  std::string value;
};

ContainerSpec container(const std::string& name, const std::string& image,
                        const std::vector<PodEnv>& env, bool gpu = true) {
  ContainerSpec c;
  c.name = name;
  c.image = image;
  for (const PodEnv& e : env) c.env.push_back(EnvVar{e.name, e.value});
  if (gpu) c.resources = {{"nvidia.com/gpu", 1}};
  return c;
}

constexpr const char* kImage = "registry.example.com/ml/train:v1";

Workload pod(std::vector<ContainerSpec> containers, Pairs annotations = {},
             const std::string& ns = "ml") {
  Workload w;
  w.resource = ResourceRef{"v1", "Pod", ns, "trainer-0"};
  std::sort(annotations.begin(), annotations.end());
  w.annotations = std::move(annotations);
  w.spec.containers = std::move(containers);
  w.spec_pointer = "/spec";
  return w;
}

Workload gpu_pod(const std::vector<PodEnv>& env, Pairs annotations = {},
                 const std::string& image = kImage) {
  return pod({container("train", image, env)}, std::move(annotations));
}

Decision decide(const Workload& w, const Inventory& inv, const Policy& policy = {},
                const EvaluationInputs& inputs = {}) {
  auto d = evaluate(w, inv, policy, db(), inputs);
  EXPECT_TRUE(d) << d.error().str();
  return d ? std::move(*d) : Decision{};
}

// The next minor CUDA release: "12.4" -> "12.5".
std::string next_minor(const std::string& cuda) {
  const auto dot = cuda.find('.');
  return cuda.substr(0, dot) + "." + std::to_string(std::stoi(cuda.substr(dot + 1)) + 1);
}

struct DriverRow {
  std::string driver;
  std::string cuda;
};

TEST(Evaluate, EachRowOfTheDriverTable) {
  const std::vector<DriverRow> rows = {{"560.35.03", "12.6"},  {"550.54.15", "12.4"},
                                       {"535.129.03", "12.2"}, {"525.85.12", "12.0"},
                                       {"515.65.01", "11.7"},  {"470.82.01", "11.4"}};
  for (const DriverRow& row : rows) {
    for (const bool runtime_label : {false, true}) {
      SCOPED_TRACE(row.driver + (runtime_label ? " with runtime label" : " via compat-db"));
      const Inventory inv = fleet({t4("gpu-t4-1", row.driver, runtime_label ? row.cuda : ""),
                                   t4("gpu-t4-2", row.driver, runtime_label ? row.cuda : "")});
      const Decision ok = decide(gpu_pod({{"CUDA_VERSION", row.cuda}}), inv);
      EXPECT_EQ(ok.verdict, Verdict::pass);
      EXPECT_EQ(ok.candidates, 2U);
      EXPECT_EQ(ok.compatible, 2U);
      const Decision newer = decide(gpu_pod({{"CUDA_VERSION", next_minor(row.cuda)}}), inv);
      EXPECT_EQ(newer.verdict, Verdict::fail);
      EXPECT_EQ(newer.compatible, 0U);
      ASSERT_EQ(newer.groups.size(), 1U);
      ASSERT_FALSE(newer.groups[0].findings.empty());
      EXPECT_EQ(newer.groups[0].findings[0].message, "needs CUDA " + next_minor(row.cuda) +
                                                         "; driver " + row.driver +
                                                         " supports up to CUDA " + row.cuda);
    }
  }
}

TEST(Evaluate, Cuda124OnDriver535FailsWithTheDriverToInstall) {
  const Inventory inv = fleet({t4("gpu-t4-1", "535.129.03"), t4("gpu-t4-2", "535.129.03")});
  const Decision d = decide(gpu_pod({{"CUDA_VERSION", "12.4.1"}}), inv);
  EXPECT_EQ(d.verdict, Verdict::fail);
  ASSERT_EQ(d.groups.size(), 1U);
  const GroupDecision& g = d.groups[0];
  EXPECT_EQ(g.count, 2U);
  EXPECT_EQ(g.nodes, (std::vector<std::string>{"gpu-t4-1", "gpu-t4-2"}));
  EXPECT_EQ(g.outcome, Outcome::incompatible);
  ASSERT_EQ(g.findings.size(), 1U);
  EXPECT_EQ(g.findings[0].rule, Rule::cuda_driver);
  EXPECT_EQ(g.findings[0].container, "train");
  EXPECT_EQ(g.findings[0].fix,
            "upgrade the driver to 550.54.14 or newer, or use an image built for CUDA 12.2 or "
            "older");
}

TEST(Evaluate, OlderCudaRunsOnDriver535) {
  const Inventory inv = fleet({t4("gpu-t4-1", "535.129.03"), a100("gpu-a100-1", "535.129.03")});
  for (const char* cuda : {"12.1", "11.8", "12.2.2"}) {
    SCOPED_TRACE(cuda);
    const Decision d = decide(gpu_pod({{"CUDA_VERSION", cuda}}), inv);
    EXPECT_EQ(d.verdict, Verdict::pass);
    EXPECT_EQ(d.compatible, 2U);
    for (const GroupDecision& g : d.groups) EXPECT_TRUE(g.findings.empty());
  }
}

TEST(Evaluate, HalfRolledOutFleetIsPartial) {
  const Inventory inv =
      fleet({t4("gpu-t4-1", "550.54.15"), t4("gpu-t4-2", "550.54.15"), t4("gpu-t4-3", "550.54.15"),
             t4("gpu-t4-4", "525.85.12"), t4("gpu-t4-5", "525.85.12")});
  const Decision d = decide(gpu_pod({{"CUDA_VERSION", "12.4"}}), inv);
  EXPECT_EQ(d.verdict, Verdict::partial);
  EXPECT_EQ(d.candidates, 5U);
  EXPECT_EQ(d.compatible, 3U);
  ASSERT_EQ(d.groups.size(), 2U);
  // Incompatible groups come first.
  EXPECT_EQ(d.groups[0].outcome, Outcome::incompatible);
  EXPECT_EQ(d.groups[0].count, 2U);
  EXPECT_EQ(d.groups[0].nodes, (std::vector<std::string>{"gpu-t4-4", "gpu-t4-5"}));
  ASSERT_TRUE(d.groups[0].facts.driver);
  EXPECT_EQ(d.groups[0].facts.driver->str(), "525.85.12");
  EXPECT_EQ(d.groups[1].outcome, Outcome::compatible);
  EXPECT_EQ(d.groups[1].count, 3U);
}

TEST(Evaluate, ArchListAgainstGpus) {
  const Inventory t4_only = fleet({t4("gpu-t4-1", "535.129.03")});
  const Decision narrow =
      decide(gpu_pod({{"CUDA_VERSION", "12.1"}, {"TORCH_CUDA_ARCH_LIST", "8.0"}}), t4_only);
  EXPECT_EQ(narrow.verdict, Verdict::fail);
  ASSERT_EQ(narrow.groups.size(), 1U);
  ASSERT_EQ(narrow.groups[0].findings.size(), 1U);
  EXPECT_EQ(narrow.groups[0].findings[0].rule, Rule::gpu_arch);
  EXPECT_EQ(narrow.groups[0].findings[0].message,
            "compiled for 8.0 (TORCH_CUDA_ARCH_LIST, env); no kernel image for compute "
            "capability 7.5 (Tesla-T4)");

  const Inventory mixed =
      fleet({t4("gpu-t4-1", "535.129.03"), a100("gpu-a100-1", "535.129.03"),
             a10g("gpu-a10g-1", "535.129.03"), h100("gpu-h100-1", "535.129.03")});
  const Decision wide = decide(
      gpu_pod({{"CUDA_VERSION", "12.1"}, {"TORCH_CUDA_ARCH_LIST", "7.5;8.0;8.6;9.0"}}), mixed);
  EXPECT_EQ(wide.verdict, Verdict::pass);
  EXPECT_EQ(wide.candidates, 4U);
  EXPECT_EQ(wide.compatible, 4U);
  EXPECT_EQ(wide.groups.size(), 4U);

  const Decision some =
      decide(gpu_pod({{"CUDA_VERSION", "12.1"}, {"TORCH_CUDA_ARCH_LIST", "8.0"}}), mixed);
  EXPECT_EQ(some.verdict, Verdict::partial);
  EXPECT_EQ(some.compatible, 2U);  // A100 and A10G; not T4 nor H100
}

TEST(Evaluate, MinComputeCapabilityAnnotation) {
  const Inventory inv = fleet({t4("gpu-t4-1", "535.129.03"), a100("gpu-a100-1", "535.129.03")});
  const Decision d = decide(
      gpu_pod({{"CUDA_VERSION", "12.1"}}, {{"cudagate.io/min-compute-capability", "8.0"}}), inv);
  EXPECT_EQ(d.verdict, Verdict::partial);
  ASSERT_EQ(d.groups.size(), 2U);
  EXPECT_EQ(d.groups[0].nodes, std::vector<std::string>{"gpu-t4-1"});
  ASSERT_EQ(d.groups[0].findings.size(), 1U);
  EXPECT_EQ(d.groups[0].findings[0].rule, Rule::gpu_feature);
  EXPECT_EQ(d.groups[0].findings[0].message,
            "needs compute capability 8.0 (cudagate.io/min-compute-capability); node has 7.5");
  EXPECT_EQ(d.containers[0].min_cc.value, "8.0");
  EXPECT_EQ(d.containers[0].min_cc.source, "annotation");
  const Decision t4_only = decide(
      gpu_pod({{"CUDA_VERSION", "12.1"}}, {{"cudagate.io/min-compute-capability.train", "8.0"}}),
      fleet({t4("gpu-t4-1", "535.129.03")}));
  EXPECT_EQ(t4_only.verdict, Verdict::fail);
}

TEST(Evaluate, MinorVersionCompatibilityOnAndOff) {
  const Inventory inv = fleet({t4("gpu-t4-1", "535.129.03")});
  // The annotation declares a CUDA 12.4 runtime without NVIDIA_REQUIRE_*.
  const Workload w = gpu_pod({}, {{"cudagate.io/cuda-version", "12.4"}});
  Policy on;
  on.minor_version_compatibility = true;
  EXPECT_EQ(decide(w, inv).verdict, Verdict::fail);
  EXPECT_EQ(decide(w, inv, on).verdict, Verdict::pass);
  // Not across majors.
  EXPECT_EQ(decide(gpu_pod({}, {{"cudagate.io/cuda-version", "13.0"}}), inv, on).verdict,
            Verdict::fail);
  // The container toolkit enforces CUDA_VERSION's implicit requirement anyway.
  EXPECT_EQ(decide(gpu_pod({{"CUDA_VERSION", "12.4"}}), inv, on).verdict, Verdict::fail);
  EXPECT_EQ(decide(gpu_pod({{"CUDA_VERSION", "12.4"}, {"NVIDIA_DISABLE_REQUIRE", "true"}}), inv, on)
                .verdict,
            Verdict::pass);
}

TEST(Evaluate, NvidiaCudaImagePassesThroughItsBrandGroups) {
  const Workload w = gpu_pod({}, {}, "nvidia/cuda:12.8.1-base-ubuntu24.04");
  const Decision on_535 = decide(w, fleet({t4("gpu-t4-1", "535.129.03")}));
  EXPECT_EQ(on_535.verdict, Verdict::pass);
  EXPECT_EQ(on_535.containers[0].cuda.value, "12.8");
  EXPECT_EQ(on_535.containers[0].cuda.source, "inference");
  EXPECT_EQ(on_535.containers[0].require.source, "inference");
  // R525 is not among the image's forward-compatible branches.
  const Decision on_525 = decide(w, fleet({t4("gpu-t4-1", "525.85.12")}));
  EXPECT_EQ(on_525.verdict, Verdict::fail);
  ASSERT_EQ(on_525.groups.size(), 1U);
  EXPECT_THAT(on_525.groups[0].findings[0].message,
              HasSubstr("needs CUDA 12.8; driver 525.85.12 supports up to CUDA 12.0"));
  EXPECT_THAT(on_525.groups[0].findings[0].fix, HasSubstr("upgrade the driver to 570.26"));
}

TEST(Evaluate, UnknownNodes) {
  const Workload w = gpu_pod({{"CUDA_VERSION", "12.1"}});
  const Decision only = decide(w, fleet({bare_gpu_node("gpu-bare-1")}));
  EXPECT_EQ(only.verdict, Verdict::unknown);
  EXPECT_TRUE(only.unknown_node);
  EXPECT_FALSE(only.unknown_image);
  ASSERT_EQ(only.groups.size(), 1U);
  EXPECT_EQ(only.groups[0].outcome, Outcome::unknown);
  ASSERT_FALSE(only.groups[0].findings.empty());
  EXPECT_TRUE(only.groups[0].findings[0].unknown);
  EXPECT_THAT(only.groups[0].findings[0].fix, HasSubstr("cudagate.io/driver-version"));

  const Decision mixed =
      decide(w, fleet({bare_gpu_node("gpu-bare-1"), t4("gpu-t4-1", "535.129.03")}));
  EXPECT_EQ(mixed.verdict, Verdict::unknown);
  EXPECT_EQ(mixed.compatible, 1U);
  ASSERT_EQ(mixed.groups.size(), 2U);
  EXPECT_EQ(mixed.groups[0].outcome, Outcome::unknown);  // unknown before compatible

  const Decision failing =
      decide(gpu_pod({{"CUDA_VERSION", "12.4"}}),
             fleet({bare_gpu_node("gpu-bare-1"), t4("gpu-t4-1", "535.129.03")}));
  EXPECT_EQ(failing.verdict, Verdict::unknown);
  EXPECT_EQ(failing.groups[0].outcome, Outcome::incompatible);
  EXPECT_EQ(failing.groups[1].outcome, Outcome::unknown);

  const Decision partial = decide(gpu_pod({{"CUDA_VERSION", "12.4"}}),
                                  fleet({bare_gpu_node("gpu-bare-1"), t4("gpu-t4-1", "535.129.03"),
                                         t4("gpu-t4-2", "550.54.15")}));
  EXPECT_EQ(partial.verdict, Verdict::partial);
}

TEST(Evaluate, UnknownImage) {
  const Decision d = decide(gpu_pod({}), fleet({t4("gpu-t4-1", "535.129.03")}));
  EXPECT_EQ(d.verdict, Verdict::unknown);
  EXPECT_TRUE(d.unknown_image);
  EXPECT_FALSE(d.unknown_node);
  EXPECT_EQ(d.containers[0].cuda.source, "unknown");
  EXPECT_EQ(d.containers[0].cuda.value, "");
}

TEST(Evaluate, NoCandidates) {
  Workload w = gpu_pod({{"CUDA_VERSION", "12.1"}});
  w.spec.node_selector = {{"pool", "gpu-h100"}};
  const Decision d = decide(w, fleet({t4("gpu-t4-1", "535.129.03"), t4("gpu-t4-2", "535.129.03")}));
  EXPECT_EQ(d.verdict, Verdict::no_candidates);
  EXPECT_EQ(d.candidates, 0U);
  EXPECT_TRUE(d.groups.empty());
  EXPECT_EQ(d.reason,
            "none of the 2 nodes passes the pod's nodeName, nodeSelector, required node affinity, "
            "tolerations and GPU resource requests");
  EXPECT_EQ(d.containers[0].cuda.value, "12.1");  // the metadata is still reported

  const Decision empty = decide(gpu_pod({{"CUDA_VERSION", "12.1"}}), fleet({}));
  EXPECT_EQ(empty.verdict, Verdict::no_candidates);
  EXPECT_EQ(empty.reason, "the node inventory is empty");
}

TEST(Evaluate, CandidatesFollowSelectorsTaintsAndCordons) {
  std::vector<Node> nodes = {t4("gpu-t4-1", "535.129.03"), t4("gpu-t4-2", "535.129.03"),
                             t4("gpu-t4-3", "535.129.03"), a100("gpu-a100-1", "550.54.15")};
  nodes[1].unschedulable = true;
  nodes[2].taints = {Taint{"nvidia.com/gpu", "", "NoSchedule"}};
  nodes[3].taints = {Taint{"nvidia.com/gpu", "", "NoSchedule"}};
  const Inventory inv = fleet(nodes);
  Workload w = gpu_pod({{"CUDA_VERSION", "12.4"}});
  const Decision untolerated = decide(w, inv);
  EXPECT_EQ(untolerated.candidates, 1U);
  EXPECT_EQ(untolerated.verdict, Verdict::fail);
  w.spec.tolerations = {Toleration{"nvidia.com/gpu", "Exists", "", "NoSchedule"}};
  const Decision tolerated = decide(w, inv);
  EXPECT_EQ(tolerated.candidates, 3U);
  EXPECT_EQ(tolerated.compatible, 1U);
  EXPECT_EQ(tolerated.verdict, Verdict::partial);
  w.spec.node_selector = {{"pool", "gpu-a100"}};
  EXPECT_EQ(decide(w, inv).verdict, Verdict::pass);
}

TEST(Evaluate, SkipReasons) {
  const Inventory inv = fleet({t4("gpu-t4-1", "535.129.03")});
  const Decision cpu = decide(pod({container("web", "nginx", {}, false)}), inv);
  EXPECT_EQ(cpu.verdict, Verdict::skip);
  EXPECT_EQ(cpu.reason, "no GPU container");
  ASSERT_EQ(cpu.containers.size(), 1U);
  EXPECT_FALSE(cpu.containers[0].gpu);

  const Decision system =
      decide(pod({container("train", kImage, {{"CUDA_VERSION", "12.4"}})}, {}, "kube-system"), inv);
  EXPECT_EQ(system.verdict, Verdict::skip);
  EXPECT_EQ(system.reason, "namespace kube-system is excluded by the policy (excludeNamespaces)");
  EXPECT_TRUE(system.containers[0].gpu);

  const Workload opted = gpu_pod({{"CUDA_VERSION", "12.4"}}, {{"cudagate.io/mode", "off"}});
  Policy allow;
  allow.allow_pod_opt_out = true;
  const Decision skipped = decide(opted, inv, allow);
  EXPECT_EQ(skipped.verdict, Verdict::skip);
  EXPECT_EQ(skipped.reason,
            "opted out with the annotation cudagate.io/mode: off (policy allowPodOptOut)");
  // Without allowPodOptOut the annotation is ignored.
  EXPECT_EQ(decide(opted, inv).verdict, Verdict::fail);
  // Another mode value is no opt-out.
  EXPECT_EQ(decide(gpu_pod({{"CUDA_VERSION", "12.4"}}, {{"cudagate.io/mode", "warn"}}), inv, allow)
                .verdict,
            Verdict::fail);
  // A GPU resource of zero is no GPU.
  ContainerSpec zero = container("train", kImage, {{"CUDA_VERSION", "12.4"}}, false);
  zero.resources = {{"nvidia.com/gpu", 0}};
  EXPECT_EQ(decide(pod({zero}), inv).verdict, Verdict::skip);
}

TEST(Evaluate, SkippedPodsResolveNoMetadata) {
  // A bad annotation is not even read when the namespace is excluded.
  const Decision d = decide(
      pod({container("train", kImage, {})}, {{"cudagate.io/cuda-version", "12.x"}}, "kube-system"),
      fleet({}));
  EXPECT_EQ(d.verdict, Verdict::skip);
}

TEST(Evaluate, AnnotationOverridesEnv) {
  const Inventory inv = fleet({t4("gpu-t4-1", "535.129.03")});
  // The annotation corrects an env value, but not the runtime's requirement.
  const Decision still_required =
      decide(gpu_pod({{"CUDA_VERSION", "12.4"}}, {{"cudagate.io/cuda-version", "12.1"}}), inv);
  EXPECT_EQ(still_required.containers[0].cuda.value, "12.1");
  EXPECT_EQ(still_required.containers[0].cuda.source, "annotation");
  EXPECT_EQ(still_required.containers[0].require.value, "cuda>=12.4");
  EXPECT_EQ(still_required.verdict, Verdict::fail);
  const Decision overridden =
      decide(gpu_pod({{"CUDA_VERSION", "12.4"}, {"NVIDIA_DISABLE_REQUIRE", "1"}},
                     {{"cudagate.io/cuda-version", "12.1"}}),
             inv);
  EXPECT_EQ(overridden.verdict, Verdict::pass);
  EXPECT_EQ(overridden.containers[0].require.value, "NVIDIA_DISABLE_REQUIRE=1");
  // Arch list annotation over the env's list.
  const Decision archs = decide(gpu_pod({{"CUDA_VERSION", "12.1"}, {"TORCH_CUDA_ARCH_LIST", "8.0"}},
                                        {{"cudagate.io/arch-list.train", "7.5"}}),
                                inv);
  EXPECT_EQ(archs.verdict, Verdict::pass);
  EXPECT_EQ(archs.containers[0].archs.value, "7.5");
  EXPECT_EQ(archs.containers[0].archs.source, "annotation");
}

TEST(Evaluate, BadAnnotationsAreErrors) {
  const Inventory inv = fleet({t4("gpu-t4-1", "535.129.03")});
  struct Case {
    Pairs annotations;
    std::string error;
  };
  const std::vector<Case> cases = {
      {{{"cudagate.io/cuda-version", "12.x"}},
       "container \"train\": annotation cudagate.io/cuda-version: expected a CUDA version like "
       "12.4 or 12.4.1, got \"12.x\""},
      {{{"cudagate.io/min-compute-capability.train", "8"}, {"cudagate.io/cuda-version", "x"}},
       "container \"train\": annotation cudagate.io/cuda-version: expected a CUDA version like "
       "12.4 or 12.4.1, got \"x\""},
  };
  for (const Case& c : cases) {
    auto d = evaluate(gpu_pod({}, c.annotations), inv, {}, db(), {});
    ASSERT_FALSE(d);
    EXPECT_EQ(d.error().str(), c.error);
  }
  auto archs =
      evaluate(gpu_pod({}, {{"cudagate.io/arch-list", "Ampere;Bogus"}}), inv, {}, db(), {});
  ASSERT_FALSE(archs);
  EXPECT_THAT(archs.error().str(),
              HasSubstr("container \"train\": annotation cudagate.io/arch-list: "));
}

TEST(Evaluate, EveryGpuContainerCountsInitContainersToo) {
  const Inventory inv = fleet({t4("gpu-t4-1", "535.129.03")});
  ContainerSpec init = container("warmup", kImage, {{"CUDA_VERSION", "12.4"}});
  init.init = true;
  const Workload w = pod({init, container("train", kImage, {{"CUDA_VERSION", "12.1"}}),
                          container("sidecar", "busybox", {}, false)});
  const Decision d = decide(w, inv);
  EXPECT_EQ(d.verdict, Verdict::fail);
  ASSERT_EQ(d.containers.size(), 3U);
  EXPECT_TRUE(d.containers[0].gpu);
  EXPECT_TRUE(d.containers[1].gpu);
  EXPECT_FALSE(d.containers[2].gpu);
  ASSERT_EQ(d.groups.size(), 1U);
  ASSERT_EQ(d.groups[0].findings.size(), 1U);
  EXPECT_EQ(d.groups[0].findings[0].container, "warmup");
}

TEST(Evaluate, MigAndConfiguredGpuResources) {
  Node mig = t4("gpu-mig-1", "535.129.03");
  mig.allocatable = {{"nvidia.com/mig-1g.10gb", 7}};
  const Inventory inv = fleet({mig});
  ContainerSpec c = container("train", kImage, {{"CUDA_VERSION", "12.1"}}, false);
  c.resources = {{"nvidia.com/mig-1g.10gb", 1}};
  EXPECT_EQ(decide(pod({c}), inv).verdict, Verdict::pass);
  ContainerSpec custom = container("train", kImage, {{"CUDA_VERSION", "12.1"}}, false);
  custom.resources = {{"example.com/gpu", 1}};
  EXPECT_EQ(decide(pod({custom}), inv).verdict, Verdict::skip);
  Policy policy;
  policy.gpu_resources = {"nvidia.com/gpu", "example.com/gpu"};
  EXPECT_EQ(decide(pod({custom}), inv, policy).verdict, Verdict::no_candidates);
}

TEST(Evaluate, GroupsListAtMostTwentyNames) {
  std::vector<Node> nodes;
  for (int i = 0; i < 30; ++i) {
    nodes.push_back(t4("gpu-t4-" + std::to_string(100 + i), "535.129.03"));
  }
  const Decision d = decide(gpu_pod({{"CUDA_VERSION", "12.4"}}), fleet(nodes));
  ASSERT_EQ(d.groups.size(), 1U);
  EXPECT_EQ(d.groups[0].count, 30U);
  ASSERT_EQ(d.groups[0].nodes.size(), kMaxGroupNodeNames);
  EXPECT_EQ(d.groups[0].nodes.front(), "gpu-t4-100");
  EXPECT_EQ(d.groups[0].nodes.back(), "gpu-t4-119");
}

TEST(Evaluate, RegistryFactsAndFlagsAreInputs) {
  const Inventory inv = fleet({t4("gpu-t4-1", "535.129.03")});
  RegistryFacts registry;
  registry.add(
      kImage,
      std::make_shared<const ImageConfig>(ImageConfig{
          {{"CUDA_VERSION", "12.4.1"}, {"NVIDIA_REQUIRE_CUDA", "cuda>=12.4"}}, {}, "", nullptr}));
  const Decision from_registry = decide(gpu_pod({}), inv, {}, EvaluationInputs{&registry, nullptr});
  EXPECT_EQ(from_registry.verdict, Verdict::fail);
  EXPECT_EQ(from_registry.containers[0].require.source, "registry");
  FlagValues flags;
  flags.arch_list = "8.0";
  const Decision flagged =
      decide(gpu_pod({{"CUDA_VERSION", "12.1"}}), inv, {}, EvaluationInputs{nullptr, &flags});
  EXPECT_EQ(flagged.verdict, Verdict::fail);
  EXPECT_EQ(flagged.containers[0].archs.source, "flag");
}

// Decisions made with a memo kept across them equal those made without one,
// whatever changes between them: the inventory (a group index then names
// other facts), the policy's rule settings, the pod's env, annotations,
// registry facts and flags.
TEST(Evaluate, MemoGivesTheDecisionsMadeWithoutIt) {
  const Inventory old_fleet = fleet(
      {t4("gpu-t4-1", "535.129.03"), a100("gpu-a100-1", "550.54.15"), bare_gpu_node("bare-1")});
  const Inventory new_fleet = fleet({t4("gpu-t4-1", "570.124.06"), h100("gpu-h100-1", "535.129.03"),
                                     a10g("gpu-a10g-1", "525.85.12")});
  Policy minor;
  minor.minor_version_compatibility = true;
  Policy exact;
  exact.arch_match = ArchMatch::exact;
  RegistryFacts registry;
  registry.add(
      "nvcr.io/nvidia/pytorch:24.05-py3",
      std::make_shared<const ImageConfig>(ImageConfig{
          {{"CUDA_VERSION", "12.1.0"}, {"TORCH_CUDA_ARCH_LIST", "8.0"}}, {}, "", nullptr}));
  FlagValues flags;
  flags.cuda = "12.6";
  struct Row {
    const char* name;
    Workload workload;
    const Policy* policy;
    const RegistryFacts* registry;
    const FlagValues* flags;
  };
  const Policy plain;
  const std::vector<Row> rows = {
      {"env cuda", gpu_pod({{"CUDA_VERSION", "12.4.1"}}), &plain, nullptr, nullptr},
      {"env cuda, minor compat", gpu_pod({{"CUDA_VERSION", "12.4.1"}}), &minor, nullptr, nullptr},
      {"other env cuda", gpu_pod({{"CUDA_VERSION", "12.2"}}), &plain, nullptr, nullptr},
      {"arch list", gpu_pod({{"CUDA_VERSION", "12.2"}, {"TORCH_CUDA_ARCH_LIST", "8.0"}}), &plain,
       nullptr, nullptr},
      {"arch list, exact", gpu_pod({{"CUDA_VERSION", "12.2"}, {"TORCH_CUDA_ARCH_LIST", "8.0"}}),
       &exact, nullptr, nullptr},
      {"annotation", gpu_pod({{"CUDA_VERSION", "12.2"}}, {{"cudagate.io/cuda-version", "12.8"}}),
       &plain, nullptr, nullptr},
      {"container annotation",
       gpu_pod({{"CUDA_VERSION", "12.2"}}, {{"cudagate.io/cuda-version.train", "11.8"}}), &plain,
       nullptr, nullptr},
      {"inferred", gpu_pod({}, {}, "nvidia/cuda:12.4.1-base-ubuntu22.04"), &plain, nullptr,
       nullptr},
      {"registry", gpu_pod({}, {}, "nvcr.io/nvidia/pytorch:24.05-py3"), &plain, &registry, nullptr},
      {"not in the registry", gpu_pod({}, {}, "nvcr.io/nvidia/pytorch:24.05-py3"), &plain, nullptr,
       nullptr},
      {"flags", gpu_pod({{"CUDA_VERSION", "12.2"}}), &plain, nullptr, &flags},
      {"unknown image", gpu_pod({}), &plain, nullptr, nullptr},
      {"two containers",
       pod({container("a", kImage, {{"CUDA_VERSION", "12.4"}}),
            container("b", kImage, {{"CUDA_VERSION", "12.8"}})}),
       &plain, nullptr, nullptr},
  };
  CandidateScratch scratch;
  MetadataMemo memo;
  EvaluationInputs kept;
  kept.scratch = &scratch;
  kept.memo = &memo;
  for (int round = 0; round < 2; ++round) {
    for (const Inventory* inv : {&old_fleet, &new_fleet}) {
      for (const Row& row : rows) {
        SCOPED_TRACE(std::string(row.name) +
                     (inv == &old_fleet ? " on the old fleet" : " on the new"));
        kept.registry = row.registry;
        kept.flags = row.flags;
        EvaluationInputs fresh;
        fresh.registry = row.registry;
        fresh.flags = row.flags;
        const Decision with_memo = decide(row.workload, *inv, *row.policy, kept);
        const Decision without = decide(row.workload, *inv, *row.policy, fresh);
        EXPECT_TRUE(with_memo == without);
      }
    }
  }
  // An error is kept as such.
  const Workload bad = gpu_pod({}, {{"cudagate.io/cuda-version", "12.x"}});
  for (int round = 0; round < 2; ++round) {
    auto d = evaluate(bad, old_fleet, plain, db(), kept);
    ASSERT_FALSE(d);
    EXPECT_THAT(d.error().str(), HasSubstr("cudagate.io/cuda-version"));
  }
}

TEST(GpuContainers, ResourcesThatCount) {
  Policy policy;
  ContainerSpec plain = container("a", kImage, {}, true);
  ContainerSpec cpu = container("b", kImage, {}, false);
  ContainerSpec mig = container("c", kImage, {}, false);
  mig.resources = {{"nvidia.com/mig-3g.40gb", 1}};
  const Workload w = pod({plain, cpu, mig});
  const auto gpus = gpu_containers(w, policy);
  ASSERT_EQ(gpus.size(), 2U);
  EXPECT_EQ(gpus[0]->name, "a");
  EXPECT_EQ(gpus[1]->name, "c");
}

// The example of docs/scan.md: an image whose only CUDA code is PyTorch's,
// compiled for 8.0 and 9.0, says nothing of it in its variables; its
// attached scan keeps it off a T4 and lets it onto an A100.
TEST(Evaluate, AnAttachedScanDecides) {
  const Inventory inv = fleet({t4("gpu-t4-1", "570.124.06"), a100("gpu-a100-1", "570.124.06")});
  RegistryFacts registry;
  registry.add(kImage, scanned_config({}, scan_of({scanned_code(kTorchCudaLib, "8.0;9.0+PTX"),
                                                   scanned_code("/opt/ext/flash.so", "9.0")},
                                                  "12.8.90", "2.7.0+cu128")));
  const Decision d = decide(gpu_pod({}), inv, {}, EvaluationInputs{&registry, nullptr});
  EXPECT_EQ(d.verdict, Verdict::partial);
  EXPECT_EQ(d.compatible, 1U);
  EXPECT_EQ(d.containers[0].archs.source, "scan");
  EXPECT_EQ(d.containers[0].cuda.source, "scan");
  ASSERT_FALSE(d.groups.empty());
  ASSERT_EQ(d.groups[0].findings.size(), 1U);
  EXPECT_THAT(d.groups[0].findings[0].message,
              HasSubstr("libtorch_cuda.so, which has kernels for 8.0, 9.0 and PTX 9.0 (scan); no "
                        "kernel image for compute capability 7.5"));
  // flash.so has no 8.0 kernel: a note for the A100, not a denial.
  ASSERT_EQ(d.notes.size(), 1U);
  EXPECT_THAT(d.notes[0], HasSubstr("/opt/ext/flash.so has kernels for 9.0: no kernel image for "
                                    "compute capability 8.0"));
  // Without the scan the image is unknown, and nothing is denied.
  const Decision blind = decide(gpu_pod({}), inv, {}, EvaluationInputs{nullptr, nullptr});
  EXPECT_TRUE(blind.unknown_image);
  EXPECT_NE(blind.verdict, Verdict::partial);
}

}  // namespace
}  // namespace cudagate

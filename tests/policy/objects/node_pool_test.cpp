// Node pools: Karpenter NodePools and policy pools read, the nodes that stand
// for their next node, and Karpenter's rule for whether a pod fits a pool.
#include "policy/objects/node_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "policy/config/policy.h"
#include "policy/inventory/inventory.h"
#include "policy/objects/document.h"
#include "tests/support/embedded_compat_db.h"
#include "tests/support/karpenter_pool.h"

namespace cudagate {
namespace {

using test_support::db;

NodePool gpu_pool() {
  return test_support::karpenter_gpu_pool();
}

std::vector<Node> nodes_of(const NodePool& pool) {
  return pool_nodes(std::make_shared<const NodePool>(pool), db(), 0);
}

TEST(NodePool, ReadsAKarpenterNodePool) {
  const NodePool pool = gpu_pool();
  EXPECT_EQ(pool.source, NodePool::Source::karpenter);
  EXPECT_EQ(pool.name, "gpu");
  EXPECT_EQ(pool.driver, "570.124.06");
  ASSERT_EQ(pool.labels.size(), 1U);
  EXPECT_EQ(pool.labels[0], (std::pair<std::string, std::string>{"team", "ml"}));
  ASSERT_EQ(pool.requirements.size(), 3U);
  EXPECT_EQ(pool.requirements[0].values, (std::vector<std::string>{"t4", "a100"}));
  ASSERT_EQ(pool.taints.size(), 1U);
  EXPECT_EQ(pool.taints[0].effect, "NoSchedule");
}

TEST(NodePool, ErrorsNameTheField) {
  struct Case {
    std::string yaml;
    std::string where;
  };
  const std::vector<Case> cases = {
      {"apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata: {name: a}\nspec: {}\n",
       "nodepool.yaml: apiVersion"},
      {"apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: a}\n"
       "spec: {template: {spec: {requirements: [{key: k, operator: Near, values: [x]}]}}}\n",
       "nodepool.yaml: spec.template.spec.requirements[0].operator"},
      {"apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: a}\n"
       "spec: {template: {spec: {requirements: [{key: k, operator: Gt, values: []}]}}}\n",
       "nodepool.yaml: spec.template.spec.requirements[0].values"},
      {"apiVersion: karpenter.sh/v1\nkind: NodePool\n"
       "metadata: {name: a, annotations: {cudagate.io/driver-version: latest}}\n"
       "spec: {template: {spec: {}}}\n",
       "nodepool.yaml: metadata.annotations.cudagate.io/driver-version"},
      {"apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: a}\n"
       "spec: {template: {spec: {taints: [{key: k, effect: Sometimes}]}}}\n",
       "nodepool.yaml: spec.template.spec.taints[0].effect"},
      {"apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: a}\n"
       "spec: {template: {metadata: {labels: {team: 3}}, spec: {}}}\n",
       "nodepool.yaml: spec.template.metadata.labels.team"},
      {"apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: a}\n"
       "spec: {template: {spec: {requirements: [{key: k, operator: Gt, values: [four]}]}}}\n",
       "nodepool.yaml: spec.template.spec.requirements[0].values"},
      {"apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: a}\n"
       "spec: {template: {spec: {requirements: [{operator: Exists}]}}}\n",
       "nodepool.yaml: spec.template.spec.requirements[0].key"},
      {"apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: \"\"}\n"
       "spec: {template: {spec: {}}}\n",
       "nodepool.yaml: metadata.name"},
  };
  for (const Case& c : cases) {
    auto pool = node_pool_from_json(test_support::node_pool_json(c.yaml), "nodepool.yaml");
    ASSERT_FALSE(pool) << c.yaml;
    EXPECT_EQ(pool.error().where, c.where) << pool.error().str();
  }
}

TEST(NodePool, OneNodePerGpuKindCarryingWhatEveryNodeWillCarry) {
  const std::vector<Node> nodes = nodes_of(gpu_pool());
  ASSERT_EQ(nodes.size(), 2U);
  EXPECT_EQ(nodes[0].name, "NodePool gpu (a100, 0 nodes now)");
  EXPECT_EQ(nodes[1].name, "NodePool gpu (t4, 0 nodes now)");
  const Node& a100 = nodes[0];
  EXPECT_EQ(*a100.label("karpenter.sh/nodepool"), "gpu");
  EXPECT_EQ(*a100.label("karpenter.k8s.aws/instance-gpu-name"), "a100");
  EXPECT_EQ(*a100.label("karpenter.sh/capacity-type"), "on-demand");
  EXPECT_EQ(*a100.label("team"), "ml");
  // Two zones: a requirement, not a label.
  EXPECT_EQ(a100.label("topology.kubernetes.io/zone"), nullptr);
  ASSERT_NE(a100.pool, nullptr);
  ASSERT_EQ(a100.pool->requirements.size(), 1U);
  EXPECT_EQ(a100.pool->requirements[0].key, "topology.kubernetes.io/zone");
  EXPECT_EQ(a100.taints.size(), 1U);
  ASSERT_EQ(a100.allocatable.size(), 1U);
  EXPECT_EQ(a100.allocatable[0].first, "nvidia.com/gpu");
}

TEST(NodePool, FactsFromTheGpuKindAndTheDriverAnnotation) {
  const std::vector<Node> nodes = nodes_of(gpu_pool());
  const GpuFacts a100 = derive_gpu_facts(nodes[0], db());
  EXPECT_TRUE(a100.has_gpu);
  ASSERT_TRUE(a100.cc);
  EXPECT_EQ(a100.cc->str(), "8.0");
  EXPECT_EQ(a100.cc_source, NodeFactSource::pool);
  ASSERT_TRUE(a100.driver);
  EXPECT_EQ(a100.driver->str(), "570.124.06");
  EXPECT_EQ(a100.driver_source, NodeFactSource::pool);
  ASSERT_TRUE(a100.max_cuda);
  EXPECT_EQ(a100.max_cuda->str(), "12.8");
  const GpuFacts t4 = derive_gpu_facts(nodes[1], db());
  ASSERT_TRUE(t4.cc);
  EXPECT_EQ(t4.cc->str(), "7.5");

  // A template label wins over the annotation: it is on the node too.
  NodePool labelled = gpu_pool();
  labelled.labels.emplace_back("cudagate.io/driver-version", "535.183.01");
  std::sort(labelled.labels.begin(), labelled.labels.end());
  const GpuFacts f = derive_gpu_facts(nodes_of(labelled)[0], db());
  EXPECT_EQ(f.driver->str(), "535.183.01");
  EXPECT_EQ(f.driver_source, NodeFactSource::cudagate);
}

TEST(NodePool, AnInstanceTypeGivesProductAndGpuCount) {
  NodePool pool;
  pool.name = "p4d";
  pool.requirements = {{"node.kubernetes.io/instance-type", "In", {"p4d.24xlarge"}}};
  const std::vector<Node> nodes = nodes_of(pool);
  ASSERT_EQ(nodes.size(), 1U);
  EXPECT_EQ(nodes[0].name, "NodePool p4d (0 nodes now)");
  const InstanceType* type = db().instance_type("p4d.24xlarge");
  ASSERT_NE(type, nullptr);
  EXPECT_EQ(nodes[0].allocatable[0].second, type->gpus);
  const GpuFacts f = derive_gpu_facts(nodes[0], db());
  ASSERT_TRUE(f.cc);
  EXPECT_EQ(f.cc->str(), "8.0");
  EXPECT_FALSE(f.driver);  // nothing says which driver: an unknown node
}

TEST(NodePool, APoolForCpuWorkStandsForNoGpuNode) {
  NodePool pool;
  pool.name = "general";
  pool.requirements = {{"karpenter.k8s.aws/instance-category", "In", {"c", "m", "r"}}};
  EXPECT_FALSE(is_gpu_pool(pool));
  EXPECT_TRUE(nodes_of(pool).empty());
  pool.driver = "570.124.06";
  EXPECT_TRUE(is_gpu_pool(pool));
}

PodSpec pod(std::vector<std::pair<std::string, std::string>> selector = {},
            std::optional<std::vector<NodeSelectorTerm>> terms = std::nullopt,
            std::vector<Toleration> tolerations = {{"nvidia.com/gpu", "Exists", "", ""}}) {
  PodSpec spec;
  spec.node_selector = std::move(selector);
  spec.required_terms = std::move(terms);
  spec.tolerations = std::move(tolerations);
  return spec;
}

const std::vector<std::pair<std::string_view, std::int64_t>> kOneGpu = {{"nvidia.com/gpu", 1}};

// Cases after sigs.k8s.io/karpenter pkg/scheduling/requirements_test.go
// (Compatible with AllowUndefinedWellKnownLabels) and the scheduler's
// taint rule.
TEST(NodePool, AdmitsAsKarpentersSchedulerDoes) {
  const Node a100 = nodes_of(gpu_pool())[0];
  using Term = NodeSelectorTerm;
  struct Case {
    std::string name;
    PodSpec spec;
    bool admitted;
  };
  const std::vector<Case> cases = {
      {"no constraint", pod(), true},
      {"a label the template defines", pod({{"team", "ml"}}), true},
      {"another value of it", pod({{"team", "web"}}), false},
      {"the pool's name", pod({{"karpenter.sh/nodepool", "gpu"}}), true},
      {"another pool's name", pod({{"karpenter.sh/nodepool", "cpu"}}), false},
      {"the GPU kind", pod({{"karpenter.k8s.aws/instance-gpu-name", "a100"}}), true},
      {"another GPU kind", pod({{"karpenter.k8s.aws/instance-gpu-name", "h100"}}), false},
      {"a custom label the pool does not define", pod({{"nvidia.com/gpu.compute.major", "8"}}),
       false},
      {"a well-known label the pool does not define", pod({{"kubernetes.io/arch", "amd64"}}), true},
      {"its beta alias", pod({{"beta.kubernetes.io/arch", "amd64"}}), true},
      {"a provider label the pool does not define",
       pod({{"karpenter.k8s.aws/instance-family", "p4d"}}), true},
      {"one of the pool's zones", pod({{"topology.kubernetes.io/zone", "us-east-1b"}}), true},
      {"another zone", pod({{"topology.kubernetes.io/zone", "us-west-2a"}}), false},
      {"NotIn on an undefined custom label",
       pod({}, std::vector<Term>{{{{"nvidia.com/cuda.driver.major", "NotIn", {"535"}}}, {}}}),
       true},
      {"Exists on an undefined custom label",
       pod({}, std::vector<Term>{{{{"nvidia.com/cuda.driver.major", "Exists", {}}}, {}}}), false},
      {"DoesNotExist on a defined label",
       pod({}, std::vector<Term>{{{{"team", "DoesNotExist", {}}}, {}}}), false},
      {"In overlapping the pool's zones",
       pod({},
           std::vector<Term>{
               {{{"topology.kubernetes.io/zone", "In", {"us-east-1b", "eu-west-1a"}}}, {}}}),
       true},
      {"NotIn every zone of the pool",
       pod({},
           std::vector<Term>{
               {{{"topology.kubernetes.io/zone", "NotIn", {"us-east-1a", "us-east-1b"}}}, {}}}),
       false},
      {"the second term fits",
       pod({}, std::vector<Term>{{{{"team", "In", {"web"}}}, {}}, {{{"team", "In", {"ml"}}}, {}}}),
       true},
      {"an empty list of terms", pod({}, std::vector<Term>{}), false},
      {"a term that names a node",
       pod({}, std::vector<Term>{{{}, {{"metadata.name", "In", {"node-1"}}}}}), false},
      {"a term that leaves a node out",
       pod({}, std::vector<Term>{{{{"team", "In", {"ml"}}}, {{"metadata.name", "NotIn", {"n"}}}}}),
       true},
      {"the GPU taint not tolerated", pod({}, std::nullopt, {}), false},
      // labels.NewRequirement refuses it: the term matches no node.
      {"a term the scheduler cannot parse",
       pod({}, std::vector<Term>{{{{"kubernetes.io/arch", "Gt", {"amd64"}}}, {}}}), false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(pool_admits(a100, kOneGpu, c.spec), c.admitted) << c.name;
  }
  PodSpec bound = pod();
  bound.node_name = "node-1";
  EXPECT_FALSE(pool_admits(a100, kOneGpu, bound)) << "a pod bound by name";
}

TEST(NodePool, AdmitsUpToItsGpusPerNode) {
  NodePool pool;
  pool.source = NodePool::Source::policy;
  pool.name = "gke-t4";
  pool.labels = {{"cloud.google.com/gke-nodepool", "gpu-t4"}};
  pool.product = "Tesla-T4";
  pool.gpus = 4;
  const Node node = nodes_of(pool).at(0);
  EXPECT_EQ(node.name, "node pool gke-t4 (0 nodes now)");
  const PodSpec spec = pod({}, std::nullopt, {});
  const std::vector<std::pair<std::string_view, std::int64_t>> four = {{"nvidia.com/gpu", 4}};
  const std::vector<std::pair<std::string_view, std::int64_t>> eight = {{"nvidia.com/gpu", 8}};
  const std::vector<std::pair<std::string_view, std::int64_t>> mig = {{"nvidia.com/mig-1g.5gb", 1}};
  EXPECT_TRUE(pool_admits(node, four, spec));
  EXPECT_FALSE(pool_admits(node, eight, spec));
  EXPECT_FALSE(pool_admits(node, mig, spec));
  const GpuFacts f = derive_gpu_facts(node, db());
  ASSERT_TRUE(f.cc);
  EXPECT_EQ(f.cc->str(), "7.5");
}

TEST(NodePool, NodeListsCarryNodePools) {
  const std::string text = std::string(test_support::kKarpenterGpuPool) +
                           "---\napiVersion: v1\nkind: Node\nmetadata: {name: cpu-1}\n";
  auto nodes = parse_nodes(text, "fleet.yaml", &db());
  ASSERT_TRUE(nodes) << nodes.error().str();
  ASSERT_EQ(nodes->size(), 3U);
  auto refused = parse_nodes(text, "fleet.yaml");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().where, "fleet.yaml: document 1");
}

TEST(NodePool, PolicyNodePools) {
  const std::string text = R"(apiVersion: cudagate.io/v1alpha1
kind: Policy
nodePools:
  - name: gke-t4
    labels:
      cloud.google.com/gke-nodepool: gpu-t4
    taints:
      - {key: nvidia.com/gpu, value: present, effect: NoSchedule}
    gpuProduct: nvidia-tesla-t4
    gpus: 2
    driverVersion: 535.183.01
)";
  auto policy = parse_policy(text, "policy.yaml", db());
  ASSERT_TRUE(policy) << policy.error().str();
  ASSERT_EQ(policy->node_pools.size(), 1U);
  const NodePool& pool = policy->node_pools[0];
  EXPECT_EQ(pool.source, NodePool::Source::policy);
  EXPECT_EQ(pool.gpus, 2);
  EXPECT_EQ(pool.driver, "535.183.01");
  const GpuFacts f = derive_gpu_facts(nodes_of(pool).at(0), db());
  ASSERT_TRUE(f.cc);
  EXPECT_EQ(f.cc->str(), "7.5");  // through the GKE accelerator name

  struct Case {
    std::string body;
    std::string where;
  };
  const std::vector<Case> bad = {
      {"nodePools:\n  - name: a\n", "policy.yaml:2: nodePools[0].labels"},
      {"nodePools:\n  - labels: {a: b}\n", "policy.yaml:2: nodePools[0].name"},
      {"nodePools:\n  - name: a\n    labels: {a: b}\n    driverVersion: new\n",
       "policy.yaml:4: nodePools[0].driverVersion"},
      {"nodePools:\n  - name: a\n    labels: {a: b}\n    gpus: 0\n",
       "policy.yaml:4: nodePools[0].gpus"},
      {"nodePools:\n  - name: a\n    labels: {a: b}\n    size: 3\n",
       "policy.yaml:4: nodePools[0].size"},
      {"nodePools:\n  - name: a\n    labels: {a: b}\n  - name: a\n    labels: {a: c}\n",
       "policy.yaml:4: nodePools[1].name"},
  };
  for (const Case& c : bad) {
    auto refused = parse_policy(c.body, "policy.yaml", db());
    ASSERT_FALSE(refused) << c.body;
    EXPECT_EQ(refused.error().where, c.where) << refused.error().str();
  }
}

}  // namespace
}  // namespace cudagate

// The node inventory: candidate nodes by taints, selectors, affinity, fields and resources as
// the scheduler matches them, and nodes grouped and counted by their GPU facts.
#include "policy/inventory/inventory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace cudagate {
namespace {

using Names = std::set<std::string>;

std::string read_fixture(const std::string& name) {
  std::ifstream in(std::string(CUDAGATE_TEST_DATA) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in) << name;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

CompatDb inventory_facts_db() {
  CompatDb db;
  for (const auto& [branch, cuda] : std::vector<std::pair<int, CudaVersion>>{
           {525, {12, 0}}, {535, {12, 2}}, {550, {12, 4}}, {570, {12, 8}}}) {
    DriverBranch b;
    b.branch = branch;
    b.cuda = cuda;
    db.driver_branches.push_back(b);
  }
  auto add = [&](std::string name, std::string gfd, ComputeCapability cc, std::string family) {
    Product p;
    p.name = std::move(name);
    p.gfd_names = {std::move(gfd)};
    p.cc = cc;
    p.family = std::move(family);
    db.products.push_back(std::move(p));
  };
  add("T4", "Tesla-T4", {7, 5}, "turing");
  add("L4", "NVIDIA-L4", {8, 9}, "ada-lovelace");
  add("A100", "NVIDIA-A100-SXM4-80GB", {8, 0}, "ampere");
  add("H100", "NVIDIA-H100-80GB-HBM3", {9, 0}, "hopper");
  return db;
}

struct NodeRow {
  std::string name;
  std::map<std::string, std::string> labels;
  std::vector<Taint> taints;
  bool unschedulable;
  std::vector<std::pair<std::string, std::int64_t>> allocatable;
};

const Taint kGpuTaint{"nvidia.com/gpu", "true", "NoSchedule"};

// A small cluster with one node for each situation the candidates depend on.
std::vector<Node> cluster() {
  const std::vector<NodeRow> rows = {
      {"cpu-1", {{"pool", "cpu"}}, {}, false, {}},
      {"t4-1",
       {{"pool", "t4"}, {"gpu.count", "1"}, {"cudagate.io/driver-version", "535.129.03"}},
       {kGpuTaint},
       false,
       {{"nvidia.com/gpu", 1}}},
      {"t4-2",
       {{"pool", "t4"}, {"gpu.count", "1"}, {"cudagate.io/driver-version", "525.147.05"}},
       {kGpuTaint},
       false,
       {{"nvidia.com/gpu", 1}}},
      {"a100-1",
       {{"pool", "a100"}, {"gpu.count", "8"}, {"dedicated", "ml"}},
       {kGpuTaint, {"dedicated", "ml", "NoSchedule"}},
       false,
       {{"nvidia.com/gpu", 8}}},
      {"a100-mig",
       {{"pool", "a100"}, {"mig", "mixed"}},
       {kGpuTaint},
       false,
       {{"nvidia.com/gpu", 0}, {"nvidia.com/mig-1g.10gb", 7}}},
      {"h100-1",
       {{"pool", "h100"}, {"gpu.count", "8"}},
       {kGpuTaint},
       true,
       {{"nvidia.com/gpu", 8}}},
      {"h100-2",
       {{"pool", "h100"}, {"gpu.count", "08"}},
       {kGpuTaint, {"maintenance", "true", "NoExecute"}, {"soft", "x", "PreferNoSchedule"}},
       false,
       {{"nvidia.com/gpu", 8}}},
      {"odd",
       {{"gpu.count", "many"}, {"zone", "b"}},
       {{"soft", "x", "PreferNoSchedule"}},
       false,
       {}},
  };
  std::vector<Node> out;
  for (const auto& r : rows) {
    Node n;
    n.name = r.name;
    n.labels.assign(r.labels.begin(), r.labels.end());
    n.taints = r.taints;
    n.unschedulable = r.unschedulable;
    n.allocatable = r.allocatable;
    out.push_back(std::move(n));
  }
  return out;
}

Names names(const Inventory& inv, const NodeSet& set) {
  Names out;
  set.for_each([&](std::size_t i) {
    out.insert(inv.node(i).name);
    return true;
  });
  return out;
}

Names all_but(const Inventory& inv, const Names& excluded) {
  Names out;
  for (std::size_t i = 0; i < inv.size(); ++i) {
    if (excluded.count(inv.node(i).name) == 0) out.insert(inv.node(i).name);
  }
  return out;
}

// The pod spec of a Pod whose spec is `body` (YAML lines indented by two).
PodSpec spec_of(const std::string& body) {
  std::string text = "kind: Pod\nmetadata: {name: p}\nspec:\n";
  if (body.find("containers:") == std::string::npos) text += "  containers: [{name: c}]\n";
  text += body;
  auto ws = parse_workloads(text, "pod.yaml");
  EXPECT_TRUE(ws) << text << "\n" << ws.error().str();
  if (!ws || ws->empty()) return {};
  return ws->front().spec;
}

const std::string kTolerateAll = "  tolerations: [{operator: Exists}]\n";
const std::string kTolerateGpu = "  tolerations: [{key: nvidia.com/gpu, operator: Exists}]\n";

std::string affinity(const std::string& terms) {
  return "  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
         "{nodeSelectorTerms: " +
         terms + "}}}\n";
}

struct CandidateRow {
  std::string what;
  std::string spec;
  Names expected;
};

class Candidates : public ::testing::Test {
 protected:
  void SetUp() override { inv_ = Inventory::build(cluster(), db_); }
  void check(const std::vector<CandidateRow>& rows) {
    for (const auto& row : rows) {
      EXPECT_EQ(names(inv_, inv_.candidates(spec_of(row.spec))), row.expected) << row.what << "\n"
                                                                               << row.spec;
    }
  }
  CompatDb db_ = inventory_facts_db();
  Inventory inv_;
};

TEST_F(Candidates, TaintsAndTolerations) {
  check({
      {"no tolerations: untainted, schedulable nodes", "", {"cpu-1", "odd"}},
      {"empty key with Exists tolerates every taint, cordon included", kTolerateAll,
       all_but(inv_, {})},
      {"a key with Exists and no effect tolerates that key's every effect",
       kTolerateGpu,
       {"cpu-1", "odd", "t4-1", "t4-2", "a100-mig"}},
      {"an effect that differs does not tolerate",
       "  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoExecute}]\n",
       {"cpu-1", "odd"}},
      {"Equal needs the value",
       "  tolerations: [{key: nvidia.com/gpu, operator: Equal, value: \"true\"}]\n",
       {"cpu-1", "odd", "t4-1", "t4-2", "a100-mig"}},
      {"Equal with another value",
       "  tolerations: [{key: nvidia.com/gpu, operator: Equal, value: \"false\"}]\n",
       {"cpu-1", "odd"}},
      {"no operator means Equal",
       "  tolerations: [{key: nvidia.com/gpu, value: \"true\"}]\n",
       {"cpu-1", "odd", "t4-1", "t4-2", "a100-mig"}},
      {"Equal with an empty value against a valued taint",
       "  tolerations: [{key: nvidia.com/gpu}]\n",
       {"cpu-1", "odd"}},
      {"Exists ignores the value",
       "  tolerations: [{key: nvidia.com/gpu, operator: Exists, value: ignored}]\n",
       {"cpu-1", "odd", "t4-1", "t4-2", "a100-mig"}},
      {"empty key and Exists limited to NoSchedule",
       "  tolerations: [{operator: Exists, effect: NoSchedule}]\n", all_but(inv_, {"h100-2"})},
      {"an unknown operator tolerates nothing",
       "  tolerations: [{key: nvidia.com/gpu, operator: Gt, value: \"1\"}]\n",
       {"cpu-1", "odd"}},
      {"several taints need several tolerations",
       "  tolerations:\n  - {key: nvidia.com/gpu, operator: Exists}\n  - {key: dedicated, value: "
       "ml, effect: "
       "NoSchedule}\n",
       {"cpu-1", "odd", "t4-1", "t4-2", "a100-mig", "a100-1"}},
      {"cordoned node: tolerating the unschedulable taint",
       "  tolerations:\n  - {key: nvidia.com/gpu, operator: Exists}\n  - {key: "
       "node.kubernetes.io/unschedulable, "
       "operator: Exists, effect: NoSchedule}\n",
       {"cpu-1", "odd", "t4-1", "t4-2", "a100-mig", "h100-1"}},
      {"NoExecute taint",
       "  tolerations: [{key: nvidia.com/gpu, operator: Exists}, {key: maintenance, operator: "
       "Exists}]\n",
       {"cpu-1", "odd", "t4-1", "t4-2", "a100-mig", "h100-2"}},
  });
}

TEST_F(Candidates, NodeSelector) {
  check({
      {"one label", "  nodeSelector: {pool: t4}\n" + kTolerateAll, {"t4-1", "t4-2"}},
      {"two labels ANDed",
       "  nodeSelector: {pool: a100, dedicated: ml}\n" + kTolerateAll,
       {"a100-1"}},
      {"a value no node has", "  nodeSelector: {pool: v100}\n" + kTolerateAll, {}},
      {"a key no node has", "  nodeSelector: {rack: r1}\n" + kTolerateAll, {}},
      {"an empty value matches only an empty label",
       "  nodeSelector: {pool: \"\"}\n" + kTolerateAll,
       {}},
      {"selector and taints", "  nodeSelector: {pool: t4}\n", {}},
  });
}

TEST_F(Candidates, Operators) {
  check({
      {"In",
       affinity("[{matchExpressions: [{key: pool, operator: In, values: [t4, a100]}]}]") +
           kTolerateAll,
       {"t4-1", "t4-2", "a100-1", "a100-mig"}},
      {"NotIn matches nodes without the label",
       affinity("[{matchExpressions: [{key: pool, operator: NotIn, values: [t4, a100, h100]}]}]") +
           kTolerateAll,
       {"cpu-1", "odd"}},
      {"Exists",
       affinity("[{matchExpressions: [{key: dedicated, operator: Exists}]}]") + kTolerateAll,
       {"a100-1"}},
      {"DoesNotExist",
       affinity("[{matchExpressions: [{key: gpu.count, operator: DoesNotExist}]}]") + kTolerateAll,
       {"cpu-1", "a100-mig"}},
      {"Gt compares integers (08 is 8; many is no number)",
       affinity("[{matchExpressions: [{key: gpu.count, operator: Gt, values: [\"4\"]}]}]") +
           kTolerateAll,
       {"a100-1", "h100-1", "h100-2"}},
      {"Lt",
       affinity("[{matchExpressions: [{key: gpu.count, operator: Lt, values: [\"4\"]}]}]") +
           kTolerateAll,
       {"t4-1", "t4-2"}},
      {"Gt with a leading zero in the requirement",
       affinity("[{matchExpressions: [{key: gpu.count, operator: Gt, values: [\"007\"]}]}]") +
           kTolerateAll,
       {"a100-1", "h100-1", "h100-2"}},
      {"Gt on a key no node has",
       affinity("[{matchExpressions: [{key: rack, operator: Gt, values: [\"1\"]}]}]") +
           kTolerateAll,
       {}},
      {"expressions of a term are ANDed",
       affinity("[{matchExpressions: [{key: pool, operator: In, values: [h100, a100]}, {key: "
                "gpu.count, operator: "
                "Exists}]}]") +
           kTolerateAll,
       {"a100-1", "h100-1", "h100-2"}},
      {"terms are ORed",
       affinity("[{matchExpressions: [{key: pool, operator: In, values: [t4]}]}, "
                "{matchExpressions: [{key: zone, "
                "operator: In, values: [b]}]}]") +
           kTolerateAll,
       {"t4-1", "t4-2", "odd"}},
      {"nodeSelector and affinity are ANDed",
       "  nodeSelector: {pool: a100}\n" +
           affinity("[{matchExpressions: [{key: mig, operator: DoesNotExist}]}]") + kTolerateAll,
       {"a100-1"}},
  });
}

TEST_F(Candidates, TermsTheSchedulerCannotParseMatchNothing) {
  const std::string valid = "{matchExpressions: [{key: pool, operator: In, values: [t4]}]}";
  auto only = [&](const std::string& term) { return affinity("[" + term + "]") + kTolerateAll; };
  auto with_valid = [&](const std::string& term) {
    return affinity("[" + term + ", " + valid + "]") + kTolerateAll;
  };
  const Names t4s = {"t4-1", "t4-2"};
  check({
      {"an empty term", only("{}"), {}},
      {"an empty term next to a valid one", with_valid("{}"), t4s},
      {"no terms", affinity("[]") + kTolerateAll, {}},
      {"an unknown operator",
       only("{matchExpressions: [{key: pool, operator: Equals, values: [t4]}]}"),
       {}},
      {"an unknown operator next to a valid term",
       with_valid("{matchExpressions: [{key: pool, operator: Equals, values: [t4]}]}"), t4s},
      {"In without values", only("{matchExpressions: [{key: pool, operator: In}]}"), {}},
      {"NotIn without values",
       only("{matchExpressions: [{key: pool, operator: NotIn, values: []}]}"),
       {}},
      {"Exists with values",
       only("{matchExpressions: [{key: pool, operator: Exists, values: [t4]}]}"),
       {}},
      {"Gt with two values",
       only("{matchExpressions: [{key: gpu.count, operator: Gt, values: [\"1\", \"2\"]}]}"),
       {}},
      {"Gt with a word",
       only("{matchExpressions: [{key: gpu.count, operator: Gt, values: [four]}]}"),
       {}},
      {"Gt with a negative number (no valid label value)",
       only("{matchExpressions: [{key: gpu.count, operator: Gt, values: [\"-1\"]}]}"),
       {}},
      {"Gt beyond int64",
       only("{matchExpressions: [{key: gpu.count, operator: Lt, values: "
            "[\"9223372036854775808\"]}]}"),
       {}},
      {"an invalid key, even for NotIn",
       only("{matchExpressions: [{key: \"bad key\", operator: NotIn, values: [x]}]}"),
       {}},
      {"an invalid value",
       only("{matchExpressions: [{key: pool, operator: NotIn, values: [\"a b\"]}]}"),
       {}},
      {"a key with an upper-case prefix",
       only("{matchExpressions: [{key: Example.com/pool, operator: DoesNotExist}]}"),
       {}},
      {"a prefixed key is valid",
       only("{matchExpressions: [{key: example.com/pool, operator: DoesNotExist}]}"),
       all_but(inv_, {})},
      {"a bad requirement spoils its whole term",
       only("{matchExpressions: [{key: pool, operator: In, values: [t4]}, {key: x, operator: "
            "Bogus}]}"),
       {}},
  });
}

TEST_F(Candidates, MatchFields) {
  auto only = [&](const std::string& term) { return affinity("[" + term + "]") + kTolerateAll; };
  check({
      {"In", only("{matchFields: [{key: metadata.name, operator: In, values: [t4-2]}]}"), {"t4-2"}},
      {"In an unknown node",
       only("{matchFields: [{key: metadata.name, operator: In, values: [gone]}]}"),
       {}},
      {"NotIn", only("{matchFields: [{key: metadata.name, operator: NotIn, values: [t4-2]}]}"),
       all_but(inv_, {"t4-2"})},
      {"two values",
       only("{matchFields: [{key: metadata.name, operator: In, values: [t4-1, t4-2]}]}"),
       {}},
      {"another field",
       only("{matchFields: [{key: metadata.uid, operator: In, values: [t4-1]}]}"),
       {}},
      {"another operator", only("{matchFields: [{key: metadata.name, operator: Exists}]}"), {}},
      {"fields and expressions of one term are ANDed",
       only("{matchExpressions: [{key: pool, operator: In, values: [t4]}], matchFields: [{key: "
            "metadata.name, "
            "operator: NotIn, values: [t4-1]}]}"),
       {"t4-2"}},
      {"pinned to a cordoned node",
       affinity("[{matchFields: [{key: metadata.name, operator: In, values: "
                "[h100-1]}]}]") +
           kTolerateGpu,
       {}},
  });
}

TEST_F(Candidates, NodeName) {
  check({
      {"NoSchedule taints do not stop a pod with nodeName", "  nodeName: t4-1\n", {"t4-1"}},
      {"nor does a cordon", "  nodeName: h100-1\n", {"h100-1"}},
      {"NoExecute taints do", "  nodeName: h100-2\n", {}},
      {"unless tolerated",
       "  nodeName: h100-2\n  tolerations: [{key: maintenance, operator: Exists}]\n",
       {"h100-2"}},
      {"an unknown node", "  nodeName: gone\n" + kTolerateAll, {}},
      {"the selector still applies", "  nodeName: t4-1\n  nodeSelector: {pool: a100}\n", {}},
      {"and the affinity",
       "  nodeName: t4-1\n" +
           affinity("[{matchExpressions: [{key: pool, operator: In, values: [t4]}]}]"),
       {"t4-1"}},
      {"and the resources",
       "  nodeName: t4-1\n  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 2}}}]\n",
       {}},
  });
}

TEST_F(Candidates, Resources) {
  auto containers = [](const std::string& list) {
    return "  containers: " + list + "\n" + kTolerateAll;
  };
  check({
      {"one GPU",
       containers("[{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]"),
       {"t4-1", "t4-2", "a100-1", "h100-1", "h100-2"}},
      {"eight GPUs",
       containers("[{name: c, resources: {limits: {nvidia.com/gpu: 8}}}]"),
       {"a100-1", "h100-1", "h100-2"}},
      {"nine GPUs", containers("[{name: c, resources: {limits: {nvidia.com/gpu: 9}}}]"), {}},
      {"app containers add up",
       containers("[{name: a, resources: {limits: {nvidia.com/gpu: 4}}}, {name: b, "
                  "resources: {limits: {nvidia.com/gpu: 4}}}]"),
       {"a100-1", "h100-1", "h100-2"}},
      {"beyond every node",
       containers("[{name: a, resources: {limits: {nvidia.com/gpu: 5}}}, {name: b, "
                  "resources: {limits: {nvidia.com/gpu: 4}}}]"),
       {}},
      {"an init container's request counts when larger",
       "  initContainers: [{name: i, resources: {limits: {nvidia.com/gpu: 8}}}]\n" +
           containers("[{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]"),
       {"a100-1", "h100-1", "h100-2"}},
      {"init containers do not add up",
       "  initContainers: [{name: i, resources: {limits: {nvidia.com/gpu: 1}}}, {name: j, "
       "resources: {limits: "
       "{nvidia.com/gpu: 1}}}]\n" +
           containers("[{name: c}]"),
       {"t4-1", "t4-2", "a100-1", "h100-1", "h100-2"}},
      {"a MIG slice",
       containers("[{name: c, resources: {limits: {nvidia.com/mig-1g.10gb: 1}}}]"),
       {"a100-mig"}},
      {"seven MIG slices",
       containers("[{name: c, resources: {limits: {nvidia.com/mig-1g.10gb: 7}}}]"),
       {"a100-mig"}},
      {"eight MIG slices",
       containers("[{name: c, resources: {limits: {nvidia.com/mig-1g.10gb: 8}}}]"),
       {}},
      {"a MIG profile no node offers",
       containers("[{name: c, resources: {limits: {nvidia.com/mig-3g.40gb: 1}}}]"),
       {}},
      {"GPUs and MIG slices at once",
       containers("[{name: c, resources: {limits: {nvidia.com/mig-1g.10gb: 1, "
                  "nvidia.com/gpu: 1}}}]"),
       {}},
      {"zero GPUs asks nothing",
       containers("[{name: c, resources: {limits: {nvidia.com/gpu: 0}}}]"), all_but(inv_, {})},
      {"other extended resources count too",
       containers("[{name: c, resources: {limits: {example.com/fpga: 1}}}]"),
       {}},
  });
}

TEST_F(Candidates, LargeCountsDoNotOverflow) {
  PodSpec spec = spec_of(kTolerateAll);
  spec.containers.assign(
      3, ContainerSpec{"c", "", false, {}, {{"nvidia.com/gpu", INT64_MAX / 2}}, {}});
  EXPECT_TRUE(inv_.candidates(spec).empty());
}

// Devices a pod's claims allocate count as requests of the container they
// name: the same candidates as a spec in which that container requests
// them itself.
TEST_F(Candidates, AddedRequestsCountAsTheContainersOwn) {
  const PodSpec spec = spec_of(
      "  initContainers: [{name: i, resources: {limits: {nvidia.com/gpu: 1}}}]\n"
      "  containers: [{name: a, resources: {limits: {nvidia.com/gpu: 1}}}, {name: b}]\n" +
      kTolerateAll);
  ASSERT_EQ(spec.containers.size(), 3U);
  using Requests = std::vector<std::pair<std::string, std::int64_t>>;
  // The spec with `added` written into container k's own requests.
  auto merged = [&](const Requests& added, std::size_t k) {
    PodSpec out = spec;
    if (k >= out.containers.size()) return out;
    auto& resources = out.containers[k].resources;
    for (const auto& request : added) {
      const auto it = std::find_if(resources.begin(), resources.end(),
                                   [&](const auto& e) { return e.first == request.first; });
      if (it != resources.end()) {
        it->second += request.second;
      } else {
        resources.push_back(request);
      }
    }
    return out;
  };
  const std::vector<Requests> lists = {
      {},
      {{"nvidia.com/gpu", 4}},
      {{"nvidia.com/gpu", 7}},
      {{"nvidia.com/gpu", 8}},
      {{"nvidia.com/mig-1g.10gb", 1}},
      {{"nvidia.com/gpu", 2}, {"nvidia.com/gpu", 2}},
      {{"example.com/fpga", 1}},
  };
  for (const auto& added : lists) {
    for (std::size_t k = 0; k <= spec.containers.size(); ++k) {
      const Names expected = names(inv_, inv_.candidates(merged(added, k)));
      EXPECT_EQ(names(inv_, inv_.candidates(spec, AddedRequests{added, k})), expected)
          << "container " << k << ", " << added.size() << " added";
      CandidateScratch scratch;
      Names by_slot;
      inv_.candidate_slots(spec, scratch, {added, k}).for_each([&](std::size_t slot) {
        by_slot.insert(inv_.node(inv_.node_at_slot(slot)).name);
        return true;
      });
      EXPECT_EQ(by_slot, expected) << "slots, container " << k;
    }
  }
  std::size_t a = 0;
  std::size_t b = 0;
  std::size_t i = 0;
  for (std::size_t k = 0; k < spec.containers.size(); ++k) {
    const auto& c = spec.containers[k];
    (c.name == "a" ? a : c.name == "b" ? b : i) = k;
  }
  const Names one = {"t4-1", "t4-2", "a100-1", "h100-1", "h100-2"};
  const Names eight = {"a100-1", "h100-1", "h100-2"};
  EXPECT_EQ(names(inv_, inv_.candidates(spec)), one);
  // Four more GPUs in the app container that asks one: five, on the nodes
  // with eight; in the app container that asks none: five as well, summed.
  const Requests four = {{"nvidia.com/gpu", 4}};
  EXPECT_EQ(names(inv_, inv_.candidates(spec, {four, a})), eight);
  EXPECT_EQ(names(inv_, inv_.candidates(spec, {four, b})), eight);
  // In the init container: five, the larger of its own and the app sum.
  EXPECT_EQ(names(inv_, inv_.candidates(spec, {four, i})), eight);
  // One more in the init container: two, more than a T4 node has.
  const Requests single = {{"nvidia.com/gpu", 1}};
  EXPECT_EQ(names(inv_, inv_.candidates(spec, {single, i})), eight);
  const Requests nine = {{"nvidia.com/gpu", 8}};
  EXPECT_TRUE(inv_.candidates(spec, {nine, a}).empty());
  EXPECT_TRUE(inv_.candidates(spec, {nine, i}).empty());
  // A count beyond the int64 range matches no node rather than wrapping.
  const Requests huge = {{"nvidia.com/gpu", INT64_MAX}, {"nvidia.com/gpu", INT64_MAX}};
  EXPECT_TRUE(inv_.candidates(spec, {huge, a}).empty());
  // Added to no container of the pod: the pod's own one.
  EXPECT_EQ(names(inv_, inv_.candidates(spec, {huge, spec.containers.size()})), one);
}

TEST(Inventory, GroupsAndCounts) {
  const CompatDb db = inventory_facts_db();
  const Inventory inv = Inventory::build(cluster(), db);
  ASSERT_EQ(inv.size(), 8U);
  EXPECT_EQ(inv.gpu_nodes(), 6U);          // t4 x2, a100 x2 (MIG included), h100 x2
  EXPECT_EQ(inv.unknown_gpu_nodes(), 4U);  // only the T4s have a driver label
  // The T4s differ by driver; the H100s and a100-1 have equal facts (no labels
  // but GPUs); a100-mig too; cpu-1 and odd have no GPU.
  EXPECT_EQ(inv.groups().size(), 4U);
  EXPECT_NE(inv.group_of(1), inv.group_of(2));
  EXPECT_EQ(inv.group_of(0), inv.group_of(7));
  EXPECT_EQ(inv.group_of(3), inv.group_of(5));
  EXPECT_EQ(inv.group_of(3), inv.group_of(4));
  std::size_t members = 0;
  for (std::size_t g = 0; g < inv.groups().size(); ++g) {
    members += inv.groups()[g].members.count();
    inv.groups()[g].members.for_each([&](std::size_t i) {
      EXPECT_EQ(inv.group_of(i), g);
      return true;
    });
  }
  EXPECT_EQ(members, inv.size());
  const GpuFacts& t4 = inv.groups()[inv.group_of(1)].facts;
  EXPECT_EQ(t4.driver->str(), "535.129.03");
  EXPECT_EQ(t4.max_cuda, (CudaVersion{12, 2}));

  EXPECT_TRUE(inv.has_label_key("pool"));
  EXPECT_TRUE(inv.has_label_key("cudagate.io/driver-version"));
  EXPECT_FALSE(inv.has_label_key("nvidia.com/cuda.driver-version.full"));
  EXPECT_EQ(names(inv, inv.with_label("pool", "h100")), (Names{"h100-1", "h100-2"}));
  EXPECT_TRUE(inv.with_label("pool", "v100").empty());
  EXPECT_TRUE(inv.with_label("rack", "1").empty());

  const Inventory empty = Inventory::build({}, db);
  EXPECT_EQ(empty.size(), 0U);
  EXPECT_TRUE(empty.groups().empty());
  EXPECT_TRUE(empty.candidates(spec_of(kTolerateAll)).empty());
}

TEST(Inventory, DriverVersionsEqualByNumberShareAGroup) {
  std::vector<Node> nodes = cluster();
  nodes[2].labels = {
      {"cudagate.io/driver-version", "535.129.3"}, {"gpu.count", "1"}, {"pool", "t4"}};
  const Inventory inv = Inventory::build(nodes, inventory_facts_db());
  EXPECT_EQ(inv.group_of(1), inv.group_of(2));
}

// The fixture fleet with the fixture workloads: what the scheduler would do.
TEST(Inventory, FixtureFleetCandidates) {
  auto nodes = parse_nodes(read_fixture("nodes/fleet.json"), "fleet.json");
  ASSERT_TRUE(nodes) << nodes.error().str();
  const Inventory inv = Inventory::build(*nodes, inventory_facts_db());
  EXPECT_EQ(inv.gpu_nodes(), 11U);
  EXPECT_EQ(inv.unknown_gpu_nodes(), 0U);
  // T4 x2 on 535, T4 on 525, L4 (the cordoned one too), A100 on 550 (MIG node
  // included), A100 on 535, H100 on 570, H100 on 525, and the CPU nodes.
  EXPECT_EQ(inv.groups().size(), 8U);

  struct Row {
    std::string file;
    Names expected;
  };
  const std::vector<Row> rows = {
      {"pod-gpu.yaml",
       {"ip-10-0-5-51.ec2.internal", "ip-10-0-5-52.ec2.internal", "ip-10-0-5-53.ec2.internal"}},
      {"pod-mig.yaml", {"ip-10-0-4-43.ec2.internal"}},
      {"pod-cpu.yaml", {"ip-10-0-1-11.ec2.internal", "ip-10-0-1-12.ec2.internal"}},
      {"deployment.yaml", {"ip-10-0-3-31.ec2.internal"}},
      // The DaemonSet controller's tolerations admit the cordoned L4 node;
      // the dedicated A100/H100 nodes stay out.
      {"daemonset.yaml",
       {"ip-10-0-2-21.ec2.internal", "ip-10-0-2-22.ec2.internal", "ip-10-0-2-23.ec2.internal",
        "ip-10-0-3-31.ec2.internal", "ip-10-0-3-32.ec2.internal"}},
      // Tolerating every taint admits the cordoned L4 node too.
      {"statefulset.yaml",
       {"ip-10-0-3-31.ec2.internal", "ip-10-0-3-32.ec2.internal", "ip-10-0-4-41.ec2.internal",
        "ip-10-0-4-42.ec2.internal", "ip-10-0-5-51.ec2.internal", "ip-10-0-5-52.ec2.internal"}},
      {"cronjob.yaml",
       {"ip-10-0-4-41.ec2.internal", "ip-10-0-4-42.ec2.internal", "ip-10-0-5-51.ec2.internal",
        "ip-10-0-5-52.ec2.internal", "ip-10-0-5-53.ec2.internal"}},
  };
  for (const auto& row : rows) {
    auto ws = parse_workloads(read_fixture("workloads/" + row.file), row.file);
    ASSERT_TRUE(ws) << ws.error().str();
    ASSERT_EQ(ws->size(), 1U);
    EXPECT_EQ(names(inv, inv.candidates(ws->front().spec)), row.expected) << row.file;
  }
}

// Ten thousand nodes with a hostname each: the index stays correct when
// label values are unique per node.
TEST(Inventory, TenThousandNodes) {
  std::vector<Node> nodes;
  const std::size_t n = 10000;
  for (std::size_t i = 0; i < n; ++i) {
    Node node;
    node.name = "node-" + std::to_string(i);
    node.labels = {{"kubernetes.io/hostname", node.name},
                   {"pool", i % 10 == 0 ? "h100" : "t4"},
                   {"rank", std::to_string(i % 100)}};
    std::sort(node.labels.begin(), node.labels.end());
    node.allocatable = {{"nvidia.com/gpu", i % 10 == 0 ? 8 : 1}};
    if (i % 1000 == 1) node.unschedulable = true;
    nodes.push_back(std::move(node));
  }
  const Inventory inv = Inventory::build(nodes, inventory_facts_db());
  EXPECT_EQ(inv.candidates(spec_of("  nodeSelector: {pool: h100}\n")).count(), 1000U);
  EXPECT_EQ(
      inv.candidates(spec_of("  nodeSelector: {kubernetes.io/hostname: node-4242}\n")).count(), 1U);
  EXPECT_EQ(inv.candidates(spec_of("")).count(), n - 10);
  EXPECT_EQ(
      inv.candidates(spec_of(affinity(
                         "[{matchExpressions: [{key: rank, operator: Lt, values: [\"5\"]}, "
                         "{key: kubernetes.io/hostname, operator: NotIn, values: [node-0]}]}]")))
          .count(),
      489U);  // 500 ranks below 5, less node-0 and the 10 cordoned nodes
  EXPECT_EQ(inv.candidates(
                   spec_of("  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 2}}}]\n"))
                .count(),
            1000U);
}

}  // namespace
}  // namespace cudagate

namespace cudagate {
namespace {

// Node i reads back as it was given: names, labels, taints, cordon and
// resources survive the compact storage.
TEST(Inventory, NodesReadBackAsGiven) {
  std::vector<Node> nodes = cluster();
  // Labels out of order are put in order.
  nodes[0].labels = {{"zone", "b"}, {"pool", "t4"}, {"arch", "amd64"}};
  nodes[1].taints.push_back(Taint{"soft", "x", "PreferNoSchedule"});
  const Inventory inv = Inventory::build(nodes, inventory_facts_db());
  ASSERT_EQ(inv.size(), nodes.size());
  std::sort(nodes[0].labels.begin(), nodes[0].labels.end());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const Node got = inv.node(i);
    EXPECT_EQ(got.name, nodes[i].name);
    EXPECT_EQ(inv.node_name(i), nodes[i].name);
    EXPECT_EQ(got.labels, nodes[i].labels) << nodes[i].name;
    EXPECT_EQ(got.taints, nodes[i].taints) << nodes[i].name;
    EXPECT_EQ(got.unschedulable, nodes[i].unschedulable) << nodes[i].name;
    EXPECT_EQ(got.allocatable, nodes[i].allocatable) << nodes[i].name;
    for (const auto& [key, value] : nodes[i].labels) {
      const std::string* found = inv.node_label(i, key);
      ASSERT_NE(found, nullptr) << key;
      EXPECT_EQ(*found, value);
    }
    EXPECT_EQ(inv.node_label(i, "no-such-label"), nullptr);
    EXPECT_EQ(inv.node_label(i, ""), nullptr);
  }
}

// The decision's view of the candidates (slots, each group one range)
// matches candidates(), node for node and group for group.
TEST(Inventory, CandidateSlotsMatchCandidates) {
  const Inventory inv = Inventory::build(cluster(), inventory_facts_db());
  CandidateScratch scratch;
  for (const std::string& spec_text :
       {std::string(""), std::string(kTolerateAll), std::string("  nodeSelector: {pool: t4}\n"),
        std::string("  nodeSelector: {pool: none}\n"),
        affinity("[{matchExpressions: [{key: pool, operator: In, values: [a100, h100]}]}]") +
            std::string(kTolerateAll)}) {
    const PodSpec spec = spec_of(spec_text);
    const NodeSet nodes = inv.candidates(spec);
    const NodeSet& slots = inv.candidate_slots(spec, scratch);
    EXPECT_EQ(slots.count(), nodes.count()) << spec_text;
    std::size_t covered = 0;
    for (std::size_t g = 0; g < inv.groups().size(); ++g) {
      const auto [begin, end] = inv.group_slots(g);
      covered += end - begin;
      EXPECT_EQ(slots.count_range(begin, end), inv.groups()[g].members.count_and(nodes))
          << spec_text << " group " << g;
      std::size_t previous = 0;
      bool first = true;
      slots.for_each_in_range(begin, end, [&](std::size_t slot) {
        const std::size_t i = inv.node_at_slot(slot);
        EXPECT_TRUE(nodes.contains(i));
        EXPECT_EQ(inv.group_of(i), g);
        // Within a group, slots follow the nodes' order.
        EXPECT_TRUE(first || i > previous);
        previous = i;
        first = false;
        return true;
      });
    }
    EXPECT_EQ(covered, inv.size());
  }
}

}  // namespace
}  // namespace cudagate

namespace cudagate {
namespace {

// A label key with a few values and one with more than the builder keeps
// at hand: every value selects exactly its nodes, whether it was first seen
// before or after the key had many.
TEST(Inventory, KeysWithFewAndManyValues) {
  std::vector<Node> nodes;
  for (int i = 0; i < 60; ++i) {
    Node node;
    node.name = "node-" + std::to_string(i);
    node.labels = {{"few", i % 3 == 0 ? "a" : "b"}, {"many", "v" + std::to_string(i % 20)}};
    // Every fourth node has one more key, so that key lists differ.
    if (i % 4 == 0) node.labels.emplace_back("other", "x");
    std::sort(node.labels.begin(), node.labels.end());
    nodes.push_back(std::move(node));
  }
  const Inventory inv = Inventory::build(nodes, inventory_facts_db());
  for (int v = 0; v < 20; ++v) {
    const NodeSet set = inv.with_label("many", "v" + std::to_string(v));
    EXPECT_EQ(set.count(), 3U) << v;
    for (int i = v; i < 60; i += 20) EXPECT_TRUE(set.contains(static_cast<std::size_t>(i))) << i;
  }
  EXPECT_EQ(inv.with_label("few", "a").count(), 20U);
  EXPECT_EQ(inv.with_label("few", "b").count(), 40U);
  EXPECT_EQ(inv.with_label("other", "x").count(), 15U);
  EXPECT_EQ(inv.with_label("many", "v20").count(), 0U);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    EXPECT_EQ(inv.node(i).labels, nodes[i].labels) << i;
  }
}

// A name added twice is refused, and the second node leaves no trace.
TEST(Inventory, BuilderRefusesANameTwice) {
  const CompatDb db = inventory_facts_db();
  InventoryBuilder builder(db);
  Node a;
  a.name = "a";
  a.labels = {{"pool", "t4"}};
  Node b;
  b.name = "b";
  Node again = a;
  again.labels = {{"pool", "h100"}};
  EXPECT_TRUE(builder.add(a));
  EXPECT_TRUE(builder.add(b));
  EXPECT_FALSE(builder.add(again));
  EXPECT_EQ(builder.size(), 2U);
  const Inventory inv = builder.finish();
  ASSERT_EQ(inv.size(), 2U);
  EXPECT_EQ(inv.with_label("pool", "h100").count(), 0U);
  EXPECT_EQ(inv.node(0).labels, a.labels);
}

}  // namespace
}  // namespace cudagate

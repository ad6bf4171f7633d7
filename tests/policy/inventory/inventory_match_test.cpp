// A pod's candidate nodes as the scheduler matches them: taints against tolerations (cordons
// included), nodeSelector, required node affinity (operators, terms it cannot parse, fields),
// nodeName, extended resources (app and init containers, MIG slices, devices claims add), on
// the small cluster and the fixture fleet, and the same candidates as slots.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "policy/inventory/inventory.h"
#include "tests/support/inventory_cluster.h"

namespace cudagate {
namespace {

using test_support::inventory_affinity;
using test_support::inventory_all_but;
using test_support::inventory_cluster;
using test_support::inventory_facts_db;
using test_support::inventory_names;
using test_support::inventory_spec_of;
using test_support::InventoryNames;
using test_support::kTolerateAll;
using test_support::kTolerateGpu;

std::string read_inventory_fixture(const std::string& name) {
  std::ifstream in(std::string(CUDAGATE_TEST_DATA) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in) << name;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct CandidateRow {
  std::string what;
  std::string spec;
  InventoryNames expected;
};

class Candidates : public ::testing::Test {
 protected:
  void SetUp() override { inv_ = Inventory::build(inventory_cluster(), db_); }
  void check(const std::vector<CandidateRow>& rows) {
    for (const auto& row : rows) {
      EXPECT_EQ(inventory_names(inv_, inv_.candidates(inventory_spec_of(row.spec))), row.expected)
          << row.what << "\n"
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
       inventory_all_but(inv_, {})},
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
       "  tolerations: [{operator: Exists, effect: NoSchedule}]\n",
       inventory_all_but(inv_, {"h100-2"})},
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
       inventory_affinity("[{matchExpressions: [{key: pool, operator: In, values: [t4, a100]}]}]") +
           kTolerateAll,
       {"t4-1", "t4-2", "a100-1", "a100-mig"}},
      {"NotIn matches nodes without the label",
       inventory_affinity(
           "[{matchExpressions: [{key: pool, operator: NotIn, values: [t4, a100, h100]}]}]") +
           kTolerateAll,
       {"cpu-1", "odd"}},
      {"Exists",
       inventory_affinity("[{matchExpressions: [{key: dedicated, operator: Exists}]}]") +
           kTolerateAll,
       {"a100-1"}},
      {"DoesNotExist",
       inventory_affinity("[{matchExpressions: [{key: gpu.count, operator: DoesNotExist}]}]") +
           kTolerateAll,
       {"cpu-1", "a100-mig"}},
      {"Gt compares integers (08 is 8; many is no number)",
       inventory_affinity(
           "[{matchExpressions: [{key: gpu.count, operator: Gt, values: [\"4\"]}]}]") +
           kTolerateAll,
       {"a100-1", "h100-1", "h100-2"}},
      {"Lt",
       inventory_affinity(
           "[{matchExpressions: [{key: gpu.count, operator: Lt, values: [\"4\"]}]}]") +
           kTolerateAll,
       {"t4-1", "t4-2"}},
      {"Gt with a leading zero in the requirement",
       inventory_affinity(
           "[{matchExpressions: [{key: gpu.count, operator: Gt, values: [\"007\"]}]}]") +
           kTolerateAll,
       {"a100-1", "h100-1", "h100-2"}},
      {"Gt on a key no node has",
       inventory_affinity("[{matchExpressions: [{key: rack, operator: Gt, values: [\"1\"]}]}]") +
           kTolerateAll,
       {}},
      {"expressions of a term are ANDed",
       inventory_affinity(
           "[{matchExpressions: [{key: pool, operator: In, values: [h100, a100]}, {key: "
           "gpu.count, operator: "
           "Exists}]}]") +
           kTolerateAll,
       {"a100-1", "h100-1", "h100-2"}},
      {"terms are ORed",
       inventory_affinity("[{matchExpressions: [{key: pool, operator: In, values: [t4]}]}, "
                          "{matchExpressions: [{key: zone, "
                          "operator: In, values: [b]}]}]") +
           kTolerateAll,
       {"t4-1", "t4-2", "odd"}},
      {"nodeSelector and affinity are ANDed",
       "  nodeSelector: {pool: a100}\n" +
           inventory_affinity("[{matchExpressions: [{key: mig, operator: DoesNotExist}]}]") +
           kTolerateAll,
       {"a100-1"}},
  });
}

TEST_F(Candidates, TermsTheSchedulerCannotParseMatchNothing) {
  const std::string valid = "{matchExpressions: [{key: pool, operator: In, values: [t4]}]}";
  auto only = [&](const std::string& term) {
    return inventory_affinity("[" + term + "]") + kTolerateAll;
  };
  auto with_valid = [&](const std::string& term) {
    return inventory_affinity("[" + term + ", " + valid + "]") + kTolerateAll;
  };
  const InventoryNames t4s = {"t4-1", "t4-2"};
  check({
      {"an empty term", only("{}"), {}},
      {"an empty term next to a valid one", with_valid("{}"), t4s},
      {"no terms", inventory_affinity("[]") + kTolerateAll, {}},
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
       inventory_all_but(inv_, {})},
      {"a bad requirement spoils its whole term",
       only("{matchExpressions: [{key: pool, operator: In, values: [t4]}, {key: x, operator: "
            "Bogus}]}"),
       {}},
  });
}

TEST_F(Candidates, MatchFields) {
  auto only = [&](const std::string& term) {
    return inventory_affinity("[" + term + "]") + kTolerateAll;
  };
  check({
      {"In", only("{matchFields: [{key: metadata.name, operator: In, values: [t4-2]}]}"), {"t4-2"}},
      {"In an unknown node",
       only("{matchFields: [{key: metadata.name, operator: In, values: [gone]}]}"),
       {}},
      {"NotIn", only("{matchFields: [{key: metadata.name, operator: NotIn, values: [t4-2]}]}"),
       inventory_all_but(inv_, {"t4-2"})},
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
       inventory_affinity("[{matchFields: [{key: metadata.name, operator: In, values: "
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
           inventory_affinity("[{matchExpressions: [{key: pool, operator: In, values: [t4]}]}]"),
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
       containers("[{name: c, resources: {limits: {nvidia.com/gpu: 0}}}]"),
       inventory_all_but(inv_, {})},
      {"other extended resources count too",
       containers("[{name: c, resources: {limits: {example.com/fpga: 1}}}]"),
       {}},
  });
}

TEST_F(Candidates, LargeCountsDoNotOverflow) {
  PodSpec spec = inventory_spec_of(kTolerateAll);
  spec.containers.assign(
      3, ContainerSpec{"c", "", false, {}, {{"nvidia.com/gpu", INT64_MAX / 2}}, {}});
  EXPECT_TRUE(inv_.candidates(spec).empty());
}

// Devices a pod's claims allocate count as requests of the container they
// name: the same candidates as a spec in which that container requests
// them itself.
TEST_F(Candidates, AddedRequestsCountAsTheContainersOwn) {
  const PodSpec spec = inventory_spec_of(
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
      const InventoryNames expected = inventory_names(inv_, inv_.candidates(merged(added, k)));
      EXPECT_EQ(inventory_names(inv_, inv_.candidates(spec, AddedRequests{added, k})), expected)
          << "container " << k << ", " << added.size() << " added";
      CandidateScratch scratch;
      InventoryNames by_slot;
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
  const InventoryNames one = {"t4-1", "t4-2", "a100-1", "h100-1", "h100-2"};
  const InventoryNames eight = {"a100-1", "h100-1", "h100-2"};
  EXPECT_EQ(inventory_names(inv_, inv_.candidates(spec)), one);
  // Four more GPUs in the app container that asks one: five, on the nodes
  // with eight; in the app container that asks none: five as well, summed.
  const Requests four = {{"nvidia.com/gpu", 4}};
  EXPECT_EQ(inventory_names(inv_, inv_.candidates(spec, {four, a})), eight);
  EXPECT_EQ(inventory_names(inv_, inv_.candidates(spec, {four, b})), eight);
  // In the init container: five, the larger of its own and the app sum.
  EXPECT_EQ(inventory_names(inv_, inv_.candidates(spec, {four, i})), eight);
  // One more in the init container: two, more than a T4 node has.
  const Requests single = {{"nvidia.com/gpu", 1}};
  EXPECT_EQ(inventory_names(inv_, inv_.candidates(spec, {single, i})), eight);
  const Requests nine = {{"nvidia.com/gpu", 8}};
  EXPECT_TRUE(inv_.candidates(spec, {nine, a}).empty());
  EXPECT_TRUE(inv_.candidates(spec, {nine, i}).empty());
  // A count beyond the int64 range matches no node rather than wrapping.
  const Requests huge = {{"nvidia.com/gpu", INT64_MAX}, {"nvidia.com/gpu", INT64_MAX}};
  EXPECT_TRUE(inv_.candidates(spec, {huge, a}).empty());
  // Added to no container of the pod: the pod's own one.
  EXPECT_EQ(inventory_names(inv_, inv_.candidates(spec, {huge, spec.containers.size()})), one);
}

// The fixture fleet with the fixture workloads: what the scheduler would do.
TEST(Inventory, FixtureFleetCandidates) {
  auto nodes = parse_nodes(read_inventory_fixture("nodes/fleet.json"), "fleet.json");
  ASSERT_TRUE(nodes) << nodes.error().str();
  const Inventory inv = Inventory::build(*nodes, inventory_facts_db());
  EXPECT_EQ(inv.gpu_nodes(), 11U);
  EXPECT_EQ(inv.unknown_gpu_nodes(), 0U);
  // T4 x2 on 535, T4 on 525, L4 (the cordoned one too), A100 on 550 (MIG node
  // included), A100 on 535, H100 on 570, H100 on 525, and the CPU nodes.
  EXPECT_EQ(inv.groups().size(), 8U);

  struct Row {
    std::string file;
    InventoryNames expected;
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
    auto ws = parse_workloads(read_inventory_fixture("workloads/" + row.file), row.file);
    ASSERT_TRUE(ws) << ws.error().str();
    ASSERT_EQ(ws->size(), 1U);
    EXPECT_EQ(inventory_names(inv, inv.candidates(ws->front().spec)), row.expected) << row.file;
  }
}

// The decision's view of the candidates (slots, each group one range)
// matches candidates(), node for node and group for group.
TEST(Inventory, CandidateSlotsMatchCandidates) {
  const Inventory inv = Inventory::build(inventory_cluster(), inventory_facts_db());
  CandidateScratch scratch;
  for (const std::string& spec_text :
       {std::string(""), std::string(kTolerateAll), std::string("  nodeSelector: {pool: t4}\n"),
        std::string("  nodeSelector: {pool: none}\n"),
        inventory_affinity(
            "[{matchExpressions: [{key: pool, operator: In, values: [a100, h100]}]}]") +
            std::string(kTolerateAll)}) {
    const PodSpec spec = inventory_spec_of(spec_text);
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

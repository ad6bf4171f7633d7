// Inventory::patched() against Inventory::build(): random sequences of node changes (driver
// upgrades and downgrades, GPU swaps, label changes, taints, cordons, resources, deletes, new
// nodes) applied batch by batch to one inventory, and after each batch every query and the
// decisions on a set of pods compared with those of an inventory built anew from the same nodes.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "compat-db/compat_db.h"
#include "policy/inventory/inventory.h"
#include "policy/rules/evaluate.h"
#include "tests/support/embedded_compat_db.h"

namespace cudagate {
namespace {

using test_support::db;

struct Gpu {
  const char* product;
  const char* cc;
};
constexpr Gpu kGpus[] = {{"Tesla-T4", "7.5"},
                         {"NVIDIA-A10G", "8.6"},
                         {"NVIDIA-A100-SXM4-80GB", "8.0"},
                         {"NVIDIA-H100-80GB-HBM3", "9.0"},
                         {"NVIDIA-L4", "8.9"}};
constexpr const char* kDrivers[] = {"470.256.02", "525.147.05", "535.183.01",
                                    "550.127.05", "560.35.03",  "570.124.06"};
constexpr const char* kPools[] = {"train", "serve", "batch", "dev"};

// Nodes as GPU Feature Discovery labels them (with a hostname label, a value per node), and
// CPU nodes; each one's labels sorted, as node lists are read.
class Fleet {
 public:
  explicit Fleet(unsigned seed) : rng_(seed) {}

  Node random_node(const std::string& name) {
    Node n;
    n.name = name;
    n.labels = {{"kubernetes.io/hostname", name},
                {"kubernetes.io/arch", pick(2) == 0 ? "amd64" : "arm64"},
                {"pool", kPools[pick(4)]}};
    if (pick(5) > 0) {
      const Gpu& gpu = kGpus[pick(std::size(kGpus))];
      n.labels.emplace_back("nvidia.com/gpu.product", gpu.product);
      const std::string cc = gpu.cc;
      n.labels.emplace_back("nvidia.com/gpu.compute.major", cc.substr(0, 1));
      n.labels.emplace_back("nvidia.com/gpu.compute.minor", cc.substr(2));
      if (pick(8) > 0) set_driver(n, kDrivers[pick(std::size(kDrivers))]);
      n.allocatable = {{"nvidia.com/gpu", static_cast<std::int64_t>(1 + pick(8))}};
      if (pick(2) == 0) n.taints.push_back({"nvidia.com/gpu", "present", "NoSchedule"});
    }
    if (pick(6) == 0) n.taints.push_back({"dedicated", kPools[pick(4)], "NoExecute"});
    if (pick(10) == 0) n.taints.push_back({"spot", "true", "PreferNoSchedule"});
    if (pick(12) == 0) n.unschedulable = true;
    if (pick(3) == 0) n.allocatable.emplace_back("example.com/fpga", pick(3));
    sort(n);
    return n;
  }

  // One change of `n` of the kinds a cluster sees.
  void mutate(Node& n) {
    switch (pick(8)) {
      case 0:
      case 1:  // a driver rollout, either way
        if (n.label("nvidia.com/gpu.product") != nullptr) {
          set_driver(n, kDrivers[pick(std::size(kDrivers))]);
        }
        break;
      case 2:  // another pool
        set_label(n, "pool", kPools[pick(4)]);
        break;
      case 3:  // a taint on or off
        if (n.taints.empty()) {
          n.taints.push_back({"nvidia.com/gpu", "present", "NoSchedule"});
        } else {
          n.taints.pop_back();
        }
        break;
      case 4:
        n.unschedulable = !n.unschedulable;
        break;
      case 5:  // resources
        if (!n.allocatable.empty()) n.allocatable[0].second = static_cast<std::int64_t>(pick(9));
        break;
      case 6:  // a label added or gone
        if (n.label("team") != nullptr) {
          std::erase_if(n.labels, [](const auto& l) { return l.first == "team"; });
        } else {
          set_label(n, "team", "t" + std::to_string(pick(3)));
        }
        break;
      default:  // replaced by another machine under the same name
        n = random_node(n.name);
        break;
    }
    sort(n);
  }

  std::size_t pick(std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_);
  }

 private:
  static void set_label(Node& n, const std::string& key, const std::string& value) {
    for (auto& [k, v] : n.labels) {
      if (k == key) {
        v = value;
        return;
      }
    }
    n.labels.emplace_back(key, value);
  }
  static void set_driver(Node& n, const std::string& driver) {
    const auto first = driver.find('.');
    const auto second = driver.find('.', first + 1);
    set_label(n, "nvidia.com/cuda.driver-version.full", driver);
    set_label(n, "nvidia.com/cuda.driver-version.major", driver.substr(0, first));
    set_label(n, "nvidia.com/cuda.driver.major", driver.substr(0, first));
    set_label(n, "nvidia.com/cuda.driver-version.minor",
              driver.substr(first + 1, second - first - 1));
    set_label(n, "nvidia.com/cuda.driver-version.revision", driver.substr(second + 1));
  }
  static void sort(Node& n) { std::sort(n.labels.begin(), n.labels.end()); }

  std::mt19937 rng_;
};

NodeSelectorRequirement req(std::string key, std::string op, std::vector<std::string> values) {
  return {std::move(key), std::move(op), std::move(values)};
}

// Pods that exercise every way of selecting nodes, and GPU containers the rules judge
// differently across the drivers and products above.
std::vector<Workload> pods() {
  std::vector<Workload> out;
  auto add = [&](PodSpec spec, const std::string& cuda, const std::string& archs) {
    Workload w;
    w.resource = ResourceRef{"v1", "Pod", "ml", "pod-" + std::to_string(out.size())};
    ContainerSpec c;
    c.name = "main";
    c.image = "registry.example.com/ml/train:v" + std::to_string(out.size());
    if (!cuda.empty()) c.env.push_back(EnvVar{"CUDA_VERSION", cuda});
    if (!archs.empty()) c.env.push_back(EnvVar{"TORCH_CUDA_ARCH_LIST", archs});
    c.resources = {{"nvidia.com/gpu", 1}};
    spec.containers.push_back(std::move(c));
    w.spec = std::move(spec);
    w.spec_pointer = "/spec";
    out.push_back(std::move(w));
  };
  const Toleration gpu_taint{"nvidia.com/gpu", "Exists", "", "NoSchedule"};
  const Toleration tolerate_all{"", "Exists", "", ""};
  auto spec_of = [](std::string node_name,
                    std::vector<std::pair<std::string, std::string>> selector,
                    std::vector<Toleration> tolerations) {
    PodSpec spec;
    spec.node_name = std::move(node_name);
    spec.node_selector = std::move(selector);
    spec.tolerations = std::move(tolerations);
    return spec;
  };
  add(PodSpec{}, "12.4.1", "");
  add(spec_of("", {}, {gpu_taint}), "12.2.0", "8.0;9.0");
  add(spec_of("", {}, {tolerate_all}), "11.8.0", "7.5");
  add(spec_of("", {{"pool", "train"}}, {gpu_taint}), "12.8.0", "");
  add(spec_of("", {{"pool", "train"}, {"team", "t1"}}, {}), "12.0.0", "");
  PodSpec affinity;
  affinity.required_terms = std::vector<NodeSelectorTerm>{
      {{req("nvidia.com/cuda.driver.major", "Gt", {"530"}), req("pool", "NotIn", {"dev"})}, {}},
      {{req("nvidia.com/gpu.product", "In", {"NVIDIA-H100-80GB-HBM3", "NVIDIA-L4"})}, {}}};
  affinity.tolerations = {gpu_taint, {"dedicated", "Exists", "", "NoExecute"}};
  add(affinity, "12.4.0", "");
  PodSpec missing;
  missing.required_terms = std::vector<NodeSelectorTerm>{
      {{req("team", "DoesNotExist", {}), req("nvidia.com/cuda.driver.major", "Lt", {"560"})}, {}}};
  missing.tolerations = {{"", "Exists", "", ""}};
  add(missing, "12.2.0", "");
  PodSpec by_field;
  by_field.required_terms = std::vector<NodeSelectorTerm>{
      {{}, {req("metadata.name", "NotIn", {"node-3"})}},
      {{req("team", "Exists", {})}, {req("metadata.name", "In", {"node-5"})}}};
  add(by_field, "12.4.0", "");
  add(spec_of("node-7", {}, {}), "12.4.0", "");
  PodSpec fpga;
  fpga.tolerations = {{"", "Exists", "", ""}};
  add(fpga, "12.0.0", "");
  out.back().spec.containers[0].resources.emplace_back("example.com/fpga", 2);
  return out;
}

std::set<std::string> names_of(const Inventory& inv, const NodeSet& nodes) {
  std::set<std::string> out;
  nodes.for_each([&](std::size_t i) {
    out.insert(inv.node_name(i));
    return true;
  });
  return out;
}

std::string show(const GpuFacts& f) {
  std::ostringstream s;
  s << f.has_gpu << '/' << (f.driver ? f.driver->str() : "-") << '/'
    << (f.max_cuda ? f.max_cuda->str() : "-") << '/' << (f.cc ? f.cc->str() : "-") << '/'
    << f.product << '/' << f.family << '/' << f.brand.value_or("-") << '/'
    << static_cast<int>(f.driver_source) << static_cast<int>(f.cc_source);
  return s.str();
}

// A decision as text, groups in the order evaluate() gives them except
// among those it orders by group index (equal outcome and count), and a
// group's names as a set when all are listed. A group with more candidates
// than are listed lists some of them, which ones depending on slots.
std::string show(const Decision& d, const Inventory& inv, const NodeSet& candidates) {
  std::ostringstream s;
  s << static_cast<int>(d.verdict) << ' ' << d.reason << ' ' << d.candidates << ' ' << d.compatible
    << ' ' << d.unknown_image << d.unknown_node << '\n';
  const std::set<std::string> candidate_names = names_of(inv, candidates);
  std::vector<std::string> groups;
  for (const GroupDecision& g : d.groups) {
    std::ostringstream gs;
    gs << static_cast<int>(g.outcome) << ' ' << g.count << ' ' << show(g.facts) << ' '
       << (inv.groups()[g.group].facts == g.facts) << ':';
    std::set<std::string> names;
    for (const std::string_view name : g.nodes) {
      names.insert(std::string(name));
      if (!candidate_names.contains(std::string(name))) gs << " not-a-candidate:" << name;
    }
    if (g.count <= kMaxGroupNodeNames) {
      for (const auto& name : names) gs << ' ' << name;
    } else {
      gs << " listed " << names.size();
    }
    for (const Finding& f : g.findings)
      gs << " [" << to_string(f.rule) << ' ' << f.message << ' ' << f.fix << ']';
    groups.push_back(gs.str());
  }
  // Runs of equal outcome and count are ordered by group index, which differs.
  for (std::size_t i = 0; i < groups.size();) {
    std::size_t j = i + 1;
    while (j < groups.size() && d.groups[j].outcome == d.groups[i].outcome &&
           d.groups[j].count == d.groups[i].count) {
      ++j;
    }
    std::sort(groups.begin() + static_cast<std::ptrdiff_t>(i),
              groups.begin() + static_cast<std::ptrdiff_t>(j));
    i = j;
  }
  for (const auto& g : groups) s << g << '\n';
  return s.str();
}

// Everything the inventory answers, as text independent of node indexes and slots.
std::string show(const Inventory& inv, const std::vector<Workload>& workloads,
                 const std::set<std::string>& keys) {
  std::ostringstream s;
  s << "nodes " << inv.size() << " gpu " << inv.gpu_nodes() << " unknown "
    << inv.unknown_gpu_nodes() << '\n';
  std::vector<std::string> nodes;
  Node node;
  for (std::size_t i = 0; i < inv.size(); ++i) {
    inv.node_into(i, node);
    std::ostringstream n;
    n << node.name << " group " << show(inv.groups()[inv.group_of(i)].facts) << " index "
      << (inv.index_of(node.name) == i) << ':';
    for (const auto& [k, v] : node.labels) {
      n << ' ' << k << '=' << v;
      const std::string* found = inv.node_label(i, k);
      if (found == nullptr || *found != v) n << "(label lookup differs)";
    }
    for (const Taint& t : node.taints) n << " taint " << t.key << '=' << t.value << ':' << t.effect;
    for (const auto& [r, a] : node.allocatable) n << ' ' << r << '=' << a;
    n << (node.unschedulable ? " cordoned" : "");
    nodes.push_back(n.str());
  }
  std::sort(nodes.begin(), nodes.end());
  for (const auto& n : nodes) s << n << '\n';

  std::vector<std::string> groups;
  std::size_t members = 0;
  for (std::size_t g = 0; g < inv.groups().size(); ++g) {
    const NodeGroup& group = inv.groups()[g];
    members += group.members.count();
    if (group.members.empty()) continue;
    std::ostringstream gs;
    gs << show(group.facts) << ':';
    for (const auto& name : names_of(inv, group.members)) gs << ' ' << name;
    groups.push_back(gs.str());
  }
  std::sort(groups.begin(), groups.end());
  s << "members " << members << '\n';
  for (const auto& g : groups) s << g << '\n';

  for (const auto& key : keys) {
    s << key << ' ' << inv.has_label_key(key);
    for (const char* value : {"train", "dev", "t1", "570", "535", "Tesla-T4", "node-4"}) {
      s << ' ' << inv.with_label(key, value).count();
    }
    s << '\n';
  }

  MetadataMemo memo;
  CandidateScratch scratch;
  for (const Workload& w : workloads) {
    const NodeSet candidates = inv.candidates(w.spec);
    s << w.resource.name << " candidates";
    for (const auto& name : names_of(inv, candidates)) s << ' ' << name;
    s << '\n';
    // Per group, the range count of the slots agrees with the members.
    const NodeSet& slots = inv.candidate_slots(w.spec, scratch);
    for (std::size_t g = 0; g < inv.groups().size(); ++g) {
      const auto [begin, end] = inv.group_slots(g);
      NodeSet both = inv.groups()[g].members;
      both &= candidates;
      if (slots.count_range(begin, end) != both.count()) s << "group " << g << " slots differ\n";
    }
    for (MetadataMemo* m : {static_cast<MetadataMemo*>(nullptr), &memo}) {
      EvaluationInputs inputs;
      inputs.memo = m;
      const auto d = evaluate(w, inv, Policy{}, db(), inputs);
      if (!d) {
        s << "error " << d.error().str() << '\n';
        continue;
      }
      s << show(*d, inv, candidates);
    }
  }
  return s.str();
}

Inventory rebuilt(const std::map<std::string, Node>& model, const std::vector<std::string>& order) {
  std::vector<Node> nodes;
  for (const auto& name : order) nodes.push_back(model.at(name));
  return Inventory::build(nodes, db());
}

void run(unsigned seed, std::size_t fleet_size, std::size_t batches, std::size_t max_batch) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  Fleet fleet(seed);
  std::map<std::string, Node> model;
  std::vector<std::string> order;  // nodes in the order a rebuild lists them
  for (std::size_t i = 0; i < fleet_size; ++i) {
    const std::string name = "node-" + std::to_string(i);
    model.emplace(name, fleet.random_node(name));
    order.push_back(name);
  }
  std::size_t next_name = fleet_size;
  const std::vector<Workload> workloads = pods();
  std::set<std::string> keys = {"pool",
                                "team",
                                "nvidia.com/cuda.driver.major",
                                "kubernetes.io/hostname",
                                "nvidia.com/gpu.product",
                                "absent"};
  Inventory patched = rebuilt(model, order);
  // Readers of an inventory keep it as it was while it is patched.
  Inventory first = patched;
  const std::string first_text = show(first, workloads, keys);

  for (std::size_t b = 0; b < batches; ++b) {
    std::vector<Node> forms;  // the new forms, kept while the edits point at them
    forms.reserve(max_batch);
    std::vector<std::string> removed;
    removed.reserve(max_batch);
    std::vector<NodeEdit> edits;
    const std::size_t count = 1 + fleet.pick(max_batch);
    for (std::size_t e = 0; e < count; ++e) {
      const std::size_t kind = fleet.pick(10);
      if (kind == 0 || order.empty()) {  // a new node, or one deleted before back
        const std::string name =
            "node-" + std::to_string(fleet.pick(3) == 0 && next_name > 0 ? fleet.pick(next_name)
                                                                         : next_name++);
        forms.push_back(fleet.random_node(name));
      } else if (kind == 1) {  // a delete
        removed.push_back(order[fleet.pick(order.size())]);
        edits.push_back({removed.back(), nullptr});
        model.erase(removed.back());
        std::erase(order, removed.back());
        continue;
      } else {
        Node n = model.at(order[fleet.pick(order.size())]);
        fleet.mutate(n);
        forms.push_back(std::move(n));
      }
      const Node& n = forms.back();
      edits.push_back({n.name, &n});
      if (model.insert_or_assign(n.name, n).second) order.push_back(n.name);
    }
    patched = patched.patched(edits, db());
    const Inventory built = rebuilt(model, order);
    ASSERT_EQ(show(patched, workloads, keys), show(built, workloads, keys)) << "after batch " << b;
  }
  EXPECT_EQ(show(first, workloads, keys), first_text);
}

TEST(InventoryPatch, SmallFleetManyBatches) {
  for (unsigned seed = 1; seed <= 6; ++seed) run(seed, 12, 60, 6);
}

TEST(InventoryPatch, LargerFleetRollouts) {
  for (unsigned seed = 11; seed <= 13; ++seed) run(seed, 300, 25, 80);
}

// Deleting nearly everything and adding it back frees slots until the
// inventory is compacted; queries stay those of a build throughout.
TEST(InventoryPatch, ChurnCompacts) {
  Fleet fleet(99);
  std::map<std::string, Node> model;
  std::vector<std::string> order;
  Inventory inv = Inventory::build({}, db());
  const std::vector<Workload> workloads = pods();
  const std::set<std::string> keys = {"pool", "nvidia.com/cuda.driver.major"};
  for (int round = 0; round < 6; ++round) {
    std::vector<Node> forms;
    for (int i = 0; i < 400; ++i)
      forms.push_back(fleet.random_node("node-" + std::to_string(round * 400 + i)));
    std::vector<NodeEdit> edits;
    for (const Node& n : forms) edits.push_back({n.name, &n});
    const std::vector<std::string> gone = std::exchange(order, {});
    for (const auto& name : gone) edits.push_back({name, nullptr});
    model.clear();
    for (const Node& n : forms) {
      model.emplace(n.name, n);
      order.push_back(n.name);
    }
    inv = inv.patched(edits, db());
    EXPECT_LE(inv.slot_count(), 2 * inv.size() + 4096);
    EXPECT_EQ(inv.size(), 400U);
    ASSERT_EQ(show(inv, workloads, keys), show(rebuilt(model, order), workloads, keys));
  }
}

TEST(InventoryPatch, EmptyGroupsGoAndSlotsAreReused) {
  Fleet fleet(5);
  Node a = fleet.random_node("a");
  a.labels = {{"kubernetes.io/hostname", "a"}, {"pool", "p"}};
  a.allocatable = {};
  Node b = a;
  b.name = "b";
  Inventory inv = Inventory::build({a, b}, db());
  ASSERT_EQ(inv.groups().size(), 1U);
  // b becomes a GPU node: a second group, with slots of its own.
  Node gpu = b;
  gpu.labels.emplace_back("nvidia.com/gpu.product", "Tesla-T4");
  gpu.allocatable = {{"nvidia.com/gpu", 1}};
  std::sort(gpu.labels.begin(), gpu.labels.end());
  inv = inv.patched({{"b", &gpu}}, db());
  std::size_t live_groups = 0;
  for (const NodeGroup& g : inv.groups()) live_groups += g.members.empty() ? 0 : 1;
  EXPECT_EQ(live_groups, 2U);
  const std::size_t slots = inv.slot_count();
  // And back: the GPU group goes; its slots are no one's.
  inv = inv.patched({{"b", &b}}, db());
  live_groups = 0;
  for (std::size_t g = 0; g < inv.groups().size(); ++g) {
    if (inv.groups()[g].members.empty()) {
      EXPECT_EQ(inv.group_slots(g).first, inv.group_slots(g).second);
    } else {
      ++live_groups;
    }
  }
  EXPECT_EQ(live_groups, 1U);
  // Moving back and forth reuses the freed slots rather than adding more.
  for (int i = 0; i < 20; ++i) {
    inv = inv.patched({{"b", &gpu}}, db());
    inv = inv.patched({{"b", &b}}, db());
  }
  EXPECT_LE(inv.slot_count(), slots + 16);
  EXPECT_EQ(inv.with_label("pool", "p").count(), 2U);
}

}  // namespace
}  // namespace cudagate

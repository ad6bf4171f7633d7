// Lists and watch events folded into published inventories: a list
// replaces everything, events change only the nodes they name, and a burst
// of events becomes one inventory.
#include "server/live_inventory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/fixtures.h"

namespace cudagate {
namespace {

using kube::NodeChange;
using std::chrono::milliseconds;

Node gpu_node(const std::string& name, const std::string& driver_major,
              const std::string& runtime) {
  Node node;
  node.name = name;
  node.labels = {{"kubernetes.io/hostname", name},
                 {"nvidia.com/cuda.driver.major", driver_major},
                 {"nvidia.com/cuda.driver.minor", "90"},
                 {"nvidia.com/cuda.driver.rev", "07"},
                 {"nvidia.com/cuda.runtime.major", runtime.substr(0, runtime.find('.'))},
                 {"nvidia.com/cuda.runtime.minor", runtime.substr(runtime.find('.') + 1)},
                 {"nvidia.com/gpu.product", "NVIDIA-L4"}};
  node.allocatable = {{"nvidia.com/gpu", 4}};
  return node;
}

NodeChange upsert(Node node) {
  const std::string name = node.name;
  return NodeChange{NodeChange::Kind::upsert, name, std::move(node)};
}

NodeChange removal(const std::string& name) {
  return NodeChange{NodeChange::Kind::remove, name, Node{}};
}

// A watch batch is patched into the published inventory; the result
// answers as the same nodes built anew, and the published one is unchanged.
TEST(ApplyNodeChanges, PatchAnswersAsARebuild) {
  std::vector<Node> nodes;
  for (int i = 0; i < 40; ++i) {
    nodes.push_back(gpu_node("gpu-" + std::to_string(i), i % 2 == 0 ? "535" : "550", "12.4"));
  }
  const Inventory published = Inventory::build(nodes, test_support::db());
  std::vector<NodeChange> changes;
  for (int i = 0; i < 40; i += 3)
    changes.push_back(upsert(gpu_node("gpu-" + std::to_string(i), "570", "12.8")));
  changes.push_back(removal("gpu-1"));
  changes.push_back(upsert(gpu_node("gpu-new", "470", "11.4")));
  const Inventory patched = apply_node_changes(published, changes, test_support::db());
  const Inventory rebuilt = rebuild_with_node_changes(published, changes, test_support::db());

  auto names = [](const Inventory& inv, std::string_view key, std::string_view value) {
    std::vector<std::string> out;
    inv.with_label(key, value).for_each([&](std::size_t i) {
      out.push_back(inv.node_name(i));
      return true;
    });
    std::sort(out.begin(), out.end());
    return out;
  };
  ASSERT_EQ(patched.size(), 40U);
  EXPECT_EQ(patched.size(), rebuilt.size());
  for (const char* major : {"470", "535", "550", "570"}) {
    EXPECT_EQ(names(patched, "nvidia.com/cuda.driver.major", major),
              names(rebuilt, "nvidia.com/cuda.driver.major", major))
        << major;
  }
  EXPECT_EQ(names(patched, "nvidia.com/cuda.driver.major", "570").size(), 14U);
  EXPECT_FALSE(patched.index_of("gpu-1").has_value());
  EXPECT_TRUE(patched.index_of("gpu-new").has_value());
  // What decisions in flight read stays as it was.
  EXPECT_EQ(published.size(), 40U);
  EXPECT_TRUE(names(published, "nvidia.com/cuda.driver.major", "570").empty());
  EXPECT_TRUE(published.index_of("gpu-1").has_value());
}

class LiveInventoryTest : public ::testing::Test {
 protected:
  LiveInventoryTest()
      : live_(ioc_.get_executor(), std::make_shared<const CompatDb>(test_support::db()),
              milliseconds(1),
              [this](const LiveInventory::Update& update) { published_.push_back(update); }) {}

  // Runs the executor until nothing is left to do.
  void settle() {
    ioc_.restart();
    ioc_.run_for(std::chrono::seconds(10));
  }

  // The driver major of node `name` in the last inventory, or "" when absent.
  std::string driver_of(const std::string& name) {
    const Inventory& inv = *published_.back().inventory;
    for (std::size_t i = 0; i < inv.size(); ++i) {
      if (inv.node_name(i) == name) {
        const std::string* major = inv.node_label(i, "nvidia.com/cuda.driver.major");
        return major ? *major : "?";
      }
    }
    return "";
  }

  boost::asio::io_context ioc_;
  std::vector<LiveInventory::Update> published_;
  LiveInventory live_;
};

TEST_F(LiveInventoryTest, AListIsPublishedWhole) {
  live_.replace_all({gpu_node("a", "535", "12.2"), gpu_node("b", "550", "12.4")});
  settle();
  ASSERT_EQ(published_.size(), 1u);
  EXPECT_TRUE(published_[0].from_list);
  EXPECT_EQ(published_[0].inventory->size(), 2u);
  EXPECT_EQ(published_[0].inventory->gpu_nodes(), 2u);
}

TEST_F(LiveInventoryTest, EventsChangeOnlyTheNodesTheyName) {
  live_.replace_all(
      {gpu_node("a", "535", "12.2"), gpu_node("b", "550", "12.4"), gpu_node("c", "535", "12.2")});
  settle();
  live_.apply({upsert(gpu_node("a", "570", "12.8"))});
  live_.apply({removal("c"), upsert(gpu_node("d", "550", "12.4"))});
  settle();
  ASSERT_EQ(published_.size(), 2u) << "the two batches coalesce into one inventory";
  EXPECT_FALSE(published_[1].from_list);
  EXPECT_EQ(published_[1].events, 3u);
  EXPECT_EQ(published_[1].inventory->size(), 3u);
  EXPECT_EQ(driver_of("a"), "570");
  EXPECT_EQ(driver_of("b"), "550");
  EXPECT_EQ(driver_of("c"), "");
  EXPECT_EQ(driver_of("d"), "550");
  // The inventory before the batch is untouched: a decision holding it
  // sees all of the old fleet.
  const Inventory& before = *published_[0].inventory;
  EXPECT_EQ(before.size(), 3u);
  EXPECT_EQ(*before.node_label(0, "nvidia.com/cuda.driver.major"), "535");
}

TEST_F(LiveInventoryTest, TheLastEventOfANodeWins) {
  live_.replace_all({gpu_node("a", "535", "12.2")});
  live_.apply(
      {upsert(gpu_node("a", "550", "12.4")), removal("a"), upsert(gpu_node("a", "570", "12.8"))});
  settle();
  ASSERT_FALSE(published_.empty());
  EXPECT_EQ(published_.back().inventory->size(), 1u);
  EXPECT_EQ(driver_of("a"), "570");
}

TEST_F(LiveInventoryTest, ARelistSupersedesEventsQueuedBeforeIt) {
  live_.replace_all({gpu_node("a", "535", "12.2")});
  settle();
  live_.apply({upsert(gpu_node("stale", "535", "12.2"))});
  live_.replace_all({gpu_node("b", "550", "12.4")});
  settle();
  EXPECT_TRUE(published_.back().from_list);
  EXPECT_EQ(published_.back().inventory->size(), 1u);
  EXPECT_EQ(driver_of("b"), "550");
  EXPECT_EQ(driver_of("stale"), "");
}

TEST_F(LiveInventoryTest, EventsThatChangeNothingADecisionReadsPublishNothing) {
  live_.replace_all({gpu_node("a", "535", "12.2"), gpu_node("b", "550", "12.4")});
  settle();
  // A status update (the Node as decisions see it is the same), the
  // removal of a node never seen, and a relabel undone within the batch.
  live_.apply({upsert(gpu_node("a", "535", "12.2")), removal("never-listed"),
               upsert(gpu_node("b", "570", "12.8")), upsert(gpu_node("b", "550", "12.4"))});
  settle();
  EXPECT_EQ(published_.size(), 1u);
  live_.apply({upsert(gpu_node("a", "535", "12.2")), upsert(gpu_node("b", "570", "12.8"))});
  settle();
  ASSERT_EQ(published_.size(), 2u);
  EXPECT_EQ(driver_of("b"), "570");
}

TEST(RelevantChanges, KeepsEveryChangeOfANodeWhoseLastChangeDiffers) {
  const Inventory current = Inventory::build(
      {gpu_node("a", "535", "12.2"), gpu_node("b", "550", "12.4")}, test_support::db());
  Node cordoned = gpu_node("a", "535", "12.2");
  cordoned.unschedulable = true;
  const auto kept =
      relevant_changes({upsert(gpu_node("b", "550", "12.4")), removal("a"), upsert(cordoned),
                        removal("c"), upsert(gpu_node("d", "550", "12.4"))},
                       current);
  std::vector<std::string> names;
  for (const auto& change : kept) names.push_back(change.name);
  EXPECT_EQ(names, (std::vector<std::string>{"a", "a", "d"}));
}

TEST_F(LiveInventoryTest, NothingIsPublishedAfterStop) {
  live_.replace_all({gpu_node("a", "535", "12.2")});
  settle();
  live_.stop();
  live_.apply({removal("a")});
  settle();
  EXPECT_EQ(published_.size(), 1u);
}

}  // namespace
}  // namespace cudagate

namespace cudagate {
namespace {

// A ResourceSlice of NVIDIA's driver on `node`: `count` GPUs whose driver
// supports CUDA `cuda`, in pool generation `generation`.
ResourceSlice gpu_slice(const std::string& node, const std::string& cuda,
                        std::int64_t generation = 1, int count = 2) {
  ResourceSlice slice;
  slice.name = node + "-gpu.nvidia.com-x1";
  slice.node_name = node;
  slice.driver = "gpu.nvidia.com";
  slice.pool = node;
  slice.pool_generation = generation;
  for (int i = 0; i < count; ++i) {
    slice.devices.push_back(
        {"gpu-" + std::to_string(i),
         {{"gpu.nvidia.com/cudaDriverVersion", DeviceAttribute::Type::version, cuda},
          {"gpu.nvidia.com/productName", DeviceAttribute::Type::string, "NVIDIA L4"},
          {"gpu.nvidia.com/type", DeviceAttribute::Type::string, "gpu"},
          {"gpu.nvidia.com/uuid", DeviceAttribute::Type::string, node + std::to_string(i)}}});
  }
  return slice;
}

Node plain_node(const std::string& name) {
  Node node;
  node.name = name;
  node.labels = {{"kubernetes.io/hostname", name}};
  return node;
}

// The CUDA of node `name`'s device kinds in `inv`, "" when it has none.
std::string device_cuda(const Inventory& inv, const std::string& name) {
  const auto index = inv.index_of(name);
  if (!index) return "absent";
  const Node node = inv.node(*index);
  if (node.devices.empty()) return "";
  const DeviceAttribute* cuda = node.devices[0].attribute("gpu.nvidia.com/cudaDriverVersion");
  return cuda != nullptr ? cuda->value : "?";
}

class LiveSlicesTest : public LiveInventoryTest {};

TEST_F(LiveSlicesTest, SlicesPatchTheirNodesAndNodeEventsKeepTheDevices) {
  live_.replace_all({plain_node("a"), plain_node("b")});
  live_.add_slice_page({gpu_slice("a", "12.2.0")}, true, true);
  settle();
  ASSERT_FALSE(published_.empty());
  EXPECT_TRUE(published_.back().slices_from_list);
  EXPECT_EQ(device_cuda(*published_.back().inventory, "a"), "12.2.0");
  EXPECT_EQ(device_cuda(*published_.back().inventory, "b"), "");

  // A driver rollout: the slice's pool in a new generation.
  live_.apply_slices(
      {{kube::SliceChange::Kind::upsert, "", "a-gpu.nvidia.com-x1", gpu_slice("a", "12.4.0", 2)}});
  settle();
  EXPECT_EQ(device_cuda(*published_.back().inventory, "a"), "12.4.0");

  // A Node event (a new label) keeps the node's devices.
  Node relabelled = plain_node("a");
  relabelled.labels.insert(relabelled.labels.begin(), {"example.com/rack", "r7"});  // sorted
  live_.apply({upsert(relabelled)});
  settle();
  EXPECT_EQ(device_cuda(*published_.back().inventory, "a"), "12.4.0");
  const Inventory& now = *published_.back().inventory;
  const Node read = now.node(*now.index_of("a"));
  EXPECT_NE(read.label("example.com/rack"), nullptr);

  // The slice deleted: no devices.
  live_.apply_slices({{kube::SliceChange::Kind::remove, "", "a-gpu.nvidia.com-x1", std::nullopt}});
  settle();
  EXPECT_EQ(device_cuda(*published_.back().inventory, "a"), "");
}

TEST_F(LiveSlicesTest, ANodeListAttachesTheSlicesKnown) {
  live_.add_slice_page({gpu_slice("a", "12.8.0")}, true, true);
  settle();
  live_.replace_all({plain_node("a"), plain_node("b")});
  settle();
  EXPECT_TRUE(published_.back().from_list);
  EXPECT_EQ(device_cuda(*published_.back().inventory, "a"), "12.8.0");
  // A slice relist without the node's slice takes its devices away.
  live_.add_slice_page({gpu_slice("b", "12.2.0")}, true, true);
  settle();
  EXPECT_EQ(device_cuda(*published_.back().inventory, "a"), "");
  EXPECT_EQ(device_cuda(*published_.back().inventory, "b"), "12.2.0");
}

TEST(SliceChanges, OtherDriversAndUnreadableSlicesAreRemovals) {
  const auto slice = [](const std::string& driver, const std::string& node) {
    ResourceSlice out = gpu_slice("a", "12.2.0");
    out.name = "s";
    out.driver = driver;
    out.node_name = node;
    return out;
  };
  using Kind = kube::SliceChange::Kind;
  // An unreadable slice reaches the inventory as no object (kube/object_watcher.h).
  auto changes =
      nvidia_slice_changes({{Kind::upsert, "", "s", slice("gpu.nvidia.com", "a")},
                            {Kind::upsert, "", "s", slice("compute-domain.nvidia.com", "a")},
                            {Kind::upsert, "", "s", std::nullopt},
                            {Kind::upsert, "", "s", slice("gpu.nvidia.com", "")},
                            {Kind::remove, "", "s", std::nullopt}});
  ASSERT_EQ(changes.size(), 5u);
  ASSERT_TRUE(changes[0].object.has_value());
  EXPECT_EQ(changes[0].object->node_name, "a");
  for (std::size_t i = 1; i < changes.size(); ++i) {
    EXPECT_FALSE(changes[i].object.has_value()) << i;
    EXPECT_EQ(changes[i].name, "s") << i;
  }

  const auto kept = nvidia_slices({slice("compute-domain.nvidia.com", "a"),
                                   slice("gpu.nvidia.com", "b"), slice("gpu.nvidia.com", "")});
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].node_name, "b");
}

// Another driver's slice, in a list or an event, gives its node no devices.
TEST_F(LiveSlicesTest, OnlyNvidiasSlicesOnANodeAreNodeFacts) {
  ResourceSlice domain = gpu_slice("b", "12.8.0");
  domain.name = "b-compute-domain";
  domain.driver = "compute-domain.nvidia.com";
  live_.replace_all({plain_node("a"), plain_node("b")});
  live_.add_slice_page({gpu_slice("a", "12.2.0"), domain}, true, true);
  settle();
  EXPECT_EQ(device_cuda(*published_.back().inventory, "a"), "12.2.0");
  EXPECT_EQ(device_cuda(*published_.back().inventory, "b"), "");

  // An NVIDIA slice that becomes another driver's is gone from its node.
  ResourceSlice moved = gpu_slice("a", "12.2.0");
  moved.driver = "compute-domain.nvidia.com";
  live_.apply_slices({{kube::SliceChange::Kind::upsert, "", moved.name, moved}});
  settle();
  EXPECT_EQ(device_cuda(*published_.back().inventory, "a"), "");
}

}  // namespace
}  // namespace cudagate

// Karpenter NodePool lists and watch events folded into the cluster's
// pools: a list replaces every pool, events change the pools they name,
// and a NodePool that cannot be read is left out with its earlier form.
#include "server/live_pools.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kube/watched_objects.h"
#include "tests/support/karpenter_pool.h"

namespace cudagate {
namespace {

using nlohmann::json;

// A NodePool read as the watcher reads it.
NodePool read_pool(const json& object) {
  const std::string name = object["metadata"]["name"];
  auto pool = kube::read_watched<NodePool>(object, name);
  if (!pool) throw std::runtime_error(pool.error().str());
  return std::move(**pool);
}

NodePool node_pool(const std::string& name, const std::string& gpu) {
  return read_pool(test_support::karpenter_pool_json(name, gpu));
}

using PoolChange = kube::NodePoolChange;

class LivePoolsTest : public ::testing::Test {
 protected:
  LivePoolsTest()
      : live_(ioc_.get_executor(), [this](std::vector<NodePool> pools, bool listed) {
          published_.emplace_back(std::move(pools), listed);
        }) {}

  void settle() {
    ioc_.restart();
    ioc_.run_for(std::chrono::seconds(10));
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const NodePool& pool : published_.back().first) out.push_back(pool.name);
    return out;
  }

  boost::asio::io_context ioc_;
  std::vector<std::pair<std::vector<NodePool>, bool>> published_;
  LivePools live_;
};

TEST_F(LivePoolsTest, ListsThenEvents) {
  live_.add_page({node_pool("gpu-t4", "t4")}, true, false);
  settle();
  EXPECT_TRUE(published_.empty());  // a list publishes once whole
  live_.add_page({node_pool("gpu-h100", "h100")}, false, true);
  settle();
  ASSERT_EQ(published_.size(), 1U);
  EXPECT_TRUE(published_.back().second);
  EXPECT_EQ(names(), (std::vector<std::string>{"gpu-h100", "gpu-t4"}));
  EXPECT_EQ(published_.back().first.front().driver, "570.124.06");

  json changed = test_support::karpenter_pool_json("gpu-t4", "t4");
  changed["metadata"]["annotations"]["cudagate.io/driver-version"] = "580.65.06";
  live_.apply({{PoolChange::Kind::upsert, "", "gpu-t4", read_pool(changed)},
               {PoolChange::Kind::remove, "", "gpu-h100", std::nullopt},
               {PoolChange::Kind::upsert, "", "gpu-l4", node_pool("gpu-l4", "l4")}});
  settle();
  ASSERT_EQ(published_.size(), 2U);
  EXPECT_FALSE(published_.back().second);
  EXPECT_EQ(names(), (std::vector<std::string>{"gpu-l4", "gpu-t4"}));
  EXPECT_EQ(published_.back().first.back().driver, "580.65.06");

  // Karpenter writing the pool's status changes nothing cudagate reads.
  json status = changed;
  status["status"] = {{"resources", {{"nodes", "3"}}}};
  live_.apply({{PoolChange::Kind::upsert, "", "gpu-t4", read_pool(status)},
               {PoolChange::Kind::remove, "", "gpu-gone", std::nullopt}});
  settle();
  EXPECT_EQ(published_.size(), 2U);

  // A relist replaces every pool, whatever the events said before.
  live_.add_page({node_pool("gpu-a100", "a100")}, true, true);
  settle();
  EXPECT_EQ(names(), (std::vector<std::string>{"gpu-a100"}));
}

// The watcher leaves an unreadable NodePool out of its page, and hands on
// an edit it cannot read as a change with no object.
TEST_F(LivePoolsTest, UnreadableNodePoolsAreLeftOutWithTheirEarlierForm) {
  kube::ObjectWatcherHandlers<NodePool> handlers;
  handlers.on_page = [this](std::vector<NodePool> pools, bool first, bool last) {
    live_.add_page(std::move(pools), first, last);
  };
  handlers.on_changes = [this](std::vector<PoolChange> changes) {
    live_.apply(std::move(changes));
  };
  kube::ObjectCollection<NodePool> collection(handlers, kube::ApiCallId::inventory_list_nodepools,
                                              kube::ApiCallId::inventory_watch_nodepools,
                                              kube::kKarpenterVersions);
  const auto list = [&collection](const json& items) {
    ASSERT_TRUE(collection.read_page(json{
        {"kind", "NodePoolList"},
        {"metadata", {{"resourceVersion", "1"}}},
        {"items", items}}.dump()));
    collection.deliver_page(true, true);
  };

  json broken = test_support::karpenter_pool_json("gpu-t4", "t4");
  broken["spec"]["template"]["spec"]["requirements"] = "not a list";
  list(json::array({test_support::karpenter_pool_json("gpu-t4", "t4"),
                    test_support::karpenter_pool_json("gpu-l4", "l4")}));
  settle();
  EXPECT_EQ(names(), (std::vector<std::string>{"gpu-l4", "gpu-t4"}));
  // An edit cudagate cannot read: the pool is no longer judged as it was.
  ASSERT_TRUE(collection.read_event(json{{"type", "MODIFIED"}, {"object", broken}}.dump()));
  collection.flush_events();
  settle();
  EXPECT_EQ(names(), (std::vector<std::string>{"gpu-l4"}));
  list(json::array({broken, test_support::karpenter_pool_json("gpu-l4", "l4")}));
  settle();
  EXPECT_EQ(names(), (std::vector<std::string>{"gpu-l4"}));
}

}  // namespace
}  // namespace cudagate

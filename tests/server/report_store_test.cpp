// The latest decision per workload: replaced when judged again, least recently judged dropped
// first, filtered by namespace, and node names that outlive the inventory they came from.
#include "server/report_store.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace cudagate {
namespace {

Decision decision(const std::string& ns, const std::string& name, Verdict verdict) {
  Decision d;
  d.resource = ResourceRef{"v1", "Pod", ns, name};
  d.verdict = verdict;
  return d;
}

std::vector<std::string> names(const std::vector<Decision>& decisions) {
  std::vector<std::string> out;
  for (const auto& d : decisions) {
    out.push_back(d.resource.namespace_ + "/" + d.resource.name + ":" +
                  std::string(to_string(d.verdict)));
  }
  return out;
}

TEST(ReportStore, KeepsTheLatestDecisionPerWorkload) {
  ReportStore store(10);
  store.record(decision("ml", "a", Verdict::fail));
  store.record(decision("ml", "b", Verdict::pass));
  store.record(decision("ml", "a", Verdict::pass));
  store.record(decision("web", "a", Verdict::skip));
  EXPECT_EQ(store.size(), 3U);
  EXPECT_EQ(names(store.latest()),
            (std::vector<std::string>{"ml/a:pass", "ml/b:pass", "web/a:skip"}));
  EXPECT_EQ(names(store.latest("web")), (std::vector<std::string>{"web/a:skip"}));
  EXPECT_TRUE(store.latest("none").empty());
}

TEST(ReportStore, ForgetsAWorkloadThatWentAway) {
  ReportStore store(2);
  store.record(decision("ml", "a", Verdict::fail));
  store.record(decision("ml", "b", Verdict::pass));
  store.forget(ResourceRef{"v1", "Pod", "ml", "a"});
  store.forget(ResourceRef{"v1", "Pod", "ml", "gone"});           // never kept: nothing happens
  store.forget(ResourceRef{"apps/v1", "Deployment", "ml", "b"});  // another kind
  EXPECT_EQ(names(store.latest()), (std::vector<std::string>{"ml/b:pass"}));
  // The room is free again: both fit.
  store.record(decision("ml", "c", Verdict::pass));
  EXPECT_EQ(names(store.latest()), (std::vector<std::string>{"ml/b:pass", "ml/c:pass"}));
}

TEST(ReportStore, DropsTheLeastRecentlyJudgedWhenFull) {
  ReportStore store(2);
  store.record(decision("ml", "a", Verdict::pass));
  store.record(decision("ml", "b", Verdict::pass));
  store.record(decision("ml", "a", Verdict::fail));  // a is now the most recent
  store.record(decision("ml", "c", Verdict::pass));  // b goes
  EXPECT_EQ(names(store.latest()), (std::vector<std::string>{"ml/a:fail", "ml/c:pass"}));
  EXPECT_EQ(store.size(), 2U);
}

TEST(ReportStore, UnnamedPodsAreNotKept) {
  ReportStore store;
  store.record(decision("ml", "", Verdict::pass));
  EXPECT_EQ(store.size(), 0U);
}

// A decision whose node names view `names` (an inventory's strings).
Decision viewing(const std::string& name, std::shared_ptr<std::vector<std::string>> names) {
  Decision d = decision("ml", name, Verdict::fail);
  GroupDecision g;
  g.count = names->size();
  for (const auto& s : *names) g.nodes.push_back(s);
  d.groups.push_back(g);
  d.node_name_storage = std::move(names);
  return d;
}

TEST(ReportStore, HoldsOnlyTheInventoryInUse) {
  ReportStore store;
  std::weak_ptr<std::vector<std::string>> first_inventory;
  {
    auto first = std::make_shared<std::vector<std::string>>(
        std::vector<std::string>{"gpu-node-with-a-long-name-1", "gpu-node-with-a-long-name-2"});
    first_inventory = first;
    store.record(viewing("a", first));
  }
  // Kept as made: the names still view the first inventory, which it holds.
  EXPECT_FALSE(first_inventory.expired());
  auto second = std::make_shared<std::vector<std::string>>(
      std::vector<std::string>{"gpu-node-of-the-second-inventory"});
  store.record(viewing("b", second));
  // A decision of another inventory came: the first one is let go, and the
  // decision made against it keeps its own copies of the names.
  EXPECT_TRUE(first_inventory.expired());
  const auto kept = store.latest();
  ASSERT_EQ(kept.size(), 2U);
  EXPECT_EQ(kept[0].groups[0].nodes, (std::vector<std::string>{"gpu-node-with-a-long-name-1",
                                                               "gpu-node-with-a-long-name-2"}));
  EXPECT_EQ(kept[0].node_name_storage, nullptr);
  EXPECT_EQ(kept[1].groups[0].nodes,
            (std::vector<std::string>{"gpu-node-of-the-second-inventory"}));
  EXPECT_NE(kept[1].node_name_storage, nullptr);
}

TEST(ReportStore, ConcurrentRecordsStayBounded) {
  ReportStore store(50);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&store, t] {
      for (int i = 0; i < 500; ++i) {
        store.record(decision("ns" + std::to_string(t), "p" + std::to_string(i), Verdict::pass));
        if (i % 50 == 0) (void)store.latest();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(store.size(), 50U);
  EXPECT_EQ(store.latest().size(), 50U);
}

}  // namespace
}  // namespace cudagate

// ServerState: a swap keeps the other parts and leaves old snapshots valid, readiness, and
// concurrent readers that always see whole snapshots.
#include "server/state.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace cudagate {
namespace {

TEST(ServerState, SwapsKeepOtherPartsAndOldSnapshotsStayValid) {
  auto db = std::make_shared<const CompatDb>();
  auto policy = std::make_shared<const Policy>();
  auto inventory = std::make_shared<const Inventory>();
  ServerState state(db, policy, inventory);

  const auto before = state.snapshot();
  Policy warn;
  warn.mode = Mode::warn;
  state.set_policy(std::make_shared<const Policy>(warn));
  const auto after_policy = state.snapshot();
  EXPECT_EQ(before->policy->mode, Mode::enforce);  // a reader's snapshot never changes
  EXPECT_EQ(after_policy->policy->mode, Mode::warn);
  EXPECT_EQ(after_policy->db, db);
  EXPECT_EQ(after_policy->inventory, inventory);

  auto other = std::make_shared<const Inventory>();
  state.set_inventory(other);
  const auto after_inventory = state.snapshot();
  EXPECT_EQ(after_inventory->inventory, other);
  EXPECT_EQ(after_inventory->policy->mode, Mode::warn);
  EXPECT_EQ(before->inventory, inventory);
}

TEST(ServerState, Readiness) {
  struct Row {
    bool certificate;
    bool inventory;
    bool shutdown;
    bool ready;
  };
  const Row rows[] = {
      {false, false, false, false}, {true, false, false, false}, {false, true, false, false},
      {true, true, false, true},    {true, true, true, false},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(::testing::Message() << row.certificate << row.inventory << row.shutdown);
    ServerState state(std::make_shared<const CompatDb>(), std::make_shared<const Policy>(),
                      std::make_shared<const Inventory>());
    if (row.certificate) state.set_certificate_loaded();
    if (row.inventory) state.set_inventory_synced();
    if (row.shutdown) state.begin_shutdown();
    EXPECT_EQ(state.ready(), row.ready);
    EXPECT_EQ(state.shutting_down(), row.shutdown);
  }
}

TEST(ServerState, ConcurrentReadersSeeWholeSnapshots) {
  ServerState state(std::make_shared<const CompatDb>(), std::make_shared<const Policy>(),
                    std::make_shared<const Inventory>());
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 4; ++i) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        const auto snapshot = state.snapshot();
        if (!snapshot->db || !snapshot->policy || !snapshot->inventory) ++torn;
      }
    });
  }
  for (int i = 0; i < 2000; ++i) {
    Policy policy;
    policy.mode = i % 2 == 0 ? Mode::warn : Mode::dryrun;
    state.set_policy(std::make_shared<const Policy>(policy));
    state.set_inventory(std::make_shared<const Inventory>());
  }
  stop.store(true);
  for (auto& reader : readers) reader.join();
  EXPECT_EQ(torn.load(), 0);
}

}  // namespace
}  // namespace cudagate

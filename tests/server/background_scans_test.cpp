// The server's own scans, driven through ScanSource as the registry client
// drives them. The scan of one image is a double here (ScanImage): what is
// tested is the queue, the thread, the bounds and the hand-over of facts,
// which a real pull would make slow and not deterministic; the real pull is
// tested in tests/cluster/scans_test.py.
#include "server/background_scans.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cudagate {
namespace {

const std::string kScansDigest = "sha256:" + std::string(64, 'b');

// Scans as the test scripts them; each call recorded.
struct ScriptedScans {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> asked;  // references
  bool over_budget = false;
  bool wait_for_stop = false;

  BackgroundScans::ScanImage function() {
    return [this](const RegistrySettings&, const ScanQueue::Job& job, std::uint64_t max_bytes,
                  const std::atomic<bool>& stop) {
      BackgroundScans::Outcome out;
      {
        const std::lock_guard lock(mutex);
        asked.push_back(job.reference);
      }
      changed.notify_all();
      if (wait_for_stop) {
        // The flag has no notifier of its own: looked at as a pull does,
        // between chunks.
        std::unique_lock lock(mutex);
        while (!stop.load()) changed.wait_for(lock, std::chrono::milliseconds(5));
        out.facts = Error{"", "stopped by its reader"};
        return out;
      }
      if (over_budget) {
        out.bytes = max_bytes + 1;
        out.over_budget = true;
        out.facts = Error{"", "stopped by its reader"};
        return out;
      }
      ScanFacts facts;
      facts.digest = job.digest;
      out.facts = std::move(facts);
      out.bytes = 100;
      return out;
    };
  }

  // Waits (bounded) until `count` scans were asked for.
  bool asked_for(std::size_t count) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(30), [&] { return asked.size() >= count; });
  }
};

struct BackgroundScansFixture {
  boost::asio::io_context ioc;
  WebhookMetrics metrics{"1.2.3", "abc"};
  RegistryClient registry{ioc, nullptr};
  ScriptedScans script;
  BackgroundScans scans{registry, metrics, script.function()};

  explicit BackgroundScansFixture(bool background = true) {
    ScanSettings settings;
    settings.background = background;
    settings.max_image_bytes = 1000;
    scans.configure(settings, RegistrySettings{});
  }

  // Polls the scans' outcome, as a later lookup would ask for it.
  std::shared_ptr<const ScanFacts> wait_scanned(const std::string& digest) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      if (auto facts = scans.scanned(digest)) return facts;
      std::unique_lock lock(script.mutex);
      script.changed.wait_for(lock, std::chrono::milliseconds(10));
    }
    return nullptr;
  }
};

TEST(BackgroundScans, AnImageWithoutAScanIsScannedOnceAndKept) {
  BackgroundScansFixture f;
  f.scans.start();
  f.scans.unscanned("registry.example.com/ml/train", kScansDigest, "linux/amd64");
  f.scans.unscanned("registry.example.com/ml/train", kScansDigest, "linux/amd64");
  const auto facts = f.wait_scanned(kScansDigest);
  ASSERT_NE(facts, nullptr);
  EXPECT_EQ(facts->digest, kScansDigest);
  f.scans.unscanned("registry.example.com/ml/train", kScansDigest, "linux/amd64");
  f.scans.stop();
  EXPECT_EQ(f.script.asked,
            std::vector<std::string>{"registry.example.com/ml/train@" + kScansDigest});
  const std::string text = f.metrics.render();
  EXPECT_NE(text.find("cudagate_image_scans_total{result=\"scanned\"} 1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("cudagate_image_scan_bytes_total 100\n"), std::string::npos) << text;
}

TEST(BackgroundScans, OverItsBudgetAScanKeepsNothing) {
  BackgroundScansFixture f;
  f.script.over_budget = true;
  f.scans.start();
  f.scans.unscanned("registry.example.com/ml/big", kScansDigest, "linux/amd64");
  ASSERT_TRUE(f.script.asked_for(1));
  f.scans.stop();
  EXPECT_EQ(f.scans.scanned(kScansDigest), nullptr);
  EXPECT_NE(f.metrics.render().find("cudagate_image_scans_total{result=\"over_budget\"} 1\n"),
            std::string::npos);
}

TEST(BackgroundScans, OffQueuesNothing) {
  BackgroundScansFixture f(/*background=*/false);
  f.scans.start();
  f.scans.unscanned("registry.example.com/ml/train", kScansDigest, "linux/amd64");
  f.scans.stop();
  EXPECT_TRUE(f.script.asked.empty());
}

TEST(BackgroundScans, StopEndsAScanInProgress) {
  BackgroundScansFixture f;
  f.script.wait_for_stop = true;
  f.scans.start();
  f.scans.unscanned("registry.example.com/ml/train", kScansDigest, "linux/amd64");
  ASSERT_TRUE(f.script.asked_for(1));
  // The scan runs until it sees the stop flag; stop() sets it and joins.
  f.scans.stop();
  EXPECT_EQ(f.scans.scanned(kScansDigest), nullptr);
}

}  // namespace
}  // namespace cudagate

// The server's own scans: one job a digest, the hour's byte budget, failures
// held back, facts kept by digest within the bound.
#include "server/scan_queue.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

namespace cudagate {
namespace {

using std::chrono::minutes;

ScanQueue::Job queue_job(const std::string& n) {
  const std::string digest = "sha256:" + std::string(64 - n.size(), '0') + n;
  return ScanQueue::Job{"registry.example.com/ml/train@" + digest, digest, "linux/amd64"};
}

std::shared_ptr<const ScanFacts> queue_facts(const std::string& digest) {
  auto facts = std::make_shared<ScanFacts>();
  facts->digest = digest;
  return facts;
}

const ScanQueue::Clock::time_point kQueueStart{std::chrono::hours(100)};

TEST(ScanQueue, OneJobADigestInTheOrderWanted) {
  ScanQueue q;
  EXPECT_TRUE(q.want(queue_job("1"), kQueueStart));
  EXPECT_FALSE(q.want(queue_job("1"), kQueueStart));  // already waiting
  EXPECT_TRUE(q.want(queue_job("2"), kQueueStart));
  EXPECT_EQ(q.pending(), 2U);
  const auto first = q.next(kQueueStart);
  ASSERT_TRUE(first);
  EXPECT_EQ(*first, queue_job("1"));
  EXPECT_FALSE(q.want(queue_job("1"), kQueueStart));  // being scanned
  EXPECT_FALSE(q.next(kQueueStart));                  // one at a time
  q.finish(first->digest, queue_facts(first->digest), 10, kQueueStart);
  EXPECT_FALSE(q.want(queue_job("1"), kQueueStart));  // scanned
  ASSERT_NE(q.find(first->digest), nullptr);
  EXPECT_EQ(q.find(first->digest)->digest, first->digest);
  const auto second = q.next(kQueueStart);
  ASSERT_TRUE(second);
  EXPECT_EQ(*second, queue_job("2"));
}

TEST(ScanQueue, AFailureIsNotTriedAgainForAWhile) {
  ScanQueue q;
  ASSERT_TRUE(q.want(queue_job("1"), kQueueStart));
  const auto job = q.next(kQueueStart);
  q.finish(job->digest, nullptr, 0, kQueueStart);
  EXPECT_EQ(q.find(job->digest), nullptr);
  EXPECT_FALSE(q.want(queue_job("1"), kQueueStart + minutes(29)));
  EXPECT_TRUE(q.want(queue_job("1"), kQueueStart + ScanQueue::kRetryAfter));
}

TEST(ScanQueue, TheHoursBudgetHoldsJobsBack) {
  ScanQueue q(ScanQueue::Limits{16, 16, 1000});
  ASSERT_TRUE(q.want(queue_job("1"), kQueueStart));
  ASSERT_TRUE(q.want(queue_job("2"), kQueueStart));
  const auto first = q.next(kQueueStart);
  EXPECT_FALSE(q.budget_frees_at(kQueueStart));
  q.finish(first->digest, queue_facts(first->digest), 1000, kQueueStart + minutes(5));
  EXPECT_FALSE(q.next(kQueueStart + minutes(10)));
  const auto frees = q.budget_frees_at(kQueueStart + minutes(10));
  ASSERT_TRUE(frees);
  EXPECT_EQ(*frees, kQueueStart + minutes(65));
  EXPECT_FALSE(q.next(kQueueStart + minutes(64)));
  EXPECT_TRUE(q.next(kQueueStart + minutes(65)));
}

TEST(ScanQueue, BoundsOnWaitingJobsAndFacts) {
  ScanQueue waiting(ScanQueue::Limits{2, 2, 1U << 30});
  EXPECT_TRUE(waiting.want(queue_job("1"), kQueueStart));
  EXPECT_TRUE(waiting.want(queue_job("2"), kQueueStart));
  EXPECT_FALSE(waiting.want(queue_job("3"), kQueueStart));
  EXPECT_EQ(waiting.dropped(), 1U);

  ScanQueue kept(ScanQueue::Limits{2, 2, 1U << 30});
  for (const char* n : {"a", "b", "c"}) {
    ASSERT_TRUE(kept.want(queue_job(n), kQueueStart));
    const auto job = kept.next(kQueueStart);
    ASSERT_TRUE(job);
    kept.finish(job->digest, queue_facts(job->digest), 1, kQueueStart);
  }
  // Only the last two scanned are kept.
  EXPECT_EQ(kept.find(queue_job("a").digest), nullptr);
  EXPECT_NE(kept.find(queue_job("b").digest), nullptr);
  EXPECT_NE(kept.find(queue_job("c").digest), nullptr);
}

}  // namespace
}  // namespace cudagate

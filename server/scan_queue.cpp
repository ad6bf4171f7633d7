// The server's own scans: waiting images, facts found, the hour's budget.
#include "server/scan_queue.h"

#include <algorithm>
#include <utility>

namespace cudagate {
namespace {

constexpr std::chrono::hours kWindow{1};

}  // namespace

ScanQueue::ScanQueue() : ScanQueue(Limits{}) {}

ScanQueue::ScanQueue(Limits limits) : limits_(limits) {}

void ScanQueue::configure(Limits limits) {
  const std::lock_guard lock(mutex_);
  limits_ = limits;
  while (pending_.size() > limits_.max_pending) {
    pending_.pop_back();
    ++dropped_;
  }
  while (results_.size() > std::max<std::size_t>(limits_.max_results, 1)) {
    results_.erase(lru_.back());
    lru_.pop_back();
  }
}

bool ScanQueue::want(Job job, Clock::time_point now) {
  const std::lock_guard lock(mutex_);
  if (results_.contains(job.digest) || running_ == job.digest) return false;
  if (std::any_of(pending_.begin(), pending_.end(),
                  [&](const Job& j) { return j.digest == job.digest; })) {
    return false;
  }
  if (const auto it = failed_.find(job.digest); it != failed_.end()) {
    if (now - it->second < kRetryAfter) return false;
    failed_.erase(it);
  }
  if (pending_.size() >= limits_.max_pending) {
    ++dropped_;
    return false;
  }
  pending_.push_back(std::move(job));
  return true;
}

std::optional<ScanQueue::Job> ScanQueue::next(Clock::time_point now) {
  const std::lock_guard lock(mutex_);
  if (pending_.empty() || !running_.empty() || spent(now) >= limits_.bytes_per_hour) {
    return std::nullopt;
  }
  Job job = std::move(pending_.front());
  pending_.pop_front();
  running_ = job.digest;
  return job;
}

void ScanQueue::finish(const std::string& digest, std::shared_ptr<const ScanFacts> facts,
                       std::uint64_t bytes, Clock::time_point now) {
  const std::lock_guard lock(mutex_);
  if (running_ == digest) running_.clear();
  if (bytes > 0) spent_.emplace_back(now, bytes);
  if (facts == nullptr) {
    // Old failures are forgotten as new ones come, so the map stays bounded.
    std::erase_if(failed_, [&](const auto& entry) { return now - entry.second >= kRetryAfter; });
    failed_[digest] = now;
    return;
  }
  if (const auto it = results_.find(digest); it != results_.end()) {
    lru_.erase(it->second.second);
    results_.erase(it);
  }
  lru_.push_front(digest);
  results_.emplace(digest, std::make_pair(std::move(facts), lru_.begin()));
  while (results_.size() > std::max<std::size_t>(limits_.max_results, 1)) {
    results_.erase(lru_.back());
    lru_.pop_back();
  }
}

std::shared_ptr<const ScanFacts> ScanQueue::find(const std::string& digest) {
  const std::lock_guard lock(mutex_);
  const auto it = results_.find(digest);
  if (it == results_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second.second);
  return it->second.first;
}

std::size_t ScanQueue::pending() const {
  const std::lock_guard lock(mutex_);
  return pending_.size();
}

std::uint64_t ScanQueue::dropped() const {
  const std::lock_guard lock(mutex_);
  return dropped_;
}

std::optional<ScanQueue::Clock::time_point> ScanQueue::budget_frees_at(
    Clock::time_point now) const {
  const std::lock_guard lock(mutex_);
  std::uint64_t total = spent(now);
  if (total < limits_.bytes_per_hour) return std::nullopt;
  for (const auto& [when, bytes] : spent_) {
    total -= bytes;
    if (total < limits_.bytes_per_hour) return when + kWindow;
  }
  return now;
}

std::uint64_t ScanQueue::spent(Clock::time_point now) const {
  while (!spent_.empty() && now - spent_.front().first >= kWindow) spent_.pop_front();
  std::uint64_t total = 0;
  for (const auto& entry : spent_) total += entry.second;
  return total;
}

}  // namespace cudagate

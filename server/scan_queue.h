#pragma once
// The images `serve` scans itself (policy scan.background; docs/scan.md,
// "Scans done by the server"): the ones waiting, the facts found, and the
// byte budget of the last hour. Holds values and nothing more: no I/O, no
// threads, no clock of its own (each call is given `now`). Every member
// takes the queue's lock, so the registry client's threads add images and
// the scanning thread takes them.
//
//   want(job, now)   an image whose lookup found no attached scan. Queued,
//                    unless its manifest digest was scanned, is queued or
//                    being scanned, or failed less than kRetryAfter ago;
//                    at most max_pending wait (a job past that is
//                    dropped, and counted).
//   next(now)        the job waiting longest, taken, when the bytes read
//                    in the last hour are below the hour's budget; nullopt
//                    when none waits or the budget is spent (then
//                    budget_frees_at() says when it frees).
//   finish(...)      a job's end: the facts, or none (a failure), and the
//                    bytes it read (counted against the hour).
//   find(digest)     the facts found for a manifest digest, or null. The
//                    last max_results are kept.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "policy/image/scan_facts.h"

namespace cudagate {

class ScanQueue {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::minutes kRetryAfter{30};

  struct Limits {
    std::size_t max_pending = 256;
    std::size_t max_results = 4096;
    std::uint64_t bytes_per_hour = std::uint64_t{64} << 30;
  };

  struct Job {
    std::string reference;  // "host/repo@sha256:...": the image manifest, by digest
    std::string digest;     // that manifest's digest
    std::string platform;   // "linux/amd64"
    friend bool operator==(const Job&, const Job&) = default;
  };

  ScanQueue();
  explicit ScanQueue(Limits limits);
  void configure(Limits limits);

  // Whether the job was queued.
  bool want(Job job, Clock::time_point now);
  [[nodiscard]] std::optional<Job> next(Clock::time_point now);
  // `facts` null: the scan failed, and is not tried again within
  // kRetryAfter.
  void finish(const std::string& digest, std::shared_ptr<const ScanFacts> facts,
              std::uint64_t bytes, Clock::time_point now);
  [[nodiscard]] std::shared_ptr<const ScanFacts> find(const std::string& digest);

  [[nodiscard]] std::size_t pending() const;
  [[nodiscard]] std::uint64_t dropped() const;
  // When enough of the hour's bytes leave the window for next() to give a
  // job; nullopt while the budget is not spent.
  [[nodiscard]] std::optional<Clock::time_point> budget_frees_at(Clock::time_point now) const;

 private:
  [[nodiscard]] std::uint64_t spent(Clock::time_point now) const;  // locked

  mutable std::mutex mutex_;
  Limits limits_;
  std::deque<Job> pending_;
  std::string running_;  // the digest being scanned, "" for none
  // Facts by digest, LRU: the list's front is the most recently used.
  std::list<std::string> lru_;
  std::unordered_map<std::string,
                     std::pair<std::shared_ptr<const ScanFacts>, std::list<std::string>::iterator>>
      results_;
  std::map<std::string, Clock::time_point> failed_;  // digest -> when
  // Bytes read, by when the scan finished, for the hour's window.
  mutable std::deque<std::pair<Clock::time_point, std::uint64_t>> spent_;
  std::uint64_t dropped_ = 0;
};

}  // namespace cudagate

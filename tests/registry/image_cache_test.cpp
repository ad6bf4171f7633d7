// The registry client's cache alone: entries stored and found at given
// times, no registry and no clock.
#include "registry/image_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace cudagate {
namespace {

using namespace std::chrono_literals;
using Result = ImageCache::Answer::Result;

const auto kNow = RegistryClock::time_point{} + std::chrono::hours(1);
constexpr std::chrono::seconds kTtl{600};

std::shared_ptr<const ImageConfig> config_of(std::string digest, std::string cuda = "12.4.1") {
  auto config = std::make_shared<ImageConfig>();
  config->env = {{"CUDA_VERSION", std::move(cuda)}};
  config->digest = std::move(digest);
  return config;
}

// What the metrics read: images, configs.
using Counts = std::pair<std::size_t, std::size_t>;
Counts counts(const ImageCache& cache) {
  return {cache.images(), cache.configs()};
}

// What find() answers of `key` at `now`, and that fresh() agrees: an entry
// needs no lookup when it is known and not to be asked again.
void expect_answer(ImageCache& cache, const std::string& key, ImageCache::TimePoint now,
                   Result result, const std::shared_ptr<const ImageConfig>& config,
                   const std::string& failure, bool ask_again) {
  const bool fresh = cache.fresh(key, now);
  const auto answer = cache.find(key, now);
  EXPECT_EQ(to_string(answer.result), to_string(result));
  EXPECT_EQ(answer.config, config);
  EXPECT_EQ(answer.failure, failure);
  EXPECT_EQ(answer.ask_again, ask_again);
  EXPECT_EQ(fresh, result != Result::miss && !ask_again);
}

TEST(ImageCache, AnEmptyCacheMisses) {
  ImageCache cache(10, kTtl);
  expect_answer(cache, "nvcr.io/nvidia/pytorch:24.03-py3\nlinux/amd64", kNow, Result::miss, nullptr,
                "", false);
  EXPECT_EQ(counts(cache), (Counts{0, 0}));
}

TEST(ImageCache, AConfigNamedByTagIsAHitForItsTtlThenStale) {
  ImageCache cache(10, kTtl);
  const auto config = config_of("sha256:aaa");
  cache.found("cuda:12.4\nlinux/amd64", config, false, kNow);
  struct Row {
    std::chrono::seconds after;
    Result result;
  };
  for (const Row& row : {Row{0s, Result::hit}, Row{599s, Result::hit}, Row{600s, Result::stale},
                         Row{86400s, Result::stale}}) {
    SCOPED_TRACE(row.after.count());
    // A stale config is still answered, and asked again.
    expect_answer(cache, "cuda:12.4\nlinux/amd64", kNow + row.after, row.result, config, "",
                  row.result == Result::stale);
  }
  // Another platform of the same image is another entry.
  expect_answer(cache, "cuda:12.4\nlinux/arm64", kNow, Result::miss, nullptr, "", false);
}

std::shared_ptr<const ImageConfig> scanned_config_of(std::string digest) {
  auto config = std::make_shared<ImageConfig>(*config_of(std::move(digest)));
  auto scan = std::make_shared<ScanFacts>();
  scan->digest = "sha256:bbb";
  config->scan = std::move(scan);
  return config;
}

TEST(ImageCache, AConfigNamedByDigestWithItsScanIsAHitForGood) {
  ImageCache cache(10, kTtl);
  const auto config = scanned_config_of("sha256:ccc");
  cache.found("cuda@sha256:bbb\nlinux/amd64", config, true, kNow);
  expect_answer(cache, "cuda@sha256:bbb\nlinux/amd64", kNow + std::chrono::hours(24 * 365),
                Result::hit, config, "", false);
}

TEST(ImageCache, AConfigNamedByDigestWithoutAScanIsAskedAgainAfterItsTtl) {
  struct Row {
    const char* name;
    std::shared_ptr<const ImageConfig> config;
    bool scans_looked_for;
    bool for_good;
  };
  // A scan may be attached to the manifest later: without one the entry
  // is asked again like a tag's, unless no scan is looked for at all.
  const std::vector<Row> rows = {
      {"with its scan", scanned_config_of("sha256:ccc"), true, true},
      {"without a scan", config_of("sha256:ccc"), true, false},
      {"no scan looked for", config_of("sha256:ccc"), false, true},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    ImageCache cache(10, kTtl);
    cache.found("cuda@sha256:bbb\nlinux/amd64", row.config, true, kNow, row.scans_looked_for);
    expect_answer(cache, "cuda@sha256:bbb\nlinux/amd64", kNow + kTtl - 1s, Result::hit, row.config,
                  "", false);
    const Result later = row.for_good ? Result::hit : Result::stale;
    expect_answer(cache, "cuda@sha256:bbb\nlinux/amd64", kNow + kTtl, later, row.config, "",
                  !row.for_good);
    // The stale config is still answered; the lookup that finds the scan
    // attached since stores it for good.
    if (!row.for_good) {
      const auto scanned = scanned_config_of("sha256:ccc");
      cache.found("cuda@sha256:bbb\nlinux/amd64", scanned, true, kNow + kTtl);
      expect_answer(cache, "cuda@sha256:bbb\nlinux/amd64", kNow + std::chrono::hours(24 * 365),
                    Result::hit, scanned, "", false);
    }
  }
  // A tag's config stays for its ttl, scan or none.
  ImageCache cache(10, kTtl);
  const auto scanned = scanned_config_of("sha256:ccc");
  cache.found("cuda:12.4\nlinux/amd64", scanned, false, kNow);
  expect_answer(cache, "cuda:12.4\nlinux/amd64", kNow + kTtl, Result::stale, scanned, "", true);
}

TEST(ImageCache, AFailureIsRememberedForItsTimeThenAskedAgainAndStillAnswered) {
  struct Row {
    std::chrono::seconds at_least;
    std::chrono::seconds remembered;
  };
  // kFailureTtl at least; longer when the failure asks (a 429's Retry-After,
  // a reference that cannot be read).
  for (const Row& row : {Row{0s, ImageCache::kFailureTtl}, Row{5s, 30s}, Row{120s, 120s},
                         Row{std::chrono::hours(24), std::chrono::hours(24)}}) {
    SCOPED_TRACE(row.at_least.count());
    ImageCache cache(10, kTtl);
    cache.failed("ghcr.io/x/y:1\nlinux/amd64", "ghcr.io: not found", row.at_least, kNow);
    for (const bool past : {false, true}) {
      // Answered even when past its time, and asked again then.
      expect_answer(cache, "ghcr.io/x/y:1\nlinux/amd64", kNow + row.remembered - (past ? 0s : 1s),
                    Result::failure, nullptr, "ghcr.io: not found", past);
    }
    EXPECT_EQ(counts(cache), (Counts{1, 0}));
  }
}

TEST(ImageCache, AFailureKeepsTheConfigGivenBeforeAndMovesItsTime) {
  ImageCache cache(10, kTtl);
  const auto config = config_of("sha256:aaa");
  cache.found("cuda:12.4\nlinux/amd64", config, false, kNow);
  // The re-check after the ttl fails: the old config stays, fresh for kFailureTtl.
  const auto recheck = kNow + kTtl + 1s;
  cache.failed("cuda:12.4\nlinux/amd64", "registry: connection refused", 0s, recheck);
  expect_answer(cache, "cuda:12.4\nlinux/amd64", recheck + 29s, Result::hit, config, "", false);
  expect_answer(cache, "cuda:12.4\nlinux/amd64", recheck + 30s, Result::stale, config, "", true);
}

TEST(ImageCache, AConfigReplacesAFailure) {
  ImageCache cache(10, kTtl);
  cache.failed("cuda:12.4\nlinux/amd64", "registry: timeout", 0s, kNow);
  const auto config = config_of("sha256:aaa");
  cache.found("cuda:12.4\nlinux/amd64", config, false, kNow + 31s);
  expect_answer(cache, "cuda:12.4\nlinux/amd64", kNow + 31s, Result::hit, config, "", false);
  EXPECT_EQ(counts(cache), (Counts{1, 1}));
}

TEST(ImageCache, ConfigsAreKeptByDigestTheFirstOneStaying) {
  ImageCache cache(10, kTtl);
  const auto first = config_of("sha256:aaa");
  const auto same = config_of("sha256:aaa");
  cache.found("cuda:12.4\nlinux/amd64", first, false, kNow);
  cache.found("cuda:12.4-runtime\nlinux/amd64", same, false, kNow);
  EXPECT_EQ(cache.config("sha256:aaa"), first);
  EXPECT_EQ(cache.find("cuda:12.4-runtime\nlinux/amd64", kNow).config, same);
  EXPECT_EQ(cache.config("sha256:zzz"), nullptr);
  EXPECT_EQ(counts(cache), (Counts{2, 1}));
  // A config without a digest is the image's only.
  cache.found("local:1\nlinux/amd64", config_of(""), false, kNow);
  EXPECT_EQ(cache.find("local:1\nlinux/amd64", kNow).result, Result::hit);
  EXPECT_EQ(cache.config(""), nullptr);
  EXPECT_EQ(counts(cache), (Counts{3, 1}));
}

TEST(ImageCache, ImagesPastTheBoundGoLeastRecentlyUsedFirst) {
  struct Row {
    const char* name;
    std::function<void(ImageCache&)> between;  // after a and b are stored
    std::vector<std::string> kept;
  };
  const std::vector<Row> rows = {
      {"stored order", [](ImageCache&) {}, {"b", "c"}},
      {"found is a use", [](ImageCache& cache) { (void)cache.find("a", kNow); }, {"a", "c"}},
      {"a stale find is a use",
       [](ImageCache& cache) { (void)cache.find("a", kNow + kTtl); },
       {"a", "c"}},
      {"fresh is not a use",
       [](ImageCache& cache) { EXPECT_TRUE(cache.fresh("a", kNow)); },
       {"b", "c"}},
      {"storing again is a use",
       [](ImageCache& cache) { cache.failed("a", "x", 0s, kNow); },
       {"a", "c"}},
      {"a miss changes nothing",
       [](ImageCache& cache) { (void)cache.find("z", kNow); },
       {"b", "c"}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    ImageCache cache(2, kTtl);
    cache.found("a", config_of("sha256:a"), false, kNow);
    cache.failed("b", "not found", 0s, kNow);
    row.between(cache);
    cache.found("c", config_of("sha256:c"), false, kNow);
    EXPECT_EQ(counts(cache), (Counts{2, 2}));
    for (const char* key : {"a", "b", "c"}) {
      const bool kept = std::find(row.kept.begin(), row.kept.end(), key) != row.kept.end();
      EXPECT_EQ(cache.find(key, kNow).result != Result::miss, kept) << key;
    }
  }
}

TEST(ImageCache, ConfigsPastTheBoundGoLeastRecentlyUsedFirst) {
  ImageCache cache(2, kTtl);
  cache.found("a", config_of("sha256:1"), false, kNow);
  cache.found("b", config_of("sha256:2"), false, kNow);
  ASSERT_NE(cache.config("sha256:1"), nullptr);  // a use: 2 is the oldest now
  cache.found("c", config_of("sha256:3"), false, kNow);
  EXPECT_EQ(counts(cache), (Counts{2, 2}));
  EXPECT_NE(cache.config("sha256:1"), nullptr);
  EXPECT_EQ(cache.config("sha256:2"), nullptr);
  EXPECT_NE(cache.config("sha256:3"), nullptr);
  // Storing a known digest again is a use of it.
  cache.found("d", config_of("sha256:1"), false, kNow);
  cache.found("e", config_of("sha256:4"), false, kNow);
  EXPECT_NE(cache.config("sha256:1"), nullptr);
  EXPECT_EQ(cache.config("sha256:3"), nullptr);
}

TEST(ImageCache, ANewBoundTrimsAtOnceAndANewTtlCountsForWhatIsStoredNext) {
  ImageCache cache(10, kTtl);
  for (const char* name : {"a", "b", "c", "d"}) {
    cache.found(name, config_of(std::string("sha256:") + name), false, kNow);
  }
  (void)cache.find("a", kNow);
  EXPECT_EQ(counts(cache), (Counts{4, 4}));

  cache.configure(2, 60s);
  EXPECT_EQ(cache.bound(), 2U);
  EXPECT_EQ(counts(cache), (Counts{2, 2}));
  EXPECT_EQ(cache.find("a", kNow).result, Result::hit);
  EXPECT_EQ(cache.find("d", kNow).result, Result::hit);
  EXPECT_EQ(cache.find("b", kNow).result, Result::miss);
  EXPECT_NE(cache.config("sha256:c"), nullptr);
  EXPECT_NE(cache.config("sha256:d"), nullptr);
  // "a" keeps the ttl it was stored with; what is stored now has the new one.
  EXPECT_EQ(cache.find("a", kNow + 61s).result, Result::hit);
  cache.found("e", config_of("sha256:e"), false, kNow);
  EXPECT_EQ(cache.find("e", kNow + 60s).result, Result::stale);

  // A bound of 0 is taken as 1.
  cache.configure(0, kTtl);
  EXPECT_EQ(cache.bound(), 1U);
  EXPECT_EQ(counts(cache), (Counts{1, 1}));
  EXPECT_EQ(cache.find("e", kNow).result, Result::hit);
  EXPECT_NE(cache.config("sha256:e"), nullptr);
}

TEST(ImageCache, ResultsAreNamedForTheMetrics) {
  EXPECT_EQ(to_string(Result::hit), "hit");
  EXPECT_EQ(to_string(Result::stale), "stale");
  EXPECT_EQ(to_string(Result::failure), "failure");
  EXPECT_EQ(to_string(Result::miss), "miss");
}

}  // namespace
}  // namespace cudagate

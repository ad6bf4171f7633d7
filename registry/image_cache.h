#pragma once
// What the registry client remembers of images, held in memory and nothing
// more: no I/O, no locks, no clock of its own (each call is given `now`).
// registry_client.cpp keeps one behind its mutex and asks the registry
// whatever this says is missing or due.
//
// Two tables, each LRU within bound() entries; storing past the bound drops
// the least recently used entry of that table:
//   images   key (the image as written and its platform; the caller builds
//            it) -> the config, or why there is none, fresh until:
//              found, named by tag     now + ttl
//              found, named by digest  for good when the config carries the
//                                      manifest's scan (ImageConfig::scan),
//                                      or when no scan was looked for;
//                                      else now + ttl, so that a scan
//                                      attached later is found
//              failed                  now + kFailureTtl, or longer when the
//                                      failure asks (a 429's Retry-After)
//            A failure never replaces a config: a registry that fails a
//            re-check leaves the config it gave before, asked again once
//            the failure's time has passed.
//   configs  config digest -> the config, so that a lookup that meets the
//            digest again takes it instead of fetching it. The first config
//            stored for a digest stays (equal digests are equal configs).
//
// find() answers at once and counts as a use of the entry:
//   hit      a config within its time
//   stale    a config past its time: answered, and to be asked again
//   failure  why there is no config; to be asked again once past its time
//            (an old failure is answered too, never waited for)
//   miss     nothing known
//
// Not thread-safe: the owner serialises every call.

#include <chrono>
#include <cstddef>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "policy/rules/metadata.h"
#include "registry/image_lookup.h"

namespace cudagate {

class ImageCache {
 public:
  using ConfigPtr = std::shared_ptr<const ImageConfig>;
  using TimePoint = RegistryClock::time_point;

  static constexpr std::chrono::seconds kFailureTtl{30};

  struct Answer {
    enum class Result : unsigned char { hit, stale, failure, miss };
    Result result = Result::miss;
    ConfigPtr config;        // hit, stale
    std::string failure;     // failure: why there is no config
    bool ask_again = false;  // stale, or a failure past its time
  };

  // `max_entries` bounds each table (0 is taken as 1); `ttl` is how long a
  // config named by tag stays fresh from the time it is stored.
  ImageCache(std::size_t max_entries, std::chrono::seconds ttl);
  // New bounds and ttl: both tables are trimmed to the bound at once; what
  // is stored keeps its time.
  void configure(std::size_t max_entries, std::chrono::seconds ttl);
  [[nodiscard]] std::size_t bound() const { return bound_; }

  [[nodiscard]] Answer find(const std::string& key, TimePoint now);
  // Whether `key` needs no lookup at `now` (known and within its time).
  // Not a use: the LRU order stays.
  [[nodiscard]] bool fresh(const std::string& key, TimePoint now) const;

  // A lookup's config (not null): the image's entry and the config by its
  // digest (a config without a digest is kept in the image's entry only).
  // `by_digest`: the image was named by digest; `scans_looked_for`: the
  // lookup asked for the manifest's scan (policy scan.attached).
  // `manifest_digest`: the image manifest the config was read through,
  // which attach_scan() finds it by ("" for none).
  void found(const std::string& key, const ConfigPtr& config, bool by_digest, TimePoint now,
             bool scans_looked_for = true, std::string manifest_digest = {});
  // A lookup's failure, remembered for kFailureTtl or `at_least` when longer.
  void failed(const std::string& key, std::string why, std::chrono::seconds at_least,
              TimePoint now);

  // A scan of the image manifest `manifest_digest` made after its configs
  // were stored (serve's own scans): each image entry read through that
  // manifest whose config has no scan gets a copy with `scan`; its time
  // stays. Not a use. The number of entries changed.
  std::size_t attach_scan(const std::string& manifest_digest,
                          const std::shared_ptr<const ScanFacts>& scan);

  // The config stored under `digest` (a use of it), or null.
  [[nodiscard]] ConfigPtr config(const std::string& digest);

  [[nodiscard]] std::size_t images() const { return images_.size(); }
  [[nodiscard]] std::size_t configs() const { return configs_.size(); }

 private:
  struct Image {
    ConfigPtr config;
    std::string failure;
    TimePoint fresh_until;
    std::list<std::string>::iterator lru;
    std::string manifest_digest;
  };
  struct Config {
    ConfigPtr config;
    std::list<std::string>::iterator lru;
  };

  void store(const std::string& key, ConfigPtr config, std::string failure, TimePoint fresh_until);
  void trim();

  std::size_t bound_ = 1;
  std::chrono::seconds ttl_{0};
  std::unordered_map<std::string, Image> images_;
  std::list<std::string> images_lru_;  // front: the most recently used
  std::unordered_map<std::string, Config> configs_;
  std::list<std::string> configs_lru_;  // front: the most recently used
};

// The metrics' name of a result: "hit", "stale", "failure", "miss".
[[nodiscard]] std::string_view to_string(ImageCache::Answer::Result result);

}  // namespace cudagate

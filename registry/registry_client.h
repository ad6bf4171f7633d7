#pragma once
// Image configs from OCI registries (docs/contract.md §6), for every command
// that needs them: asynchronous on the caller's io_context, cached,
// coalesced, bounded.
//
//   cached(image, platform)       what memory holds, at once: the config, or
//                                 that the image has none to give (a lookup
//                                 failed, registry disabled), or a miss.
//                                 A config whose tag is older than cacheTTL,
//                                 or a failure older than
//                                 ImageCache::kFailureTtl, is still
//                                 answered and asked again in the
//                                 background: an image is waited for once,
//                                 on its first admission, never on re-checks.
//   lookup(wanted, budget, done)  fetches what is missed; concurrent lookups
//                                 of one image and platform share one set of
//                                 registry requests. done() runs once, on an
//                                 io_context thread, when every lookup ended
//                                 or the budget passed; lookups still running
//                                 then go on and fill the cache.
//
// Cache (registry/image_cache.h): the image's resolution (image as written
// + platform -> the config, with the scan attached to its manifest) for
// cacheTTL when named by tag, and when named by digest for good once it
// has its scan (or scans are not looked for; else for cacheTTL, so that a
// scan attached later is found); configs by digest; both LRU within maxCacheEntries;
// failures for ImageCache::kFailureTtl (a 429 for as long as its Retry-After
// asks, during which that registry host is not asked at all).
//
// Connections: at most kMaxConnections at once, kept alive and reused per
// host for up to 90 s idle (https/pool.h); TLS verified against the system
// CAs and registry.caFile, with the host name checked; plain HTTP only to
// hosts in registry.insecure. Sizes are bounded (LookupLimits). Credentials
// come from registry.credentials (re-read when the file changes) and never
// appear in logs or errors.
//
// Thread-safety: every member may be called from any thread. The client
// must outlive the io_context's run (its coroutines refer to it).

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/config/policy.h"
#include "policy/rules/metadata.h"
#include "types/expected.h"

namespace cudagate {

// Told of what the client does, from io_context threads (the metrics).
class RegistryObserver {
 public:
  virtual ~RegistryObserver() = default;
  // One HTTP exchange with a registry or token endpoint, in seconds.
  virtual void registry_request(double seconds) = 0;
  // One answer from cached(): "hit", "stale", "failure" (a cached failure), "miss".
  virtual void registry_cache(std::string_view result) = 0;
  // One lookup that reached the registry ended: "found", "not_found",
  // "unauthorized", "rate_limited", "invalid", "error".
  virtual void registry_lookup(std::string_view result) = 0;
  // What the cache holds after a change: image resolutions and configs.
  virtual void registry_cache_size(std::size_t images, std::size_t configs) = 0;
};

// Scans made without the registry's attachment (serve's background scans,
// server/background_scans.h), asked from io_context threads.
class ScanSource {
 public:
  virtual ~ScanSource() = default;
  // The scan made of the image manifest `manifest_digest`, or null.
  virtual std::shared_ptr<const ScanFacts> scanned(const std::string& manifest_digest) = 0;
  // A lookup found no scan attached to the manifest `manifest_digest` of
  // `name` ("host/repo") for `platform` ("linux/amd64").
  virtual void unscanned(const std::string& name, const std::string& manifest_digest,
                         const std::string& platform) = 0;
};

class RegistryClient {
 public:
  static constexpr std::size_t kMaxConnections = 32;
  static constexpr std::chrono::seconds kRequestTimeout{20};

  // `observer` may be null; it must outlive the client.
  RegistryClient(boost::asio::io_context& ioc, RegistryObserver* observer);
  ~RegistryClient();
  RegistryClient(const RegistryClient&) = delete;
  RegistryClient& operator=(const RegistryClient&) = delete;

  // Takes the policy's registry settings (at start and after each reload);
  // the cache is kept, trimmed to the new bound. The error names what is
  // wrong (caFile unreadable); the previous settings then stay.
  [[nodiscard]] std::optional<Error> configure(const RegistrySettings& settings);

  struct Answer {
    enum class State : unsigned char { found, absent, miss };
    State state = State::miss;
    std::shared_ptr<const ImageConfig> config;  // found
    std::string reason;                         // absent: why there is no config
  };
  [[nodiscard]] Answer cached(std::string_view image, std::string_view platform);

  void lookup(const std::vector<ImageWanted>& wanted, std::chrono::milliseconds budget,
              std::function<void()> done);

  // Where lookups that find no attached scan take one from, and tell of
  // the manifest (null: none). `source` must outlive the client's lookups.
  void set_scan_source(ScanSource* source);
  // A scan of `manifest_digest` made since its config was cached: the
  // cached configs read through that manifest carry it from now on.
  void attach_scan(const std::string& manifest_digest,
                   const std::shared_ptr<const ScanFacts>& scan);

  // What the cache holds: resolutions and configs.
  [[nodiscard]] std::size_t cached_images() const;
  [[nodiscard]] std::size_t cached_configs() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

// For commands that run once (check, audit): looks `wanted` up on an
// io_context of its own, within settings.timeout, and returns the answers
// in order (a lookup the budget cut off is absent, saying so). The error
// is a settings error (caFile).
[[nodiscard]] Expected<std::vector<RegistryClient::Answer>> look_up_once(
    const RegistrySettings& settings, const std::vector<ImageWanted>& wanted);

}  // namespace cudagate

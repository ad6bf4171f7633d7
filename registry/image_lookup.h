#pragma once
// One image's config fetched from a registry, as a state machine that says
// which HTTP call to make next and reads each reply; registry_client.cpp
// performs the calls. Tests drive it with replies and no sockets.
//
//   GET /v2/<repo>/manifests/<tag or digest>   Accept: the four manifest types
//     an index          -> GET /v2/<repo>/manifests/<digest of the platform's entry>
//     an image manifest -> GET /v2/<repo>/blobs/<config digest>
//   with scan_attached, once the config is known, the scan attached to the
//   image manifest D (registry/scan_attachment.h), asked of the endpoint
//   that gave the manifest:
//     GET /v2/<repo>/referrers/<D>?artifactType=<scan>   Accept: OCI index
//     404 -> GET /v2/<repo>/manifests/sha256-<hex of D>  (the referrers tag)
//   (the tag at once where ReferrersMemory knows the host has no API)
//   401 + Bearer challenge -> GET <realm>?service=..&scope=.. (Basic credentials
//                             when configured), then the same call with the token
//   401 + Basic challenge  -> the same call with the configured credentials
//   3xx + Location         -> the new URL (no Authorization on another host:
//                             blob stores answer with signed URLs)
//   404, 5xx, a transport error on a mirror -> the next endpoint (the origin last)
//   429                    -> a failure carrying Retry-After
// Whatever is fetched by digest must hash to it; a manifest fetched by tag
// gives the digest the tag resolved to. A config already known by digest
// (known_config) is not fetched again; the scan is still asked for, since
// it belongs to the manifest and not to the config.
//
// The scan never fails the lookup: 404 on both calls (none attached), any
// other status, a transport error, a refused token, a rate limit or an
// index or facts that cannot be read end that step with the config and no
// scan, and scan_result()/scan_problem() say why. So a registry without
// scans costs two calls more (one with the referrers API), and the
// config's `scan` is this manifest's, or null: a known config that carries
// another manifest's scan is copied with this one's.
//
// Not thread-safe; one lookup is driven by one caller. Failure messages
// name the registry, the repository and the call, never a credential.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <variant>
#include <vector>

#include "policy/image/image_ref.h"
#include "policy/rules/metadata.h"
#include "registry/auth.h"
#include "registry/manifest.h"

namespace cudagate {

using RegistryClock = std::chrono::steady_clock;

// Where a registry is reached: "registry-1.docker.io", "localhost:5000".
struct RegistryEndpoint {
  std::string host;  // host[:port]
  bool tls = true;
};

struct HttpCall {
  enum class Purpose : unsigned char { manifest, config, token, referrers };
  Purpose purpose = Purpose::manifest;
  bool tls = true;
  std::string host;    // host[:port]
  std::string target;  // path and query
  std::string accept;
  std::string authorization;  // "" for none
  std::size_t max_body = 0;
};

struct HttpReply {
  int status = 0;
  std::string body;
  std::string content_type;
  std::string location;
  std::string www_authenticate;
  std::string retry_after;
};

struct LookupFailure {
  enum class Kind : unsigned char { not_found, unauthorized, rate_limited, invalid, transport };
  Kind kind = Kind::transport;
  std::string message;
  std::chrono::seconds retry_after{0};  // rate_limited: how long the registry asked to wait
  std::string host;                     // the host that answered so
};
[[nodiscard]] std::string_view to_string(LookupFailure::Kind kind);

// Bearer tokens by registry host and repository, until their expiry.
class TokenCache {
 public:
  [[nodiscard]] const std::string* find(std::string_view host, std::string_view repository,
                                        RegistryClock::time_point now) const;
  void store(std::string host, std::string repository, std::string token,
             RegistryClock::time_point expires);
  [[nodiscard]] std::size_t size() const { return tokens_.size(); }

 private:
  struct Entry {
    std::string token;
    RegistryClock::time_point expires;
  };
  std::map<std::pair<std::string, std::string>, Entry, std::less<>> tokens_;
};

// Registry hosts whose referrers API answered 404 (they have none), for an
// hour: their scans are asked at the referrers tag at once, one call
// instead of two. At most kMaxHosts are kept.
class ReferrersMemory {
 public:
  static constexpr std::size_t kMaxHosts = 1024;
  static constexpr std::chrono::hours kFor{1};
  [[nodiscard]] bool lacks_api(std::string_view host, RegistryClock::time_point now) const;
  void lacks(std::string host, RegistryClock::time_point now);
  [[nodiscard]] std::size_t size() const { return hosts_.size(); }

 private:
  std::map<std::string, RegistryClock::time_point, std::less<>> hosts_;  // host -> until
};

struct LookupLimits {
  std::size_t max_manifest_bytes = 4 * 1024 * 1024;
  std::size_t max_config_bytes = 8 * 1024 * 1024;
  std::size_t max_token_bytes = 64 * 1024;
  std::size_t max_referrers_bytes = 4 * 1024 * 1024;
  int max_redirects = 5;
};

class ImageLookup {
 public:
  using ConfigPtr = std::shared_ptr<const ImageConfig>;
  using KnownConfig = std::function<ConfigPtr(std::string_view digest)>;
  using Step = std::variant<HttpCall, ConfigPtr, LookupFailure>;

  // What became of the scan attached to the manifest.
  enum class ScanResult : unsigned char {
    off,          // not looked for (scan_attached false), or the lookup not done
    found,        // the config carries it
    none,         // none attached: both calls 404, or no referrer for the manifest
    unavailable,  // a status, transport error, auth or rate limit ended the step
    invalid,      // the registry's index or the scan's facts cannot be read
  };

  // `endpoints` in the order to try (mirrors first, the origin last); not
  // empty. `credentials` (may be null) for every endpoint's Basic and token
  // requests; `tokens` (may be null) shared between lookups.
  // `scan_attached`: whether to look for the scan attached to the manifest
  // (policy scan.attached); without it no call is made for one, and the
  // config carries none.
  ImageLookup(ImageRef ref, Platform platform, std::vector<RegistryEndpoint> endpoints,
              const Credentials* credentials, TokenCache* tokens, KnownConfig known_config,
              LookupLimits limits = {}, bool scan_attached = false);

  // The call to make now, or the end: the config, or why there is none.
  // After a call, the next step comes only after on_reply() or
  // on_transport_error().
  [[nodiscard]] Step next(RegistryClock::time_point now);
  void on_reply(HttpReply reply, RegistryClock::time_point now);
  void on_transport_error(const std::string& message);

  // The digest the reference resolved to (its own digest, or the manifest's
  // that the tag named); "" until the first manifest is read.
  [[nodiscard]] const std::string& resolved_digest() const { return resolved_digest_; }
  // The digest of the image manifest the config was read through (the
  // platform's, for an index); "" until it is read.
  [[nodiscard]] const std::string& manifest_digest() const { return manifest_digest_; }
  // Whether the config is known, so that what is still asked for is the
  // scan alone, whose failures do not fail the lookup.
  [[nodiscard]] bool has_config() const { return config_ != nullptr; }
  // The number of calls made so far.
  [[nodiscard]] int calls() const { return calls_; }
  // Where hosts without the referrers API are remembered (may be null: the
  // API is asked first each time); shared between lookups, not
  // synchronised (the caller's lock, as for `tokens`).
  void remember_referrers(ReferrersMemory* memory) { referrers_memory_ = memory; }
  // Once the lookup ended with a config: whether it found the scan, and,
  // when it did not (none, unavailable, invalid), why, naming the registry,
  // the repository and the call.
  [[nodiscard]] ScanResult scan_result() const { return scan_result_; }
  [[nodiscard]] const std::string& scan_problem() const { return scan_problem_; }

 private:
  enum class Stage : unsigned char {
    manifest,
    platform_manifest,
    config,
    referrers,
    referrers_tag
  };

  void start_endpoint();
  void fail(LookupFailure::Kind kind, std::string message, std::chrono::seconds retry_after = {});
  // Moves to the next endpoint when there is one; else fails with `message`.
  void next_endpoint_or_fail(LookupFailure::Kind kind, std::string message);
  void on_resource(HttpReply& reply);
  void on_unauthorized(const HttpReply& reply);
  void on_content(const HttpReply& reply);
  void on_token(HttpReply& reply, RegistryClock::time_point now);
  void follow(std::string_view location);
  [[nodiscard]] std::string describe_call() const;
  [[nodiscard]] bool scan_stage() const {
    return stage_ == Stage::referrers || stage_ == Stage::referrers_tag;
  }
  // The config is known: the end, or the scan's first call.
  void config_known(ConfigPtr config);
  void ask_scan(Stage stage);
  // The end of the scan step: the config with `scan` (may be null).
  void finish_scan(ScanResult result, std::shared_ptr<const ScanFacts> scan, std::string problem);
  void on_scan_index(const HttpReply& reply);

  ImageRef ref_;
  Platform platform_;
  std::vector<RegistryEndpoint> endpoints_;
  const Credentials* credentials_;
  TokenCache* tokens_;
  KnownConfig known_config_;
  LookupLimits limits_;
  bool scan_attached_;

  std::size_t endpoint_ = 0;
  Stage stage_ = Stage::manifest;
  // The resource being fetched: where (after redirects) and what digest it
  // must have ("" for a manifest named by tag).
  RegistryEndpoint at_;
  std::string target_;
  std::string expected_digest_;
  int redirects_ = 0;
  std::string authorization_;  // for the endpoint's host
  int auth_attempts_ = 0;      // for the current resource
  bool awaiting_token_ = false;
  AuthChallenge challenge_;
  bool in_flight_ = false;
  int calls_ = 0;
  std::string resolved_digest_;
  std::string manifest_digest_;
  ConfigPtr config_;  // once known, while the scan is asked for
  ScanResult scan_result_ = ScanResult::off;
  ReferrersMemory* referrers_memory_ = nullptr;
  RegistryClock::time_point now_{};  // of the latest next() or on_reply()
  std::string scan_problem_;
  std::variant<std::monostate, ConfigPtr, LookupFailure> result_;
};

}  // namespace cudagate

#pragma once
// One image's config fetched from a registry, as a state machine that says
// which HTTP call to make next and reads each reply; registry_client.cpp
// performs the calls. Tests drive it with replies and no sockets.
//
//   GET /v2/<repo>/manifests/<tag or digest>   Accept: the four manifest types
//     an index          -> GET /v2/<repo>/manifests/<digest of the platform's entry>
//     an image manifest -> GET /v2/<repo>/blobs/<config digest>
//   401 + Bearer challenge -> GET <realm>?service=..&scope=.. (Basic credentials
//                             when configured), then the same call with the token
//   401 + Basic challenge  -> the same call with the configured credentials
//   3xx + Location         -> the new URL (no Authorization on another host:
//                             blob stores answer with signed URLs)
//   404, 5xx, a transport error on a mirror -> the next endpoint (the origin last)
//   429                    -> a failure carrying Retry-After
// Whatever is fetched by digest must hash to it; a manifest fetched by tag
// gives the digest the tag resolved to. A config already known by digest
// (known_config) is not fetched again.
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
  enum class Purpose : unsigned char { manifest, config, token };
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

struct LookupLimits {
  std::size_t max_manifest_bytes = 4 * 1024 * 1024;
  std::size_t max_config_bytes = 8 * 1024 * 1024;
  std::size_t max_token_bytes = 64 * 1024;
  int max_redirects = 5;
};

class ImageLookup {
 public:
  using ConfigPtr = std::shared_ptr<const ImageConfig>;
  using KnownConfig = std::function<ConfigPtr(std::string_view digest)>;
  using Step = std::variant<HttpCall, ConfigPtr, LookupFailure>;

  // `endpoints` in the order to try (mirrors first, the origin last); not
  // empty. `credentials` (may be null) for every endpoint's Basic and token
  // requests; `tokens` (may be null) shared between lookups.
  ImageLookup(ImageRef ref, Platform platform, std::vector<RegistryEndpoint> endpoints,
              const Credentials* credentials, TokenCache* tokens, KnownConfig known_config,
              LookupLimits limits = {});

  // The call to make now, or the end: the config, or why there is none.
  // After a call, the next step comes only after on_reply() or
  // on_transport_error().
  [[nodiscard]] Step next(RegistryClock::time_point now);
  void on_reply(HttpReply reply, RegistryClock::time_point now);
  void on_transport_error(const std::string& message);

  // The digest the reference resolved to (its own digest, or the manifest's
  // that the tag named); "" until the first manifest is read.
  [[nodiscard]] const std::string& resolved_digest() const { return resolved_digest_; }
  // The number of calls made so far.
  [[nodiscard]] int calls() const { return calls_; }

 private:
  enum class Stage : unsigned char { manifest, platform_manifest, config };

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

  ImageRef ref_;
  Platform platform_;
  std::vector<RegistryEndpoint> endpoints_;
  const Credentials* credentials_;
  TokenCache* tokens_;
  KnownConfig known_config_;
  LookupLimits limits_;

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
  std::variant<std::monostate, ConfigPtr, LookupFailure> result_;
};

}  // namespace cudagate

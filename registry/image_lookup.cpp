// The registry protocol of one image lookup: manifests, index, config, the
// scan attached to the manifest, the token dance, redirects and the fall
// back from mirrors to the origin.
#include "registry/image_lookup.h"

#include <charconv>

#include "registry/authorizer.h"
#include "registry/scan_attachment.h"
#include "types/quote.h"

namespace cudagate {
namespace {

// Retry-After in seconds; an HTTP-date (or nothing) counts as a minute.
std::chrono::seconds retry_after_of(std::string_view value) {
  long long seconds = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (ec != std::errc{} || end != value.data() + value.size() || seconds < 0) {
    return std::chrono::seconds(60);
  }
  return std::chrono::seconds(std::min(seconds, 3600LL));
}

}  // namespace

std::string_view to_string(LookupFailure::Kind kind) {
  switch (kind) {
    case LookupFailure::Kind::not_found:
      return "not_found";
    case LookupFailure::Kind::unauthorized:
      return "unauthorized";
    case LookupFailure::Kind::rate_limited:
      return "rate_limited";
    case LookupFailure::Kind::invalid:
      return "invalid";
    case LookupFailure::Kind::transport:
      return "error";
  }
  return "error";
}

const std::string* TokenCache::find(std::string_view host, std::string_view repository,
                                    RegistryClock::time_point now) const {
  const auto it = tokens_.find(std::make_pair(std::string(host), std::string(repository)));
  if (it == tokens_.end() || it->second.expires <= now) return nullptr;
  return &it->second.token;
}

void TokenCache::store(std::string host, std::string repository, std::string token,
                       RegistryClock::time_point expires) {
  // Bounded: expired entries go when the map grows.
  if (tokens_.size() >= 4096) tokens_.clear();
  tokens_[{std::move(host), std::move(repository)}] = Entry{std::move(token), expires};
}

ImageLookup::ImageLookup(ImageRef ref, Platform platform, std::vector<RegistryEndpoint> endpoints,
                         const Credentials* credentials, TokenCache* tokens,
                         KnownConfig known_config, LookupLimits limits, bool scan_attached)
    : ref_(std::move(ref)),
      platform_(std::move(platform)),
      endpoints_(std::move(endpoints)),
      credentials_(credentials),
      tokens_(tokens),
      known_config_(std::move(known_config)),
      limits_(limits),
      scan_attached_(scan_attached) {
  if (endpoints_.empty()) {
    fail(LookupFailure::Kind::transport, "no registry endpoint for " + ref_.name());
    return;
  }
  start_endpoint();
}

void ImageLookup::start_endpoint() {
  at_ = endpoints_[endpoint_];
  stage_ = Stage::manifest;
  target_ =
      "/v2/" + ref_.repository + "/manifests/" + (ref_.digest.empty() ? ref_.tag : ref_.digest);
  expected_digest_ = ref_.digest;
  redirects_ = 0;
  authorization_.clear();
  auth_attempts_ = 0;
  awaiting_token_ = false;
}

// While the scan is asked for, a failure ends that step only.
void ImageLookup::fail(LookupFailure::Kind kind, std::string message,
                       std::chrono::seconds retry_after) {
  if (scan_stage()) {
    finish_scan(
        kind == LookupFailure::Kind::invalid ? ScanResult::invalid : ScanResult::unavailable,
        nullptr, std::move(message));
    return;
  }
  result_ = LookupFailure{kind, std::move(message), retry_after, at_.host};
}

// The scan is asked of the endpoint that gave the manifest only.
void ImageLookup::next_endpoint_or_fail(LookupFailure::Kind kind, std::string message) {
  if (!scan_stage() && endpoint_ + 1 < endpoints_.size()) {
    ++endpoint_;
    start_endpoint();
    return;
  }
  fail(kind, std::move(message));
}

std::string ImageLookup::describe_call() const {
  if (stage_ == Stage::referrers) {
    return "referrers " + at_.host + "/" + ref_.repository + "@" + manifest_digest_;
  }
  if (stage_ == Stage::referrers_tag) {
    // The digest is sha256_digest()'s: "sha256:<hex>", tagged "sha256-<hex>".
    return "referrers tag " + at_.host + "/" + ref_.repository + ":sha256-" +
           manifest_digest_.substr(7);
  }
  const char* what = stage_ == Stage::config ? "config " : "manifest ";
  const std::string& name =
      stage_ == Stage::manifest && ref_.digest.empty() ? ref_.tag : expected_digest_;
  return std::string(what) + at_.host + "/" + ref_.repository +
         (stage_ == Stage::config ? "@" : ":") + name;
}

bool ReferrersMemory::lacks_api(std::string_view host, RegistryClock::time_point now) const {
  const auto it = hosts_.find(host);
  return it != hosts_.end() && now < it->second;
}

void ReferrersMemory::lacks(std::string host, RegistryClock::time_point now) {
  if (hosts_.size() >= kMaxHosts)
    std::erase_if(hosts_, [&](const auto& h) { return h.second <= now; });
  if (hosts_.size() >= kMaxHosts) return;
  hosts_[std::move(host)] = now + kFor;
}

ImageLookup::Step ImageLookup::next(RegistryClock::time_point now) {
  now_ = now;
  if (auto* config = std::get_if<ConfigPtr>(&result_)) return *config;
  if (auto* failure = std::get_if<LookupFailure>(&result_)) return *failure;
  if (stage_ == Stage::config && known_config_ && redirects_ == 0) {
    if (ConfigPtr known = known_config_(expected_digest_)) {
      config_known(std::move(known));
      if (auto* config = std::get_if<ConfigPtr>(&result_)) return *config;
    }
  }
  in_flight_ = true;
  ++calls_;
  HttpCall call;
  if (awaiting_token_) {
    call.purpose = HttpCall::Purpose::token;
    const auto realm = parse_registry_url(challenge_.realm);
    // parse_url was checked when the challenge arrived.
    call.tls = realm->tls;
    call.host = realm->host;
    call.target = realm->target;
    char sep = call.target.find('?') == std::string::npos ? '?' : '&';
    if (!challenge_.service.empty()) {
      call.target += sep;
      call.target += "service=" + percent_encoded(challenge_.service);
      sep = '&';
    }
    const std::string scope =
        challenge_.scope.empty() ? "repository:" + ref_.repository + ":pull" : challenge_.scope;
    call.target += sep;
    call.target += "scope=" + percent_encoded(scope);
    if (credentials_ != nullptr) call.authorization = credentials_->basic_authorization();
    call.accept = "application/json";
    call.max_body = limits_.max_token_bytes;
    return call;
  }
  call.tls = at_.tls;
  call.host = at_.host;
  call.target = target_;
  if (scan_stage()) {
    call.purpose = HttpCall::Purpose::referrers;
    call.accept = std::string(kOciIndex);
    call.max_body = limits_.max_referrers_bytes;
  } else if (stage_ == Stage::config) {
    call.purpose = HttpCall::Purpose::config;
    call.accept = "*/*";
    call.max_body = limits_.max_config_bytes;
  } else {
    call.purpose = HttpCall::Purpose::manifest;
    call.accept = manifest_accept();
    call.max_body = limits_.max_manifest_bytes;
  }
  const RegistryEndpoint& endpoint = endpoints_[endpoint_];
  if (at_.host == endpoint.host) {
    if (authorization_.empty() && tokens_ != nullptr) {
      if (const std::string* token = tokens_->find(endpoint.host, ref_.repository, now)) {
        authorization_ = "Bearer " + *token;
      }
    }
    call.authorization = authorization_;
  }
  return call;
}

void ImageLookup::on_transport_error(const std::string& message) {
  in_flight_ = false;
  if (awaiting_token_) {
    fail(LookupFailure::Kind::transport,
         "token endpoint " + printable(challenge_.realm, 200) + ": " + message);
    return;
  }
  next_endpoint_or_fail(LookupFailure::Kind::transport, describe_call() + ": " + message);
}

void ImageLookup::on_reply(HttpReply reply, RegistryClock::time_point now) {
  now_ = now;
  in_flight_ = false;
  if (awaiting_token_) return on_token(reply, now);
  on_resource(reply);
}

void ImageLookup::on_token(HttpReply& reply, RegistryClock::time_point now) {
  awaiting_token_ = false;
  const std::string where = "token endpoint " + printable(challenge_.realm, 200);
  if (reply.status == 401 || reply.status == 403) {
    fail(LookupFailure::Kind::unauthorized,
         where + " refused " +
             (credentials_ != nullptr ? "the configured credentials" : "an anonymous request") +
             " for " + at_.host + "/" + ref_.repository + " (" + std::to_string(reply.status) +
             ")");
    return;
  }
  if (reply.status == 429) {
    fail(LookupFailure::Kind::rate_limited, where + " rate-limits requests (429)",
         retry_after_of(reply.retry_after));
    return;
  }
  if (reply.status != 200) {
    fail(LookupFailure::Kind::transport, where + " answered " + std::to_string(reply.status));
    return;
  }
  auto token = parse_token_response(reply.body);
  if (!token) {
    fail(LookupFailure::Kind::invalid, where + ": " + token.error().str());
    return;
  }
  // Renewed a little before the registry would refuse it.
  const auto margin =
      std::min<std::chrono::seconds>(token->lifetime / 10, std::chrono::seconds(30));
  if (tokens_ != nullptr) {
    tokens_->store(endpoints_[endpoint_].host, ref_.repository, token->token,
                   now + token->lifetime - margin);
  }
  authorization_ = "Bearer " + token->token;
}

void ImageLookup::follow(std::string_view location) {
  if (++redirects_ > limits_.max_redirects) {
    fail(LookupFailure::Kind::transport,
         describe_call() + ": more than " + std::to_string(limits_.max_redirects) + " redirects");
    return;
  }
  if (!location.empty() && location.front() == '/') {
    target_ = std::string(location);
    return;
  }
  const auto url = parse_registry_url(location);
  if (!url) {
    fail(LookupFailure::Kind::invalid,
         describe_call() + ": redirect to an unusable location " + quote(location, 200));
    return;
  }
  at_ = RegistryEndpoint{url->host, url->tls};
  target_ = url->target;
}

void ImageLookup::on_resource(HttpReply& reply) {
  const int status = reply.status;
  if (status == 301 || status == 302 || status == 303 || status == 307 || status == 308) {
    if (reply.location.empty()) {
      fail(LookupFailure::Kind::invalid,
           describe_call() + ": redirect " + std::to_string(status) + " without a Location");
      return;
    }
    follow(reply.location);
    return;
  }
  if (status == 401) {
    on_unauthorized(reply);
    return;
  }
  if (status == 429) {
    fail(LookupFailure::Kind::rate_limited, describe_call() + ": rate-limited (429)",
         retry_after_of(reply.retry_after));
    return;
  }
  if (status == 404 && stage_ == Stage::referrers) {
    // A registry without the referrers API: the tag schema instead.
    if (referrers_memory_ != nullptr) referrers_memory_->lacks(endpoints_[endpoint_].host, now_);
    ask_scan(Stage::referrers_tag);
    return;
  }
  if (status == 404 && stage_ == Stage::referrers_tag) {
    finish_scan(ScanResult::none, nullptr,
                describe_call() + ": not found (404), nor by the referrers API: no scan attached");
    return;
  }
  if (status == 404) {
    next_endpoint_or_fail(LookupFailure::Kind::not_found, describe_call() + ": not found (404)");
    return;
  }
  if (status == 403) {
    fail(LookupFailure::Kind::unauthorized, describe_call() + ": forbidden (403)");
    return;
  }
  if (status != 200) {
    next_endpoint_or_fail(LookupFailure::Kind::transport,
                          describe_call() + ": the registry answered " + std::to_string(status));
    return;
  }

  on_content(reply);
}

// A 401: the registry's challenge answered once, with Basic credentials or
// a Bearer token to fetch; a second 401, or one from where a redirect led,
// fails the lookup.
void ImageLookup::on_unauthorized(const HttpReply& reply) {
  if (auth_attempts_++ > 0 || at_.host != endpoints_[endpoint_].host) {
    fail(LookupFailure::Kind::unauthorized,
         describe_call() + ": 401 unauthorized " +
             (credentials_ != nullptr
                  ? "with the configured credentials"
                  : "(no credentials configured for " + endpoints_[endpoint_].host + ")"));
    return;
  }
  auto challenge = parse_challenge(reply.www_authenticate);
  if (!challenge) {
    fail(LookupFailure::Kind::unauthorized,
         describe_call() + ": 401 unauthorized; " + challenge.error().str());
    return;
  }
  if (challenge->scheme == AuthChallenge::Scheme::basic) {
    if (credentials_ == nullptr) {
      fail(LookupFailure::Kind::unauthorized,
           describe_call() +
               ": the registry asks for Basic credentials, and none are "
               "configured for " +
               endpoints_[endpoint_].host + " (policy registry.credentials)");
      return;
    }
    authorization_ = credentials_->basic_authorization();
    return;
  }
  if (!parse_registry_url(challenge->realm)) {
    fail(LookupFailure::Kind::unauthorized, describe_call() +
                                                ": Bearer challenge with an unusable realm " +
                                                quote(challenge->realm, 200));
    return;
  }
  challenge_ = std::move(*challenge);
  awaiting_token_ = true;
  authorization_.clear();
}

// A 200: the config read, or the manifest (an index's entry for the
// platform, else the image's config) named as the next resource.
void ImageLookup::on_content(const HttpReply& reply) {
  if (scan_stage()) {
    on_scan_index(reply);
    return;
  }
  // Content named by digest must be that content.
  const std::string digest = sha256_digest(reply.body);
  if (!expected_digest_.empty() && digest != expected_digest_) {
    fail(LookupFailure::Kind::invalid,
         describe_call() + ": content does not match its digest (it hashes to " + digest + ")");
    return;
  }
  if (stage_ == Stage::config) {
    auto config = parse_image_config(reply.body, digest);
    if (!config) {
      fail(LookupFailure::Kind::invalid, describe_call() + ": " + config.error().str());
      return;
    }
    config_known(std::make_shared<const ImageConfig>(std::move(*config)));
    return;
  }
  auto manifest = parse_manifest(reply.body, reply.content_type);
  if (!manifest) {
    fail(LookupFailure::Kind::invalid, describe_call() + ": " + manifest.error().str());
    return;
  }
  if (stage_ == Stage::manifest) resolved_digest_ = digest;
  const RegistryEndpoint endpoint = endpoints_[endpoint_];
  if (manifest->kind == Manifest::Kind::index) {
    if (stage_ != Stage::manifest) {
      fail(LookupFailure::Kind::invalid, describe_call() + ": an index inside an index");
      return;
    }
    const IndexEntry* entry = select_platform(*manifest, platform_);
    if (entry == nullptr) {
      const std::string offered = platforms_offered(*manifest);
      fail(LookupFailure::Kind::not_found,
           describe_call() + ": the index has no manifest for " + platform_.str() +
               (offered.empty() ? std::string() : " (it has " + offered + ")"));
      return;
    }
    stage_ = Stage::platform_manifest;
    expected_digest_ = entry->digest;
  } else {
    manifest_digest_ = digest;
    stage_ = Stage::config;
    expected_digest_ = manifest->config_digest;
  }
  // The next resource is asked of the endpoint again, after any redirect.
  at_ = endpoint;
  redirects_ = 0;
  auth_attempts_ = 0;
  target_ = "/v2/" + ref_.repository + (stage_ == Stage::config ? "/blobs/" : "/manifests/") +
            expected_digest_;
}

void ImageLookup::config_known(ConfigPtr config) {
  config_ = std::move(config);
  if (!scan_attached_ || manifest_digest_.empty()) {
    finish_scan(ScanResult::off, nullptr, "");
    return;
  }
  ask_scan(Stage::referrers);
}

void ImageLookup::ask_scan(Stage stage) {
  if (stage == Stage::referrers && referrers_memory_ != nullptr &&
      referrers_memory_->lacks_api(endpoints_[endpoint_].host, now_)) {
    stage = Stage::referrers_tag;
  }
  stage_ = stage;
  at_ = endpoints_[endpoint_];
  redirects_ = 0;
  auth_attempts_ = 0;
  expected_digest_.clear();
  target_ = stage == Stage::referrers ? referrers_target(ref_.repository, manifest_digest_)
                                      : referrers_tag_target(ref_.repository, manifest_digest_);
}

void ImageLookup::finish_scan(ScanResult result, std::shared_ptr<const ScanFacts> scan,
                              std::string problem) {
  scan_result_ = result;
  scan_problem_ = std::move(problem);
  const bool same = config_->scan == scan ||
                    (config_->scan != nullptr && scan != nullptr && *config_->scan == *scan);
  if (same) {
    result_ = config_;
    return;
  }
  auto config = std::make_shared<ImageConfig>(*config_);
  config->scan = std::move(scan);
  result_ = ConfigPtr(std::move(config));
}

// A 200 of either referrers call: the index of the manifest's referrers.
void ImageLookup::on_scan_index(const HttpReply& reply) {
  auto read = read_referrers(reply.body, manifest_digest_);
  if (!read) {
    finish_scan(ScanResult::invalid, nullptr, describe_call() + ": " + read.error().str());
    return;
  }
  if (!read->has_value()) {
    finish_scan(ScanResult::none, nullptr,
                describe_call() + ": no scan of " + manifest_digest_ + " among its referrers");
    return;
  }
  finish_scan(ScanResult::found, std::make_shared<const ScanFacts>(std::move(**read)), "");
}

}  // namespace cudagate

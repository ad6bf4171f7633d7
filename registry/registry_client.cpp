// The registry client's I/O: lookups as coroutines on the io_context that
// perform what ImageLookup asks over cudagate's HTTPS client (https/pool.h,
// a bounded pool of kept-alive connections); the ImageCache and the lookups
// in flight behind one mutex.
#include "registry/registry_client.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "https/endpoint.h"
#include "https/pool.h"
#include "https/tls_client.h"
#include "policy/image/image_ref.h"
#include "registry/auth.h"
#include "registry/image_cache.h"
#include "registry/image_lookup.h"
#include "registry/manifest.h"

namespace cudagate {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Clock = RegistryClock;

namespace {

constexpr std::size_t kMaxIdlePerHost = 8;

std::string_view platform_of(std::string_view key) {
  return key.substr(key.find('\n') + 1);
}

std::string cache_key(std::string_view image, std::string_view platform) {
  std::string key;
  key.reserve(image.size() + platform.size() + 1);
  key.append(image);
  key += '\n';
  key.append(platform);
  return key;
}

// A mirror as written in registry.mirrors: "mirror.example.com",
// "https://mirror.example.com", "http://10.0.0.5:5000".
RegistryEndpoint endpoint_of_mirror(std::string_view text, const RegistrySettings& settings) {
  bool tls = true;
  bool explicit_scheme = false;
  if (text.substr(0, 8) == "https://") {
    text.remove_prefix(8);
    explicit_scheme = true;
  } else if (text.substr(0, 7) == "http://") {
    text.remove_prefix(7);
    tls = false;
    explicit_scheme = true;
  }
  text = text.substr(0, text.find('/'));
  RegistryEndpoint e{std::string(text), tls};
  if (!explicit_scheme) {
    for (const std::string& insecure : settings.insecure) {
      if (insecure == e.host) e.tls = false;
    }
  }
  return e;
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

struct RegistryClient::Impl : std::enable_shared_from_this<RegistryClient::Impl> {
  Impl(net::io_context& context, RegistryObserver* watcher)
      : ioc(context),
        observer(watcher),
        pool(context.get_executor(),
             https::PoolLimits{kMaxConnections, kMaxIdlePerHost, kRequestTimeout}),
        cache(settings.max_cache_entries, settings.cache_ttl) {}

  struct Inflight {
    std::vector<std::function<void()>> waiters;
  };

  net::io_context& ioc;
  RegistryObserver* const observer;
  https::Pool pool;

  mutable std::mutex mutex;  // everything below
  RegistrySettings settings;
  bool configured = false;
  std::shared_ptr<const https::TlsClient> tls_client;
  std::string tls_ca_file;
  std::shared_ptr<const DockerConfig> docker_config;
  std::string docker_config_path;
  struct timespec docker_config_mtime {};
  bool docker_config_warned = false;

  ImageCache cache;
  std::unordered_map<std::string, std::shared_ptr<Inflight>> inflight;
  std::map<std::string, Clock::time_point, std::less<>> blocked_hosts;  // 429

  std::mutex tokens_mutex;  // taken before `mutex`, never after
  TokenCache tokens;
  ReferrersMemory referrers;  // under tokens_mutex

  std::atomic<ScanSource*> scan_source{nullptr};

  // --- cache ---------------------------------------------------------------

  std::shared_ptr<const ImageConfig> known_config(std::string_view digest) {
    std::lock_guard lock(mutex);
    return cache.config(std::string(digest));
  }

  // --- credentials ---------------------------------------------------------

  // The dockerconfigjson file as it is now; re-read when its mtime changes.
  std::shared_ptr<const DockerConfig> credentials_now() {
    std::lock_guard lock(mutex);
    if (settings.credentials.empty()) return nullptr;
    struct stat st {};
    if (::stat(settings.credentials.c_str(), &st) != 0) {
      docker_config = nullptr;
      docker_config_path.clear();
      return nullptr;
    }
    if (docker_config_path == settings.credentials &&
        st.st_mtim.tv_sec == docker_config_mtime.tv_sec &&
        st.st_mtim.tv_nsec == docker_config_mtime.tv_nsec) {
      return docker_config;
    }
    docker_config_path = settings.credentials;
    docker_config_mtime = st.st_mtim;
    docker_config = nullptr;
    const auto text = read_file(settings.credentials);
    if (!text) {
      spdlog::warn("registry credentials {} cannot be read", settings.credentials);
      return nullptr;
    }
    auto parsed = DockerConfig::parse(*text);
    if (!parsed) {
      spdlog::warn("registry credentials {}: {}", settings.credentials, parsed.error().str());
      return nullptr;
    }
    docker_config = std::make_shared<const DockerConfig>(std::move(parsed).value());
    return docker_config;
  }

  bool scans_looked_for() {
    std::lock_guard lock(mutex);
    return settings.scan_attached;
  }

  std::vector<RegistryEndpoint> endpoints_for(const ImageRef& ref) {
    std::lock_guard lock(mutex);
    std::vector<RegistryEndpoint> out;
    if (const auto m = settings.mirrors.find(ref.registry); m != settings.mirrors.end()) {
      out.push_back(endpoint_of_mirror(m->second, settings));
    }
    RegistryEndpoint origin{ref.registry == "docker.io" ? "registry-1.docker.io" : ref.registry,
                            true};
    for (const std::string& insecure : settings.insecure) {
      if (insecure == ref.registry || insecure == origin.host) origin.tls = false;
    }
    out.push_back(origin);
    return out;
  }

  // --- requests ------------------------------------------------------------

  std::shared_ptr<const https::TlsClient> tls_client_now() {
    std::lock_guard lock(mutex);
    return tls_client;
  }

  // One HTTP exchange: a reply, or the transport error's text.
  net::awaitable<Expected<HttpReply>> perform(const HttpCall& call) {
    https::Request request{http::verb::get, call.target, 11};
    request.set(http::field::host, call.host);
    request.set(http::field::user_agent, "cudagate");
    request.set(http::field::accept, call.accept);
    if (!call.authorization.empty()) request.set(http::field::authorization, call.authorization);
    request.keep_alive(true);
    auto response =
        co_await pool.exchange(https::endpoint_of_authority(call.host, call.tls), tls_client_now(),
                               request, https::ExchangeLimits{kRequestTimeout, call.max_body});
    if (!response) co_return response.error();
    HttpReply reply;
    reply.status = static_cast<int>(response->result_int());
    reply.content_type = std::string((*response)[http::field::content_type]);
    reply.location = std::string((*response)[http::field::location]);
    reply.www_authenticate = std::string((*response)[http::field::www_authenticate]);
    reply.retry_after = std::string((*response)[http::field::retry_after]);
    reply.body = std::move(response->body());
    co_return reply;
  }

  // --- lookups -------------------------------------------------------------

  bool host_blocked(const std::string& host, Clock::time_point now, std::chrono::seconds& left) {
    std::lock_guard lock(mutex);
    const auto it = blocked_hosts.find(host);
    if (it == blocked_hosts.end()) return false;
    if (it->second <= now) {
      blocked_hosts.erase(it);
      return false;
    }
    left = std::chrono::duration_cast<std::chrono::seconds>(it->second - now) +
           std::chrono::seconds(1);
    return true;
  }

  net::awaitable<void> run_lookup(std::string key, ImageRef ref, Platform platform) {
    auto config_file = credentials_now();
    std::optional<Credentials> credentials;
    const auto endpoints = endpoints_for(ref);
    if (config_file) {
      if (const Credentials* found = config_file->find(ref.registry)) credentials = *found;
    }
    auto self = shared_from_this();
    const bool scans = scans_looked_for();
    ImageLookup machine(
        ref, platform, endpoints, credentials ? &*credentials : nullptr, &tokens,
        [self](std::string_view digest) { return self->known_config(digest); }, LookupLimits{},
        scans);
    machine.remember_referrers(&referrers);
    ImageLookup::Step step;
    while (true) {
      {
        std::lock_guard lock(tokens_mutex);
        step = machine.next(Clock::now());
      }
      const auto* call = std::get_if<HttpCall>(&step);
      if (call == nullptr) break;
      std::chrono::seconds left{0};
      if (host_blocked(call->host, Clock::now(), left)) {
        std::string why = call->host + " rate-limited earlier requests; asked again in " +
                          std::to_string(left.count()) + " s";
        if (machine.has_config()) {
          // Only the scan goes without.
          std::lock_guard lock(tokens_mutex);
          machine.on_transport_error(why);
          continue;
        }
        step = LookupFailure{LookupFailure::Kind::rate_limited, std::move(why), left, call->host};
        break;
      }
      const auto start = Clock::now();
      auto reply = co_await perform(*call);
      if (observer != nullptr) {
        observer->registry_request(std::chrono::duration<double>(Clock::now() - start).count());
      }
      std::lock_guard lock(tokens_mutex);
      if (reply) {
        if (reply->status == 429) {
          std::lock_guard inner(mutex);
          // Retry-After is read again by the machine; here it blocks the host.
          long long seconds = 60;
          try {
            if (!reply->retry_after.empty()) seconds = std::stoll(reply->retry_after);
          } catch (const std::exception&) {
          }
          blocked_hosts[call->host] =
              Clock::now() + std::chrono::seconds(std::clamp(seconds, 1LL, 3600LL));
        }
        machine.on_reply(std::move(*reply), Clock::now());
      } else {
        machine.on_transport_error(reply.error().message);
      }
    }
    // A scan that cannot be read is for a person to fix; one that is not
    // there, or a registry that did not answer for it, is ordinary.
    using ScanResult = ImageLookup::ScanResult;
    if (machine.scan_result() == ScanResult::invalid ||
        machine.scan_result() == ScanResult::unavailable) {
      spdlog::log(
          machine.scan_result() == ScanResult::invalid ? spdlog::level::warn : spdlog::level::debug,
          "scan attached to {} ({}) not read: {}", ref.str(), platform_of(key),
          machine.scan_problem());
    }
    ScanSource* source = scan_source.load();
    if (source != nullptr && machine.scan_result() == ScanResult::none) {
      if (const auto* config = std::get_if<ImageLookup::ConfigPtr>(&step)) {
        if (auto scan = source->scanned(machine.manifest_digest())) {
          auto copy = std::make_shared<ImageConfig>(**config);
          copy->scan = std::move(scan);
          step = ImageLookup::ConfigPtr(std::move(copy));
        } else {
          source->unscanned(ref.name(), machine.manifest_digest(), platform.str());
        }
      }
    }
    finish(key, ref, step, scans, machine.manifest_digest());
  }

  void finish(const std::string& key, const ImageRef& ref, const ImageLookup::Step& step,
              bool scans = true, std::string manifest_digest = {}) {
    std::shared_ptr<Inflight> done;
    std::string result = "found";
    {
      std::lock_guard lock(mutex);
      const auto now = Clock::now();
      if (const auto* config = std::get_if<ImageLookup::ConfigPtr>(&step)) {
        cache.found(key, *config, !ref.digest.empty(), now, scans, std::move(manifest_digest));
      } else if (const auto* failure = std::get_if<LookupFailure>(&step)) {
        result = std::string(to_string(failure->kind));
        cache.failed(key, failure->message, failure->retry_after, now);
        // What a person must fix (credentials, a registry serving bad
        // content, a rate limit) is a warning; an image that is not there,
        // or a registry out of reach, is ordinary for public images.
        const bool notable = failure->kind == LookupFailure::Kind::unauthorized ||
                             failure->kind == LookupFailure::Kind::invalid ||
                             failure->kind == LookupFailure::Kind::rate_limited;
        spdlog::log(notable ? spdlog::level::warn : spdlog::level::debug,
                    "registry lookup of {} ({}) failed: {}", ref.str(), platform_of(key),
                    failure->message);
      }
      if (auto it = inflight.find(key); it != inflight.end()) {
        done = std::move(it->second);
        inflight.erase(it);
      }
    }
    if (observer != nullptr) {
      observer->registry_lookup(result);
      std::size_t images = 0;
      std::size_t stored = 0;
      {
        std::lock_guard lock(mutex);
        images = cache.images();
        stored = cache.configs();
      }
      observer->registry_cache_size(images, stored);
    }
    if (done) {
      for (auto& waiter : done->waiters) waiter();
    }
  }

  // Starts a lookup of `key` unless one is in flight; adds `waiter` (may be
  // empty) to it. Called with `mutex` held.
  void start_locked(const std::string& key, std::string_view image, std::string_view platform,
                    std::function<void()> waiter) {
    auto it = inflight.find(key);
    if (it != inflight.end()) {
      if (waiter) it->second->waiters.push_back(std::move(waiter));
      return;
    }
    auto ref = ImageRef::parse(image);
    auto parsed_platform = Platform::parse(platform);
    if (!ref || !parsed_platform) {
      const std::string why =
          !ref ? "image reference " + std::string(image) + ": " + ref.error().str()
               : parsed_platform.error().str();
      cache.failed(key, why, std::chrono::hours(24), Clock::now());
      if (waiter) net::post(ioc, std::move(waiter));
      return;
    }
    auto flight = std::make_shared<Inflight>();
    if (waiter) flight->waiters.push_back(std::move(waiter));
    inflight.emplace(key, flight);
    // Posted: the caller holds `mutex`, and a coroutine spawned from an
    // io_context thread may start at once on it.
    net::post(ioc, [self = shared_from_this(), key, image = std::move(ref).value(),
                    at = std::move(parsed_platform).value()]() mutable {
      self->spawn(key, std::move(image), std::move(at));
    });
  }

  void spawn(const std::string& key, ImageRef ref, Platform platform) {
    net::co_spawn(ioc, run_lookup(key, std::move(ref), std::move(platform)),
                  [self = shared_from_this(), key](const std::exception_ptr& error) {
                    if (!error) return;
                    // Out of memory or a bug: the lookup ends as a failure.
                    LookupFailure failure{LookupFailure::Kind::transport, "internal error", {}, {}};
                    try {
                      std::rethrow_exception(error);
                    } catch (const std::exception& e) {
                      failure.message = std::string("internal error: ") + e.what();
                    }
                    auto parsed = ImageRef::parse(key.substr(0, key.find('\n')));
                    self->finish(key, parsed ? *parsed : ImageRef{}, failure);
                  });
  }
};

RegistryClient::RegistryClient(net::io_context& ioc, RegistryObserver* observer)
    : impl_(std::make_shared<Impl>(ioc, observer)) {}

RegistryClient::~RegistryClient() = default;

std::optional<Error> RegistryClient::configure(const RegistrySettings& settings) {
  std::shared_ptr<const https::TlsClient> client;
  {
    std::lock_guard lock(impl_->mutex);
    if (impl_->tls_client && impl_->tls_ca_file == settings.ca_file) client = impl_->tls_client;
  }
  if (!client) {
    https::TlsTrust trust;
    trust.ca_file = settings.ca_file;
    auto made = https::TlsClient::make(trust);
    if (!made) return Error{"registry.caFile", made.error().message};
    client = std::move(*made);
  }
  std::lock_guard lock(impl_->mutex);
  impl_->settings = settings;
  impl_->tls_client = std::move(client);
  impl_->tls_ca_file = settings.ca_file;
  impl_->configured = true;
  impl_->cache.configure(settings.max_cache_entries, settings.cache_ttl);
  return std::nullopt;
}

RegistryClient::Answer RegistryClient::cached(std::string_view image, std::string_view platform) {
  Answer answer;
  ImageCache::Answer::Result result = ImageCache::Answer::Result::miss;
  {
    std::lock_guard lock(impl_->mutex);
    if (!impl_->configured || !impl_->settings.enabled) {
      answer.state = Answer::State::absent;
      answer.reason = "registry lookups are disabled";
      return answer;
    }
    const std::string key = cache_key(image, platform);
    ImageCache::Answer known = impl_->cache.find(key, Clock::now());
    result = known.result;
    if (known.config) {
      answer.state = Answer::State::found;
      answer.config = std::move(known.config);
    } else if (result == ImageCache::Answer::Result::failure) {
      // A failure, even an old one, is not waited for again: the image
      // is judged without a config while it is asked once more.
      answer.state = Answer::State::absent;
      answer.reason = std::move(known.failure);
    }
    if (known.ask_again) impl_->start_locked(key, image, platform, {});
  }
  if (impl_->observer != nullptr) impl_->observer->registry_cache(to_string(result));
  return answer;
}

void RegistryClient::set_scan_source(ScanSource* source) {
  impl_->scan_source.store(source);
}

void RegistryClient::attach_scan(const std::string& manifest_digest,
                                 const std::shared_ptr<const ScanFacts>& scan) {
  std::lock_guard lock(impl_->mutex);
  impl_->cache.attach_scan(manifest_digest, scan);
}

void RegistryClient::lookup(const std::vector<ImageWanted>& wanted,
                            std::chrono::milliseconds budget, std::function<void()> done) {
  struct Waiter {
    explicit Waiter(net::io_context& ioc) : timer(ioc) {}
    net::steady_timer timer;
    std::atomic<std::size_t> remaining{0};
    std::atomic<bool> fired{false};
    std::function<void()> done;
    void fire() {
      if (fired.exchange(true)) return;
      timer.cancel();
      auto call = std::move(done);
      call();
    }
  };
  auto waiter = std::make_shared<Waiter>(impl_->ioc);
  waiter->done = std::move(done);
  waiter->remaining = wanted.size() + 1;
  auto one_done = [waiter] {
    if (--waiter->remaining == 0) waiter->fire();
  };
  {
    std::lock_guard lock(impl_->mutex);
    for (const ImageWanted& w : wanted) {
      const std::string key = cache_key(w.image, w.platform);
      if (!impl_->settings.enabled || impl_->cache.fresh(key, Clock::now())) {
        one_done();
        continue;
      }
      impl_->start_locked(key, w.image, w.platform, one_done);
    }
  }
  waiter->timer.expires_after(budget);
  waiter->timer.async_wait([waiter](const beast::error_code& ec) {
    if (!ec) waiter->fire();
  });
  // The extra count held while starting: every lookup may already be done.
  net::post(impl_->ioc, one_done);
}

std::size_t RegistryClient::cached_images() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->cache.images();
}

std::size_t RegistryClient::cached_configs() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->cache.configs();
}

Expected<std::vector<RegistryClient::Answer>> look_up_once(const RegistrySettings& settings,
                                                           const std::vector<ImageWanted>& wanted) {
  net::io_context ioc(1);
  std::vector<RegistryClient::Answer> answers;
  {
    RegistryClient client(ioc, nullptr);
    if (auto error = client.configure(settings)) return *error;
    client.lookup(wanted, settings.timeout, [&ioc] { ioc.stop(); });
    ioc.run();
    for (const ImageWanted& w : wanted) {
      RegistryClient::Answer answer = client.cached(w.image, w.platform);
      if (answer.state == RegistryClient::Answer::State::miss) {
        answer.state = RegistryClient::Answer::State::absent;
        answer.reason = "no answer within registry.timeout (" +
                        std::to_string(settings.timeout.count()) + " ms)";
      }
      answers.push_back(std::move(answer));
    }
  }
  return answers;
}

}  // namespace cudagate

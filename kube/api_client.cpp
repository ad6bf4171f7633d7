// The API client: each request a coroutine on the client's strand, with its
// retries, over kept-alive connections (https/pool.h); lists page by page;
// and its blocking form on an io_context of its own.
#include "kube/api_client.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <exception>
#include <random>
#include <utility>
#include <vector>

#include "https/pool.h"
#include "kube/api_credentials.h"
#include "kube/api_transport.h"

namespace cudagate::kube {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using std::chrono::milliseconds;

http::verb verb_of(const std::string& method) {
  if (method == "PATCH") return http::verb::patch;
  if (method == "DELETE") return http::verb::delete_;
  if (method == "POST") return http::verb::post;
  if (method == "PUT") return http::verb::put;
  return http::verb::get;
}

bool retryable(int status) {
  return status == 429 || (status >= 500 && status != 501);
}

}  // namespace

std::string query_escape(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if ((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || u == '-' ||
        u == '.' || u == '_' || u == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

bool is_not_found(const Error& error) {
  // Errors of an answered request carry status_text(): "404 Not Found: ...".
  return error.message.starts_with("404 ");
}

std::string list_target(ApiCallId call, const ListOptions& options, unsigned page_size,
                        std::string_view continue_token) {
  std::string target =
      api_call(call).at_version(options.version).collection_path(options.namespace_);
  target += "?limit=" + std::to_string(page_size);
  if (!options.label_selector.empty()) {
    target += "&labelSelector=" + query_escape(options.label_selector);
  }
  if (!continue_token.empty()) target += "&continue=" + query_escape(continue_token);
  return target;
}

struct ApiClient::State {
  State(const net::any_io_executor& executor, ClusterConfig config, ApiClientOptions opts)
      : strand(net::make_strand(executor)),
        credentials(strand, std::move(config)),
        options(opts),
        random(opts.seed),
        pool(strand, https::PoolLimits{kMaxConnections, kMaxConnections, kConnectTimeout}),
        tls(credentials.config().insecure_skip_tls_verify) {}

  static constexpr std::size_t kMaxConnections = 8;

  // All on the strand.
  net::strand<net::any_io_executor> strand;
  ApiCredentials credentials;
  ApiClientOptions options;
  std::mt19937_64 random;
  https::Pool pool;
  ApiTls tls;
  bool stopped = false;
  std::vector<std::weak_ptr<net::steady_timer>> timers;

  struct Attempt {
    ApiCallId call{};
    std::string method;
    std::string target;
    std::string content_type;
    std::string body;
  };

  struct Listing {
    ApiCallId call{};
    ListOptions options;
    ListPageHandler on_page;
    DoneHandler done;
  };

  [[nodiscard]] std::string where(ApiCallId call) const {
    const ApiCall& c = api_call(call);
    return "API server " + credentials.config().server.host + ": " + std::string(c.verb) + " " +
           std::string(c.resource);
  }

  [[nodiscard]] Error stopped_error(ApiCallId call) const {
    return Error{where(call), "the client was stopped"};
  }

  milliseconds next_backoff(milliseconds& backoff) {
    backoff =
        backoff.count() == 0 ? options.initial_backoff : std::min(backoff * 2, options.max_backoff);
    const auto half = backoff.count() / 2;
    std::uniform_int_distribution<std::int64_t> jitter(0, std::max<std::int64_t>(half, 0));
    return milliseconds(backoff.count() - half + jitter(random));
  }

  // False when stop() ended the wait.
  net::awaitable<bool> sleep(milliseconds delay) {
    auto timer = std::make_shared<net::steady_timer>(strand, delay);
    std::erase_if(timers, [](const auto& w) { return w.expired(); });
    timers.push_back(timer);
    boost::system::error_code ec;
    co_await timer->async_wait(net::redirect_error(net::use_awaitable, ec));
    co_return !ec && !stopped;
  }

  // One request with its retries: the response of its last attempt (any
  // status), or an Error when it never got one.
  net::awaitable<Expected<ApiResponse>> perform(Attempt a) {
    Expected<ApiResponse> last = Error{where(a.call), "no attempt was made"};
    bool reauthenticated = false;
    milliseconds backoff{0};
    unsigned attempt = 1;
    while (true) {
      std::optional<milliseconds> delay;
      auto creds = co_await credentials.current(net::use_awaitable);
      if (stopped) co_return stopped_error(a.call);
      if (!creds) {
        last = creds.error();
      } else {
        bool renewed = false;
        auto client = tls.for_credentials(credentials.config(), *creds, renewed);
        if (!client) co_return client.error();
        if (renewed) pool.drop_idle();
        https::Request request =
            api_request(credentials.config(), *creds, verb_of(a.method), a.target);
        if (!a.content_type.empty()) request.set(http::field::content_type, a.content_type);
        if (!a.body.empty() || a.method == "PATCH") {
          request.body() = a.body;
          request.prepare_payload();
        }
        auto reply = co_await pool.exchange(
            api_endpoint(credentials.config()), *client, request,
            https::ExchangeLimits{options.request_timeout, options.max_response_bytes});
        if (stopped) co_return stopped_error(a.call);
        if (!reply) {
          last = Error{where(a.call), reply.error().message};
        } else {
          ApiResponse response;
          response.status = static_cast<int>(reply->result_int());
          response.retry_after = retry_after(reply->base());
          response.body = std::move(reply->body());
          if (response.status == 401 && !reauthenticated) {
            // A rotated token file or an expired exec credential: read again, once.
            reauthenticated = true;
            credentials.invalidate();
            continue;
          }
          if (!retryable(response.status)) {
            if (response.status == 401) credentials.invalidate();
            co_return response;
          }
          if (response.retry_after) {
            delay = std::chrono::duration_cast<milliseconds>(
                std::min(*response.retry_after, options.max_retry_after));
          }
          last = std::move(response);
        }
      }
      if (attempt >= options.max_attempts) co_return last;
      const milliseconds wait = delay ? *delay : next_backoff(backoff);
      spdlog::info("{}: retrying in {} ms (attempt {} of {})", where(a.call), wait.count(),
                   attempt + 1, options.max_attempts);
      if (!co_await sleep(wait)) co_return stopped_error(a.call);
      ++attempt;
    }
  }

  // perform(), its answer handed on unless the client was stopped.
  static net::awaitable<void> answer(std::shared_ptr<State> self, Attempt a,
                                     std::function<void(Expected<ApiResponse>)> handler) {
    auto response = co_await self->perform(std::move(a));
    if (!self->stopped) handler(std::move(response));
  }

  // Every page of a listing, each requested when the one before was handed on.
  static net::awaitable<void> list_pages(std::shared_ptr<State> self, Listing listing);

  // Runs `coroutine` on the strand; an exception out of it (out of memory, a
  // bug) is logged, and what waited for it is not answered.
  static void spawn(const std::shared_ptr<State>& self, net::awaitable<void> coroutine) {
    net::co_spawn(self->strand, std::move(coroutine), [](const std::exception_ptr& error) {
      if (!error) return;
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        spdlog::error("API client: internal error: {}", e.what());
      }
    });
  }
};

ApiClient::ApiClient(const net::any_io_executor& executor, ClusterConfig config,
                     ApiClientOptions options)
    : state_(std::make_shared<State>(executor, std::move(config), options)) {}

ApiClient::~ApiClient() = default;

void ApiClient::stop() {
  net::post(state_->strand, [state = state_] {
    state->stopped = true;
    state->pool.close();
    for (auto& w : state->timers) {
      if (auto t = w.lock()) t->cancel();
    }
  });
}

void ApiClient::request(ApiCallId call, std::string method, std::string target,
                        std::string content_type, std::string body,
                        std::function<void(Expected<ApiResponse>)> handler) {
  State::Attempt attempt{call, std::move(method), std::move(target), std::move(content_type),
                         std::move(body)};
  State::spawn(state_, State::answer(state_, std::move(attempt), std::move(handler)));
}

namespace {

// "403 Forbidden: pods is forbidden: User ... cannot list resource ..."
std::string status_text(const ApiResponse& response) {
  std::string reason(http::obsolete_reason(static_cast<http::status>(response.status)));
  return std::to_string(response.status) + " " + reason + ": " + status_message(response.body);
}

Expected<nlohmann::json> json_body(const ApiResponse& response, const std::string& where) {
  auto doc = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Error{where, "the response is not a JSON object"};
  }
  return doc;
}

}  // namespace

net::awaitable<void> ApiClient::State::list_pages(std::shared_ptr<State> self, Listing listing) {
  const std::string where = self->where(listing.call);
  const ApiCall c = api_call(listing.call).at_version(listing.options.version);
  std::string continue_token;
  unsigned restarts = 0;
  bool first = true;
  while (true) {
    Attempt a{listing.call, "GET",
              list_target(listing.call, listing.options, self->options.page_size, continue_token),
              "", ""};
    auto response = co_await self->perform(std::move(a));
    if (self->stopped) co_return;
    if (!response) co_return listing.done(response.error());
    if (response->status == 410 && !continue_token.empty() && restarts < 3) {
      // The continue token expired (etcd compaction): the list starts again.
      spdlog::info("{}: the continue token expired (410 Gone): listing again", where);
      ++restarts;
      continue_token.clear();
      first = true;
      continue;
    }
    if (response->status != 200) co_return listing.done(Error{where, status_text(*response)});
    auto page = json_body(*response, where);
    if (!page) co_return listing.done(page.error());
    std::string token;
    if (auto meta = page->find("metadata"); meta != page->end() && meta->is_object()) {
      if (auto it = meta->find("continue"); it != meta->end() && it->is_string()) {
        token = it->get<std::string>();
      }
    }
    if (auto items = page->find("items"); items != page->end() && items->is_array()) {
      for (auto& item : *items) {
        if (!item.is_object()) continue;
        if (!item.contains("kind")) item["kind"] = c.kind;
        if (!item.contains("apiVersion")) item["apiVersion"] = c.api_version();
      }
    }
    listing.on_page(std::move(*page), std::exchange(first, false));
    if (token.empty()) co_return listing.done(std::nullopt);
    continue_token = std::move(token);
  }
}

void ApiClient::get(ApiCallId call, const std::string& namespace_, const std::string& name,
                    ObjectHandler handler) {
  const std::string where = state_->where(call) + " " + name;
  request(call, "GET", api_call(call).object_path(namespace_, name), "", "",
          [handler = std::move(handler), where](Expected<ApiResponse> response) {
            if (!response) return handler(response.error());
            if (response->status != 200) return handler(Error{where, status_text(*response)});
            handler(json_body(*response, where));
          });
}

void ApiClient::list(ApiCallId call, ListOptions options, ListPageHandler on_page,
                     DoneHandler done) {
  State::Listing listing{call, std::move(options), std::move(on_page), std::move(done)};
  State::spawn(state_, State::list_pages(state_, std::move(listing)));
}

void ApiClient::apply(ApiCallId call, const std::string& namespace_, const std::string& name,
                      const nlohmann::json& object, ObjectHandler handler) {
  const std::string where = state_->where(call) + " " + name;
  request(call, "PATCH", api_call(call).object_path(namespace_, name) + std::string(kApplyQuery),
          std::string(kApplyContentType), object.dump(),
          [handler = std::move(handler), where](Expected<ApiResponse> response) {
            if (!response) return handler(response.error());
            if (response->status != 200 && response->status != 201) {
              return handler(Error{where, status_text(*response)});
            }
            handler(json_body(*response, where));
          });
}

void ApiClient::remove(ApiCallId call, const std::string& namespace_, const std::string& name,
                       DoneHandler done) {
  const std::string where = state_->where(call) + " " + name;
  request(call, "DELETE", api_call(call).object_path(namespace_, name), "", "",
          [done = std::move(done), where](Expected<ApiResponse> response) {
            if (!response) return done(response.error());
            const int s = response->status;
            if (s == 200 || s == 202 || s == 404) return done(std::nullopt);
            done(Error{where, status_text(*response)});
          });
}

struct BlockingApiClient::Impl {
  Impl(ClusterConfig config, ApiClientOptions options)
      : client(ioc.get_executor(), std::move(config), options) {}
  net::io_context ioc;
  ApiClient client;

  void run() {
    ioc.restart();
    ioc.run();
  }
};

BlockingApiClient::BlockingApiClient(ClusterConfig config, ApiClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(config), options)) {}

BlockingApiClient::~BlockingApiClient() = default;

Expected<nlohmann::json> BlockingApiClient::get(ApiCallId call, const std::string& namespace_,
                                                const std::string& name) {
  Expected<nlohmann::json> out = Error{"", "no answer"};
  impl_->client.get(call, namespace_, name,
                    [&out](Expected<nlohmann::json> r) { out = std::move(r); });
  impl_->run();
  return out;
}

std::optional<Error> BlockingApiClient::list(ApiCallId call, const ListOptions& options,
                                             const ListPageHandler& on_page) {
  std::optional<Error> out = Error{"", "no answer"};
  impl_->client.list(call, options, on_page,
                     [&out](std::optional<Error> e) { out = std::move(e); });
  impl_->run();
  return out;
}

Expected<nlohmann::json> BlockingApiClient::apply(ApiCallId call, const std::string& namespace_,
                                                  const std::string& name,
                                                  const nlohmann::json& object) {
  Expected<nlohmann::json> out = Error{"", "no answer"};
  impl_->client.apply(call, namespace_, name, object,
                      [&out](Expected<nlohmann::json> r) { out = std::move(r); });
  impl_->run();
  return out;
}

std::optional<Error> BlockingApiClient::remove(ApiCallId call, const std::string& namespace_,
                                               const std::string& name) {
  std::optional<Error> out = Error{"", "no answer"};
  impl_->client.remove(call, namespace_, name,
                       [&out](std::optional<Error> e) { out = std::move(e); });
  impl_->run();
  return out;
}

}  // namespace cudagate::kube

// The API client: one connection a request, retries inside the request,
// lists page by page; and its blocking form on an io_context of its own.
#include "kube/api_client.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <mutex>
#include <random>
#include <utility>
#include <vector>

#include "kube/api_connection.h"

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

struct ApiClient::State : std::enable_shared_from_this<ApiClient::State> {
  State(const net::any_io_executor& executor, ClusterConfig config, ApiClientOptions opts)
      : strand(net::make_strand(executor)),
        credentials(strand, std::move(config)),
        options(opts),
        random(opts.seed) {}

  net::strand<net::any_io_executor> strand;
  ApiCredentials credentials;
  ApiClientOptions options;
  std::mt19937_64 random;
  bool stopped = false;  // on the strand
  std::vector<std::weak_ptr<ApiConnection>> connections;
  std::vector<std::weak_ptr<net::steady_timer>> timers;

  struct Attempt {
    ApiCallId call{};
    std::string method;
    std::string target;
    std::string content_type;
    std::string body;
    std::function<void(Expected<ApiResponse>)> handler;
    unsigned attempts = 0;
    bool reauthenticated = false;
    milliseconds backoff{0};
  };

  std::string where(ApiCallId call) const {
    const ApiCall& c = api_call(call);
    return "API server " + credentials.config().server.host + ": " + std::string(c.verb) + " " +
           std::string(c.resource);
  }

  void prune() {
    std::erase_if(connections, [](const auto& w) { return w.expired(); });
    std::erase_if(timers, [](const auto& w) { return w.expired(); });
  }

  milliseconds next_backoff(Attempt& a) {
    a.backoff = a.backoff.count() == 0 ? options.initial_backoff
                                       : std::min(a.backoff * 2, options.max_backoff);
    const auto half = a.backoff.count() / 2;
    std::uniform_int_distribution<std::int64_t> jitter(0, std::max<std::int64_t>(half, 0));
    return milliseconds(a.backoff.count() - half + jitter(random));
  }

  void wait_then(milliseconds delay, const std::shared_ptr<Attempt>& a) {
    auto timer = std::make_shared<net::steady_timer>(strand, delay);
    prune();
    timers.push_back(timer);
    timer->async_wait([self = shared_from_this(), timer, a](const boost::system::error_code& ec) {
      if (ec || self->stopped) return;
      self->run(a);
    });
  }

  // A failure of one attempt: retried while attempts are left, else the end.
  void retry_or_fail(const std::shared_ptr<Attempt>& a, std::optional<milliseconds> delay,
                     Expected<ApiResponse> last) {
    if (a->attempts < options.max_attempts) {
      const milliseconds wait = delay ? *delay : next_backoff(*a);
      spdlog::info("{}: retrying in {} ms (attempt {} of {})", where(a->call), wait.count(),
                   a->attempts + 1, options.max_attempts);
      wait_then(wait, a);
      return;
    }
    a->handler(std::move(last));
  }

  void run(const std::shared_ptr<Attempt>& a) {
    if (stopped) return;
    ++a->attempts;
    credentials.async_current([self = shared_from_this(), a](Expected<Credentials> creds) {
      if (self->stopped) return;
      if (!creds) return self->retry_or_fail(a, std::nullopt, creds.error());
      auto opened = open_connection(self->strand, self->credentials.config(), *creds,
                                    verb_of(a->method), a->target);
      if (!opened) return a->handler(opened.error());
      std::shared_ptr<ApiConnection> connection = std::move(*opened);
      if (!a->content_type.empty()) {
        connection->request.set(http::field::content_type, a->content_type);
      }
      if (!a->body.empty() || a->method == "PATCH") {
        connection->request.body() = a->body;
        connection->request.prepare_payload();
      }
      self->prune();
      self->connections.push_back(connection);
      send_request(
          connection, self->credentials.config(),
          [self, a, connection](const boost::system::error_code& ec, std::string_view what) {
            if (connection->cancelled || self->stopped) return;
            if (ec) {
              return self->retry_or_fail(
                  a, std::nullopt,
                  Error{self->where(a->call), std::string(what) + ": " + ec.message()});
            }
            self->read(a, connection);
          });
    });
  }

  void read(const std::shared_ptr<Attempt>& a, const std::shared_ptr<ApiConnection>& connection) {
    auto parser = std::make_shared<http::response_parser<http::string_body>>();
    parser->body_limit(options.max_response_bytes);
    beast::get_lowest_layer(connection->stream).expires_after(options.request_timeout);
    http::async_read(connection->stream, connection->buffer, *parser,
                     [self = shared_from_this(), a, connection, parser](
                         const boost::system::error_code& ec, std::size_t) {
                       if (connection->cancelled || self->stopped) return;
                       if (ec) {
                         return self->retry_or_fail(
                             a, std::nullopt,
                             Error{self->where(a->call), "no whole response: " + ec.message()});
                       }
                       ApiResponse response;
                       response.status = static_cast<int>(parser->get().result_int());
                       response.retry_after = retry_after(parser->get().base());
                       response.body = std::move(parser->get().body());
                       if (response.status == 401 && !a->reauthenticated) {
                         // A rotated token file or an expired exec credential: read again, once.
                         a->reauthenticated = true;
                         self->credentials.invalidate();
                         --a->attempts;
                         return self->run(a);
                       }
                       if (retryable(response.status)) {
                         std::optional<milliseconds> delay;
                         if (response.retry_after) {
                           delay = std::chrono::duration_cast<milliseconds>(
                               std::min(*response.retry_after, self->options.max_retry_after));
                         }
                         return self->retry_or_fail(a, delay, std::move(response));
                       }
                       if (response.status == 401) self->credentials.invalidate();
                       a->handler(std::move(response));
                     });
  }

  struct Listing {
    ApiCallId call{};
    ListOptions options;
    ListPageHandler on_page;
    DoneHandler done;
    std::string continue_token;
    unsigned restarts = 0;
    bool first = true;
  };

  // Requests the listing's next page; its answer requests the one after.
  static void list_step(const std::shared_ptr<State>& state,
                        const std::shared_ptr<Listing>& listing);
};

ApiClient::ApiClient(const net::any_io_executor& executor, ClusterConfig config,
                     ApiClientOptions options)
    : state_(std::make_shared<State>(executor, std::move(config), options)) {}

ApiClient::~ApiClient() = default;

void ApiClient::stop() {
  net::post(state_->strand, [state = state_] {
    state->stopped = true;
    for (auto& w : state->connections) {
      if (auto c = w.lock()) c->cancel();
    }
    for (auto& w : state->timers) {
      if (auto t = w.lock()) t->cancel();
    }
  });
}

void ApiClient::request(ApiCallId call, std::string method, std::string target,
                        std::string content_type, std::string body,
                        std::function<void(Expected<ApiResponse>)> handler) {
  auto attempt = std::make_shared<State::Attempt>();
  attempt->call = call;
  attempt->method = std::move(method);
  attempt->target = std::move(target);
  attempt->content_type = std::move(content_type);
  attempt->body = std::move(body);
  attempt->handler = std::move(handler);
  net::post(state_->strand, [state = state_, attempt] { state->run(attempt); });
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

void ApiClient::State::list_step(const std::shared_ptr<State>& state,
                                 const std::shared_ptr<Listing>& listing) {
  auto a = std::make_shared<Attempt>();
  a->call = listing->call;
  a->method = "GET";
  a->target = list_target(listing->call, listing->options, state->options.page_size,
                          listing->continue_token);
  std::weak_ptr<State> weak = state;
  a->handler = [weak, listing](Expected<ApiResponse> response) {
    auto self = weak.lock();
    if (!self) return;
    const std::string where = self->where(listing->call);
    if (!response) return listing->done(response.error());
    if (response->status == 410 && !listing->continue_token.empty() && listing->restarts < 3) {
      // The continue token expired (etcd compaction): the list starts again.
      spdlog::info("{}: the continue token expired (410 Gone): listing again", where);
      ++listing->restarts;
      listing->continue_token.clear();
      listing->first = true;
      return list_step(self, listing);
    }
    if (response->status != 200) return listing->done(Error{where, status_text(*response)});
    auto page = json_body(*response, where);
    if (!page) return listing->done(page.error());
    const ApiCall c = api_call(listing->call).at_version(listing->options.version);
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
    const bool first = listing->first;
    listing->first = false;
    listing->on_page(std::move(*page), first);
    if (token.empty()) return listing->done(std::nullopt);
    listing->continue_token = std::move(token);
    list_step(self, listing);
  };
  state->run(a);
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
  auto listing = std::make_shared<State::Listing>();
  listing->call = call;
  listing->options = std::move(options);
  listing->on_page = std::move(on_page);
  listing->done = std::move(done);
  net::post(state_->strand, [state = state_, listing] { State::list_step(state, listing); });
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

// Performing the list-and-watch protocol over cudagate's HTTPS client: each
// list or watch a coroutine, list pages exchanged over the watcher's pool of
// one kept-alive connection, a watch on a connection of its own with its
// body read as it arrives.
#include "kube/collection_watcher.h"

#include <spdlog/spdlog.h>

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <chrono>
#include <exception>
#include <optional>
#include <utility>

#include "https/connection.h"
#include "kube/event_stream.h"

namespace cudagate::kube {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using std::chrono::seconds;

// Sending a list request and reading its whole page, one deadline (the
// pool's): the 30 s to send and 120 s to read that a list had on a
// connection of its own. A page of 500 Nodes is a few megabytes.
constexpr seconds kListTimeout{150};
constexpr std::size_t kMaxListPage = std::size_t{1} << 30;
constexpr std::size_t kMaxErrorBody = std::size_t{64} * 1024;
constexpr seconds kErrorReadTimeout{120};

}  // namespace

struct CollectionWatcher::Request {
  WatchAction action;
  std::shared_ptr<https::Connection> connection;  // a watch's; a list's is the pool's
  std::array<char, std::size_t{64} * 1024> chunk{};
  std::string body;  // a list page, or an error's body
  EventStream events;
  int status = 0;
  std::optional<seconds> retry_after;
  bool cancelled = false;

  void cancel() {
    cancelled = true;
    if (connection) connection->cancel();
  }
};

CollectionWatcher::CollectionWatcher(std::shared_ptr<ApiCredentials> credentials,
                                     WatchedCollection& collection,
                                     std::function<void(const WatchAction& action)> on_step,
                                     WatchOptions options)
    : strand_(credentials->strand()),
      credentials_(std::move(credentials)),
      collection_(collection),
      on_step_(std::move(on_step)),
      protocol_(options),
      tls_(credentials_->config().insecure_skip_tls_verify),
      // One request at a time, so one connection, kept for the next page or
      // relist.
      pool_(strand_, https::PoolLimits{1, 1, kConnectTimeout}),
      wait_timer_(strand_) {}

CollectionWatcher::~CollectionWatcher() = default;

void CollectionWatcher::start() {
  net::post(strand_, [this] { perform(protocol_.start()); });
}

void CollectionWatcher::stop() {
  net::post(strand_, [this] {
    stopped_ = true;
    wait_timer_.cancel();
    pool_.close();  // ends a list exchange in flight
    if (current_) {
      current_->cancel();
      current_.reset();
    }
  });
}

void CollectionWatcher::perform(WatchAction action) {
  if (stopped_) return;
  if (on_step_) on_step_(action);
  if (action.kind == WatchAction::Kind::wait) {
    wait_timer_.expires_after(action.delay);
    wait_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || stopped_) return;
      perform(protocol_.resume());
    });
    return;
  }
  auto request = std::make_shared<Request>();
  request->action = std::move(action);
  current_ = request;
  net::co_spawn(strand_, run(request), [](const std::exception_ptr& error) {
    if (!error) return;
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      spdlog::error("API server: a watch request ended: {}", e.what());
    }
  });
}

void CollectionWatcher::fail(std::string_view what) {
  spdlog::warn("API server {}: {}", credentials_->config().server.host, what);
  current_.reset();
  perform(protocol_.transport_error());
}

net::awaitable<void> CollectionWatcher::run(std::shared_ptr<Request> request) {
  // After each wait: a cancelled request touches nothing of the watcher.
  auto credentials = co_await credentials_->current(net::use_awaitable);
  if (request->cancelled) co_return;
  if (!credentials) {
    spdlog::error("{}", credentials.error().str());
    current_.reset();
    perform(protocol_.transport_error());
    co_return;
  }
  const ClusterConfig& config = credentials_->config();
  bool renewed = false;
  auto client = tls_.for_credentials(config, *credentials, renewed);
  if (!client) {
    spdlog::error("{}", client.error().str());
    current_.reset();
    perform(protocol_.transport_error());
    co_return;
  }
  if (renewed) pool_.drop_idle();
  const https::Endpoint endpoint = api_endpoint(config);
  const std::string target = collection_.target(request->action, protocol_.options());
  if (request->action.kind == WatchAction::Kind::list) {
    https::Request message = api_request(config, *credentials, http::verb::get, target);
    auto reply = co_await pool_.exchange(endpoint, *client, message,
                                         https::ExchangeLimits{kListTimeout, kMaxListPage});
    if (request->cancelled) co_return;
    if (!reply) co_return fail(reply.error().message);
    request->status = static_cast<int>(reply->result_int());
    request->retry_after = retry_after(reply->base());
    request->body = std::move(reply->body());
    current_.reset();
    finish(request, {});
    co_return;
  }

  // A watch: its events as they arrive, on a connection it holds alone.
  request->connection = std::make_shared<https::Connection>(strand_);
  https::Connection& connection = *request->connection;
  auto failure = co_await connection.open(endpoint, *client, kConnectTimeout);
  if (request->cancelled) co_return;
  if (failure) co_return fail(failure->message);

  https::Request message =
      api_request(config, *credentials, http::verb::get, target, /*keep_alive=*/false);
  connection.tcp().expires_after(kConnectTimeout);
  auto ec = co_await connection.write(message);
  if (request->cancelled) co_return;
  if (ec) co_return fail("cannot send the request: " + ec.message());

  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);
  connection.tcp().expires_after(kConnectTimeout);
  ec = co_await connection.read_header(parser);
  if (request->cancelled) co_return;
  if (ec) co_return fail("no response: " + ec.message());
  request->status = static_cast<int>(parser.get().result_int());
  request->retry_after = retry_after(parser.get().base());

  // The body as it arrives: the watch's events, or an error.
  const bool watching = request->status == 200;
  while (true) {
    connection.tcp().expires_after(watching ? protocol_.options().watch_timeout + seconds(30)
                                            : kErrorReadTimeout);
    auto& body = parser.get().body();
    body.data = request->chunk.data();
    body.size = request->chunk.size();
    ec = co_await connection.read_some(parser);
    if (request->cancelled) co_return;
    if (ec == http::error::need_buffer) ec = {};
    const std::size_t got = request->chunk.size() - parser.get().body().size;
    const std::string_view bytes(request->chunk.data(), got);
    if (!ec && got > 0) {
      if (watching) {
        if (!deliver_events(request, bytes)) co_return;
      } else if (request->body.size() + got <= kMaxErrorBody) {
        request->body.append(bytes);  // enough of an error body to say what it was
      }
    }
    if (ec || parser.is_done()) {
      current_.reset();
      finish(request, ec);
      co_return;
    }
  }
}

bool CollectionWatcher::deliver_events(const std::shared_ptr<Request>& request,
                                       std::string_view bytes) {
  auto objects = request->events.feed(bytes);
  if (!objects) {
    spdlog::warn("API server: unreadable watch stream: {}", objects.error().str());
    request->cancel();
    current_.reset();
    perform(protocol_.transport_error());
    return false;
  }
  for (const std::string_view text : *objects) {
    auto event = collection_.read_event(text);
    if (!event) {
      spdlog::warn("API server: {}: skipping a watch event: {}", collection_.name(),
                   event.error().str());
      continue;
    }
    if (event->type == EventEnvelope::Type::error) {
      collection_.flush_events();
      spdlog::info("API server: {}: watch ended by the server: {} ({})", collection_.name(),
                   event->message, event->code);
      request->cancel();
      current_.reset();
      perform(protocol_.error_event(event->code));
      return false;
    }
    protocol_.event(event->resource_version);
  }
  collection_.flush_events();
  return true;
}

void CollectionWatcher::finish(const std::shared_ptr<Request>& request,
                               boost::system::error_code ec) {
  const bool list = request->action.kind == WatchAction::Kind::list;
  if (request->status != 200) {
    if (ec && ec != http::error::end_of_stream && ec != net::ssl::error::stream_truncated) {
      spdlog::debug("API server: error body cut short: {}", ec.message());
    }
    const std::string message = status_message(request->body);
    if (request->status == 401) {
      credentials_->invalidate();
      spdlog::error("API server refused the credentials (401 Unauthorized): {}", message);
    } else if (request->status == 410) {
      spdlog::info("API server: {}: resourceVersion expired (410 Gone): listing again",
                   collection_.name());
    } else if (request->status == 404) {
      switch (collection_.on_not_found()) {
        case WatchedCollection::NotFound::relist:
          protocol_ = WatchProtocol(protocol_.options());
          perform(protocol_.start());
          return;
        case WatchedCollection::NotFound::absent:
          return;  // nothing more to ask
        case WatchedCollection::NotFound::retry:
          spdlog::warn("API server answered 404 {} of {}: {}", list ? "a list" : "a watch",
                       collection_.name(), message);
          break;
      }
    } else {
      if (list) collection_.on_refused(request->status);
      spdlog::warn("API server answered {} {} of {}: {}", request->status,
                   list ? "a list" : "a watch", collection_.name(), message);
    }
    perform(protocol_.http_status(request->status, request->retry_after));
    return;
  }
  if (!list) {
    if (ec) spdlog::info("API server: watch stream ended: {}", ec.message());
    perform(protocol_.stream_closed());
    return;
  }
  auto page = collection_.read_page(std::exchange(request->body, {}));
  if (!page) {
    spdlog::warn("API server: unreadable {} list: {}", collection_.name(), page.error().str());
    perform(protocol_.transport_error());
    return;
  }
  const bool first = request->action.token.empty();
  WatchAction next = protocol_.page(page->continue_token, page->resource_version);
  collection_.deliver_page(first, next.kind == WatchAction::Kind::watch);
  perform(std::move(next));
}

}  // namespace cudagate::kube

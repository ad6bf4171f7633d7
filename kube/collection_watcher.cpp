// Performing the list-and-watch protocol over HTTPS with Boost.Beast: one
// connection a request, the watch body read as it arrives.
#include "kube/collection_watcher.h"

#include <openssl/ssl.h>
#include <spdlog/spdlog.h>

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <exception>
#include <optional>
#include <thread>
#include <utility>

#include "kube/event_stream.h"

namespace cudagate::kube {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using std::chrono::seconds;

constexpr seconds kListReadTimeout{120};
constexpr std::size_t kMaxListPage = std::size_t{1} << 30;
constexpr std::size_t kMaxErrorBody = std::size_t{64} * 1024;

}  // namespace

struct CollectionWatcher::Request : std::enable_shared_from_this<CollectionWatcher::Request> {
  WatchAction action;
  std::shared_ptr<ApiConnection> connection;
  http::response_parser<http::buffer_body> parser;
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
      wait_timer_(strand_) {}

CollectionWatcher::~CollectionWatcher() = default;

void CollectionWatcher::start() {
  net::post(strand_, [this] { perform(protocol_.start()); });
}

void CollectionWatcher::stop() {
  net::post(strand_, [this] {
    stopped_ = true;
    wait_timer_.cancel();
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

  send(std::move(action));
}

void CollectionWatcher::send(WatchAction action) {
  credentials_->async_current(
      [this, action = std::move(action)](Expected<Credentials> credentials) mutable {
        if (stopped_) return;
        if (!credentials) {
          spdlog::error("{}", credentials.error().str());
          perform(protocol_.transport_error());
          return;
        }
        const ClusterConfig& config = credentials_->config();
        const std::string target = collection_.target(action, protocol_.options());
        auto connection = open_connection(strand_, config, *credentials, http::verb::get, target);
        if (!connection) {
          spdlog::error("{}", connection.error().str());
          perform(protocol_.transport_error());
          return;
        }
        auto request = std::make_shared<Request>();
        request->action = std::move(action);
        request->connection = std::move(*connection);
        current_ = request;
        send_request(request->connection, config,
                     [this, request](const boost::system::error_code& ec, std::string_view what) {
                       if (failed(request, ec, what)) return;
                       read_header(request);
                     });
      });
}

bool CollectionWatcher::failed(const std::shared_ptr<Request>& request,
                               const boost::system::error_code& ec, std::string_view what) {
  if (request->cancelled) return true;
  if (!ec) return false;
  spdlog::warn("API server {}: {}: {}", credentials_->config().server.host, what, ec.message());
  current_.reset();
  perform(protocol_.transport_error());
  return true;
}

void CollectionWatcher::read_header(const std::shared_ptr<Request>& request) {
  beast::get_lowest_layer(request->connection->stream).expires_after(kConnectTimeout);
  request->parser.body_limit(request->action.kind == WatchAction::Kind::list
                                 ? boost::optional<std::uint64_t>(kMaxListPage)
                                 : boost::none);
  http::async_read_header(request->connection->stream, request->connection->buffer, request->parser,
                          [this, request](const boost::system::error_code& ec, std::size_t) {
                            if (request->cancelled) return;
                            if (ec) {
                              spdlog::warn("API server: no response: {}", ec.message());
                              current_.reset();
                              perform(protocol_.transport_error());
                              return;
                            }
                            const auto& header = request->parser.get();
                            request->status = static_cast<int>(header.result_int());
                            request->retry_after = retry_after(header.base());
                            read_body(request);
                          });
}

void CollectionWatcher::read_body(const std::shared_ptr<Request>& request) {
  const bool watching = request->status == 200 && request->action.kind == WatchAction::Kind::watch;
  beast::get_lowest_layer(request->connection->stream)
      .expires_after(watching ? protocol_.options().watch_timeout + seconds(30) : kListReadTimeout);
  auto& body = request->parser.get().body();
  body.data = request->chunk.data();
  body.size = request->chunk.size();
  http::async_read_some(
      request->connection->stream, request->connection->buffer, request->parser,
      [this, request, watching](boost::system::error_code ec, std::size_t) {
        if (request->cancelled) return;
        if (ec == http::error::need_buffer) ec = {};
        const std::size_t got = request->chunk.size() - request->parser.get().body().size;
        const std::string_view bytes(request->chunk.data(), got);
        if (!ec && got > 0) {
          if (watching) {
            if (!deliver_events(request, bytes)) return;
          } else if (request->status != 200 && request->body.size() + got > kMaxErrorBody) {
            // Enough of an error body to say what it was.
          } else {
            request->body.append(bytes);
          }
        }
        if (ec || request->parser.is_done()) {
          current_.reset();
          finish(request, ec);
          return;
        }
        read_body(request);
      });
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
  if (ec) {
    spdlog::warn("API server: {} list cut short: {}", collection_.name(), ec.message());
    perform(protocol_.transport_error());
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

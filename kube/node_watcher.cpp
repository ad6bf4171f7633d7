// Performing the list-and-watch protocol over HTTPS with Boost.Beast: one
// connection a request, the watch body read as it arrives.
#include "kube/node_watcher.h"

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
#include "kube/node_events.h"

namespace cudagate::kube {
namespace {

namespace net = boost::asio;
namespace ssl = net::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using std::chrono::seconds;

constexpr seconds kConnectTimeout{30};
constexpr seconds kListReadTimeout{120};
constexpr std::size_t kMaxListPage = std::size_t{1} << 30;
constexpr std::size_t kMaxErrorBody = 64 * 1024;
constexpr std::string_view kCollection = "/api/v1/nodes";

std::int64_t unix_now() {
  return std::chrono::duration_cast<seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool is_ip_address(const std::string& host) {
  boost::system::error_code ec;
  net::ip::make_address(host, ec);
  return !ec;
}

// A TLS 1.2+ client context that verifies the server with `credentials`'
// CA (or the system's) and presents its client certificate, if any.
ssl::context client_context(const Credentials& credentials, const ClusterConfig& config) {
  ssl::context ctx(ssl::context::tls_client);
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                  ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  if (config.insecure_skip_tls_verify) {
    ctx.set_verify_mode(ssl::verify_none);
  } else {
    ctx.set_verify_mode(ssl::verify_peer);
    if (credentials.ca_pem.empty()) {
      ctx.set_default_verify_paths();
    } else {
      ctx.add_certificate_authority(net::buffer(credentials.ca_pem));
    }
  }
  if (!credentials.client_cert_pem.empty()) {
    ctx.use_certificate_chain(net::buffer(credentials.client_cert_pem));
    ctx.use_private_key(net::buffer(credentials.client_key_pem), ssl::context::pem);
  }
  return ctx;
}

std::optional<seconds> retry_after(const http::response_header<>& header) {
  const auto it = header.find(http::field::retry_after);
  if (it == header.end()) return std::nullopt;
  const std::string_view value = it->value();
  if (value.empty() || value.size() > 9) return std::nullopt;
  std::int64_t n = 0;
  for (const char c : value) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return seconds(n);
}

// The Status message of an error body, or the body's start.
std::string status_message(const std::string& body) {
  const auto doc = nlohmann::json::parse(body, nullptr, false);
  if (doc.is_object()) {
    const auto it = doc.find("message");
    if (it != doc.end() && it->is_string()) return it->get<std::string>();
  }
  return body.substr(0, 200);
}

}  // namespace

struct NodeWatcher::Request : std::enable_shared_from_this<NodeWatcher::Request> {
  Request(const net::strand<net::any_io_executor>& strand, ssl::context context)
      : ssl_context(std::move(context)), stream(strand, ssl_context), resolver(strand) {}

  WatchAction action;
  ssl::context ssl_context;
  beast::ssl_stream<beast::tcp_stream> stream;
  tcp::resolver resolver;
  http::request<http::empty_body> request;
  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  std::array<char, 64 * 1024> chunk{};
  std::string body;  // a list page, or an error's body
  EventStream events;
  int status = 0;
  std::optional<seconds> retry_after;
  bool cancelled = false;
};

NodeWatcher::NodeWatcher(net::any_io_executor executor, ClusterConfig config,
                         NodeWatcherHandlers handlers, WatchOptions options)
    : strand_(net::make_strand(std::move(executor))),
      credentials_(std::move(config)),
      handlers_(std::move(handlers)),
      protocol_(options),
      wait_timer_(strand_) {}

NodeWatcher::~NodeWatcher() {
  if (exec_thread_.joinable()) exec_thread_.join();
}

void NodeWatcher::start() {
  net::post(strand_, [this] { perform(protocol_.start()); });
}

void NodeWatcher::stop() {
  net::post(strand_, [this] {
    stopped_ = true;
    wait_timer_.cancel();
    if (current_) {
      current_->cancelled = true;
      current_->resolver.cancel();
      beast::get_lowest_layer(current_->stream).cancel();
      current_.reset();
    }
  });
}

void NodeWatcher::perform(WatchAction action) {
  if (stopped_) return;
  if (handlers_.on_step) handlers_.on_step(action);
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

void NodeWatcher::send(WatchAction action) {
  const ClusterConfig& config = credentials_.config();
  if (credentials_.exec_due(unix_now())) {
    if (exec_thread_.joinable()) exec_thread_.join();  // the previous run, finished
    exec_thread_ = std::thread([this, plugin = *config.exec, action = std::move(action)] {
      auto credential = run_exec_plugin(plugin, kExecTimeout);
      net::post(strand_, [this, credential = std::move(credential), action]() mutable {
        if (stopped_) return;
        if (!credential) {
          spdlog::error("API server {}: no credentials: {}", credentials_.config().server.host,
                        credential.error().str());
          perform(protocol_.transport_error());
          return;
        }
        credentials_.set_exec(std::move(*credential));
        if (credentials_.exec_due(unix_now())) {
          spdlog::error("API server {}: the exec plugin's credential has already expired",
                        credentials_.config().server.host);
          perform(protocol_.transport_error());
          return;
        }
        send(std::move(action));
      });
    });
    return;
  }
  auto credentials = credentials_.current(unix_now());
  if (!credentials) {
    spdlog::error("API server {}: no credentials: {}", config.server.host,
                  credentials.error().str());
    perform(protocol_.transport_error());
    return;
  }
  std::shared_ptr<Request> request;
  try {
    request = std::make_shared<Request>(strand_, client_context(*credentials, config));
  } catch (const std::exception& e) {
    spdlog::error("API server {}: cannot set up TLS with the configured certificates: {}",
                  config.server.host, e.what());
    perform(protocol_.transport_error());
    return;
  }
  request->action = std::move(action);
  const std::string& host = config.server.host;
  const std::string verify_name = config.tls_server_name.empty() ? host : config.tls_server_name;
  if (!is_ip_address(verify_name)) {
    SSL_set_tlsext_host_name(request->stream.native_handle(), verify_name.c_str());
  }
  if (!config.insecure_skip_tls_verify) {
    request->stream.set_verify_callback(ssl::host_name_verification(verify_name));
  }
  auto& req = request->request;
  req.method(http::verb::get);
  req.target(config.server.path_prefix + request->action.target(kCollection, protocol_.options()));
  req.version(11);
  const bool v6 = host.find(':') != std::string::npos;
  req.set(http::field::host,
          (v6 ? "[" + host + "]" : host) + ":" + std::to_string(config.server.port));
  req.set(http::field::accept, "application/json");
  req.set(http::field::user_agent, std::string("cudagate/") + CUDAGATE_KUBE_VERSION);
  req.set(http::field::connection, "close");
  if (!credentials->token.empty()) {
    req.set(http::field::authorization, "Bearer " + credentials->token);
  }
  current_ = request;

  request->resolver.async_resolve(
      host, std::to_string(config.server.port),
      [this, request](const boost::system::error_code& ec,
                      const tcp::resolver::results_type& results) {
        if (failed(request, ec, "cannot resolve the server's name")) return;
        beast::get_lowest_layer(request->stream).expires_after(kConnectTimeout);
        beast::get_lowest_layer(request->stream)
            .async_connect(results, [this, request](const boost::system::error_code& cec,
                                                    const tcp::endpoint&) {
              if (failed(request, cec, "cannot connect")) return;
              beast::get_lowest_layer(request->stream).expires_after(kConnectTimeout);
              request->stream.async_handshake(
                  ssl::stream_base::client, [this, request](const boost::system::error_code& hec) {
                    if (failed(request, hec, "TLS handshake failed")) return;
                    beast::get_lowest_layer(request->stream).expires_after(kConnectTimeout);
                    http::async_write(
                        request->stream, request->request,
                        [this, request](const boost::system::error_code& wec, std::size_t) {
                          if (failed(request, wec, "cannot send the request")) return;
                          read_header(request);
                        });
                  });
            });
      });
}

bool NodeWatcher::failed(const std::shared_ptr<Request>& request,
                         const boost::system::error_code& ec, std::string_view what) {
  if (request->cancelled) return true;
  if (!ec) return false;
  spdlog::warn("API server {}: {}: {}", credentials_.config().server.host, what, ec.message());
  current_.reset();
  perform(protocol_.transport_error());
  return true;
}

void NodeWatcher::read_header(const std::shared_ptr<Request>& request) {
  beast::get_lowest_layer(request->stream).expires_after(kConnectTimeout);
  request->parser.body_limit(request->action.kind == WatchAction::Kind::list
                                 ? boost::optional<std::uint64_t>(kMaxListPage)
                                 : boost::none);
  http::async_read_header(request->stream, request->buffer, request->parser,
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

void NodeWatcher::read_body(const std::shared_ptr<Request>& request) {
  const bool watching = request->status == 200 && request->action.kind == WatchAction::Kind::watch;
  beast::get_lowest_layer(request->stream)
      .expires_after(watching ? protocol_.options().watch_timeout + seconds(30) : kListReadTimeout);
  auto& body = request->parser.get().body();
  body.data = request->chunk.data();
  body.size = request->chunk.size();
  http::async_read_some(
      request->stream, request->buffer, request->parser,
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

bool NodeWatcher::deliver_events(const std::shared_ptr<Request>& request, std::string_view bytes) {
  auto objects = request->events.feed(bytes);
  if (!objects) {
    spdlog::warn("API server: unreadable watch stream: {}", objects.error().str());
    request->cancelled = true;
    beast::get_lowest_layer(request->stream).cancel();
    current_.reset();
    perform(protocol_.transport_error());
    return false;
  }
  std::vector<NodeChange> changes;
  for (const std::string_view text : *objects) {
    auto event = parse_watch_event(text);
    if (!event) {
      spdlog::warn("API server: skipping a watch event: {}", event.error().str());
      continue;
    }
    if (event->type == WatchEvent::Type::error) {
      if (!changes.empty() && handlers_.on_changes) handlers_.on_changes(std::move(changes));
      spdlog::info("API server: watch ended by the server: {} ({})", event->message, event->code);
      request->cancelled = true;
      beast::get_lowest_layer(request->stream).cancel();
      current_.reset();
      perform(protocol_.error_event(event->code));
      return false;
    }
    if (event->type == WatchEvent::Type::deleted) {
      changes.push_back(NodeChange{NodeChange::Kind::remove, event->name, Node{}});
    } else if (event->type != WatchEvent::Type::bookmark) {
      if (event->node) {
        changes.push_back(
            NodeChange{NodeChange::Kind::upsert, event->name, std::move(*event->node)});
      } else {
        // A Node that cannot be read is judged by nothing rather than by stale facts.
        spdlog::warn("API server: node {} left out: {}", event->name, event->node_error->str());
        changes.push_back(NodeChange{NodeChange::Kind::remove, event->name, Node{}});
      }
    }
    protocol_.event(event->resource_version);
  }
  if (!changes.empty() && handlers_.on_changes) handlers_.on_changes(std::move(changes));
  return true;
}

void NodeWatcher::finish(const std::shared_ptr<Request>& request, boost::system::error_code ec) {
  const bool list = request->action.kind == WatchAction::Kind::list;
  if (request->status != 200) {
    if (ec && ec != http::error::end_of_stream && ec != net::ssl::error::stream_truncated) {
      spdlog::debug("API server: error body cut short: {}", ec.message());
    }
    const std::string message = status_message(request->body);
    if (request->status == 401) {
      credentials_.invalidate();
      spdlog::error("API server refused the credentials (401 Unauthorized): {}", message);
    } else if (request->status == 410) {
      spdlog::info("API server: resourceVersion expired (410 Gone): listing again");
    } else {
      spdlog::warn("API server answered {} {}: {}", request->status, list ? "a list" : "a watch",
                   message);
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
    spdlog::warn("API server: node list cut short: {}", ec.message());
    perform(protocol_.transport_error());
    return;
  }
  auto page = parse_node_page(request->body);
  request->body = {};
  if (!page) {
    spdlog::warn("API server: unreadable node list: {}", page.error().str());
    perform(protocol_.transport_error());
    return;
  }
  for (const Error& skipped : page->skipped) {
    spdlog::warn("API server: node list: left out {}", skipped.str());
  }
  const bool first = request->action.token.empty();
  WatchAction next = protocol_.page(page->continue_token, page->resource_version);
  if (handlers_.on_page) {
    handlers_.on_page(std::move(page->nodes), first, next.kind == WatchAction::Kind::watch);
  }
  perform(std::move(next));
}

}  // namespace cudagate::kube

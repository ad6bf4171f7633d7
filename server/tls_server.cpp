// The HTTPS listener and its per-connection sessions: HTTP/1.1 over each connection's TLS stream,
// with a timeout per phase, size and connection limits, and a draining shutdown.
#include "server/tls_server.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "server/tls_stream.h"

namespace cudagate {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

constexpr std::size_t kReadChunk = std::size_t{16} * 1024;
// A connection keeps the buffer of its last response up to this size.
constexpr std::size_t kMaxKeptWire = std::size_t{64} * 1024;
// ... and the buffer of its last request body up to this one: a review
// (5 to 20 KB) then reuses it, without a large allocation and free per
// request, each of which makes the allocator consolidate its small chunks.
constexpr std::size_t kMaxKeptBody = std::size_t{32} * 1024;
// After an answer to a request that was not read to its end (413, 431,
// 400), the rest is read and discarded this long, so that the peer is not
// reset while still sending and can read the answer.
constexpr std::chrono::seconds kLingerTime{5};
constexpr std::size_t kLingerMaxBytes = std::size_t{64} * 1024 * 1024;
// Bounds the wait for the peer's close_notify after ours.
constexpr std::chrono::seconds kCloseTime{1};
constexpr std::chrono::milliseconds kAcceptRetry{100};
// At the connection bound, a new connection takes the place of the oldest
// one that has been open this long without sending a request, so that idle
// connections cannot keep well-behaved clients out; at most
// kMaxEvictionsInFlight such replacements are under way at once, which is
// all the bound is ever exceeded by.
constexpr std::chrono::seconds kEvictableAfter{1};
constexpr std::size_t kMaxEvictionsInFlight = 16;
// When the server drains, a connection that has sent no request yet gets
// this long for its first one: the client may have written it already, as
// Go's http.Server.Shutdown also assumes of new connections.
constexpr std::chrono::seconds kFirstRequestWhileDraining{2};

// A peer that goes away, at any point, is ordinary for a server.
bool is_ordinary_disconnect(const beast::error_code& ec) {
  return ec == net::error::eof || ec == ssl::error::stream_truncated ||
         ec == net::error::connection_reset || ec == net::error::broken_pipe ||
         ec == net::error::operation_aborted || ec == http::error::end_of_stream ||
         ec == http::error::partial_message || ec == beast::error::timeout;
}

bool is_http_syntax_error(const beast::error_code& ec) {
  return ec.category() == beast::error_code(http::error::bad_method).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message &&
         ec != http::error::need_more && ec != http::error::need_buffer;
}

std::string endpoint_text(const tcp::socket& socket) {
  beast::error_code ec;
  const auto ep = socket.remote_endpoint(ec);
  if (ec) return "unknown peer";
  if (ep.address().is_v6()) {
    return "[" + ep.address().to_string() + "]:" + std::to_string(ep.port());
  }
  return ep.address().to_string() + ":" + std::to_string(ep.port());
}

}  // namespace

HttpResponse json_error(http::status status, std::string_view message) {
  HttpResponse res{status, 11};
  res.set(http::field::content_type, "application/json");
  res.body() = nlohmann::json{{"error", message}}.dump() + "\n";
  return res;
}

namespace {
class Session;
}  // namespace

struct TlsServer::Impl : std::enable_shared_from_this<TlsServer::Impl> {
  Impl(net::io_context& context, unsigned io_threads, const CertStore& cert_store,
       ServerLimits server_limits, RequestHandler request_handler,
       AsyncRequestHandler async_request_handler, WebhookMetrics* webhook_metrics)
      : ioc(context),
        single_threaded(io_threads == 1),
        certs(cert_store),
        limits(server_limits),
        handler(std::move(request_handler)),
        async_handler(std::move(async_request_handler)),
        metrics(webhook_metrics),
        acceptor(net::make_strand(context)),
        retry_timer(acceptor.get_executor()) {}

  void accept();
  void on_accept(const beast::error_code& ec, tcp::socket socket);
  void session_closed(const Session* session);
  void fire_drained();
  // Under `mutex`, at the bound: the session a new connection may replace.
  std::shared_ptr<Session> idle_session_locked();

  net::io_context& ioc;
  const bool single_threaded;
  const CertStore& certs;
  const ServerLimits limits;
  const RequestHandler handler;  // one of the two is set
  const AsyncRequestHandler async_handler;
  WebhookMetrics* const metrics;
  tcp::acceptor acceptor;
  net::steady_timer retry_timer;

  std::atomic<bool> draining{false};
  std::atomic<std::size_t> open{0};
  std::mutex mutex;  // guards sessions and on_drained
  std::unordered_map<const Session*, std::weak_ptr<Session>> sessions;
  std::function<void()> on_drained;
};

namespace {

class Session : public std::enable_shared_from_this<Session>, public Responder::Target {
 public:
  Session(tcp::socket&& socket, std::shared_ptr<ssl::context> context,
          std::shared_ptr<TlsServer::Impl> server)
      : server_(std::move(server)),
        limits_(server_->limits),
        peer_(endpoint_text(socket)),
        context_(std::move(context)),
        stream_(std::move(socket), *context_),
        timer_(stream_.get_executor()) {}

  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() override { server_->session_closed(this); }

  void run() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->handshake(); });
  }

  // Ends the session once it is between requests; a request in progress
  // completes first (its response then closes the connection).
  void stop() {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      if (self->phase_ == Phase::handshake || (self->phase_ == Phase::awaiting && self->first_)) {
        self->set_deadline(kFirstRequestWhileDraining);
      } else if (self->phase_ == Phase::awaiting) {
        self->stream_.cancel();
      }
    });
  }

  // For the acceptor, under the server's mutex: whether this connection has
  // been open since before `cutoff` without a request, and is not being
  // evicted already; claim_for_eviction() marks it as being evicted.
  [[nodiscard]] bool evictable(std::chrono::steady_clock::time_point cutoff) const {
    return accepted_ <= cutoff && !requested_.load(std::memory_order_relaxed) &&
           !evicted_.load(std::memory_order_relaxed);
  }
  bool claim_for_eviction() { return !evicted_.exchange(true, std::memory_order_relaxed); }
  [[nodiscard]] std::chrono::steady_clock::time_point accepted_at() const { return accepted_; }

  // Cuts the connection off, as its deadline would, unless a request has
  // begun meanwhile.
  void evict() {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      if (self->phase_ != Phase::handshake && self->phase_ != Phase::awaiting) return;
      spdlog::debug("connection from {} closed for a new one: no request after {} s", self->peer_,
                    kEvictableAfter.count());
      self->stream_.time_out();
    });
  }

 private:
  enum class Phase : unsigned char { handshake, awaiting, reading, handling, writing, closing };
  using Clock = std::chrono::steady_clock;

  // The current phase must end by `timeout` from now, or the connection is
  // cut off. The timer is re-armed only for a deadline earlier than the one
  // it waits for; a later one is checked when it fires, so most phases cost
  // a clock read and no timer operation.
  void set_deadline(Clock::duration timeout) {
    deadline_ = Clock::now() + timeout;
    if (timer_armed_ && timer_.expiry() <= deadline_) return;
    arm_timer();
  }

  void arm_timer() {
    timer_armed_ = true;
    timer_.expires_at(deadline_);
    timer_.async_wait(
        [weak = weak_from_this(), generation = ++timer_generation_](const beast::error_code&) {
          const auto self = weak.lock();
          if (!self || generation != self->timer_generation_) return;
          self->timer_armed_ = false;
          if (Clock::now() < self->deadline_) return self->arm_timer();
          // What waits on the socket fails now, and so does any later I/O.
          self->stream_.time_out();
        });
  }

  // Reads what the peer sends next (decrypted) into the buffer.
  template <class Done>
  void read_some(Done done) {
    stream_.async_read_some(buffer_, kReadChunk,
                            [self = shared_from_this(), done = std::move(done)](
                                const beast::error_code& ec) mutable { done(ec); });
  }

  // Writes all of `bytes`, which must stay put until done(error).
  template <class Done>
  void write_all(std::string_view bytes, Done done) {
    stream_.async_write(bytes, [self = shared_from_this(), done = std::move(done)](
                                   const beast::error_code& ec) mutable { done(ec); });
  }

  void handshake() {
    phase_ = Phase::handshake;
    set_deadline(limits_.handshake_timeout);
    stream_.async_handshake(
        [self = shared_from_this()](const beast::error_code& ec) { self->on_handshake(ec); });
  }

  void on_handshake(const beast::error_code& ec) {
    if (ec) {
      // Plain HTTP, old TLS versions, scanners and rejected client
      // certificates all end here; they are the peer's problem.
      spdlog::debug("TLS handshake with {} failed: {}", peer_, ec.message());
      return;
    }
    first_ = true;
    set_deadline(limits_.header_timeout);
    await_request();
  }

  void await_request() {
    if (server_->draining.load()) {
      if (!first_) return close();
      set_deadline(kFirstRequestWhileDraining);
    }
    if (buffer_.size() > 0) return read_header();  // pipelined: already here
    phase_ = Phase::awaiting;
    if (!first_) set_deadline(limits_.idle_timeout);
    // Between requests the socket is usually empty: wait for it rather
    // than try a read that would find nothing.
    stream_.async_wait_readable([self = shared_from_this()](const beast::error_code& ec) {
      if (ec) return self->on_first_bytes(ec);
      self->read_some([self](const beast::error_code& rec) { self->on_first_bytes(rec); });
    });
  }

  void on_first_bytes(const beast::error_code& ec) {
    if (ec) {
      if (ec == net::error::operation_aborted && server_->draining.load()) return close();
      return end(ec, "waiting for a request");
    }
    read_header();
  }

  // Parses what the buffer holds before reading more: a request that came
  // whole with its first bytes, as the API server's usually do, is handled
  // without a further asynchronous step.
  void read_header() {
    phase_ = Phase::reading;
    if (first_) requested_.store(true, std::memory_order_relaxed);
    // Cleared here: the parser's body reader, which clears it too, is not
    // called at all for a request without a body.
    spare_body_.clear();
    parser_.emplace(std::piecewise_construct, std::make_tuple(std::move(spare_body_)));
    parser_->header_limit(static_cast<std::uint32_t>(limits_.max_header_bytes));
    parser_->body_limit(limits_.max_body_bytes);
    if (!parse_header()) return;
    if (!first_) set_deadline(limits_.header_timeout);
    read_rest_of_header();
  }

  // Feeds the buffer to the parser; true when the header is not complete
  // yet and nothing went wrong. Otherwise the request is answered.
  bool parse_header() {
    beast::error_code ec;
    feed_parser([this] { return parser_->is_header_done(); }, ec);
    if (ec) {
      on_read_error(ec, "reading a request header");
      return false;
    }
    if (parser_->is_header_done()) {
      on_header();
      return false;
    }
    return true;
  }

  void read_rest_of_header() {
    read_some([this](const beast::error_code& ec) {
      if (ec) return on_read_error(ec, "reading a request header");
      if (parse_header()) read_rest_of_header();
    });
  }

  // Puts the buffered bytes into the parser until `done()` or until it
  // needs more; `ec` is set when the request is malformed or too large.
  template <class Done>
  void feed_parser(Done done, beast::error_code& ec) {
    while (!done() && buffer_.size() > 0) {
      const std::size_t used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (ec == http::error::need_more) {
        ec = {};
        return;
      }
      if (ec || used == 0) return;
    }
  }

  void on_header() {
    set_deadline(limits_.body_timeout);
    if (parser_->is_done()) return handle();
    const auto expect = parser_->get()[http::field::expect];
    if (beast::iequals(expect, "100-continue")) {
      write_all(kContinue, [this](const beast::error_code& ec) {
        if (ec) return end(ec, "writing 100 Continue");
        read_body();
      });
      return;
    }
    read_body();
  }

  void read_body() {
    parser_->eager(true);
    beast::error_code ec;
    feed_parser([this] { return parser_->is_done(); }, ec);
    if (ec) return on_read_error(ec, "reading a request body");
    if (parser_->is_done()) return handle();
    read_some([this](const beast::error_code& rec) {
      if (rec) return on_read_error(rec, "reading a request body");
      read_body();
    });
  }

  void on_read_error(const beast::error_code& ec, const char* what) {
    if (ec == http::error::body_limit) {
      return reject(http::status::payload_too_large,
                    "request body exceeds " + std::to_string(limits_.max_body_bytes) + " bytes");
    }
    if (ec == http::error::header_limit) {
      return reject(
          http::status::request_header_fields_too_large,
          "request header exceeds " + std::to_string(limits_.max_header_bytes) + " bytes");
    }
    if (is_http_syntax_error(ec)) {
      return reject(http::status::bad_request, "malformed HTTP request: " + ec.message());
    }
    end(ec, what);
  }

  void handle() {
    phase_ = Phase::handling;
    request_ = parser_->release();
    parser_.reset();
    if (server_->async_handler) {
      // The handler's answer may come from another thread, or later.
      set_deadline(limits_.write_timeout);
      try {
        server_->async_handler(request_, Responder(shared_from_this()));
      } catch (const std::exception& e) {
        internal_error(e.what());
      }
      return;
    }
    HttpResponse response;
    try {
      response = server_->handler(request_);
    } catch (const std::exception& e) {
      spdlog::error("request {} {} from {}: internal error: {}",
                    std::string(request_.method_string()), std::string(request_.target()), peer_,
                    e.what());
      response = json_error(http::status::internal_server_error, "internal error");
    }
    finish(std::move(response));
  }

  void internal_error(const char* what) {
    spdlog::error("request {} {} from {}: internal error: {}",
                  std::string(request_.method_string()), std::string(request_.target()), peer_,
                  what);
    finish(json_error(http::status::internal_server_error, "internal error"));
  }

  void respond(HttpResponse&& response) override {
    net::dispatch(stream_.get_executor(),
                  [self = shared_from_this(), res = std::move(response)]() mutable {
                    if (self->phase_ != Phase::handling) return;
                    self->finish(std::move(res));
                  });
  }

  void finish(HttpResponse&& response) {
    response.version(request_.version());
    response.keep_alive(request_.keep_alive() && !server_->draining.load());
    if (request_.body().capacity() <= kMaxKeptBody) spare_body_ = std::move(request_.body());
    request_ = {};
    write(std::move(response));
  }

  void reject(http::status status, const std::string& message) {
    spdlog::debug("request from {} rejected ({}): {}", peer_, static_cast<unsigned>(status),
                  message);
    linger_ = true;
    HttpResponse response = json_error(status, message);
    response.keep_alive(false);
    write(std::move(response));
  }

  // The response leaves as one buffer (status line, fields, body): one TLS
  // record and one send.
  void write(HttpResponse&& response) {
    phase_ = Phase::writing;
    response.prepare_payload();
    keep_alive_ = response.keep_alive();
    wire_.clear();
    const std::string_view reason = response.reason();
    wire_.reserve(response.body().size() + 64 + std::size_t{64} * 4);
    wire_ += "HTTP/";
    wire_ += static_cast<char>('0' + response.version() / 10);
    wire_ += '.';
    wire_ += static_cast<char>('0' + response.version() % 10);
    wire_ += ' ';
    wire_ += std::to_string(response.result_int());
    wire_ += ' ';
    wire_ += reason;
    wire_ += "\r\n";
    for (const auto& field : response) {
      wire_ += field.name_string();
      wire_ += ": ";
      wire_ += field.value();
      wire_ += "\r\n";
    }
    wire_ += "\r\n";
    wire_ += response.body();
    set_deadline(limits_.write_timeout);
    // Posted, so that it goes out after the handlers already ready on this
    // thread: the answers to the requests that arrived together leave
    // together, and the client is woken once for them rather than once for
    // each, which on a busy server is worth a fifth of its throughput.
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      self->write_all(self->wire_, [self](const beast::error_code& ec) { self->on_write(ec); });
    });
  }

  void on_write(const beast::error_code& ec) {
    if (ec) return end(ec, "writing a response");
    const bool keep_alive = keep_alive_;
    if (wire_.capacity() > kMaxKeptWire) std::string().swap(wire_);
    if (linger_) return linger();
    if (!keep_alive) return close();
    first_ = false;
    await_request();
  }

  void linger() {
    phase_ = Phase::closing;
    set_deadline(kLingerTime);
    buffer_.clear();
    read_some([this](const beast::error_code& ec) {
      lingered_ += buffer_.size();
      buffer_.clear();
      if (ec || lingered_ > kLingerMaxBytes) return shut();
      linger();
    });
  }

  // Sends close_notify and waits briefly for the peer's.
  void close() {
    phase_ = Phase::closing;
    set_deadline(kCloseTime);
    stream_.async_shutdown([self = shared_from_this()](const beast::error_code&) { self->shut(); });
  }

  void shut() { stream_.close(); }

  void end(const beast::error_code& ec, const char* what) {
    if (!is_ordinary_disconnect(ec)) {
      spdlog::warn("connection from {} failed while {}: {}", peer_, what, ec.message());
    } else if (ec == beast::error::timeout) {
      spdlog::debug("connection from {} timed out while {}", peer_, what);
    }
    // Returning drops the last reference: the destructor closes the socket.
  }

  static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

  std::shared_ptr<TlsServer::Impl> server_;
  const ServerLimits& limits_;
  const std::string peer_;
  // Declared before the connection, which refers to it, so that it outlives it.
  std::shared_ptr<ssl::context> context_;
  TlsStream stream_;
  net::steady_timer timer_;
  Clock::time_point deadline_;
  std::uint64_t timer_generation_ = 0;
  bool timer_armed_ = false;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<PaddedStringBody>> parser_;
  HttpRequest request_;      // the request being handled
  PaddedString spare_body_;  // the last body's buffer, for the next request
  std::string wire_;         // the response being written
  bool keep_alive_ = false;
  Phase phase_ = Phase::handshake;
  bool first_ = true;
  bool linger_ = false;
  const Clock::time_point accepted_ = Clock::now();
  std::atomic<bool> requested_{false};
  std::atomic<bool> evicted_{false};
  std::size_t lingered_ = 0;
};

}  // namespace

void TlsServer::Impl::accept() {
  auto on_accepted = [self = shared_from_this()](const beast::error_code& ec, tcp::socket socket) {
    self->on_accept(ec, std::move(socket));
  };
  // A session's handlers never run concurrently with each other on one
  // thread, so it needs a strand only when more threads run the io_context.
  if (single_threaded) {
    acceptor.async_accept(ioc.get_executor(), std::move(on_accepted));
  } else {
    acceptor.async_accept(net::make_strand(ioc), std::move(on_accepted));
  }
}

void TlsServer::Impl::on_accept(const beast::error_code& ec, tcp::socket socket) {
  if (ec) {
    if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
    // Out of descriptors or memory: wait a little instead of spinning.
    spdlog::error("accepting a connection failed: {}", ec.message());
    retry_timer.expires_after(kAcceptRetry);
    retry_timer.async_wait([self = shared_from_this()](const beast::error_code& wec) {
      if (!wec && self->acceptor.is_open()) self->accept();
    });
    return;
  }
  beast::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  // The session is started, and its last reference may drop, only after the
  // lock is released: its destructor takes the lock.
  std::shared_ptr<Session> session;
  std::shared_ptr<Session> evicted;
  bool rejected = false;
  {
    const std::lock_guard lock(mutex);
    if (open.load() >= limits.max_connections && !draining.load()) evicted = idle_session_locked();
    if (draining.load()) {
      socket.close(ignored);
    } else if (open.load() >= limits.max_connections && !evicted) {
      socket.close(ignored);
      rejected = true;
    } else {
      try {
        session = std::make_shared<Session>(std::move(socket), certs.context(), shared_from_this());
        open.fetch_add(1);
        sessions.emplace(session.get(), session);
      } catch (const std::exception& e) {
        spdlog::error("cannot start a TLS session: {}", e.what());
      }
    }
  }
  if (rejected) {
    if (metrics != nullptr) metrics->connection_rejected();
    spdlog::warn("connection closed: {} connections already open (--max-connections)",
                 limits.max_connections);
  }
  if (evicted) evicted->evict();
  if (session) {
    if (metrics != nullptr) metrics->connection_opened();
    session->run();
  }
  accept();
}

std::shared_ptr<Session> TlsServer::Impl::idle_session_locked() {
  if (open.load() >= limits.max_connections + kMaxEvictionsInFlight) return nullptr;
  // Sessions still in the map are alive: a destructor takes the mutex first.
  const auto cutoff = std::chrono::steady_clock::now() - kEvictableAfter;
  const Session* oldest = nullptr;
  for (const auto& [ptr, weak] : sessions) {
    if (ptr->evictable(cutoff) &&
        (oldest == nullptr || ptr->accepted_at() < oldest->accepted_at())) {
      oldest = ptr;
    }
  }
  if (oldest == nullptr) return nullptr;
  auto victim = sessions.at(oldest).lock();
  if (!victim || !victim->claim_for_eviction()) return nullptr;
  return victim;
}

void TlsServer::Impl::session_closed(const Session* session) {
  bool drained = false;
  {
    const std::lock_guard lock(mutex);
    sessions.erase(session);
    drained = open.fetch_sub(1) == 1 && draining.load();
  }
  if (metrics != nullptr) metrics->connection_closed();
  if (drained) fire_drained();
}

void TlsServer::Impl::fire_drained() {
  std::function<void()> callback;
  {
    const std::lock_guard lock(mutex);
    callback = std::exchange(on_drained, nullptr);
  }
  if (callback) net::post(ioc, std::move(callback));
}

TlsServer::TlsServer(net::io_context& ioc, unsigned io_threads, const CertStore& certs,
                     ServerLimits limits, RequestHandler handler, WebhookMetrics* metrics)
    : impl_(std::make_shared<Impl>(ioc, io_threads, certs, limits, std::move(handler),
                                   AsyncRequestHandler{}, metrics)) {}

TlsServer::TlsServer(net::io_context& ioc, unsigned io_threads, const CertStore& certs,
                     ServerLimits limits, AsyncRequestHandler handler, WebhookMetrics* metrics)
    : impl_(std::make_shared<Impl>(ioc, io_threads, certs, limits, RequestHandler{},
                                   std::move(handler), metrics)) {}

TlsServer::~TlsServer() {
  beast::error_code ignored;
  impl_->acceptor.close(ignored);
}

std::optional<Error> TlsServer::listen(const tcp::endpoint& endpoint) {
  const std::string where = "--listen " +
                            (endpoint.address().is_v6() ? "[" + endpoint.address().to_string() + "]"
                                                        : endpoint.address().to_string()) +
                            ":" + std::to_string(endpoint.port());
  auto& acceptor = impl_->acceptor;
  beast::error_code ec;
  acceptor.open(endpoint.protocol(), ec);
  if (ec) return Error{where, "cannot open a socket: " + ec.message()};
  acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (ec) return Error{where, "cannot set SO_REUSEADDR: " + ec.message()};
  acceptor.bind(endpoint, ec);
  if (ec) return Error{where, "cannot bind: " + ec.message()};
  acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return Error{where, "cannot listen: " + ec.message()};
  return std::nullopt;
}

tcp::endpoint TlsServer::local_endpoint() const {
  beast::error_code ec;
  return impl_->acceptor.local_endpoint(ec);
}

void TlsServer::start() {
  net::dispatch(impl_->acceptor.get_executor(), [impl = impl_] { impl->accept(); });
}

void TlsServer::shutdown(std::function<void()> on_drained) {
  std::vector<std::weak_ptr<Session>> sessions;
  bool none_open = false;
  {
    const std::lock_guard lock(impl_->mutex);
    impl_->draining.store(true);
    impl_->on_drained = std::move(on_drained);
    sessions.reserve(impl_->sessions.size());
    for (const auto& [ptr, weak] : impl_->sessions) sessions.push_back(weak);
    none_open = impl_->open.load() == 0;
  }
  net::post(impl_->acceptor.get_executor(), [impl = impl_] {
    beast::error_code ignored;
    impl->acceptor.close(ignored);
    impl->retry_timer.cancel();
  });
  for (const auto& weak : sessions) {
    if (auto session = weak.lock()) session->stop();
  }
  if (none_open) impl_->fire_drained();
}

std::size_t TlsServer::open_connections() const {
  return impl_->open.load();
}

}  // namespace cudagate

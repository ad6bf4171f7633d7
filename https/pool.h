#pragma once
// Requests over kept-alive connections: exchange() sends one request and
// reads its whole response, on a connection to the endpoint that an earlier
// exchange left idle, or on a new one (https/connection.h). A response that
// lets its connection be kept (HTTP/1.1 without Connection: close) puts it
// back among the endpoint's idle ones; a kept connection the server had
// closed in the meantime, which fails before any byte of a response, is
// replaced by a new one once, as Go's net/http Transport does for a
// request it knows was not processed.
//
// Bounds: at most PoolLimits::max_connections exchanges at once (the rest
// wait their turn, first come first served), max_idle_per_endpoint idle
// connections for one endpoint and TLS client, none idle longer than
// max_idle_time, and each exchange's
// ExchangeLimits (header and body sizes, one deadline for writing the
// request and reading the response; opening a connection has
// connect_timeout a step).
//
// Errors have no place; their message names the endpoint and what failed:
// "connecting with TLS to H:443: certificate verify failed", "no answer
// from H:443 within 20 s", "the answer exceeds 1048576 bytes".
//
// Thread-safety: exchange() may run on several threads at once (the pool
// is locked inside). close() cancels what is in flight, so it must be
// called where the exchanges run: on their strand, or with the io_context
// stopped. The pool must outlive the coroutines that use it.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "https/endpoint.h"
#include "https/tls_client.h"
#include "types/expected.h"

namespace cudagate::https {

using Request = boost::beast::http::request<boost::beast::http::string_body>;
using Response = boost::beast::http::response<boost::beast::http::string_body>;

struct PoolLimits {
  std::size_t max_connections = 32;  // exchanges at once
  std::size_t max_idle_per_endpoint = 8;
  std::chrono::steady_clock::duration connect_timeout = std::chrono::seconds(30);
  // A connection idle this long is closed instead of used again: a load
  // balancer or NAT on the way may have forgotten it without a word, and a
  // request on it would wait out its deadline. Go's http.DefaultTransport
  // keeps idle connections 90 s (IdleConnTimeout).
  std::chrono::steady_clock::duration max_idle_time = std::chrono::seconds(90);
};

struct ExchangeLimits {
  std::chrono::steady_clock::duration timeout = std::chrono::seconds(60);
  std::uint64_t max_body = std::uint64_t{1} << 30;
  std::uint32_t max_header = 64 * 1024;
};

class Pool {
 public:
  explicit Pool(const boost::asio::any_io_executor& executor, PoolLimits limits = {});
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // `request` as it is sent (its Host header is the caller's); `tls` is
  // required for a TLS endpoint. A response of any status, or the Error of
  // the transport.
  [[nodiscard]] boost::asio::awaitable<Expected<Response>> exchange(
      Endpoint endpoint, std::shared_ptr<const TlsClient> tls, Request& request,
      ExchangeLimits limits);

  // Cancels the exchanges in flight and closes the idle connections; later
  // exchanges fail at once. See above for where to call it.
  void close();
  // Closes the idle connections (new certificates: no connection made with
  // the old ones is used again).
  void drop_idle();

  [[nodiscard]] std::size_t idle_connections() const;
  // Connections opened since the pool was made.
  [[nodiscard]] std::size_t connections_opened() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace cudagate::https

#pragma once
// One client connection, plain or TLS, made as a coroutine: resolve the
// endpoint, connect (TCP_NODELAY), and with TLS send the server name as SNI
// (not for an IP address), verify the chain and that the certificate
// carries Endpoint::verified_name() (unless the TlsClient verifies
// nothing), and handshake. Requests and responses then go over it with
// Beast's HTTP algorithms, each completing with an error code rather than
// an exception; the connection keeps the read buffer between them, so
// that it can carry one request after another (keep-alive).
//
// Deadlines: tcp().expires_after() before each step (open() sets its own).
// cancel() ends what waits on the socket with operation_aborted, an open()
// in progress after its current step, and every operation begun after it at
// once (operation_aborted): a cancel() that comes between two steps, while
// the first one's completion waits its turn, still ends the exchange.
//
// Not synchronised: used from one strand (or one thread) at a time.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "https/endpoint.h"
#include "https/tls_client.h"
#include "types/expected.h"

namespace cudagate::https {

class Connection {
 public:
  using error_code = boost::beast::error_code;
  template <typename T>
  using awaitable = boost::asio::awaitable<T>;

  explicit Connection(const boost::asio::any_io_executor& executor) : tcp_(executor) {}
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection();

  // Resolves, connects and (for a TLS endpoint) verifies and handshakes,
  // each step within `timeout`. `tls` is required for a TLS endpoint and
  // kept while the connection lives. The Error (no place) says which step
  // failed: "connecting to H: ...", "connecting with TLS to H: ...".
  [[nodiscard]] awaitable<std::optional<Error>> open(const Endpoint& endpoint,
                                                     std::shared_ptr<const TlsClient> tls,
                                                     std::chrono::steady_clock::duration timeout);

  template <typename Message>
  [[nodiscard]] awaitable<error_code> write(Message& message) {
    return on_stream([&message](auto& stream, boost::beast::flat_buffer&, auto token) {
      return boost::beast::http::async_write(stream, message, token);
    });
  }

  // A whole response into `parser`.
  template <typename Parser>
  [[nodiscard]] awaitable<error_code> read(Parser& parser) {
    return on_stream([&parser](auto& stream, boost::beast::flat_buffer& buffer, auto token) {
      return boost::beast::http::async_read(stream, buffer, parser, token);
    });
  }

  template <typename Parser>
  [[nodiscard]] awaitable<error_code> read_header(Parser& parser) {
    return on_stream([&parser](auto& stream, boost::beast::flat_buffer& buffer, auto token) {
      return boost::beast::http::async_read_header(stream, buffer, parser, token);
    });
  }

  // As much of the body as has come (a streamed response, read as it arrives).
  template <typename Parser>
  [[nodiscard]] awaitable<error_code> read_some(Parser& parser) {
    return on_stream([&parser](auto& stream, boost::beast::flat_buffer& buffer, auto token) {
      return boost::beast::http::async_read_some(stream, buffer, parser, token);
    });
  }

  [[nodiscard]] boost::beast::tcp_stream& tcp() { return tcp_; }
  [[nodiscard]] bool is_open() const { return tcp_.socket().is_open(); }
  void cancel() {
    cancelled_ = true;
    tcp_.cancel();
  }

 private:
  static auto redirect(error_code& ec) {
    return boost::asio::redirect_error(boost::asio::use_awaitable, ec);
  }

  // `operation`(stream, buffer, token) on the TLS stream or the TCP one; its
  // error code. The caller keeps what `operation` refers to until it ends.
  template <typename Operation>
  awaitable<error_code> on_stream(Operation operation) {
    if (cancelled_) co_return boost::asio::error::operation_aborted;
    error_code ec;
    if (tls_) {
      co_await operation(*tls_, buffer_, redirect(ec));
    } else {
      co_await operation(tcp_, buffer_, redirect(ec));
    }
    co_return ec;
  }

  boost::beast::tcp_stream tcp_;
  std::shared_ptr<const TlsClient> tls_client_;
  std::unique_ptr<boost::beast::ssl_stream<boost::beast::tcp_stream&>> tls_;
  boost::beast::flat_buffer buffer_;
  bool cancelled_ = false;
};

}  // namespace cudagate::https

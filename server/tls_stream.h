#pragma once
// One server-side TLS connection as an asynchronous stream, used the way
// Beast's examples use asio's ssl::stream: handshake, read_some, write and
// shutdown, each completing through a handler with the error, if any.
//
// OpenSSL reads and writes the socket itself (no memory BIO, and no extra
// copy of the bytes between it and the kernel); Asio's reactor only says
// when the socket is ready. Errors are those asio's TLS stream reports:
// net::error::eof for the peer's close_notify, ssl::error::stream_truncated
// for a peer that closes without one, the OpenSSL error otherwise, and
// beast::error::timeout for every operation once time_out() was called.
//
// An operation that completes at once calls its handler on the caller's
// stack (operations that keep completing at once go on from the event loop
// every so often, rather than ever deeper on the stack); one that waits for
// the socket calls it from the socket's executor. Handlers keep the
// stream's owner, and so the stream, alive until they run.
//
// Not synchronised: used from one strand (or one thread) at a time.

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <cerrno>
#include <cstddef>
#include <memory>
#include <string_view>
#include <utility>

namespace cudagate {

class TlsStream {
 public:
  using tcp = boost::asio::ip::tcp;
  using error_code = boost::beast::error_code;

  // Takes the accepted socket; `context` must outlive the stream. Throws
  // std::runtime_error when OpenSSL cannot start the connection.
  TlsStream(tcp::socket&& socket, boost::asio::ssl::context& context);
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;
  ~TlsStream();

  [[nodiscard]] tcp::socket& socket() { return socket_; }
  [[nodiscard]] tcp::socket::executor_type get_executor() { return socket_.get_executor(); }

  // Whether decrypted bytes wait to be read (no socket read needed).
  [[nodiscard]] bool has_pending() const;

  // What waits on the socket ends with operation_aborted.
  void cancel();
  // What waits on the socket ends, and so does every later operation, with
  // beast::error::timeout.
  void time_out();
  [[nodiscard]] bool timed_out() const { return timed_out_; }
  // Shuts the socket down both ways and closes it, without close_notify.
  void close();

  // done(error_code)
  template <class Done>
  void async_handshake(Done&& done) {
    drive([this] { return SSL_do_handshake(ssl_.get()); },
          [done = std::forward<Done>(done)](const error_code& ec, int) mutable { done(ec); });
  }

  // Reads what the peer sends next, decrypted, up to `max` bytes into
  // `buffer`, which must stay put until done(error_code).
  template <class Done>
  void async_read_some(boost::beast::flat_buffer& buffer, std::size_t max, Done&& done) {
    drive(
        [this, &buffer, max] {
          const auto space = buffer.prepare(max);
          return SSL_read(ssl_.get(), space.data(), static_cast<int>(space.size()));
        },
        [&buffer, done = std::forward<Done>(done)](const error_code& ec, int n) mutable {
          if (!ec) buffer.commit(static_cast<std::size_t>(n));
          done(ec);
        });
  }

  // Waits until a read would find bytes, decrypted or on the socket,
  // without reading them: done(error_code).
  template <class Done>
  void async_wait_readable(Done&& done) {
    if (has_pending()) {
      done(error_code());
      return;
    }
    socket_.async_wait(tcp::socket::wait_read,
                       [this, done = std::forward<Done>(done)](const error_code& ec) mutable {
                         done(ec ? interrupted(ec) : ec);
                       });
  }

  // Writes all of `bytes`, which must stay put until done(error_code).
  template <class Done>
  void async_write(std::string_view bytes, Done&& done) {
    drive([this,
           bytes] { return SSL_write(ssl_.get(), bytes.data(), static_cast<int>(bytes.size())); },
          [done = std::forward<Done>(done)](const error_code& ec, int) mutable { done(ec); });
  }

  // Sends close_notify and waits for the peer's: done(error_code).
  template <class Done>
  void async_shutdown(Done&& done) {
    drive(
        [this] {
          const int sent = SSL_shutdown(ssl_.get());
          return sent == 0 ? SSL_shutdown(ssl_.get()) : sent;
        },
        [done = std::forward<Done>(done)](const error_code& ec, int) mutable { done(ec); });
  }

 private:
  struct SslFree {
    void operator()(SSL* ssl) const { SSL_free(ssl); }
  };

  // Runs `call` (one OpenSSL operation on the socket) until it completes,
  // waiting for the socket whenever OpenSSL asks to read or write more,
  // then calls done(error, result).
  template <class Call, class Done>
  void drive(Call call, Done done) {
    if (inline_depth_ >= kMaxInlineDepth) {
      boost::asio::post(socket_.get_executor(),
                        [this, call = std::move(call), done = std::move(done)]() mutable {
                          drive(std::move(call), std::move(done));
                        });
      return;
    }
    ERR_clear_error();
    errno = 0;
    const int result = call();
    if (result > 0) {
      ++inline_depth_;
      done(error_code(), result);
      --inline_depth_;
      return;
    }
    const int saved_errno = errno;
    const int code = SSL_get_error(ssl_.get(), result);
    if (code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE) {
      socket_.async_wait(
          code == SSL_ERROR_WANT_READ ? tcp::socket::wait_read : tcp::socket::wait_write,
          [this, call = std::move(call), done = std::move(done)](const error_code& ec) mutable {
            if (ec) return done(interrupted(ec), 0);
            drive(std::move(call), std::move(done));
          });
      return;
    }
    done(failure(code, saved_errno), 0);
  }

  [[nodiscard]] error_code interrupted(const error_code& ec) const;
  // An OpenSSL failure as the error asio's TLS stream would report.
  [[nodiscard]] error_code failure(int code, int saved_errno) const;

  static constexpr int kMaxInlineDepth = 16;

  tcp::socket socket_;
  // Declared after the socket: freed first, while its descriptor is open.
  std::unique_ptr<SSL, SslFree> ssl_;
  bool timed_out_ = false;
  int inline_depth_ = 0;  // done() calls of drive() now on the stack
};

}  // namespace cudagate

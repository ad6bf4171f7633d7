// The TLS stream's setup, errors and closing; its operations are templates
// in the header.
#include "server/tls_stream.h"

#include <boost/asio/ssl/error.hpp>
#include <stdexcept>
#include <string>

namespace cudagate {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;

std::string openssl_error() {
  char text[256] = {};
  ERR_error_string_n(ERR_get_error(), text, sizeof text);
  return text;
}

}  // namespace

TlsStream::TlsStream(tcp::socket&& socket, net::ssl::context& context)
    : socket_(std::move(socket)), ssl_(SSL_new(context.native_handle())) {
  if (!ssl_) throw std::runtime_error("SSL_new: " + openssl_error());
  socket_.non_blocking(true);
  if (SSL_set_fd(ssl_.get(), static_cast<int>(socket_.native_handle())) != 1) {
    throw std::runtime_error("SSL_set_fd: " + openssl_error());
  }
  SSL_set_accept_state(ssl_.get());
  // One read for a whole record, and the next request's bytes with it.
  SSL_set_read_ahead(ssl_.get(), 1);
}

TlsStream::~TlsStream() = default;

bool TlsStream::has_pending() const {
  return SSL_has_pending(ssl_.get()) == 1;
}

void TlsStream::cancel() {
  error_code ignored;
  socket_.cancel(ignored);
}

void TlsStream::time_out() {
  timed_out_ = true;
  error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.cancel(ignored);
}

void TlsStream::close() {
  error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

TlsStream::error_code TlsStream::interrupted(const error_code& ec) const {
  return timed_out_ ? error_code(beast::error::timeout) : ec;
}

TlsStream::error_code TlsStream::failure(int code, int saved_errno) const {
  if (timed_out_) return beast::error::timeout;
  if (code == SSL_ERROR_ZERO_RETURN) return net::error::eof;
  const unsigned long error = ERR_get_error();
  if (code == SSL_ERROR_SYSCALL && error == 0) {
    if (saved_errno != 0) return {saved_errno, beast::system_category()};
    return net::ssl::error::stream_truncated;  // closed without close_notify
  }
  if (ERR_GET_REASON(error) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
    return net::ssl::error::stream_truncated;
  }
  if (error != 0) return {static_cast<int>(error), net::error::get_ssl_category()};
  return net::error::connection_aborted;
}

}  // namespace cudagate

#pragma once
// A blocking HTTPS client for the server's tests: Boost.Beast over OpenSSL,
// verifying the server against the development CA (tests/support/dev_certs.h)
// and the name 127.0.0.1, one connection an object. It sends whole requests
// or raw bytes and reads responses or the connection's end, so that a test
// sees what a client on the wire sees.
//
// Blocking calls without timeouts: a test waits for what the server must do
// (answer, close) rather than for a time to pass.

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <cstdint>
#include <string>
#include <string_view>

namespace test_support {

class HttpsTestClient {
 public:
  using Request = boost::beast::http::request<boost::beast::http::string_body>;
  using Response = boost::beast::http::response<boost::beast::http::string_body>;
  using error_code = boost::system::error_code;

  // `certs`: the development certificates' folder (its ca.crt).
  explicit HttpsTestClient(const std::string& certs)
      : context_(boost::asio::ssl::context::tls_client), stream_(ioc_, context_) {
    context_.load_verify_file(certs + "/ca.crt");
    stream_.set_verify_mode(boost::asio::ssl::verify_peer);
    stream_.set_verify_callback(boost::asio::ssl::host_name_verification("127.0.0.1"));
  }

  // TCP connect to 127.0.0.1:port, then the TLS handshake.
  error_code connect(std::uint16_t port) {
    error_code ec;
    stream_.next_layer().connect({boost::asio::ip::make_address("127.0.0.1"), port}, ec);
    if (ec) return ec;
    stream_.handshake(boost::asio::ssl::stream_base::client, ec);
    return ec;
  }

  // Sends `request` and reads its response; `ec` is set when either fails.
  Response exchange(Request request, error_code& ec) {
    request.prepare_payload();
    boost::beast::http::write(stream_, request, ec);
    if (ec) return {};
    return read_response(ec);
  }

  Response read_response(error_code& ec) {
    Response response;
    boost::beast::http::read(stream_, buffer_, response, ec);
    return response;
  }

  // Writes `bytes` as they are, encrypted.
  error_code write_raw(std::string_view bytes) {
    error_code ec;
    boost::asio::write(stream_, boost::asio::buffer(bytes.data(), bytes.size()), ec);
    return ec;
  }

  // Reads and discards until the server ends the connection; the error
  // that ended it (eof after its close_notify, stream_truncated without).
  error_code read_until_closed() {
    error_code ec;
    char chunk[4096];
    while (!ec) stream_.read_some(boost::asio::buffer(chunk), ec);
    return ec;
  }

  // Sends our close_notify and waits for the server's: the error when the
  // server closed without one.
  error_code shutdown() {
    error_code ec;
    stream_.shutdown(ec);
    return ec;
  }

  [[nodiscard]] boost::asio::ssl::stream<boost::asio::ip::tcp::socket>& stream() { return stream_; }

 private:
  boost::asio::io_context ioc_;
  boost::asio::ssl::context context_;
  boost::asio::ssl::stream<boost::asio::ip::tcp::socket> stream_;
  boost::beast::flat_buffer buffer_;
};

}  // namespace test_support

// Opening a client connection: resolve, connect, verify, handshake.
#include "https/connection.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>

namespace cudagate::https {

namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

Connection::~Connection() = default;

Connection::awaitable<std::optional<Error>> Connection::open(
    const Endpoint& endpoint, std::shared_ptr<const TlsClient> tls,
    std::chrono::steady_clock::duration timeout) {
  const std::string where =
      (endpoint.tls ? "connecting with TLS to " : "connecting to ") + endpoint.authority();
  error_code ec;
  tcp::resolver resolver(tcp_.get_executor());
  tcp_.expires_after(timeout);
  const auto results = co_await resolver.async_resolve(endpoint.host, endpoint.port, redirect(ec));
  if (ec) co_return Error{"", where + ": cannot resolve " + endpoint.host + ": " + ec.message()};
  if (cancelled_) co_return Error{"", where + ": cancelled"};
  tcp_.expires_after(timeout);
  co_await tcp_.async_connect(results, redirect(ec));
  if (ec) co_return Error{"", where + ": " + ec.message()};
  if (cancelled_) co_return Error{"", where + ": cancelled"};
  tcp_.socket().set_option(tcp::no_delay(true), ec);
  if (!endpoint.tls) co_return std::nullopt;
  if (!tls) co_return Error{"", where + ": no TLS settings"};
  tls_client_ = std::move(tls);
  tls_ = std::make_unique<boost::beast::ssl_stream<boost::beast::tcp_stream&>>(
      tcp_, tls_client_->context());
  const std::string& name = endpoint.verified_name();
  if (!is_ip_address(name) && SSL_set_tlsext_host_name(tls_->native_handle(), name.c_str()) != 1) {
    co_return Error{"", where + ": cannot send the server name " + name};
  }
  if (tls_client_->verifies()) {
    tls_->set_verify_mode(ssl::verify_peer);
    tls_->set_verify_callback(ssl::host_name_verification(name));
  }
  tcp_.expires_after(timeout);
  co_await tls_->async_handshake(ssl::stream_base::client, redirect(ec));
  if (ec) co_return Error{"", where + ": " + ec.message()};
  co_return std::nullopt;
}

}  // namespace cudagate::https

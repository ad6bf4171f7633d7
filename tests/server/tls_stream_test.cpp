// The server side of one TLS connection against a real client on loopback: handshake, reads
// and writes, decrypted bytes left pending, and the errors asio's TLS stream would report for
// close_notify, a peer gone without one, a timeout, a cancel and a peer speaking plain text.
#include "server/tls_stream.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/error.hpp>
#include <csignal>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "tests/support/dev_certs.h"

namespace cudagate {
namespace {

namespace net = boost::asio;
namespace ssl = net::ssl;
namespace beast = boost::beast;
using tcp = net::ip::tcp;
using error_code = beast::error_code;

// A server context with the development certificate.
ssl::context tls_stream_server_context() {
  ssl::context context(ssl::context::tls_server);
  const std::string& dir = ::test_support::dev_certs();
  context.use_certificate_chain_file(dir + "/server.crt");
  context.use_private_key_file(dir + "/server.key", ssl::context::pem);
  return context;
}

// The client: blocking calls on a thread of the test's choosing, verifying
// the server against the development CA.
class TlsStreamPeer {
 public:
  TlsStreamPeer() : context_(ssl::context::tls_client), stream_(ioc_, context_) {
    context_.load_verify_file(::test_support::dev_certs() + "/ca.crt");
    stream_.set_verify_mode(ssl::verify_peer);
  }
  void connect(const tcp::endpoint& to) { stream_.next_layer().connect(to); }
  error_code handshake() {
    error_code ec;
    stream_.handshake(ssl::stream_base::client, ec);
    return ec;
  }
  ssl::stream<tcp::socket>& stream() { return stream_; }

 private:
  net::io_context ioc_;
  ssl::context context_;
  ssl::stream<tcp::socket> stream_;
};

class TlsStreamTest : public ::testing::Test {
 protected:
  // OpenSSL writes to the socket itself, without MSG_NOSIGNAL: a write
  // after the socket was shut down must be an error, not a signal.
  static void SetUpTestSuite() { std::signal(SIGPIPE, SIG_IGN); }
  TlsStreamTest() : acceptor_(ioc_, {net::ip::make_address("127.0.0.1"), 0}) {
    peer_.connect(acceptor_.local_endpoint());
    stream_.emplace(acceptor_.accept(), context_);
  }

  // Runs the server's io_context until `done`; an io_context whose work
  // ran out stopped itself, so each wait restarts it.
  void run_until(const bool& done) {
    ioc_.restart();
    while (!done) {
      if (ioc_.run_one() == 0) {
        ADD_FAILURE() << "the io_context ran out of work";
        return;
      }
    }
  }

  // The server's handshake, the peer's on a thread: both errors.
  std::pair<error_code, error_code> handshake() {
    auto peer = std::async(std::launch::async, [this] { return peer_.handshake(); });
    bool done = false;
    error_code server;
    stream_->async_handshake([&](const error_code& ec) {
      server = ec;
      done = true;
    });
    run_until(done);
    return {server, peer.get()};
  }

  // One server read of at most `max` bytes: its error and what it read.
  std::pair<error_code, std::string> read_some(std::size_t max) {
    beast::flat_buffer buffer;
    bool done = false;
    error_code result;
    stream_->async_read_some(buffer, max, [&](const error_code& ec) {
      result = ec;
      done = true;
    });
    run_until(done);
    return {result, beast::buffers_to_string(buffer.data())};
  }

  net::io_context ioc_;
  ssl::context context_ = tls_stream_server_context();
  tcp::acceptor acceptor_;
  TlsStreamPeer peer_;
  std::optional<TlsStream> stream_;
};

TEST_F(TlsStreamTest, ExchangesBytesAndEndsWithCloseNotify) {
  const auto [server, client] = handshake();
  ASSERT_FALSE(server) << server.message();
  ASSERT_FALSE(client) << client.message();

  net::write(peer_.stream(), net::buffer(std::string_view("hello")));
  const auto [read_error, read] = read_some(1024);
  EXPECT_FALSE(read_error) << read_error.message();
  EXPECT_EQ(read, "hello");

  bool written = false;
  error_code write_error;
  stream_->async_write("world", [&](const error_code& ec) {
    write_error = ec;
    written = true;
  });
  run_until(written);
  EXPECT_FALSE(write_error) << write_error.message();
  std::string reply(5, '\0');
  net::read(peer_.stream(), net::buffer(reply));
  EXPECT_EQ(reply, "world");

  // The peer's close_notify is eof; ours answers it.
  auto peer_shutdown = std::async(std::launch::async, [this] {
    error_code ec;
    peer_.stream().shutdown(ec);
    return ec;
  });
  const auto [end, nothing] = read_some(1024);
  EXPECT_EQ(end, net::error::eof);
  EXPECT_EQ(nothing, "");
  bool shut = false;
  error_code shutdown_error;
  stream_->async_shutdown([&](const error_code& ec) {
    shutdown_error = ec;
    shut = true;
  });
  run_until(shut);
  EXPECT_FALSE(shutdown_error) << shutdown_error.message();
  EXPECT_FALSE(peer_shutdown.get());
}

TEST_F(TlsStreamTest, APeerGoneWithoutCloseNotifyIsTruncated) {
  ASSERT_FALSE(handshake().first);
  // A FIN without close_notify (a close would reset the connection while
  // the session tickets TLS 1.3 sent after the handshake lie unread).
  peer_.stream().next_layer().shutdown(tcp::socket::shutdown_send);
  EXPECT_EQ(read_some(1024).first, ssl::error::stream_truncated);
}

TEST_F(TlsStreamTest, APeerThatResetsIsTheSystemsError) {
  ASSERT_FALSE(handshake().first);
  peer_.stream().next_layer().set_option(net::socket_base::linger(true, 0));
  peer_.stream().next_layer().close();
  EXPECT_EQ(read_some(1024).first, net::error::connection_reset);
}

TEST_F(TlsStreamTest, BytesLeftFromARecordArePendingAndReadableAtOnce) {
  ASSERT_FALSE(handshake().first);
  net::write(peer_.stream(), net::buffer(std::string_view("0123456789abcdef")));
  const auto [error, first] = read_some(10);
  ASSERT_FALSE(error) << error.message();
  EXPECT_EQ(first, "0123456789");
  EXPECT_TRUE(stream_->has_pending());
  // No socket wait: the handler runs on the caller's stack.
  bool readable = false;
  stream_->async_wait_readable([&](const error_code& ec) {
    EXPECT_FALSE(ec);
    readable = true;
  });
  EXPECT_TRUE(readable);
  EXPECT_EQ(read_some(1024).second, "abcdef");
  EXPECT_FALSE(stream_->has_pending());
}

TEST_F(TlsStreamTest, TimeOutEndsTheWaitAndEveryLaterOperation) {
  ASSERT_FALSE(handshake().first);
  beast::flat_buffer buffer;
  bool done = false;
  error_code read_error;
  stream_->async_read_some(buffer, 1024, [&](const error_code& ec) {
    read_error = ec;
    done = true;
  });
  EXPECT_FALSE(stream_->timed_out());
  net::post(ioc_, [this] { stream_->time_out(); });
  run_until(done);
  EXPECT_EQ(read_error, beast::error::timeout);
  EXPECT_TRUE(stream_->timed_out());

  bool written = false;
  error_code write_error;
  stream_->async_write("late", [&](const error_code& ec) {
    write_error = ec;
    written = true;
  });
  run_until(written);
  EXPECT_EQ(write_error, beast::error::timeout);
}

TEST_F(TlsStreamTest, CancelEndsTheWaitWithOperationAborted) {
  ASSERT_FALSE(handshake().first);
  bool done = false;
  error_code wait_error;
  stream_->async_wait_readable([&](const error_code& ec) {
    wait_error = ec;
    done = true;
  });
  net::post(ioc_, [this] { stream_->cancel(); });
  run_until(done);
  EXPECT_EQ(wait_error, net::error::operation_aborted);
  EXPECT_FALSE(stream_->timed_out());

  // The connection itself is fine.
  net::write(peer_.stream(), net::buffer(std::string_view("still here")));
  EXPECT_EQ(read_some(1024).second, "still here");
}

TEST_F(TlsStreamTest, PlainTextFailsTheHandshakeWithAnOpenSslError) {
  net::write(peer_.stream().next_layer(),
             net::buffer(std::string_view("GET / HTTP/1.1\r\nHost: x\r\n\r\n")));
  bool done = false;
  error_code handshake_error;
  stream_->async_handshake([&](const error_code& ec) {
    handshake_error = ec;
    done = true;
  });
  run_until(done);
  ASSERT_TRUE(handshake_error);
  EXPECT_EQ(handshake_error.category(), net::error::get_ssl_category())
      << handshake_error.message();
}

}  // namespace
}  // namespace cudagate

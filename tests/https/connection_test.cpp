// One client connection against a real server on loopback (TLS with the
// development certificates, tests/support/http_test_server.h): open()
// verifying the chain and the name, a certificate the trust does not accept
// refused with the step named, a refused connect and one that gets no answer
// within its deadline; requests and whole responses one after another on the
// connection kept; a streamed response read as its header and then as it
// arrives; and cancel() of an open(), of a read in progress and between two
// steps.
#include "https/connection.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/dev_certs.h"
#include "tests/support/http_test_server.h"

namespace cudagate::https {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using test_support::HttpTestServer;
using namespace std::chrono_literals;

HttpTestServer::Answer connection_answer(std::string body) {
  HttpTestServer::Answer answer;
  answer.response.result(http::status::ok);
  answer.response.set(http::field::content_type, "text/plain");
  answer.response.body() = std::move(body);
  return answer;
}

// Echoes the target, so that each response names its request.
HttpTestServer::Answer echo_target(const HttpTestServer::Request& request) {
  return connection_answer("for " + std::string(request.target()));
}

std::shared_ptr<const TlsClient> connection_trust(bool dev_ca, bool verify = true) {
  TlsTrust trust;
  trust.verify = verify;
  trust.system_cas = !dev_ca;
  if (dev_ca) trust.ca_file = test_support::dev_certs() + "/ca.crt";
  return *TlsClient::make(trust);
}

http::request<http::empty_body> connection_get(const std::string& target) {
  http::request<http::empty_body> request{http::verb::get, target, 11};
  request.set(http::field::host, "localhost");
  return request;
}

// Runs `body` as a coroutine on `ioc` until it and all it started end.
template <typename Body>
void run_coroutine(net::io_context& ioc, Body body) {
  net::co_spawn(ioc, std::move(body), net::detached);
  ioc.restart();
  ioc.run();
}

// open() of `endpoint`, run to its end: nullopt or its Error's message.
std::optional<std::string> open_result(net::io_context& ioc, Connection& connection,
                                       const Endpoint& endpoint,
                                       std::shared_ptr<const TlsClient> tls,
                                       std::chrono::steady_clock::duration timeout = 10s) {
  std::optional<std::string> failure;
  run_coroutine(ioc, [&]() -> net::awaitable<void> {
    auto failed = co_await connection.open(endpoint, tls, timeout);
    if (failed) failure = failed->message;
  });
  return failure;
}

TEST(Connection, OpenVerifiesTheChainAndTheName) {
  HttpTestServer server(echo_target, test_support::dev_certs());
  const std::string where = "connecting with TLS to 127.0.0.1:" + server.port();
  struct Row {
    std::string name;  // the name verified ("" = the address)
    bool dev_ca;       // trust the development CA, else only the system's
    bool verify;
    std::string failure;  // "" = opens
  };
  const std::vector<Row> rows = {
      {"localhost", true, true, ""},  // the name, sent as SNI
      {"", true, true, ""},           // the certificate also names IP:127.0.0.1
      {"wrong.example", true, true, where + ": certificate verify failed"},
      {"localhost", false, true, where + ": certificate verify failed"},
      {"wrong.example", false, false, ""},  // insecure: nothing is checked
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name + (row.dev_ca ? " dev CA" : " system CAs") +
                 (row.verify ? "" : " insecure"));
    net::io_context ioc;
    Connection connection(ioc.get_executor());
    auto failure =
        open_result(ioc, connection, Endpoint{"127.0.0.1", server.port(), true, row.name},
                    connection_trust(row.dev_ca, row.verify));
    if (row.failure.empty()) {
      EXPECT_FALSE(failure) << *failure;
      EXPECT_TRUE(connection.is_open());
    } else {
      ASSERT_TRUE(failure);
      // OpenSSL adds where it failed: "... (SSL routines)".
      EXPECT_EQ(failure->rfind(row.failure, 0), 0U) << *failure;
    }
  }
}

TEST(Connection, OpenFailuresNameTheStep) {
  std::string closed_port;
  {
    HttpTestServer closed(echo_target);
    closed_port = closed.port();
  }
  HttpTestServer server(echo_target, test_support::dev_certs());
  net::io_context ioc;

  Connection refused(ioc.get_executor());
  auto no_one = open_result(ioc, refused, Endpoint{"127.0.0.1", closed_port, true, ""},
                            connection_trust(true));
  ASSERT_TRUE(no_one);
  EXPECT_EQ(*no_one, "connecting with TLS to 127.0.0.1:" + closed_port + ": Connection refused");

  Connection no_tls(ioc.get_executor());
  auto without = open_result(ioc, no_tls, Endpoint{"127.0.0.1", server.port(), true, ""}, nullptr);
  ASSERT_TRUE(without);
  EXPECT_EQ(*without, "connecting with TLS to 127.0.0.1:" + server.port() + ": no TLS settings");
}

TEST(Connection, AConnectNobodyAnswersEndsAtTheDeadline) {
  // A listening socket whose accept queue is full drops further SYNs, so
  // the connect waits for an answer that never comes: it ends at its
  // deadline, however long that is.
  net::io_context ioc;
  net::ip::tcp::acceptor full(ioc, {net::ip::make_address("127.0.0.1"), 0});
  full.listen(0);
  net::ip::tcp::socket queued(ioc);
  queued.connect(full.local_endpoint());
  const std::string port = std::to_string(full.local_endpoint().port());

  Connection connection(ioc.get_executor());
  auto failure =
      open_result(ioc, connection, Endpoint{"127.0.0.1", port, false, ""}, nullptr, 200ms);
  ASSERT_TRUE(failure);
  EXPECT_EQ(*failure, "connecting to 127.0.0.1:" + port + ": " +
                          beast::error_code(beast::error::timeout).message());
}

TEST(Connection, CarriesOneRequestAfterAnother) {
  HttpTestServer server(echo_target, test_support::dev_certs());
  net::io_context ioc;
  Connection connection(ioc.get_executor());
  ASSERT_FALSE(open_result(ioc, connection, Endpoint{"127.0.0.1", server.port(), true, ""},
                           connection_trust(true)));
  std::vector<std::string> bodies;
  run_coroutine(ioc, [&]() -> net::awaitable<void> {
    for (const std::string target : {"/first", "/second"}) {
      auto request = connection_get(target);
      connection.tcp().expires_after(10s);
      auto ec = co_await connection.write(request);
      EXPECT_FALSE(ec) << ec.message();
      http::response_parser<http::string_body> parser;
      ec = co_await connection.read(parser);
      EXPECT_FALSE(ec) << ec.message();
      EXPECT_EQ(parser.get().result_int(), 200U);
      bodies.push_back(parser.get().body());
    }
  });
  EXPECT_EQ(bodies, (std::vector<std::string>{"for /first", "for /second"}));
  EXPECT_EQ(server.requests(), 2);
  EXPECT_EQ(server.accepted(), 1);
}

TEST(Connection, ReadsAStreamedResponseAsItArrivesAndCancelEndsTheRead) {
  HttpTestServer server(
      [](const HttpTestServer::Request&) {
        auto answer = connection_answer("first event\n");
        answer.stream = true;  // the rest never comes
        return answer;
      },
      test_support::dev_certs());
  net::io_context ioc;
  Connection connection(ioc.get_executor());
  ASSERT_FALSE(open_result(ioc, connection, Endpoint{"127.0.0.1", server.port(), true, ""},
                           connection_trust(true)));

  unsigned status = 0;
  bool chunked = false;
  std::string arrived;
  beast::error_code cancelled;
  run_coroutine(ioc, [&]() -> net::awaitable<void> {
    auto request = connection_get("/watch");
    connection.tcp().expires_after(10s);
    EXPECT_FALSE(co_await connection.write(request));
    http::response_parser<http::buffer_body> parser;
    EXPECT_FALSE(co_await connection.read_header(parser));
    status = parser.get().result_int();
    chunked = parser.get().chunked();
    std::array<char, 4096> chunk{};
    // Reads until the first chunk has come whole.
    while (arrived != "first event\n") {
      parser.get().body().data = chunk.data();
      parser.get().body().size = chunk.size();
      auto ec = co_await connection.read_some(parser);
      if (ec == http::error::need_buffer) ec = {};
      if (ec) {
        ADD_FAILURE() << ec.message();
        co_return;
      }
      arrived.append(chunk.data(), chunk.size() - parser.get().body().size);
    }
    // The next read waits for what never comes, until cancel(); the
    // deadline only bounds a failure to cancel.
    connection.tcp().expires_after(60s);
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    net::post(ioc, [&connection] { connection.cancel(); });
    cancelled = co_await connection.read_some(parser);
  });
  EXPECT_EQ(status, 200U);
  EXPECT_TRUE(chunked);
  EXPECT_EQ(arrived, "first event\n");
  EXPECT_EQ(cancelled, net::error::operation_aborted) << cancelled.message();
}

TEST(Connection, CancelEndsAnOpenAfterItsStep) {
  HttpTestServer server(echo_target, test_support::dev_certs());
  net::io_context ioc;
  Connection connection(ioc.get_executor());
  const Endpoint endpoint{"127.0.0.1", server.port(), true, ""};
  const std::shared_ptr<const TlsClient> tls = connection_trust(true);
  std::optional<std::string> failure;
  net::co_spawn(
      ioc,
      [&]() -> net::awaitable<void> {
        auto failed = co_await connection.open(endpoint, tls, 10s);
        if (failed) failure = failed->message;
      },
      net::detached);
  // Queued behind the coroutine's start: runs while it resolves.
  net::post(ioc, [&connection] { connection.cancel(); });
  ioc.run();
  ASSERT_TRUE(failure);
  EXPECT_EQ(*failure, "connecting with TLS to 127.0.0.1:" + server.port() + ": cancelled");
  EXPECT_EQ(server.accepted(), 0);
}

TEST(Connection, ACancelBetweenStepsEndsTheNextOneAtOnce) {
  // cancel() may come while nothing waits on the socket (the last step's
  // completion queued, the next not begun): the next step does not begin.
  HttpTestServer server(echo_target, test_support::dev_certs());
  net::io_context ioc;
  Connection connection(ioc.get_executor());
  ASSERT_FALSE(open_result(ioc, connection, Endpoint{"127.0.0.1", server.port(), true, ""},
                           connection_trust(true)));
  connection.cancel();
  beast::error_code written;
  beast::error_code read;
  run_coroutine(ioc, [&]() -> net::awaitable<void> {
    auto request = connection_get("/after-cancel");
    connection.tcp().expires_after(10s);
    written = co_await connection.write(request);
    http::response_parser<http::string_body> parser;
    read = co_await connection.read(parser);
  });
  EXPECT_EQ(written, net::error::operation_aborted) << written.message();
  EXPECT_EQ(read, net::error::operation_aborted) << read.message();
  EXPECT_EQ(server.requests(), 0);
}

}  // namespace
}  // namespace cudagate::https

// The pool against a real HTTP/1.1 server on loopback (plain and TLS with
// the development certificates): connections kept and reused, and closed
// once idle too long, a kept connection the server closed replaced once, the bound on exchanges at
// once, verification, limits, deadlines and close().
#include "https/pool.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/dev_certs.h"
#include "tests/support/http_test_server.h"

namespace cudagate::https {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using test_support::HttpTestServer;
using namespace std::chrono_literals;

HttpTestServer::Answer ok(std::string body = "ok") {
  HttpTestServer::Answer answer;
  answer.response.result(http::status::ok);
  answer.response.body() = std::move(body);
  return answer;
}

Request get_request() {
  Request request{http::verb::get, "/", 11};
  request.set(http::field::host, "localhost");
  return request;
}

Endpoint local(const HttpTestServer& server, bool tls, std::string name = "") {
  return Endpoint{"127.0.0.1", server.port(), tls, std::move(name)};
}

std::shared_ptr<const TlsClient> trusting_dev_ca() {
  TlsTrust trust;
  trust.system_cas = false;
  trust.ca_file = test_support::dev_certs() + "/ca.crt";
  return *TlsClient::make(trust);
}

class PoolTest : public ::testing::Test {
 protected:
  // One exchange, run to its end.
  Expected<Response> get(Pool& pool, const Endpoint& endpoint,
                         std::shared_ptr<const TlsClient> tls = nullptr,
                         ExchangeLimits limits = {}) {
    Request request = get_request();
    std::optional<Expected<Response>> out;
    net::co_spawn(
        ioc_,
        [&]() -> net::awaitable<void> {
          out.emplace(co_await pool.exchange(endpoint, tls, request, limits));
        },
        net::detached);
    ioc_.restart();
    ioc_.run();
    return std::move(*out);
  }

  net::io_context ioc_;
};

TEST_F(PoolTest, KeepsTheConnectionForTheNextRequest) {
  HttpTestServer server([](const auto&) { return ok(); });
  Pool pool(ioc_.get_executor());
  for (int i = 0; i < 3; ++i) {
    auto response = get(pool, local(server, false));
    ASSERT_TRUE(response) << response.error().str();
    EXPECT_EQ(response->result_int(), 200U);
    EXPECT_EQ(response->body(), "ok");
  }
  EXPECT_EQ(server.requests(), 3);
  EXPECT_EQ(server.accepted(), 1);
  EXPECT_EQ(pool.connections_opened(), 1U);
  EXPECT_EQ(pool.idle_connections(), 1U);
}

TEST_F(PoolTest, AConnectionIdleTooLongIsClosedInsteadOfUsed) {
  HttpTestServer server([](const auto&) { return ok(); });
  PoolLimits limits;
  limits.max_idle_time = std::chrono::steady_clock::duration::zero();
  Pool pool(ioc_.get_executor(), limits);
  ASSERT_TRUE(get(pool, local(server, false)));
  EXPECT_EQ(pool.idle_connections(), 1U);
  ASSERT_TRUE(get(pool, local(server, false)));
  EXPECT_EQ(server.accepted(), 2);
  EXPECT_EQ(pool.connections_opened(), 2U);
  EXPECT_EQ(pool.idle_connections(), 1U);  // the old one closed, the new one kept
}

TEST_F(PoolTest, ConnectionCloseIsNotKept) {
  HttpTestServer server([](const auto&) {
    auto answer = ok();
    answer.response.keep_alive(false);
    return answer;
  });
  Pool pool(ioc_.get_executor());
  ASSERT_TRUE(get(pool, local(server, false)));
  ASSERT_TRUE(get(pool, local(server, false)));
  EXPECT_EQ(server.accepted(), 2);
  EXPECT_EQ(pool.idle_connections(), 0U);
}

TEST_F(PoolTest, AKeptConnectionTheServerClosedIsReplacedOnce) {
  // The server closes each connection after its answer without saying so,
  // as servers do with idle kept-alive connections: the second request finds
  // its kept connection dead before any answer and goes on a new one.
  HttpTestServer server([](const auto&) {
    auto answer = ok();
    answer.close_after = true;
    return answer;
  });
  Pool pool(ioc_.get_executor());
  ASSERT_TRUE(get(pool, local(server, false)));
  EXPECT_EQ(pool.idle_connections(), 1U);
  auto second = get(pool, local(server, false));
  ASSERT_TRUE(second) << second.error().str();
  EXPECT_EQ(second->body(), "ok");
  EXPECT_EQ(server.requests(), 2);
  EXPECT_EQ(server.accepted(), 2);
  EXPECT_EQ(pool.connections_opened(), 2U);
}

TEST_F(PoolTest, AtMostMaxConnectionsExchangesAtOnce) {
  constexpr int kRequests = 6;
  HttpTestServer* serving = nullptr;
  HttpTestServer server([&serving](const auto&) {
    serving->wait_for_in_flight(2, kRequests);
    return ok();
  });
  serving = &server;
  Pool pool(ioc_.get_executor(), PoolLimits{2, 2, 10s});
  const Endpoint endpoint = local(server, false);
  std::vector<Request> requests(kRequests, get_request());
  std::vector<std::optional<Expected<Response>>> answers(kRequests);
  for (int i = 0; i < kRequests; ++i) {
    net::co_spawn(
        ioc_,
        [&, i]() -> net::awaitable<void> {
          answers[i].emplace(co_await pool.exchange(endpoint, nullptr, requests[i], {}));
        },
        net::detached);
  }
  ioc_.run();
  for (const auto& answer : answers) {
    ASSERT_TRUE(answer.has_value());
    ASSERT_TRUE(*answer) << answer->error().str();
  }
  EXPECT_EQ(server.requests(), kRequests);
  EXPECT_EQ(server.most_in_flight(), 2);
  EXPECT_LE(server.accepted(), 2);
}

TEST_F(PoolTest, TlsIsVerifiedAgainstTheCaAndTheName) {
  HttpTestServer server([](const auto&) { return ok("tls"); }, test_support::dev_certs());
  Pool pool(ioc_.get_executor());

  auto verified = get(pool, local(server, true, "localhost"), trusting_dev_ca());
  ASSERT_TRUE(verified) << verified.error().str();
  EXPECT_EQ(verified->body(), "tls");
  // The certificate also names IP:127.0.0.1, so the address verifies too.
  EXPECT_TRUE(get(pool, local(server, true), trusting_dev_ca()));

  auto wrong_name = get(pool, local(server, true, "wrong.example"), trusting_dev_ca());
  ASSERT_FALSE(wrong_name);
  EXPECT_NE(wrong_name.error().message.find("connecting with TLS to 127.0.0.1:" + server.port()),
            std::string::npos)
      << wrong_name.error().message;
  EXPECT_NE(wrong_name.error().message.find("certificate verify failed"), std::string::npos)
      << wrong_name.error().message;

  TlsTrust system_only;
  auto unknown_ca = get(pool, local(server, true, "localhost"), *TlsClient::make(system_only));
  ASSERT_FALSE(unknown_ca);
  EXPECT_NE(unknown_ca.error().message.find("certificate verify failed"), std::string::npos)
      << unknown_ca.error().message;

  TlsTrust insecure;
  insecure.verify = false;
  EXPECT_TRUE(get(pool, local(server, true, "wrong.example"), *TlsClient::make(insecure)));
}

TEST_F(PoolTest, AnAnswerOverTheBodyLimitIsAnError) {
  HttpTestServer server([](const auto&) { return ok(std::string(2000, 'x')); });
  Pool pool(ioc_.get_executor());
  ExchangeLimits limits;
  limits.max_body = 1000;
  auto response = get(pool, local(server, false), nullptr, limits);
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().message, "the answer exceeds 1000 bytes");
  EXPECT_EQ(pool.idle_connections(), 0U);
}

TEST_F(PoolTest, NoAnswerWithinTheDeadlineIsAnError) {
  HttpTestServer server([](const auto&) {
    HttpTestServer::Answer answer;
    answer.hang = true;
    return answer;
  });
  Pool pool(ioc_.get_executor());
  ExchangeLimits limits;
  limits.timeout = 200ms;
  auto response = get(pool, local(server, false), nullptr, limits);
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().message, "no answer from 127.0.0.1:" + server.port() + " within 1 s");
  EXPECT_EQ(server.requests(), 1);  // not sent again on a new connection
}

TEST_F(PoolTest, ARefusedConnectionIsNamed) {
  std::string port;
  {
    HttpTestServer closed([](const auto&) { return ok(); });
    port = closed.port();
  }
  Pool pool(ioc_.get_executor());
  auto response = get(pool, Endpoint{"127.0.0.1", port, false, ""});
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().message.rfind("connecting to 127.0.0.1:" + port + ": ", 0), 0U)
      << response.error().message;
}

TEST_F(PoolTest, CloseEndsWhatIsInFlightAndWhatComesAfter) {
  HttpTestServer server([](const auto&) {
    HttpTestServer::Answer answer;
    answer.hang = true;
    return answer;
  });
  Pool pool(ioc_.get_executor());
  const Endpoint endpoint = local(server, false);
  Request request = get_request();
  std::optional<Expected<Response>> answer;
  net::co_spawn(
      ioc_,
      [&]() -> net::awaitable<void> {
        answer.emplace(co_await pool.exchange(endpoint, nullptr, request, {}));
      },
      net::detached);
  // Closes the pool once the server holds the request.
  net::co_spawn(
      ioc_,
      [&]() -> net::awaitable<void> {
        net::steady_timer poll(ioc_);
        while (server.requests() == 0) {
          poll.expires_after(5ms);
          co_await poll.async_wait(net::use_awaitable);
        }
        pool.close();
      },
      net::detached);
  ioc_.run();
  ASSERT_TRUE(answer.has_value());
  ASSERT_FALSE(*answer);
  EXPECT_EQ(answer->error().message, "the client was stopped");

  auto later = get(pool, endpoint);
  ASSERT_FALSE(later);
  EXPECT_EQ(later.error().message, "the client was stopped");
  EXPECT_EQ(server.accepted(), 1);
}

}  // namespace
}  // namespace cudagate::https

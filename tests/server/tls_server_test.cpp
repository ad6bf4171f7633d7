// The HTTPS listener on loopback with the development certificates and a real TLS client:
// requests routed and answered on kept-alive connections, the limits answered 413, 431 and 400,
// a handler's exception 500, silent peers cut at their phase's timeout, the connection bound,
// the listen error naming the address, and a shutdown that lets a request in flight finish.
#include "server/tls_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/http/error.hpp>
#include <chrono>
#include <csignal>
#include <future>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "tests/support/dev_certs.h"
#include "tests/support/https_test_client.h"

namespace cudagate {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using ::test_support::HttpsTestClient;
using tcp = net::ip::tcp;

CertStore tls_server_cert_store() {
  const std::string& dir = ::test_support::dev_certs();
  const TlsFiles files{dir + "/server.crt", dir + "/server.key", ""};
  auto identity = load_tls_identity(files);
  if (!identity) throw std::runtime_error(identity.error().str());
  return CertStore(files, std::move(identity).value());
}

// "METHOD target body", what the echo handler answers.
HttpResponse tls_server_echo(const HttpRequest& request) {
  HttpResponse res{http::status::ok, 11};
  res.set(http::field::content_type, "text/plain");
  res.body() = std::string(request.method_string()) + " " + std::string(request.target()) + " " +
               std::string(request.body().view());
  return res;
}

HttpsTestClient::Request tls_server_request(http::verb method, const std::string& target,
                                            const std::string& body = "") {
  HttpsTestClient::Request request{method, target, 11};
  request.set(http::field::host, "127.0.0.1");
  request.body() = body;
  return request;
}

// A server on 127.0.0.1 with its io_context on a thread of its own; the
// destructor drains it and joins the thread.
class TlsServerTest : public ::testing::Test {
 protected:
  // OpenSSL writes to the socket itself, without MSG_NOSIGNAL: a peer gone
  // must be an error, not a signal, as serve() makes it.
  static void SetUpTestSuite() { std::signal(SIGPIPE, SIG_IGN); }
  ~TlsServerTest() override { stop(); }

  template <class Handler>
  void start(ServerLimits limits, Handler handler) {
    server_.emplace(ioc_, 1, certs_, limits, std::move(handler), &metrics_);
    const auto error = server_->listen({net::ip::make_address("127.0.0.1"), 0});
    ASSERT_FALSE(error.has_value()) << error->str();
    server_->start();
    thread_ = std::thread([this] { ioc_.run(); });
  }

  void start(ServerLimits limits = {}) { start(limits, RequestHandler(tls_server_echo)); }

  [[nodiscard]] std::uint16_t port() const { return server_->local_endpoint().port(); }

  // Begins the draining shutdown; the future is ready once no connection is left.
  std::future<void> shut_down() {
    auto drained = std::make_shared<std::promise<void>>();
    auto future = drained->get_future();
    server_->shutdown([drained] { drained->set_value(); });
    return future;
  }

  void stop() {
    if (!thread_.joinable()) return;
    shut_down().wait();
    work_.reset();
    ioc_.stop();
    thread_.join();
  }

  net::io_context ioc_;
  net::executor_work_guard<net::io_context::executor_type> work_ = net::make_work_guard(ioc_);
  CertStore certs_ = tls_server_cert_store();
  WebhookMetrics metrics_{"test", "rev"};
  std::optional<TlsServer> server_;
  std::thread thread_;
};

TEST_F(TlsServerTest, AnswersRequestsOnOneKeptAliveConnection) {
  start();
  HttpsTestClient client(::test_support::dev_certs());
  ASSERT_FALSE(client.connect(port()));

  boost::system::error_code ec;
  auto res = client.exchange(tls_server_request(http::verb::get, "/first"), ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res.body(), "GET /first ");
  EXPECT_TRUE(res.keep_alive());

  // The same stream: the server kept the connection for the next request.
  res = client.exchange(tls_server_request(http::verb::post, "/second", "payload"), ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(res.body(), "POST /second payload");
  EXPECT_EQ(server_->open_connections(), 1U);
  EXPECT_NE(metrics_.render().find("cudagate_open_connections 1"), std::string::npos);

  // A client that asks to close is answered, then closed with close_notify.
  auto last = tls_server_request(http::verb::get, "/last");
  last.keep_alive(false);
  res = client.exchange(last, ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_FALSE(res.keep_alive());
  EXPECT_EQ(client.read_until_closed(), net::error::eof);
}

TEST_F(TlsServerTest, RefusesWhatItCannotReadWithAJsonError) {
  std::atomic<int> handled = 0;
  ServerLimits limits;
  limits.max_body_bytes = 16;
  limits.max_header_bytes = 256;
  start(limits, RequestHandler([&handled](const HttpRequest& request) {
          ++handled;
          return tls_server_echo(request);
        }));
  struct Row {
    const char* what;
    std::string wire;
    http::status status;
    const char* message;
  };
  const Row rows[] = {
      {"body over the limit",
       "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n" +
           std::string(1000, 'b'),
       http::status::payload_too_large, "request body exceeds 16 bytes"},
      {"header over the limit",
       "GET / HTTP/1.1\r\nHost: x\r\nX-Pad: " + std::string(1000, 'p') + "\r\n\r\n",
       http::status::request_header_fields_too_large, "request header exceeds 256 bytes"},
      {"field without a colon", "GET / HTTP/1.1\r\nHost x\r\n\r\n", http::status::bad_request,
       "malformed HTTP request: "},
      {"unknown HTTP version", "GET / HTTP/9.x\r\nHost: x\r\n\r\n", http::status::bad_request,
       "malformed HTTP request: "},
      {"two lengths", "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
       http::status::bad_request, "malformed HTTP request: "},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.what);
    HttpsTestClient client(::test_support::dev_certs());
    ASSERT_FALSE(client.connect(port()));
    ASSERT_FALSE(client.write_raw(row.wire));
    boost::system::error_code ec;
    const auto res = client.read_response(ec);
    ASSERT_FALSE(ec) << ec.message();
    EXPECT_EQ(res.result(), row.status);
    EXPECT_FALSE(res.keep_alive());
    EXPECT_EQ(res[http::field::content_type], "application/json");
    const auto body = nlohmann::json::parse(res.body(), nullptr, false);
    ASSERT_TRUE(body.is_object()) << res.body();
    EXPECT_TRUE(body["error"].get<std::string>().starts_with(row.message)) << res.body();
    // Answered, then closed once the client has sent what it had: no
    // close_notify from the server, which stopped reading the request.
    EXPECT_TRUE(client.shutdown());
  }
  EXPECT_EQ(handled.load(), 0);
}

TEST_F(TlsServerTest, AHandlerExceptionIsAnswered500) {
  start({}, RequestHandler([](const HttpRequest&) -> HttpResponse {
          throw std::runtime_error("the handler broke");
        }));
  HttpsTestClient client(::test_support::dev_certs());
  ASSERT_FALSE(client.connect(port()));
  boost::system::error_code ec;
  const auto res = client.exchange(tls_server_request(http::verb::get, "/"), ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(res.result(), http::status::internal_server_error);
  // What broke goes to the log, not to the client.
  EXPECT_EQ(res.body(), "{\"error\":\"internal error\"}\n");
  // The connection stays usable.
  EXPECT_TRUE(res.keep_alive());
}

TEST_F(TlsServerTest, SilentPeersAreCutAtTheirPhasesTimeout) {
  ServerLimits limits;
  limits.handshake_timeout = std::chrono::milliseconds(50);
  limits.header_timeout = std::chrono::milliseconds(50);
  limits.idle_timeout = std::chrono::milliseconds(50);
  start(limits);

  {
    SCOPED_TRACE("no TLS handshake");
    net::io_context ioc;
    tcp::socket socket(ioc);
    socket.connect({net::ip::make_address("127.0.0.1"), port()});
    char byte = 0;
    boost::system::error_code ec;
    const auto n = socket.read_some(net::buffer(&byte, 1), ec);
    EXPECT_EQ(n, 0U);
    EXPECT_TRUE(ec);
  }
  {
    SCOPED_TRACE("no first request");
    HttpsTestClient client(::test_support::dev_certs());
    ASSERT_FALSE(client.connect(port()));
    EXPECT_TRUE(client.read_until_closed());
  }
  {
    SCOPED_TRACE("half a header");
    HttpsTestClient client(::test_support::dev_certs());
    ASSERT_FALSE(client.connect(port()));
    ASSERT_FALSE(client.write_raw("GET / HTTP/1.1\r\nHost: x\r\n"));
    EXPECT_TRUE(client.read_until_closed());
  }
  {
    SCOPED_TRACE("no second request");
    HttpsTestClient client(::test_support::dev_certs());
    ASSERT_FALSE(client.connect(port()));
    boost::system::error_code ec;
    const auto res = client.exchange(tls_server_request(http::verb::get, "/"), ec);
    ASSERT_FALSE(ec) << ec.message();
    EXPECT_TRUE(res.keep_alive());
    EXPECT_TRUE(client.read_until_closed());
  }
}

TEST_F(TlsServerTest, PlainHttpIsClosedWithoutAnAnswer) {
  std::atomic<int> handled = 0;
  start({}, RequestHandler([&handled](const HttpRequest& request) {
          ++handled;
          return tls_server_echo(request);
        }));
  net::io_context ioc;
  tcp::socket socket(ioc);
  socket.connect({net::ip::make_address("127.0.0.1"), port()});
  net::write(socket, net::buffer(std::string_view("GET / HTTP/1.1\r\nHost: x\r\n\r\n")));
  std::string received;
  boost::system::error_code ec;
  while (!ec) {
    char chunk[512];
    const auto n = socket.read_some(net::buffer(chunk), ec);
    received.append(chunk, n);
  }
  // At most a TLS alert: never an HTTP answer.
  EXPECT_FALSE(received.starts_with("HTTP/")) << received;
  EXPECT_EQ(handled.load(), 0);
}

TEST_F(TlsServerTest, ConnectionsBeyondTheBoundAreClosed) {
  ServerLimits limits;
  limits.max_connections = 1;
  start(limits);
  // The first connection has made a request: it cannot be evicted for the next.
  HttpsTestClient first(::test_support::dev_certs());
  ASSERT_FALSE(first.connect(port()));
  boost::system::error_code ec;
  (void)first.exchange(tls_server_request(http::verb::get, "/"), ec);
  ASSERT_FALSE(ec) << ec.message();

  HttpsTestClient second(::test_support::dev_certs());
  EXPECT_TRUE(second.connect(port()));

  // The first is still served; its answer comes after the refusal was
  // counted (one thread runs the server).
  const auto res = first.exchange(tls_server_request(http::verb::get, "/again"), ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(res.body(), "GET /again ");
  EXPECT_NE(metrics_.render().find("cudagate_rejected_connections_total 1"), std::string::npos)
      << metrics_.render();
}

TEST_F(TlsServerTest, ListenErrorNamesTheAddress) {
  start();
  net::io_context other_ioc;
  TlsServer other(other_ioc, 1, certs_, {}, RequestHandler(tls_server_echo), nullptr);
  const auto error = other.listen({net::ip::make_address("127.0.0.1"), port()});
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->where, "--listen 127.0.0.1:" + std::to_string(port()));
  EXPECT_NE(error->message.find("cannot bind"), std::string::npos) << error->message;
}

// The request in flight stays the handler's until it answers; the test
// answers once the shutdown has begun.
class HeldResponders {
 public:
  void add(Responder responder) {
    std::lock_guard lock(mutex_);
    held_.push_back(std::move(responder));
    arrived_.set_value();
  }
  std::future<void> arrived() { return arrived_.get_future(); }
  // Answers the first request held and lets go of its session.
  void answer(const std::string& body) {
    std::vector<Responder> held;
    {
      std::lock_guard lock(mutex_);
      held.swap(held_);
    }
    HttpResponse res{http::status::ok, 11};
    res.body() = body;
    held.front()(std::move(res));
  }

 private:
  std::mutex mutex_;
  std::vector<Responder> held_;
  std::promise<void> arrived_;
};

TEST_F(TlsServerTest, ShutdownLetsTheRequestInFlightFinish) {
  HeldResponders held;
  auto arrived = held.arrived();
  start({}, AsyncRequestHandler([&held](const HttpRequest& request, Responder respond) {
          if (request.target() == "/idle") {
            respond(tls_server_echo(request));
            return;
          }
          held.add(std::move(respond));
        }));

  // One connection idle between requests, one with a request in flight.
  HttpsTestClient idle(::test_support::dev_certs());
  ASSERT_FALSE(idle.connect(port()));
  boost::system::error_code ec;
  (void)idle.exchange(tls_server_request(http::verb::get, "/idle"), ec);
  ASSERT_FALSE(ec) << ec.message();

  auto in_flight = std::async(std::launch::async, [port = port()] {
    HttpsTestClient client(::test_support::dev_certs());
    std::pair<HttpsTestClient::Response, boost::system::error_code> out;
    out.second = client.connect(port);
    if (out.second) return out;
    out.first =
        client.exchange(tls_server_request(http::verb::post, "/validate", "{}"), out.second);
    if (!out.second) out.second = client.read_until_closed();
    client.shutdown();
    return out;
  });
  arrived.wait();

  auto drained = shut_down();
  // The idle connection is closed at once, with close_notify...
  EXPECT_EQ(idle.read_until_closed(), net::error::eof);
  idle.shutdown();
  // ...and a new one is not served.
  HttpsTestClient late(::test_support::dev_certs());
  EXPECT_TRUE(late.connect(port()));
  EXPECT_NE(drained.wait_for(std::chrono::seconds(0)), std::future_status::ready);

  held.answer("late but whole");
  const auto [res, end] = in_flight.get();
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res.body(), "late but whole");
  EXPECT_FALSE(res.keep_alive());  // draining: the response closes its connection
  EXPECT_EQ(end, net::error::eof);
  drained.wait();
  EXPECT_EQ(server_->open_connections(), 0U);
}

}  // namespace
}  // namespace cudagate

// The webhook as a whole, in this process: --listen parsed, start-up failures returned before
// anything is served with the file or flag they name, and one server on a loopback port of the
// system's choosing answering /readyz and a /validate review over TLS until SIGTERM drains it.
#include "server/serve.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/beast/http/field.hpp>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "tests/support/dev_certs.h"
#include "tests/support/fixtures.h"
#include "tests/support/https_test_client.h"

namespace cudagate {
namespace {

namespace fs = std::filesystem;
namespace http = boost::beast::http;

TEST(ParseListen, AddressesAndPorts) {
  struct Row {
    const char* text;
    const char* address;  // "" when refused
    unsigned short port;
  };
  const Row rows[] = {
      {"0.0.0.0:8443", "0.0.0.0", 8443},
      {"127.0.0.1:0", "127.0.0.1", 0},
      {":9443", "0.0.0.0", 9443},
      {"[::1]:8443", "::1", 8443},
      {"[::]:65535", "::", 65535},
      {"localhost:8443", "", 0},
      {"::1:8443", "", 0},
      {"[::1]8443", "", 0},
      {"10.0.0.1:", "", 0},
      {"10.0.0.1:65536", "", 0},
      {"10.0.0.1:84a3", "", 0},
      {"10.0.0.1:-1", "", 0},
      {"10.0.0.1:123456", "", 0},
      {"8443", "", 0},
      {"", "", 0},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.text);
    const auto parsed = parse_listen(row.text);
    if (row.address[0] == '\0') {
      ASSERT_FALSE(parsed.has_value());
      EXPECT_EQ(parsed.error().where, "--listen");
      EXPECT_NE(parsed.error().message.find(std::string("got \"") + row.text + "\""),
                std::string::npos)
          << parsed.error().message;
      continue;
    }
    ASSERT_TRUE(parsed.has_value()) << parsed.error().str();
    EXPECT_EQ(parsed->address().to_string(), row.address);
    EXPECT_EQ(parsed->port(), row.port);
  }
}

// What serving starts from, in a temporary folder: the fixture fleet, a
// policy without registry lookups (nothing leaves the machine), the
// development certificates and files that do not read.
class ServeTest : public ::testing::Test {
 protected:
  ServeTest() : dir_(fs::temp_directory_path() / ("cudagate-serve-" + std::to_string(::getpid()))) {
    fs::create_directories(dir_);
    std::ofstream(dir_ / "policy.yaml") << "mode: enforce\nregistry:\n  enabled: false\n";
    std::ofstream(dir_ / "bad-policy.yaml") << "mode: [not, a, mode]\n";
    std::ofstream(dir_ / "bad-db.json") << "{\"not\": \"a matrix\"}\n";
    std::ofstream(dir_ / "bad-nodes.json") << "{\"kind\": \"NodeList\", \"items\": 7}\n";
  }
  ~ServeTest() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  ServeTest(const ServeTest&) = delete;
  ServeTest& operator=(const ServeTest&) = delete;

  [[nodiscard]] std::string path(const char* name) const { return (dir_ / name).string(); }

  [[nodiscard]] ServeSettings settings() const {
    const std::string& certs = ::test_support::dev_certs();
    ServeSettings s;
    s.config_path = path("policy.yaml");
    s.nodes_path = std::string(CUDAGATE_TEST_DATA) + "/admission/nodes-t4-a100.json";
    s.tls = {certs + "/server.crt", certs + "/server.key", ""};
    s.endpoint = {boost::asio::ip::make_address("127.0.0.1"), 0};
    return s;
  }

  fs::path dir_;
};

TEST_F(ServeTest, StartUpFailuresNameTheFileOrFlag) {
  // A port already taken, for the listen failure.
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::acceptor taken(ioc, {boost::asio::ip::make_address("127.0.0.1"), 0});
  const unsigned short taken_port = taken.local_endpoint().port();

  struct Row {
    const char* what;
    std::function<void(ServeSettings&)> change;
    std::string where;  // the start of the Error's str()
  };
  const std::vector<Row> rows = {
      {"no inventory", [](ServeSettings& s) { s.nodes_path.clear(); }, "--nodes: required"},
      {"audit without a cluster", [](ServeSettings& s) { s.audit = BackgroundAuditSettings{}; },
       "--audit-interval: needs"},
      {"nodes file missing",
       [this](ServeSettings& s) { s.nodes_path = path("missing-nodes.json"); },
       path("missing-nodes.json")},
      {"nodes file unreadable", [this](ServeSettings& s) { s.nodes_path = path("bad-nodes.json"); },
       path("bad-nodes.json")},
      {"policy invalid", [this](ServeSettings& s) { s.config_path = path("bad-policy.yaml"); },
       path("bad-policy.yaml")},
      {"matrix invalid", [this](ServeSettings& s) { s.compat_db_path = path("bad-db.json"); },
       path("bad-db.json")},
      {"certificate missing", [this](ServeSettings& s) { s.tls.cert = path("missing.crt"); },
       path("missing.crt")},
      {"key of another certificate",
       [](ServeSettings& s) { s.tls.key = ::test_support::dev_certs() + "/client.key"; },
       ::test_support::dev_certs() + "/client.key"},
      {"address in use",
       [taken_port](ServeSettings& s) {
         s.endpoint = {boost::asio::ip::make_address("127.0.0.1"), taken_port};
       },
       "--listen 127.0.0.1:" + std::to_string(taken_port) + ": cannot bind"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.what);
    ServeSettings s = settings();
    row.change(s);
    const auto error = serve(s);
    ASSERT_TRUE(error.has_value());
    EXPECT_TRUE(error->str().starts_with(row.where)) << error->str();
  }
}

// The log as lines, for the port the server reports and what it says.
class ServeLog final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  // Blocks until a line matches `pattern`; its first group.
  std::string wait_for(const std::regex& pattern) {
    std::unique_lock lock(lines_mutex_);
    std::smatch m;
    std::size_t next = 0;
    changed_.wait(lock, [&] {
      for (; next < lines_.size(); ++next) {
        if (std::regex_search(lines_[next], m, pattern)) return true;
      }
      return false;
    });
    return m[1];
  }
  std::vector<std::string> lines() {
    std::lock_guard lock(lines_mutex_);
    return lines_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::lock_guard lock(lines_mutex_);
    lines_.emplace_back(msg.payload.data(), msg.payload.size());
    changed_.notify_all();
  }
  void flush_() override {}

 private:
  std::mutex lines_mutex_;
  std::condition_variable changed_;
  std::vector<std::string> lines_;
};

TEST_F(ServeTest, ServesUntilSigtermAndDrains) {
  const auto previous = spdlog::default_logger();
  auto log = std::make_shared<ServeLog>();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("serve-test", log));

  const ServeSettings s = settings();
  auto served = std::async(std::launch::async, [&s] { return serve(s); });
  // Logged once the signals are watched and the server is ready.
  const std::string port =
      log->wait_for(std::regex(R"(serving https://127\.0\.0\.1:(\d+) with 1 threads)"));
  ASSERT_FALSE(port.empty());

  ::test_support::HttpsTestClient client(::test_support::dev_certs());
  ASSERT_FALSE(client.connect(static_cast<std::uint16_t>(std::stoi(port))));
  boost::system::error_code ec;
  ::test_support::HttpsTestClient::Request ready{http::verb::get, "/readyz", 11};
  ready.set(http::field::host, "127.0.0.1");
  auto res = client.exchange(ready, ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(res.result(), http::status::ok) << res.body();

  ::test_support::HttpsTestClient::Request review{http::verb::post, "/validate?timeout=10s", 11};
  review.set(http::field::host, "127.0.0.1");
  review.set(http::field::content_type, "application/json");
  review.body() = test_support::fixture("pod-cuda124.json");
  res = client.exchange(review, ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(res.result(), http::status::ok) << res.body();
  const auto answer = nlohmann::json::parse(res.body(), nullptr, false);
  ASSERT_TRUE(answer.is_object()) << res.body();
  EXPECT_EQ(answer["response"]["uid"], "0b3e2a5c-1f7d-4c1e-9d0a-6a4b2f9e1c01");
  EXPECT_TRUE(answer["response"]["allowed"].is_boolean());

  // The client keeps its connection open: the drain closes it.
  ASSERT_EQ(::kill(::getpid(), SIGTERM), 0);
  EXPECT_EQ(client.read_until_closed(), boost::asio::error::eof);
  client.shutdown();
  const auto error = served.get();
  EXPECT_FALSE(error.has_value()) << error->str();
  const auto lines = log->lines();
  spdlog::set_default_logger(previous);
  EXPECT_NE(std::find_if(lines.begin(), lines.end(),
                         [](const std::string& l) { return l.starts_with("received SIGTERM"); }),
            lines.end());
  EXPECT_EQ(lines.back(), "stopped");
}

}  // namespace
}  // namespace cudagate

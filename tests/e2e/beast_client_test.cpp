// The cudagate binary over real TLS, spoken to by a Boost.Beast client: the
// server is started with certificates made by certs/dev-certs.sh, verified
// against the development CA with SNI "localhost", and answers two
// AdmissionReviews on one keep-alive connection.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

namespace fs = std::filesystem;
namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;

constexpr auto kOpTimeout = 10s;
constexpr auto kReadyTimeout = 60s;  // sanitizer builds start slowly

// Runs argv to completion with stdout and stderr sent to `log`; the exit status.
int run_process(const std::vector<std::string>& argv, const fs::path& log) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

unsigned short free_port() {
  net::io_context ioc;
  tcp::acceptor acceptor(ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  return acceptor.local_endpoint().port();
}

std::string gfd_node(const std::string& name, const std::string& driver_major,
                     const std::string& cc_major, const std::string& cc_minor,
                     const std::string& product) {
  return nlohmann::json{{"apiVersion", "v1"},
                        {"kind", "Node"},
                        {"metadata",
                         {{"name", name},
                          {"labels",
                           {{"nvidia.com/cuda.driver.major", driver_major},
                            {"nvidia.com/cuda.driver.minor", "54"},
                            {"nvidia.com/cuda.driver.rev", "15"},
                            {"nvidia.com/gpu.compute.major", cc_major},
                            {"nvidia.com/gpu.compute.minor", cc_minor},
                            {"nvidia.com/gpu.product", product}}}}},
                        {"status", {{"allocatable", {{"nvidia.com/gpu", "8"}}}}}}
      .dump();
}

std::string admission_review(const std::string& uid, const std::string& name) {
  const nlohmann::json gvk = {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}};
  const nlohmann::json gvr = {{"group", ""}, {"version", "v1"}, {"resource", "pods"}};
  return nlohmann::json{
      {"kind", "AdmissionReview"},
      {"apiVersion", "admission.k8s.io/v1"},
      {"request",
       {{"uid", uid},
        {"kind", gvk},
        {"resource", gvr},
        {"requestKind", gvk},
        {"requestResource", gvr},
        {"name", name},
        {"namespace", "default"},
        {"operation", "CREATE"},
        {"userInfo", {{"username", "kubernetes-admin"}}},
        {"object",
         {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec", {{"containers", {{{"name", "web"}, {"image", "nginx:1.25"}}}}}}}},
        {"oldObject", nullptr},
        {"dryRun", false},
        {"options", {{"kind", "CreateOptions"}, {"apiVersion", "meta.k8s.io/v1"}}}}}}
      .dump();
}

// A TLS client connection: each operation is bounded by kOpTimeout.
class Client {
 public:
  Client(const fs::path& ca, std::string host_name) : ctx_(ssl::context::tls_client) {
    ctx_.load_verify_file(ca.string());
    ctx_.set_verify_mode(ssl::verify_peer);
    host_name_ = std::move(host_name);
  }

  beast::error_code connect(unsigned short port) {
    stream_.emplace(ioc_, ctx_);
    SSL_set_tlsext_host_name(stream_->native_handle(), host_name_.c_str());
    stream_->set_verify_callback(ssl::host_name_verification(host_name_));
    auto ec = run([&](auto done) {
      beast::get_lowest_layer(*stream_).async_connect(
          tcp::endpoint(net::ip::make_address("127.0.0.1"), port), done);
    });
    if (ec) return ec;
    return run([&](auto done) { stream_->async_handshake(ssl::stream_base::client, done); });
  }

  beast::error_code exchange(http::request<http::string_body>& request,
                             http::response<http::string_body>& response) {
    request.prepare_payload();
    auto ec = run([&](auto done) {
      http::async_write(*stream_, request,
                        [done](beast::error_code e, std::size_t) mutable { done(e); });
    });
    if (ec) return ec;
    return run([&](auto done) {
      http::async_read(*stream_, buffer_, response,
                       [done](beast::error_code e, std::size_t) mutable { done(e); });
    });
  }

 private:
  using Done = std::function<void(beast::error_code)>;

  beast::error_code run(const std::function<void(Done)>& start) {
    beast::error_code result = net::error::would_block;
    beast::get_lowest_layer(*stream_).expires_after(kOpTimeout);
    start([&result](beast::error_code ec) { result = ec; });
    ioc_.restart();
    ioc_.run();
    return result;
  }

  net::io_context ioc_;
  ssl::context ctx_;
  std::string host_name_;
  std::optional<beast::ssl_stream<beast::tcp_stream>> stream_;
  beast::flat_buffer buffer_;
};

class ServerProcess {
 public:
  ServerProcess() {
    char pattern[] = "/tmp/cudagate-tls-client-test-XXXXXX";
    dir_ = mkdtemp(pattern);
    certs_ = dir_ / "certs";
    const int rc = run_process(
        {"bash", std::string(CUDAGATE_SOURCE_DIR) + "/certs/dev-certs.sh", "--out", certs_},
        dir_ / "dev-certs.log");
    if (rc != 0)
      throw std::runtime_error("dev-certs.sh failed: " + read_file(dir_ / "dev-certs.log"));
    std::ofstream(dir_ / "nodes.json")
        << R"({"apiVersion":"v1","kind":"NodeList","items":[)"
        << gfd_node("gpu-a100-1", "550", "8", "0", "NVIDIA-A100-SXM4-80GB") << ","
        << gfd_node("gpu-t4-1", "535", "7", "5", "Tesla-T4") << "]}";
    port_ = free_port();
    start();
  }

  ~ServerProcess() {
    stop();
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  [[nodiscard]] unsigned short port() const { return port_; }
  [[nodiscard]] const fs::path& certs() const { return certs_; }
  [[nodiscard]] std::string log() const { return read_file(dir_ / "server.log"); }

  // SIGTERM, then the exit status (-1 if it had to be killed).
  int stop() {
    if (pid_ <= 0) return status_;
    kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    int status = 0;
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        pid_ = -1;
        return status_ = -1;
      }
      std::this_thread::sleep_for(20ms);  // polling the child's state
    }
    pid_ = -1;
    status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return status_;
  }

 private:
  void start() {
    const std::vector<std::string> argv = {CUDAGATE_BINARY, "serve",
                                           "--listen",      "127.0.0.1:" + std::to_string(port_),
                                           "--tls-cert",    certs_ / "server.crt",
                                           "--tls-key",     certs_ / "server.key",
                                           "--nodes",       dir_ / "nodes.json",
                                           "--threads",     "2",
                                           "--log-format",  "json"};
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string log_path = dir_ / "server.log";
    posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    const int rc = posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error("cannot start " + argv[0]);

    const auto deadline = std::chrono::steady_clock::now() + kReadyTimeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("cudagate serve exited during startup:\n" + log());
      }
      if (ready()) return;
      std::this_thread::sleep_for(50ms);  // between readiness probes
    }
    throw std::runtime_error("cudagate serve not ready:\n" + log());
  }

  bool ready() {
    Client client(certs_ / "ca.crt", "localhost");
    if (client.connect(port_)) return false;
    http::request<http::string_body> req{http::verb::get, "/readyz", 11};
    req.set(http::field::host, "localhost");
    http::response<http::string_body> res;
    return !client.exchange(req, res) && res.result() == http::status::ok;
  }

  fs::path dir_;
  fs::path certs_;
  unsigned short port_ = 0;
  pid_t pid_ = -1;
  int status_ = -1;
};

class TlsClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServerProcess(); }
  static void TearDownTestSuite() {
    const int status = server_->stop();
    EXPECT_EQ(status, 0) << server_->log();
    delete server_;
    server_ = nullptr;
  }

  static ServerProcess* server_;
};

ServerProcess* TlsClientTest::server_ = nullptr;

TEST_F(TlsClientTest, TwoReviewsOnOneKeepAliveConnection) {
  Client client(server_->certs() / "ca.crt", "localhost");
  ASSERT_FALSE(client.connect(server_->port()));
  for (const std::string uid :
       {"0f1e2d3c-0000-4000-8000-000000000001", "0f1e2d3c-0000-4000-8000-000000000002"}) {
    SCOPED_TRACE(uid);
    http::request<http::string_body> req{http::verb::post, "/validate?timeout=10s", 11};
    req.set(http::field::host, "cudagate.cudagate-system.svc:443");
    req.set(http::field::content_type, "application/json");
    req.set(http::field::user_agent, "kube-apiserver-admission");
    req.body() = admission_review(uid, "web");
    http::response<http::string_body> res;
    const auto ec = client.exchange(req, res);
    ASSERT_FALSE(ec) << ec.message() << "\n" << server_->log();
    EXPECT_EQ(res.result(), http::status::ok) << res.body();
    EXPECT_TRUE(res.keep_alive());
    EXPECT_EQ(res[http::field::content_type], "application/json");
    const auto answer = nlohmann::json::parse(res.body(), nullptr, false);
    ASSERT_TRUE(answer.is_object()) << res.body();
    EXPECT_EQ(answer.value("apiVersion", ""), "admission.k8s.io/v1");
    EXPECT_EQ(answer.value("kind", ""), "AdmissionReview");
    ASSERT_TRUE(answer.contains("response")) << res.body();
    EXPECT_EQ(answer["response"].value("uid", ""), uid);
    EXPECT_EQ(answer["response"].value("allowed", false), true);
  }
}

// A connection reuses its last body's buffer for the next request: bodies
// larger and smaller than the last one, one past the size a connection
// keeps, a malformed one and an empty one in between, are each read as
// sent (an empty body is not the one before it).
TEST_F(TlsClientTest, BodiesOfEverySizeOnOneConnection) {
  Client client(server_->certs() / "ca.crt", "localhost");
  ASSERT_FALSE(client.connect(server_->port()));
  struct Step {
    std::string uid;       // "": `other` is sent instead of a review
    std::size_t trailing;  // spaces after the review (valid JSON)
    std::string other;
  };
  const Step steps[] = {{"0f1e2d3c-0000-4000-8000-000000000011", 20000, ""},
                        {"0f1e2d3c-0000-4000-8000-000000000012", 0, ""},
                        {"0f1e2d3c-0000-4000-8000-000000000013", 40000, ""},
                        {"0f1e2d3c-0000-4000-8000-000000000014", 0, ""},
                        {"", 0, R"({"kind":"AdmissionReview",)"},
                        {"0f1e2d3c-0000-4000-8000-000000000015", 100, ""},
                        {"", 0, ""},
                        {"0f1e2d3c-0000-4000-8000-000000000016", 0, ""}};
  for (const Step& step : steps) {
    SCOPED_TRACE(step.uid + " +" + std::to_string(step.trailing) + " " + step.other);
    http::request<http::string_body> req{http::verb::post, "/validate", 11};
    req.set(http::field::host, "localhost");
    req.set(http::field::content_type, "application/json");
    req.body() = step.uid.empty()
                     ? step.other
                     : admission_review(step.uid, "web") + std::string(step.trailing, ' ');
    req.prepare_payload();
    http::response<http::string_body> res;
    const auto ec = client.exchange(req, res);
    ASSERT_FALSE(ec) << ec.message() << "\n" << server_->log();
    if (step.uid.empty()) {
      EXPECT_EQ(res.result(), http::status::bad_request) << res.body();
      continue;
    }
    ASSERT_EQ(res.result(), http::status::ok) << res.body();
    const auto answer = nlohmann::json::parse(res.body(), nullptr, false);
    ASSERT_TRUE(answer.is_object()) << res.body();
    EXPECT_EQ(answer["response"].value("uid", ""), step.uid);
    EXPECT_EQ(answer["response"].value("allowed", false), true);
  }
}

// The client really verifies the server: a wrong CA or a wrong name fails.
TEST_F(TlsClientTest, VerificationRows) {
  struct Row {
    const char* name;
    const char* ca;
    const char* host;
    bool ok;
  };
  const Row rows[] = {
      {"dev CA, localhost", "ca.crt", "localhost", true},
      {"dev CA, service name", "ca.crt", "cudagate.cudagate-system.svc", true},
      {"client CA does not sign the server", "client-ca.crt", "localhost", false},
      {"name not in the certificate", "ca.crt", "other.example.com", false},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    Client client(server_->certs() / row.ca, row.host);
    const auto ec = client.connect(server_->port());
    EXPECT_EQ(!ec, row.ok) << ec.message();
  }
}

TEST_F(TlsClientTest, ErrorsAreJson) {
  Client client(server_->certs() / "ca.crt", "localhost");
  ASSERT_FALSE(client.connect(server_->port()));
  struct Row {
    http::verb method;
    const char* target;
    const char* content_type;
    http::status status;
  };
  const Row rows[] = {
      {http::verb::get, "/nope", "", http::status::not_found},
      {http::verb::get, "/mutate", "", http::status::method_not_allowed},
      {http::verb::post, "/validate", "text/plain", http::status::unsupported_media_type},
      {http::verb::get, "/healthz", "", http::status::ok},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.target);
    http::request<http::string_body> req{row.method, row.target, 11};
    req.set(http::field::host, "localhost");
    if (*row.content_type != '\0') req.set(http::field::content_type, row.content_type);
    if (row.method == http::verb::post) req.body() = "{}";
    http::response<http::string_body> res;
    ASSERT_FALSE(client.exchange(req, res));
    EXPECT_EQ(res.result(), row.status);
    if (row.status != http::status::ok) {
      const auto body = nlohmann::json::parse(res.body(), nullptr, false);
      EXPECT_TRUE(body.is_object() && body.contains("error")) << res.body();
    }
  }
}

}  // namespace

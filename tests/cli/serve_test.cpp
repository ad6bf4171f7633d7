// `cudagate serve`'s start-up failures: each unreadable or invalid file and each bad flag
// ends the command with status 2 and an error line naming the file or flag, before anything
// is served. Every run listens on a port the test holds, so none can go on to serve.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "tests/support/cli_run.h"
#include "tests/support/dev_certs.h"

namespace cudagate {
namespace {

using test_support::cli_lines;
using test_support::CliRun;
using test_support::CliRunOptions;
using test_support::CliTempDir;
using test_support::run_cli;
using test_support::test_data;

// A TCP port on 127.0.0.1 that this test listens on: binding it again
// fails, so a serve that got past every other check stops at --listen.
class HeldPort {
 public:
  HeldPort() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    if (fd_ < 0) throw std::runtime_error("socket failed");
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    socklen_t size = sizeof address;
    // NOLINTBEGIN(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&address), size) != 0 || ::listen(fd_, 1) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
      ::close(fd_);
      throw std::runtime_error("cannot hold a port");
    }
    // NOLINTEND(cppcoreguidelines-pro-type-reinterpret-cast)
    port_ = ntohs(address.sin_port);
  }
  ~HeldPort() { ::close(fd_); }
  HeldPort(const HeldPort&) = delete;
  HeldPort& operator=(const HeldPort&) = delete;

  [[nodiscard]] std::string listen() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_;
  unsigned port_ = 0;
};

// Flags that would serve but for the held port; a row replaces (or, with
// nullopt, leaves out) some of them.
using ServeFlags = std::map<std::string, std::optional<std::string>>;

CliRun run_serve(const ServeFlags& base, const ServeFlags& changes, std::vector<std::string> extra,
                 const CliRunOptions& options) {
  ServeFlags flags = base;
  for (const auto& [flag, value] : changes) flags[flag] = value;
  std::vector<std::string> args = {"serve"};
  for (const auto& [flag, value] : flags) {
    if (value) args.insert(args.end(), {flag, *value});
  }
  args.insert(args.end(), extra.begin(), extra.end());
  return run_cli(add_serve_command, args, options);
}

class ServeStartup : public ::testing::Test {
 protected:
  ServeStartup() {
    const std::string& certs = ::test_support::dev_certs();
    base_ = {{"--tls-cert", certs + "/server.crt"},
             {"--tls-key", certs + "/server.key"},
             {"--nodes", nodes_},
             {"--listen", port_.listen()}};
    options_.env = {{"KUBECONFIG", std::nullopt},
                    {"KUBERNETES_SERVICE_HOST", std::nullopt},
                    {"KUBERNETES_SERVICE_PORT", std::nullopt}};
  }

  // Status 2, nothing on stdout, and one error line holding each fragment:
  // all stderr holds, as the failure comes before anything is logged.
  void expect_failure(const ServeFlags& changes, const std::vector<std::string>& fragments,
                      const std::vector<std::string>& extra = {}) {
    const auto run = run_serve(base_, changes, extra, options_);
    EXPECT_EQ(run.status, 2) << fragments.front() << "\n" << run.err;
    EXPECT_EQ(run.out, "") << fragments.front();
    const auto lines = cli_lines(run.err);
    ASSERT_EQ(lines.size(), 1U) << fragments.front() << "\n" << run.err;
    EXPECT_TRUE(lines[0].starts_with("cudagate: error: ")) << lines[0];
    for (const auto& fragment : fragments) {
      EXPECT_NE(lines[0].find(fragment), std::string::npos) << lines[0] << "\nlacks " << fragment;
    }
  }

  const std::string nodes_ = test_data("cli/nodes.json");
  HeldPort port_;
  CliTempDir dir_;
  ServeFlags base_;
  CliRunOptions options_;
};

TEST_F(ServeStartup, UnreadableOrInvalidTlsFilesNameTheFile) {
  const std::string& certs = ::test_support::dev_certs();
  const std::string missing = dir_.path("missing.crt");
  expect_failure({{"--tls-cert", missing}}, {missing + ": cannot open"});
  expect_failure({{"--tls-key", dir_.path("missing.key")}},
                 {dir_.path("missing.key") + ": cannot open"});
  expect_failure({{"--tls-cert", nodes_}}, {nodes_, "no PEM certificate"});
  expect_failure({{"--client-ca", nodes_}}, {nodes_, "no PEM certificate"});
  // A key that is not the certificate's.
  expect_failure({{"--tls-key", certs + "/client.key"}}, {"does not match"});
}

TEST_F(ServeStartup, UnreadableOrInvalidInputsNameTheFile) {
  const std::string missing_nodes = dir_.path("nodes.json");
  expect_failure({{"--nodes", missing_nodes}},
                 {missing_nodes + ": cannot read: No such file or directory"});
  expect_failure({{"--nodes", test_data("cli/invalid.json")}}, {"invalid.json"});
  expect_failure({{"--config", test_data("cli/bad-policy.yaml")}},
                 {"bad-policy.yaml", "archMatching"});
  expect_failure({{"--config", nodes_}}, {nodes_});
  expect_failure({{"--compat-db", dir_.path("db.json")}},
                 {dir_.path("db.json") + ": cannot read: No such file or directory"});
}

TEST_F(ServeStartup, BadFlagValuesNameTheFlag) {
  expect_failure({{"--listen", "localhost"}}, {"--listen"});
  expect_failure({{"--listen", "127.0.0.1:99999"}}, {"--listen"});
  expect_failure({{"--header-timeout", "soon"}},
                 {"--header-timeout: expected a duration like 10s, 500ms or 2m, got "
                  "\"soon\""});
  expect_failure({{"--body-timeout", "5x"}}, {"--body-timeout: expected a duration"});
  expect_failure({{"--idle-timeout", "0s"}}, {"--idle-timeout: must be greater than zero"});
  expect_failure({{"--shutdown-grace", "later"}}, {"--shutdown-grace: expected a duration"});
  expect_failure({{"--max-body-bytes", "0"}}, {"--max-body-bytes: must be greater than 0"});
  expect_failure({{"--max-connections", "0"}}, {"--max-connections: must be greater than 0"});
  expect_failure({{"--audit-interval", "1m"}, {"--max-report-results", "0"}},
                 {"--max-report-results: must be greater than 0"});
  // CLI11's own checks of values.
  expect_failure({{"--report-api", "reports"}}, {"--report-api"});
  expect_failure({{"--threads", "0"}}, {"--threads"});
  expect_failure({{"--log-level", "loud"}}, {"--log-level"});
  expect_failure({{"--tls-cert", std::nullopt}}, {"--tls-cert"});
  expect_failure({}, {"--frobnicate"}, {"--frobnicate"});
}

TEST_F(ServeStartup, TheClusterFlagsAndWhatTheyNeed) {
  const std::string kubeconfig = dir_.path("kubeconfig");
  expect_failure({{"--kubeconfig", kubeconfig}},
                 {"--nodes: give one of --nodes, --in-cluster and --kubeconfig"});
  expect_failure({}, {"--nodes: give one of --nodes, --in-cluster and --kubeconfig"},
                 {"--in-cluster"});
  expect_failure({}, {"--write-reports: needs --audit-interval"}, {"--write-reports"});
  expect_failure({{"--audit-interval", "5m"}},
                 {"--audit-interval: needs the cluster: --in-cluster or --kubeconfig"});
  // Without --nodes: the cluster, whose configuration must be readable.
  expect_failure({{"--nodes", std::nullopt}, {"--kubeconfig", kubeconfig}}, {kubeconfig + ": "});
  expect_failure({{"--nodes", std::nullopt}},
                 {"--in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT"},
                 {"--in-cluster"});
  expect_failure({{"--nodes", std::nullopt}}, {"--nodes: required"});
}

TEST_F(ServeStartup, AnAddressInUseIsTheLastCheck) {
  // Every file loads, so the server says what it loaded; then it cannot bind.
  const auto run = run_serve(base_, {}, {}, options_);
  EXPECT_EQ(run.status, 2) << run.err;
  EXPECT_EQ(run.out, "");
  const auto lines = cli_lines(run.err);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back(), "cudagate: error: --listen " + port_.listen() +
                              ": cannot bind: Address already in use");
  EXPECT_NE(run.err.find("TLS certificate"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace cudagate

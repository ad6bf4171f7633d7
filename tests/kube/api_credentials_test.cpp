// Credentials for asynchronous callers: answered at once from a token,
// token file or certificate files, a token file read again when it
// changes; an exec plugin (a script in a temporary folder) run on a thread
// of its own once for every caller waiting, its credential kept until the
// server refuses it; failures as Errors that name the server; and current()
// answering from the strand's queue.
#include "kube/api_credentials.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace cudagate::kube {
namespace {

namespace net = boost::asio;

std::string api_credentials_dir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "api-credentials-" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

void write_credentials_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

std::string read_credentials_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

constexpr const char* kExecApiVersion = "client.authentication.k8s.io/v1";

// A plugin that appends a line to `dir`/runs each time it runs and prints
// a credential: a token naming the run ("token-1", ...), a client
// certificate, and `expiry`.
ExecPlugin run_counting_plugin(const std::string& dir, const std::string& expiry) {
  const std::string script = dir + "/plugin.sh";
  write_credentials_file(
      script,
      "#!/bin/sh\n"
      "echo run >> \"$RUNS\"\n"
      "n=$(wc -l < \"$RUNS\" | tr -d ' ')\n"
      "printf '{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\","
      "\"status\":{\"token\":\"token-%s\",\"clientCertificateData\":\"CERT %s\","
      "\"clientKeyData\":\"KEY %s\",\"expirationTimestamp\":\"" +
          expiry + "\"}}' \"$n\" \"$n\" \"$n\"\n");
  ::chmod(script.c_str(), 0700);
  ExecPlugin plugin;
  plugin.api_version = kExecApiVersion;
  plugin.command = script;
  plugin.env = {{"RUNS", dir + "/runs"}};
  return plugin;
}

ClusterConfig credentials_config() {
  ClusterConfig config;
  config.source = "test";
  config.server.host = "api.example";
  return config;
}

class ApiCredentialsTest : public ::testing::Test {
 protected:
  // Asks `credentials` `times` times in one turn of its strand, then runs
  // the io_context until every answer came (it has work while a plugin
  // runs). `answered_at_once`: whether the first answer came within its call.
  std::vector<Expected<Credentials>> ask(ApiCredentials& credentials, int times,
                                         bool* answered_at_once = nullptr) {
    std::vector<Expected<Credentials>> answers;
    net::post(credentials.strand(), [&] {
      for (int i = 0; i < times; ++i) {
        credentials.async_current(
            [&answers](Expected<Credentials> answer) { answers.push_back(std::move(answer)); });
        if (i == 0 && answered_at_once != nullptr) *answered_at_once = !answers.empty();
      }
    });
    ioc_.restart();
    ioc_.run();
    return answers;
  }

  void invalidate(ApiCredentials& credentials) {
    net::post(credentials.strand(), [&credentials] { credentials.invalidate(); });
    ioc_.restart();
    ioc_.run();
  }

  net::strand<net::any_io_executor> strand() {
    return net::make_strand(net::any_io_executor(ioc_.get_executor()));
  }

  net::io_context ioc_;
};

TEST_F(ApiCredentialsTest, WithoutAPluginTheyAreAnsweredAtOnce) {
  const std::string dir = api_credentials_dir("static");
  write_credentials_file(dir + "/ca.crt", "CA PEM");
  write_credentials_file(dir + "/client.crt", "CLIENT CERT PEM");
  write_credentials_file(dir + "/client.key", "CLIENT KEY PEM");
  ClusterConfig config = credentials_config();
  config.ca_file = dir + "/ca.crt";
  config.client_cert_file = dir + "/client.crt";
  config.client_key_file = dir + "/client.key";
  config.token = "static-token";
  ApiCredentials credentials(strand(), config);

  bool at_once = false;
  auto answers = ask(credentials, 1, &at_once);
  EXPECT_TRUE(at_once);
  ASSERT_EQ(answers.size(), 1U);
  ASSERT_TRUE(answers[0]) << answers[0].error().str();
  EXPECT_EQ(answers[0]->token, "static-token");
  EXPECT_EQ(answers[0]->ca_pem, "CA PEM");
  EXPECT_EQ(answers[0]->client_cert_pem, "CLIENT CERT PEM");
  EXPECT_EQ(answers[0]->client_key_pem, "CLIENT KEY PEM");
  EXPECT_EQ(credentials.config().server.host, "api.example");
}

TEST_F(ApiCredentialsTest, ATokenFileIsReadAgainWhenItChanges) {
  const std::string dir = api_credentials_dir("token-file");
  const std::string token = dir + "/token";
  write_credentials_file(token, "first-token\n");
  ClusterConfig config = credentials_config();
  config.token_file = token;
  ApiCredentials credentials(strand(), config);

  auto first = ask(credentials, 1);
  ASSERT_EQ(first.size(), 1U);
  ASSERT_TRUE(first[0]) << first[0].error().str();
  EXPECT_EQ(first[0]->token, "first-token");

  // Rotated, as the kubelet rotates a bound token (a different size, so
  // that the change shows whatever the file system's time resolution).
  write_credentials_file(token, "second-token-rotated\n");
  auto second = ask(credentials, 1);
  ASSERT_EQ(second.size(), 1U);
  ASSERT_TRUE(second[0]) << second[0].error().str();
  EXPECT_EQ(second[0]->token, "second-token-rotated");
}

TEST_F(ApiCredentialsTest, APluginRunsOnceForEveryCallerWaitingAndAgainWhenRefused) {
  const std::string dir = api_credentials_dir("exec");
  ClusterConfig config = credentials_config();
  config.exec = run_counting_plugin(dir, "2099-01-01T00:00:00Z");
  ApiCredentials credentials(strand(), config);

  // Three callers while the plugin runs: one run answers them all, none
  // of them on the strand's stack while it runs.
  bool at_once = true;
  auto waiting = ask(credentials, 3, &at_once);
  EXPECT_FALSE(at_once);
  ASSERT_EQ(waiting.size(), 3U);
  for (const auto& answer : waiting) {
    ASSERT_TRUE(answer) << answer.error().str();
    EXPECT_EQ(answer->token, "token-1");
    EXPECT_EQ(answer->client_cert_pem, "CERT 1");
    EXPECT_EQ(answer->client_key_pem, "KEY 1");
  }
  EXPECT_EQ(read_credentials_file(dir + "/runs"), "run\n");

  // Kept until it expires: the next caller is answered at once.
  auto kept = ask(credentials, 1, &at_once);
  EXPECT_TRUE(at_once);
  ASSERT_EQ(kept.size(), 1U);
  ASSERT_TRUE(kept[0]);
  EXPECT_EQ(kept[0]->token, "token-1");
  EXPECT_EQ(read_credentials_file(dir + "/runs"), "run\n");

  // Refused by the server (401): the plugin runs again.
  invalidate(credentials);
  auto renewed = ask(credentials, 1, &at_once);
  EXPECT_FALSE(at_once);
  ASSERT_EQ(renewed.size(), 1U);
  ASSERT_TRUE(renewed[0]) << renewed[0].error().str();
  EXPECT_EQ(renewed[0]->token, "token-2");
  EXPECT_EQ(renewed[0]->client_cert_pem, "CERT 2");
  EXPECT_EQ(read_credentials_file(dir + "/runs"), "run\nrun\n");
}

TEST_F(ApiCredentialsTest, FailuresAreErrorsNamingTheServer) {
  const std::string dir = api_credentials_dir("failures");
  struct Row {
    std::string name;
    ClusterConfig config;
    std::string message_start;
  };
  ExecPlugin failing;
  failing.api_version = kExecApiVersion;
  failing.command = "/bin/sh";
  failing.args = {"-c", "exit 4"};
  ClusterConfig fails = credentials_config();
  fails.exec = failing;
  ClusterConfig expired = credentials_config();
  expired.exec = run_counting_plugin(dir, "2001-01-01T00:00:00Z");
  ClusterConfig no_token = credentials_config();
  no_token.token_file = dir + "/missing-token";
  const std::vector<Row> rows = {
      {"a plugin that fails", fails, "no credentials: exec plugin /bin/sh: "},
      {"a plugin whose credential has expired", expired,
       "the exec plugin's credential has already expired"},
      {"a missing token file", no_token,
       "no credentials: " + dir + "/missing-token: cannot read the token: "},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    ApiCredentials credentials(strand(), row.config);
    auto answers = ask(credentials, 1);
    ASSERT_EQ(answers.size(), 1U);
    ASSERT_FALSE(answers[0]);
    EXPECT_EQ(answers[0].error().where, "API server api.example");
    EXPECT_EQ(answers[0].error().message.rfind(row.message_start, 0), 0U)
        << answers[0].error().message;
  }
}

TEST_F(ApiCredentialsTest, CurrentAnswersFromTheStrandsQueue) {
  ClusterConfig config = credentials_config();
  config.token = "queued-token";
  ApiCredentials credentials(strand(), config);

  // With a callback: never within the call, though nothing must run.
  std::optional<Expected<Credentials>> called;
  bool during_call = true;
  net::post(credentials.strand(), [&] {
    credentials.current([&called](Expected<Credentials> answer) { called = std::move(answer); });
    during_call = called.has_value();
  });
  ioc_.run();
  EXPECT_FALSE(during_call);
  ASSERT_TRUE(called.has_value());
  ASSERT_TRUE(*called);
  EXPECT_EQ((*called)->token, "queued-token");

  // From a coroutine on the strand.
  std::optional<Expected<Credentials>> awaited;
  net::co_spawn(
      credentials.strand(),
      [&]() -> net::awaitable<void> { awaited = co_await credentials.current(net::use_awaitable); },
      net::detached);
  ioc_.restart();
  ioc_.run();
  ASSERT_TRUE(awaited.has_value());
  ASSERT_TRUE(*awaited);
  EXPECT_EQ((*awaited)->token, "queued-token");
}

}  // namespace
}  // namespace cudagate::kube

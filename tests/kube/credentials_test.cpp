// Credentials as a connection presents them: token files re-read when they
// change, exec plugins run, their output checked, their tokens reused until
// they expire or are refused.
#include "kube/credentials.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace cudagate::kube {
namespace {

using std::chrono::milliseconds;

std::string temp_dir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "credentials-" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

constexpr const char* kV1 = "client.authentication.k8s.io/v1";

TEST(ParseExecCredential, TokenCertificateAndExpiry) {
  auto token = parse_exec_credential(
      R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",
          "spec":{"interactive":false},
          "status":{"token":"k8s-aws-v1.abc","expirationTimestamp":"2026-12-01T11:15:00Z"}})",
      kV1, "exec plugin aws");
  ASSERT_TRUE(token) << token.error().str();
  EXPECT_EQ(token->token, "k8s-aws-v1.abc");
  EXPECT_EQ(token->expires_at, 1796123700);

  auto offset = parse_exec_credential(
      R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",
          "status":{"token":"t","expirationTimestamp":"2026-12-01T12:15:00.123+01:00"}})",
      kV1, "p");
  ASSERT_TRUE(offset) << offset.error().str();
  EXPECT_EQ(offset->expires_at, 1796123700);

  auto cert = parse_exec_credential(
      R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",
          "status":{"clientCertificateData":"-----BEGIN CERTIFICATE-----\n",
                    "clientKeyData":"-----BEGIN PRIVATE KEY-----\n"}})",
      kV1, "p");
  ASSERT_TRUE(cert) << cert.error().str();
  EXPECT_TRUE(cert->token.empty());
  EXPECT_FALSE(cert->expires_at);
  EXPECT_EQ(cert->client_key_pem, "-----BEGIN PRIVATE KEY-----\n");
}

TEST(ParseExecCredential, Refusals) {
  struct Row {
    const char* text;
    const char* where;
    const char* message;
  };
  for (
      const Row row : {
          Row{"token", "p", "expected an ExecCredential"},
          Row{R"({"kind":"Secret"})", "p: kind", "expected ExecCredential"},
          Row{R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1"})",
              "p: apiVersion", "expected client.authentication.k8s.io/v1"},
          Row{R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1"})",
              "p: status", "is required"},
          Row{R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{}})",
              "p: status", "neither a token nor a client certificate"},
          Row{R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"clientKeyData":"k"}})",
              "p: status", "go together"},
          Row{R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"t","expirationTimestamp":"tomorrow"}})",
              "p: status.expirationTimestamp", "RFC 3339"},
      }) {
    SCOPED_TRACE(row.text);
    auto parsed = parse_exec_credential(row.text, kV1, "p");
    ASSERT_FALSE(parsed);
    EXPECT_EQ(parsed.error().where, row.where);
    EXPECT_NE(parsed.error().message.find(row.message), std::string::npos)
        << parsed.error().message;
  }
}

TEST(CredentialSource, TokenFileIsReadAgainWhenItChanges) {
  const std::string dir = temp_dir("token");
  const std::string path = dir + "/token";
  write(path, "first-token\n");
  ClusterConfig config;
  config.token_file = path;
  CredentialSource source(config);
  auto first = source.current(0);
  ASSERT_TRUE(first) << first.error().str();
  EXPECT_EQ(first->token, "first-token");

  write(path, "second-token-rotated\n");
  auto second = source.current(0);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->token, "second-token-rotated");

  std::filesystem::remove(path);
  auto gone = source.current(0);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().where, path);
}

TEST(CredentialSource, FilesThatCannotBeReadAreNamed) {
  ClusterConfig config;
  config.ca_file = "/nonexistent/ca.crt";
  CredentialSource source(config);
  auto credentials = source.current(0);
  ASSERT_FALSE(credentials);
  EXPECT_EQ(credentials.error().where, "/nonexistent/ca.crt");
  EXPECT_NE(credentials.error().message.find("certificate authority"), std::string::npos);
}

// A plugin that counts its runs in `calls` and prints a token that expires at `expiry`.
ExecPlugin counting_plugin(const std::string& dir, const std::string& expiry) {
  const std::string script = dir + "/plugin.sh";
  write(script,
        "#!/bin/sh\n"
        "echo run >> \"$CALLS\"\n"
        "case \"$KUBERNETES_EXEC_INFO\" in *client.authentication.k8s.io/v1*) ;; *) exit 3;; esac\n"
        "printf '{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\","
        "\"status\":{\"token\":\"token-%s\",\"expirationTimestamp\":\"" +
            expiry + "\"}}' \"$1\"\n");
  ::chmod(script.c_str(), 0700);
  ExecPlugin plugin;
  plugin.api_version = kV1;
  plugin.command = script;
  plugin.args = {"from-plugin"};
  plugin.env = {{"CALLS", dir + "/calls"}};
  return plugin;
}

TEST(CredentialSource, ExecPluginRunsOnceUntilItsTokenExpiresOrIsRefused) {
  const std::string dir = temp_dir("exec");
  ClusterConfig config;
  config.exec = counting_plugin(dir, "2030-01-01T00:00:00Z");
  CredentialSource source(config);
  const std::int64_t before_expiry = 1800000000;  // 2027
  for (int i = 0; i < 3; ++i) {
    auto credentials = source.current(before_expiry);
    ASSERT_TRUE(credentials) << credentials.error().str();
    EXPECT_EQ(credentials->token, "token-from-plugin");
  }
  EXPECT_EQ(read(dir + "/calls"), "run\n");
  ASSERT_TRUE(source.current(1900000000));  // 2030-03: expired, run again
  EXPECT_EQ(read(dir + "/calls"), "run\nrun\n");
  source.invalidate();  // refused by the server
  ASSERT_TRUE(source.current(0));
  EXPECT_EQ(read(dir + "/calls"), "run\nrun\nrun\n");
}

TEST(RunExecPlugin, FailuresSayWhatHappened) {
  const std::string dir = temp_dir("exec-fail");
  ExecPlugin missing;
  missing.api_version = kV1;
  missing.command = dir + "/no-such-plugin";
  auto not_found = run_exec_plugin(missing, milliseconds(5000));
  ASSERT_FALSE(not_found);
  EXPECT_EQ(not_found.error().where, "exec plugin " + missing.command);
  EXPECT_NE(not_found.error().message.find("cannot run"), std::string::npos);

  ExecPlugin failing;
  failing.api_version = kV1;
  failing.command = "/bin/sh";
  failing.args = {"-c", "exit 4"};
  auto exited = run_exec_plugin(failing, milliseconds(5000));
  ASSERT_FALSE(exited);
  EXPECT_NE(exited.error().message.find("exited with status 4"), std::string::npos)
      << exited.error().message;

  ExecPlugin slow;
  slow.api_version = kV1;
  slow.command = "/bin/sh";
  slow.args = {"-c", "exec sleep 30"};
  auto timed_out = run_exec_plugin(slow, milliseconds(200));
  ASSERT_FALSE(timed_out);
  EXPECT_NE(timed_out.error().message.find("within 200 ms"), std::string::npos)
      << timed_out.error().message;
}

}  // namespace
}  // namespace cudagate::kube

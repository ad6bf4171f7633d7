// Kubeconfig and in-cluster configuration: the fields read, paths resolved,
// and errors that name the file and the field.
#include "kube/cluster_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace cudagate::kube {
namespace {

// "-----BEGIN CERTIFICATE-----\nAAAA\n" base64-encoded.
constexpr const char* kCaPem = "-----BEGIN CERTIFICATE-----\nAAAA\n";
constexpr const char* kCaData = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkFBQUEK";

std::string kubeconfig(const std::string& cluster, const std::string& user) {
  return "apiVersion: v1\n"
         "kind: Config\n"
         "current-context: prod\n"
         "contexts:\n"
         "- name: dev\n"
         "  context: {cluster: dev, user: dev}\n"
         "- name: prod\n"
         "  context: {cluster: prod, user: admin}\n"
         "clusters:\n"
         "- name: dev\n"
         "  cluster: {server: 'https://dev.example:6443'}\n"
         "- name: prod\n"
         "  cluster:\n" +
         cluster +
         "users:\n"
         "- name: dev\n"
         "  user: {token: dev-token}\n"
         "- name: admin\n"
         "  user:\n" +
         user;
}

TEST(ParseServerUrl, Forms) {
  struct Row {
    const char* url;
    const char* host;
    unsigned port;
    const char* prefix;
  };
  for (const Row row : {Row{"https://10.0.0.1", "10.0.0.1", 443, ""},
                        Row{"https://api.example.com:6443", "api.example.com", 6443, ""},
                        Row{"https://[fd00::1]:6443/", "fd00::1", 6443, ""},
                        Row{"https://[fd00::1]", "fd00::1", 443, ""},
                        Row{"https://rancher.example/k8s/clusters/c-1", "rancher.example", 443,
                            "/k8s/clusters/c-1"}}) {
    SCOPED_TRACE(row.url);
    auto address = parse_server_url(row.url, "server");
    ASSERT_TRUE(address) << address.error().str();
    EXPECT_EQ(address->host, row.host);
    EXPECT_EQ(address->port, row.port);
    EXPECT_EQ(address->path_prefix, row.prefix);
  }
}

TEST(ParseServerUrl, Refusals) {
  struct Row {
    const char* url;
    const char* message;
  };
  for (const Row row :
       {Row{"http://api:8080", "plain http is not supported"},
        Row{"api.example.com:6443", "expected https://HOST[:PORT][/PATH]"},
        Row{"https://", "expected https://"}, Row{"https://api:0", "expected https://"},
        Row{"https://api:99999", "expected https://"}, Row{"https://api:64x3", "expected https://"},
        Row{"https://[fd00::1:6443", "expected https://"},
        Row{"https://user@api", "expected https://"}}) {
    SCOPED_TRACE(row.url);
    auto address = parse_server_url(row.url, "clusters[prod].cluster.server");
    ASSERT_FALSE(address);
    EXPECT_EQ(address.error().where, "clusters[prod].cluster.server");
    EXPECT_NE(address.error().message.find(row.message), std::string::npos)
        << address.error().message;
  }
}

TEST(ParseKubeconfig, CurrentContextWithTokenAndCaData) {
  auto config = parse_kubeconfig(kubeconfig("    server: https://api.prod:6443\n"
                                            "    certificate-authority-data: " +
                                                std::string(kCaData) + "\n",
                                            "    token: abc.def\n"),
                                 "/home/me/.kube/config");
  ASSERT_TRUE(config) << config.error().str();
  EXPECT_EQ(config->server.host, "api.prod");
  EXPECT_EQ(config->server.port, 6443);
  EXPECT_EQ(config->ca_pem, kCaPem);
  EXPECT_EQ(config->token, "abc.def");
  EXPECT_FALSE(config->exec);
  EXPECT_EQ(config->source, "kubeconfig /home/me/.kube/config (context prod)");
}

TEST(ParseKubeconfig, RelativePathsAreTheKubeconfigsFolders) {
  auto config = parse_kubeconfig(kubeconfig("    server: https://api.prod\n"
                                            "    certificate-authority: certs/ca.crt\n"
                                            "    tls-server-name: kubernetes.default\n",
                                            "    client-certificate: certs/admin.crt\n"
                                            "    client-key: /etc/keys/admin.key\n"
                                            "    tokenFile: token\n"),
                                 "/srv/cluster/kubeconfig");
  ASSERT_TRUE(config) << config.error().str();
  EXPECT_EQ(config->ca_file, "/srv/cluster/certs/ca.crt");
  EXPECT_EQ(config->client_cert_file, "/srv/cluster/certs/admin.crt");
  EXPECT_EQ(config->client_key_file, "/etc/keys/admin.key");
  EXPECT_EQ(config->token_file, "/srv/cluster/token");
  EXPECT_EQ(config->tls_server_name, "kubernetes.default");
}

TEST(ParseKubeconfig, ClientCertificateData) {
  auto config = parse_kubeconfig(kubeconfig("    server: https://api.prod\n",
                                            "    client-certificate-data: " + std::string(kCaData) +
                                                "\n"
                                                "    client-key-data: " +
                                                std::string(kCaData) + "\n"),
                                 "config");
  ASSERT_TRUE(config) << config.error().str();
  EXPECT_EQ(config->client_cert_pem, kCaPem);
  EXPECT_EQ(config->client_key_pem, kCaPem);
}

TEST(ParseKubeconfig, ExecPlugin) {
  auto config = parse_kubeconfig(kubeconfig("    server: https://eks.example\n",
                                            "    exec:\n"
                                            "      apiVersion: client.authentication.k8s.io/v1\n"
                                            "      command: aws\n"
                                            "      args: [eks, get-token, --cluster-name, prod]\n"
                                            "      env:\n"
                                            "      - {name: AWS_PROFILE, value: ml}\n"
                                            "      interactiveMode: Never\n"),
                                 "/k/config");
  ASSERT_TRUE(config) << config.error().str();
  ASSERT_TRUE(config->exec);
  EXPECT_EQ(config->exec->command, "aws");  // a bare name is found in PATH
  EXPECT_EQ(config->exec->args,
            (std::vector<std::string>{"eks", "get-token", "--cluster-name", "prod"}));
  ASSERT_EQ(config->exec->env.size(), 1u);
  EXPECT_EQ(config->exec->env[0].first, "AWS_PROFILE");
  EXPECT_EQ(config->exec->env[0].second, "ml");

  auto relative = parse_kubeconfig(kubeconfig("    server: https://eks.example\n",
                                              "    exec:\n"
                                              "      apiVersion: client.authentication.k8s.io/v1\n"
                                              "      command: bin/get-token\n"),
                                   "/k/config");
  ASSERT_TRUE(relative) << relative.error().str();
  EXPECT_EQ(relative->exec->command, "/k/bin/get-token");
}

TEST(ParseKubeconfig, ErrorsNameTheFileAndField) {
  struct Row {
    std::string text;
    std::string where;
    std::string message;
  };
  const Row rows[] = {
      {"current-context: ''\n", "f.yaml: current-context", "is not set"},
      {"current-context: x\ncontexts: []\n", "f.yaml: contexts", "no entry named \"x\""},
      {kubeconfig("    server: http://api\n", "    token: t\n"),
       "f.yaml: clusters[prod].cluster.server", "plain http"},
      {kubeconfig("    insecure-skip-tls-verify: maybe\n    server: https://a\n", "    token: t\n"),
       "f.yaml: clusters[prod].cluster.insecure-skip-tls-verify", "expected true or false"},
      {kubeconfig("    server: https://a\n    certificate-authority-data: '!!'\n",
                  "    token: t\n"),
       "f.yaml: clusters[prod].cluster.certificate-authority-data", "expected base64"},
      {kubeconfig("    server: https://a\n", "    client-certificate: c.crt\n"),
       "f.yaml: users[admin].user", "client-certificate without client-key"},
      {kubeconfig("    server: https://a\n",
                  "    exec: {apiVersion: client.authentication.k8s.io/v1alpha1, command: x}\n"),
       "f.yaml: users[admin].user.exec.apiVersion", "expected client.authentication.k8s.io/v1"},
      {kubeconfig("    server: https://a\n",
                  "    exec: {apiVersion: client.authentication.k8s.io/v1}\n"),
       "f.yaml: users[admin].user.exec.command", "is required"},
      {kubeconfig("    server: https://a\n", "    auth-provider: {name: gcp}\n"),
       "f.yaml: users[admin].user.auth-provider", "is not supported"},
      {kubeconfig("    server: [https://a]\n", "    token: t\n"),
       "f.yaml: clusters[prod].cluster.server", "expected a string"},
      {"clusters: [\n", "f.yaml:2", "not a valid kubeconfig"},
      {"- a\n- b\n", "f.yaml", "expected a kubeconfig"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.text);
    auto config = parse_kubeconfig(row.text, "f.yaml");
    ASSERT_FALSE(config);
    EXPECT_EQ(config.error().where, row.where) << config.error().str();
    EXPECT_NE(config.error().message.find(row.message), std::string::npos)
        << config.error().message;
  }
}

TEST(KubeconfigPath, FlagThenEnvironmentThenHome) {
  const std::string dir = ::testing::TempDir() + "kubeconfig-path";
  std::filesystem::create_directories(dir);
  const std::string existing = dir + "/second";
  std::ofstream(existing) << "x";

  EXPECT_EQ(*kubeconfig_path("/flag", {{"KUBECONFIG", existing}}), "/flag");
  EXPECT_EQ(*kubeconfig_path("", {{"KUBECONFIG", dir + "/missing:" + existing}}), existing);
  EXPECT_EQ(*kubeconfig_path("", {{"HOME", "/home/me"}}), "/home/me/.kube/config");
  auto none = kubeconfig_path("", {{"KUBECONFIG", dir + "/missing"}});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().where, "KUBECONFIG");
  EXPECT_FALSE(kubeconfig_path("", {}));
}

TEST(InClusterConfig, ServiceAccountFilesAndServiceEnvironment) {
  const std::string dir = ::testing::TempDir() + "serviceaccount";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/token") << "eyJhbGciOi";
  std::ofstream(dir + "/ca.crt") << kCaPem;

  auto config = in_cluster_config(
      {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}}, dir);
  ASSERT_TRUE(config) << config.error().str();
  EXPECT_EQ(config->server.host, "10.96.0.1");
  EXPECT_EQ(config->server.port, 443);
  EXPECT_EQ(config->token_file, dir + "/token");
  EXPECT_EQ(config->ca_file, dir + "/ca.crt");

  auto v6 = in_cluster_config(
      {{"KUBERNETES_SERVICE_HOST", "fd00:10:96::1"}, {"KUBERNETES_SERVICE_PORT", "6443"}}, dir);
  ASSERT_TRUE(v6) << v6.error().str();
  EXPECT_EQ(v6->server.host, "fd00:10:96::1");
  EXPECT_EQ(v6->server.port, 6443);

  auto outside = in_cluster_config({}, dir);
  ASSERT_FALSE(outside);
  EXPECT_NE(outside.error().message.find("KUBERNETES_SERVICE_HOST"), std::string::npos);

  auto no_token = in_cluster_config(
      {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}},
      dir + "/missing");
  ASSERT_FALSE(no_token);
  EXPECT_EQ(no_token.error().where, dir + "/missing/token");
}

}  // namespace
}  // namespace cudagate::kube

// The registry client against an HTTPS server on loopback playing an OCI registry (the
// development certificates, trusted through registry.caFile): an index, the platform's
// manifest and its config fetched; the bearer-token dance with the configured credentials and
// a blob redirected to another host without them; failures that name the reference; the
// response size bound; concurrent lookups of one image sharing one set of requests.
#include "registry/registry_client.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/beast/http/field.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "registry/manifest.h"
#include "tests/support/dev_certs.h"
#include "tests/support/http_test_server.h"
#include "tests/support/registry_double.h"

namespace cudagate {
namespace {

namespace http = boost::beast::http;
using nlohmann::json;
using test_support::HttpTestServer;

std::string registry_client_config(const std::string& cuda, const std::string& arch) {
  return json{{"architecture", arch},
              {"os", "linux"},
              {"config", {{"Env", {"PATH=/usr/bin", "CUDA_VERSION=" + cuda}}}}}
      .dump();
}

std::string registry_client_manifest(const std::string& config) {
  return json{{"schemaVersion", 2},
              {"mediaType", kOciManifest},
              {"config",
               {{"mediaType", "application/vnd.oci.image.config.v1+json"},
                {"digest", sha256_digest(config)},
                {"size", config.size()}}},
              {"layers", json::array()}}
      .dump();
}

std::string registry_client_index(const std::string& amd64, const std::string& arm64) {
  json entries = json::array();
  for (const auto& [arch, manifest] : {std::pair{"amd64", amd64}, std::pair{"arm64", arm64}}) {
    entries.push_back({{"mediaType", kOciManifest},
                       {"digest", sha256_digest(manifest)},
                       {"size", manifest.size()},
                       {"platform", {{"os", "linux"}, {"architecture", arch}}}});
  }
  return json{{"schemaVersion", 2}, {"mediaType", kOciIndex}, {"manifests", entries}}.dump();
}

HttpTestServer::Answer registry_client_answer(int status, std::string body,
                                              std::string_view content_type = "") {
  return test_support::http_answer(status, std::move(body), content_type);
}

// The registry, over TLS with the development certificates.
struct RegistryDouble : test_support::RegistryDouble {
  RegistryDouble() : test_support::RegistryDouble(true) {}
};

RegistrySettings registry_client_settings() {
  RegistrySettings settings;
  settings.ca_file = test_support::dev_certs() + "/ca.crt";
  settings.credentials = "";  // anonymous unless a test writes some
  settings.timeout = std::chrono::seconds(30);
  return settings;
}

std::string registry_client_referrers(const std::string& repository, const std::string& digest) {
  return "/v2/" + repository + "/referrers/" + digest +
         "?artifactType=application%2Fvnd.cudagate.scan.v1%2Bjson";
}

std::string registry_client_referrers_tag(const std::string& repository,
                                          const std::string& digest) {
  return "/v2/" + repository + "/manifests/sha256-" + digest.substr(7);
}

const std::string& registry_client_env(const ImageConfig& config, std::string_view name) {
  static const std::string none;
  for (const auto& [k, v] : config.env) {
    if (k == name) return v;
  }
  return none;
}

// What the client told its observer.
class RecordingObserver final : public RegistryObserver {
 public:
  void registry_request(double /*seconds*/) override { ++requests; }
  void registry_cache(std::string_view result) override { cache.emplace_back(result); }
  void registry_lookup(std::string_view result) override { lookups.emplace_back(result); }
  void registry_cache_size(std::size_t images, std::size_t configs) override {
    cached_images = images;
    cached_configs = configs;
  }
  int requests = 0;
  std::vector<std::string> cache;
  std::vector<std::string> lookups;
  std::size_t cached_images = 0;
  std::size_t cached_configs = 0;
};

// Runs `ioc` until every lookup given has called done.
void registry_client_run(boost::asio::io_context& ioc, RegistryClient& client,
                         const std::vector<std::vector<ImageWanted>>& lookups) {
  auto left = lookups.size();
  for (const auto& wanted : lookups) {
    client.lookup(wanted, std::chrono::seconds(30), [&left, &ioc] {
      if (--left == 0) ioc.stop();
    });
  }
  ioc.run();
  ioc.restart();
}

TEST(RegistryClient, FetchesTheIndexThePlatformsManifestAndItsConfig) {
  RegistryDouble registry;
  const std::string amd64_config = registry_client_config("12.4.1", "amd64");
  const std::string arm64_config = registry_client_config("12.6.0", "arm64");
  const std::string amd64 = registry_client_manifest(amd64_config);
  const std::string arm64 = registry_client_manifest(arm64_config);
  registry.serve("/v2/ml/train/manifests/v1", 200, registry_client_index(amd64, arm64), kOciIndex);
  registry.serve("/v2/ml/train/manifests/" + sha256_digest(arm64), 200, arm64, kOciManifest);
  registry.serve("/v2/ml/train/blobs/" + sha256_digest(arm64_config), 200, arm64_config);

  const std::string image = registry.host() + "/ml/train:v1";
  const auto answers = look_up_once(registry_client_settings(), {{image, "linux/arm64"}});
  ASSERT_TRUE(answers.has_value()) << answers.error().str();
  ASSERT_EQ(answers->size(), 1U);
  const auto& answer = answers->front();
  ASSERT_EQ(answer.state, RegistryClient::Answer::State::found) << answer.reason;
  EXPECT_EQ(registry_client_env(*answer.config, "CUDA_VERSION"), "12.6.0");
  EXPECT_EQ(answer.config->digest, sha256_digest(arm64_config));

  // Then the scan attached to the platform's manifest: neither the
  // referrers API nor the referrers tag has one.
  const std::vector<std::string> expected = {
      "/v2/ml/train/manifests/v1 ",
      "/v2/ml/train/manifests/" + sha256_digest(arm64) + " ",
      "/v2/ml/train/blobs/" + sha256_digest(arm64_config) + " ",
      registry_client_referrers("ml/train", sha256_digest(arm64)) + " ",
      registry_client_referrers_tag("ml/train", sha256_digest(arm64)) + " ",
  };
  EXPECT_EQ(registry.seen(), expected);
  EXPECT_EQ(answer.config->scan, nullptr);
  EXPECT_EQ(registry.first_accept(), manifest_accept());
}

TEST(RegistryClient, BearerTokenWithCredentialsThenABlobRedirectedWithoutThem) {
  RegistryDouble registry;
  const std::string config = registry_client_config("12.4.1", "amd64");
  const std::string manifest = registry_client_manifest(config);
  const std::string challenge = "Bearer realm=\"https://" + registry.host() +
                                "/token\",service=\"registry.test\",scope=\"repository:ml/"
                                "train:pull\"";
  // The registry wants the token; the token endpoint wants the credentials.
  auto guarded = [challenge](const HttpTestServer::Answer& answer) {
    return [challenge, answer](const HttpTestServer::Request& request) {
      if (request[http::field::authorization] == "Bearer tok-1") return answer;
      auto refused = registry_client_answer(401, R"({"errors":[{"code":"UNAUTHORIZED"}]})");
      refused.response.set(http::field::www_authenticate, challenge);
      return refused;
    };
  };
  registry.route("/v2/ml/train/manifests/v1",
                 guarded(registry_client_answer(200, manifest, kOciManifest)));
  registry.route("/v2/ml/train/manifests/v2",
                 guarded(registry_client_answer(200, manifest, kOciManifest)));
  auto redirect = registry_client_answer(307, "");
  redirect.response.set(http::field::location,
                        "https://localhost:" + registry.port() + "/storage/config?sig=abc");
  registry.route("/v2/ml/train/blobs/" + sha256_digest(config), guarded(redirect));
  registry.serve("/storage/config?sig=abc", 200, config);
  registry.route(
      "/token?service=registry.test&scope=repository%3Aml%2Ftrain%3Apull",
      [](const HttpTestServer::Request& request) {
        if (request[http::field::authorization] != "Basic dXNlcjpzZWNyZXQ=") {  // user:secret
          return registry_client_answer(401, "");
        }
        return registry_client_answer(200, R"({"token":"tok-1","expires_in":300})",
                                      "application/json");
      });

  const std::filesystem::path credentials =
      std::filesystem::temp_directory_path() /
      ("cudagate-registry-client-" + std::to_string(::getpid()) + ".json");
  std::ofstream(credentials)
      << json{{"auths", {{registry.host(), {{"auth", "dXNlcjpzZWNyZXQ="}}}}}}.dump();
  RegistrySettings settings = registry_client_settings();
  settings.credentials = credentials.string();

  boost::asio::io_context ioc;
  RecordingObserver observer;
  {
    RegistryClient client(ioc, &observer);
    ASSERT_FALSE(client.configure(settings).has_value());
    registry_client_run(ioc, client, {{{registry.host() + "/ml/train:v1", "linux/amd64"}}});
    const auto answer = client.cached(registry.host() + "/ml/train:v1", "linux/amd64");
    ASSERT_EQ(answer.state, RegistryClient::Answer::State::found) << answer.reason;
    EXPECT_EQ(registry_client_env(*answer.config, "CUDA_VERSION"), "12.4.1");

    // Another tag of the repository: the token is kept, the config known.
    registry_client_run(ioc, client, {{{registry.host() + "/ml/train:v2", "linux/amd64"}}});
    EXPECT_EQ(client.cached(registry.host() + "/ml/train:v2", "linux/amd64").state,
              RegistryClient::Answer::State::found);
    EXPECT_EQ(client.cached_images(), 2U);
    EXPECT_EQ(client.cached_configs(), 1U);
  }
  std::filesystem::remove(credentials);

  const std::string token_call =
      "/token?service=registry.test&scope=repository%3Aml%2Ftrain%3Apull Basic dXNlcjpzZWNyZXQ=";
  const std::vector<std::string> expected = {
      "/v2/ml/train/manifests/v1 ",
      token_call,
      "/v2/ml/train/manifests/v1 Bearer tok-1",
      "/v2/ml/train/blobs/" + sha256_digest(config) + " Bearer tok-1",
      // Another host: the blob store's signed URL gets no credentials.
      "/storage/config?sig=abc ",
      registry_client_referrers("ml/train", sha256_digest(manifest)) + " Bearer tok-1",
      registry_client_referrers_tag("ml/train", sha256_digest(manifest)) + " Bearer tok-1",
      "/v2/ml/train/manifests/v2 Bearer tok-1",
      // The registry has no referrers API, as its 404 said: the tag at once.
      registry_client_referrers_tag("ml/train", sha256_digest(manifest)) + " Bearer tok-1",
  };
  EXPECT_EQ(registry.seen(), expected);
  EXPECT_EQ(observer.requests, 9);
  EXPECT_EQ(observer.lookups, (std::vector<std::string>{"found", "found"}));
  EXPECT_EQ(observer.cache, (std::vector<std::string>{"hit", "hit"}));
}

TEST(RegistryClient, FailuresNameTheReferenceAndWhatTheRegistrySaid) {
  struct Row {
    int status;
    const char* result;  // the observer's
    const char* said;
  };
  const Row rows[] = {
      {404, "not_found", "not found (404)"},
      {503, "error", "the registry answered 503"},
      {403, "unauthorized", "forbidden (403)"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.status);
    RegistryDouble registry;
    registry.serve("/v2/ml/train/manifests/v1", row.status, R"({"errors":[]})");
    boost::asio::io_context ioc;
    RecordingObserver observer;
    RegistryClient client(ioc, &observer);
    ASSERT_FALSE(client.configure(registry_client_settings()).has_value());
    const std::string image = registry.host() + "/ml/train:v1";
    EXPECT_EQ(client.cached(image, "linux/amd64").state, RegistryClient::Answer::State::miss);
    registry_client_run(ioc, client, {{{image, "linux/amd64"}}});
    const auto answer = client.cached(image, "linux/amd64");
    EXPECT_EQ(answer.state, RegistryClient::Answer::State::absent);
    EXPECT_EQ(answer.reason, "manifest " + image + ": " + row.said);
    EXPECT_EQ(observer.lookups, (std::vector<std::string>{row.result}));
    EXPECT_EQ(observer.cache, (std::vector<std::string>{"miss", "failure"}));
    EXPECT_EQ(registry.seen().size(), 1U);
  }
}

TEST(RegistryClient, AManifestOverTheSizeBoundIsRefused) {
  RegistryDouble registry;
  registry.serve("/v2/ml/train/manifests/v1", 200, std::string(4 * 1024 * 1024 + 1, ' '),
                 kOciManifest);
  const std::string image = registry.host() + "/ml/train:v1";
  const auto answers = look_up_once(registry_client_settings(), {{image, "linux/amd64"}});
  ASSERT_TRUE(answers.has_value()) << answers.error().str();
  const auto& answer = answers->front();
  EXPECT_EQ(answer.state, RegistryClient::Answer::State::absent);
  EXPECT_TRUE(answer.reason.starts_with("manifest " + image + ": ")) << answer.reason;
  EXPECT_NE(answer.reason.find("exceeds 4194304 bytes"), std::string::npos) << answer.reason;
}

TEST(RegistryClient, ConcurrentLookupsOfOneImageShareItsRequests) {
  RegistryDouble registry;
  const std::string config = registry_client_config("12.4.1", "amd64");
  const std::string manifest = registry_client_manifest(config);
  registry.serve("/v2/ml/train/manifests/v1", 200, manifest, kOciManifest);
  registry.serve("/v2/ml/train/blobs/" + sha256_digest(config), 200, config);
  boost::asio::io_context ioc;
  RegistryClient client(ioc, nullptr);
  ASSERT_FALSE(client.configure(registry_client_settings()).has_value());
  const ImageWanted wanted{registry.host() + "/ml/train:v1", "linux/amd64"};
  registry_client_run(ioc, client, {{wanted}, {wanted}, {wanted, wanted}});
  // One manifest, one config, the referrers API and the referrers tag.
  EXPECT_EQ(registry.seen().size(), 4U);
  EXPECT_EQ(client.cached(wanted.image, wanted.platform).state,
            RegistryClient::Answer::State::found);
}

TEST(RegistryClient, FindsTheScanAttachedAtTheReferrersTag) {
  RegistryDouble registry;
  const std::string config = registry_client_config("12.4.1", "amd64");
  const std::string manifest = registry_client_manifest(config);
  const std::string digest = sha256_digest(manifest);
  const json facts = {
      {"digest", digest},
      {"platform", "linux/amd64"},
      {"cudaRuntime", "12.4.127"},
      {"cudaCompat", nullptr},
      {"framework", nullptr},
      {"files", {{{"path", "/opt/x.so"}, {"sass", {"9.0a"}}, {"ptx", json::array()}}}}};
  const json index = {{"schemaVersion", 2},
                      {"mediaType", kOciIndex},
                      {"manifests",
                       {{{"mediaType", kOciManifest},
                         {"digest", sha256_digest("the scan's manifest")},
                         {"size", 700},
                         {"artifactType", "application/vnd.cudagate.scan.v1+json"},
                         {"annotations",
                          {{"org.opencontainers.image.created", "2025-03-01T10:00:00Z"},
                           {"io.cudagate.scan.facts", facts.dump()}}}}}}};
  registry.serve("/v2/ml/train/manifests/v1", 200, manifest, kOciManifest);
  registry.serve("/v2/ml/train/blobs/" + sha256_digest(config), 200, config);
  registry.serve(registry_client_referrers_tag("ml/train", digest), 200, index.dump(), kOciIndex);
  const ImageWanted wanted{registry.host() + "/ml/train:v1", "linux/amd64"};
  for (const bool attached : {true, false}) {
    SCOPED_TRACE(attached);
    RegistrySettings settings = registry_client_settings();
    settings.scan_attached = attached;
    const auto answers = look_up_once(settings, {wanted});
    ASSERT_TRUE(answers.has_value()) << answers.error().str();
    const auto& answer = answers->front();
    ASSERT_EQ(answer.state, RegistryClient::Answer::State::found) << answer.reason;
    if (attached) {
      ASSERT_NE(answer.config->scan, nullptr);
      EXPECT_EQ(answer.config->scan->digest, digest);
      ASSERT_EQ(answer.config->scan->files.size(), 1U);
      EXPECT_EQ(answer.config->scan->files[0].archs.str(), "9.0a");
    } else {
      EXPECT_EQ(answer.config->scan, nullptr);
    }
  }
  // Four calls with the scan, two without.
  EXPECT_EQ(registry.seen().size(), 6U);
}

TEST(RegistryClient, SettingsDecideWhetherItAsks) {
  boost::asio::io_context ioc;
  RegistryClient client(ioc, nullptr);
  // Not configured yet, then disabled: nothing is asked, and it says why.
  for (const bool configure : {false, true}) {
    SCOPED_TRACE(configure);
    if (configure) {
      RegistrySettings disabled = registry_client_settings();
      disabled.enabled = false;
      ASSERT_FALSE(client.configure(disabled).has_value());
    }
    const auto answer = client.cached("nvcr.io/nvidia/pytorch:24.05-py3", "linux/amd64");
    EXPECT_EQ(answer.state, RegistryClient::Answer::State::absent);
    EXPECT_EQ(answer.reason, "registry lookups are disabled");
  }

  RegistrySettings unreadable = registry_client_settings();
  unreadable.ca_file = "/nonexistent/ca.crt";
  const auto error = client.configure(unreadable);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->where, "registry.caFile");
  // The previous settings stay.
  EXPECT_EQ(client.cached("nvcr.io/nvidia/pytorch:24.05-py3", "linux/amd64").reason,
            "registry lookups are disabled");
}

}  // namespace
}  // namespace cudagate

// The lookup state machine driven with replies shaped as the distribution
// registry sends them: no sockets. Each test reads the calls it is asked
// to make and answers them.
#include "registry/image_lookup.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace cudagate {
namespace {

using nlohmann::json;
const auto kLookupNow = RegistryClock::time_point{} + std::chrono::hours(1);

std::string config_blob(const std::string& cuda, const std::string& arch = "amd64") {
  return json{{"architecture", arch},
              {"os", "linux"},
              {"config",
               {{"Env", {"PATH=/usr/bin", "CUDA_VERSION=" + cuda}},
                {"Labels", {{"com.nvidia.cuda.version", cuda}}}}}}
      .dump();
}

std::string image_manifest(const std::string& config, bool docker = false) {
  return json{{"schemaVersion", 2},
              {"mediaType", docker ? std::string(kDockerManifest) : std::string(kOciManifest)},
              {"config",
               {{"mediaType", "application/vnd.oci.image.config.v1+json"},
                {"digest", sha256_digest(config)},
                {"size", config.size()}}},
              {"layers", json::array()}}
      .dump();
}

std::string index_of(const std::vector<std::pair<std::string, std::string>>& manifests) {
  json entries = json::array();
  for (const auto& [platform, manifest] : manifests) {
    const auto p = Platform::parse(platform);
    json desc = {{"mediaType", kOciManifest},
                 {"digest", sha256_digest(manifest)},
                 {"size", manifest.size()},
                 {"platform", {{"os", p->os}, {"architecture", p->architecture}}}};
    if (!p->variant.empty()) desc["platform"]["variant"] = p->variant;
    entries.push_back(desc);
  }
  // An attestation manifest, as buildkit adds one: never selected.
  entries.push_back({{"mediaType", kOciManifest},
                     {"digest", sha256_digest("attestation")},
                     {"size", 11},
                     {"platform", {{"os", "unknown"}, {"architecture", "unknown"}}}});
  return json{{"schemaVersion", 2}, {"mediaType", kOciIndex}, {"manifests", entries}}.dump();
}

HttpReply ok(std::string body, std::string type = "") {
  HttpReply r;
  r.status = 200;
  r.body = std::move(body);
  r.content_type = std::move(type);
  return r;
}

HttpReply status(int code) {
  HttpReply r;
  r.status = code;
  r.body = R"({"errors":[{"code":"X"}]})";
  return r;
}

ImageRef parse_ref(std::string_view text) {
  return *ImageRef::parse(text);
}

std::vector<RegistryEndpoint> origin(const std::string& host = "registry.example.com") {
  return {RegistryEndpoint{host, true}};
}

HttpCall expect_call(ImageLookup& lookup) {
  auto step = lookup.next(kLookupNow);
  const auto* call = std::get_if<HttpCall>(&step);
  if (call == nullptr) {
    ADD_FAILURE() << "expected a call";
    return {};
  }
  return *call;
}

LookupFailure expect_failure(ImageLookup& lookup) {
  auto step = lookup.next(kLookupNow);
  const auto* failure = std::get_if<LookupFailure>(&step);
  if (failure == nullptr) {
    ADD_FAILURE() << "expected a failure";
    return {};
  }
  return *failure;
}

ImageLookup::ConfigPtr expect_config(ImageLookup& lookup) {
  auto step = lookup.next(kLookupNow);
  const auto* config = std::get_if<ImageLookup::ConfigPtr>(&step);
  if (config == nullptr) {
    if (const auto* f = std::get_if<LookupFailure>(&step)) ADD_FAILURE() << f->message;
    ADD_FAILURE() << "expected a config";
    return nullptr;
  }
  return *config;
}

std::string env_of(const ImageConfig& config, std::string_view name) {
  for (const auto& [k, v] : config.env) {
    if (k == name) return v;
  }
  return "";
}

TEST(ImageLookup, TagThenManifestThenConfigAnonymously) {
  const std::string config = config_blob("12.4.1");
  const std::string manifest = image_manifest(config);
  ImageLookup lookup(parse_ref("registry.example.com/ml/train:v1"), Platform{}, origin(), nullptr,
                     nullptr, nullptr);
  HttpCall call = expect_call(lookup);
  EXPECT_EQ(call.purpose, HttpCall::Purpose::manifest);
  EXPECT_TRUE(call.tls);
  EXPECT_EQ(call.host, "registry.example.com");
  EXPECT_EQ(call.target, "/v2/ml/train/manifests/v1");
  EXPECT_NE(call.accept.find(kOciIndex), std::string::npos);
  EXPECT_NE(call.accept.find(kDockerManifestList), std::string::npos);
  EXPECT_NE(call.accept.find(kDockerManifest), std::string::npos);
  EXPECT_TRUE(call.authorization.empty());
  lookup.on_reply(ok(manifest, std::string(kOciManifest)), kLookupNow);
  EXPECT_EQ(lookup.resolved_digest(), sha256_digest(manifest));

  call = expect_call(lookup);
  EXPECT_EQ(call.purpose, HttpCall::Purpose::config);
  EXPECT_EQ(call.target, "/v2/ml/train/blobs/" + sha256_digest(config));
  lookup.on_reply(ok(config), kLookupNow);
  const auto result = expect_config(lookup);
  ASSERT_NE(result, nullptr);
  EXPECT_EQ(env_of(*result, "CUDA_VERSION"), "12.4.1");
  EXPECT_EQ(result->digest, sha256_digest(config));
  EXPECT_EQ(lookup.calls(), 2);
}

TEST(ImageLookup, DockerHubNamesAreAskedOfRegistryOne) {
  // The endpoint list comes from the client; the repository keeps library/.
  ImageLookup lookup(parse_ref("ubuntu:22.04"), Platform{}, origin("registry-1.docker.io"), nullptr,
                     nullptr, nullptr);
  const HttpCall call = expect_call(lookup);
  EXPECT_EQ(call.host, "registry-1.docker.io");
  EXPECT_EQ(call.target, "/v2/library/ubuntu/manifests/22.04");
}

TEST(ImageLookup, BearerChallengeGetsATokenWithCredentialsAndKeepsIt) {
  const std::string config = config_blob("12.1.0");
  const std::string manifest = image_manifest(config, /*docker=*/true);
  Credentials creds{"robot", "s3cret-pass"};
  TokenCache tokens;
  ImageLookup lookup(parse_ref("nvcr.io/nvidia/pytorch:24.01-py3"), Platform{}, origin("nvcr.io"),
                     &creds, &tokens, nullptr);
  expect_call(lookup);
  HttpReply challenge = status(401);
  challenge.www_authenticate =
      R"(Bearer realm="https://auth.example.com/token?x=1",service="nvcr.io",scope="repository:nvidia/pytorch:pull")";
  lookup.on_reply(challenge, kLookupNow);

  HttpCall call = expect_call(lookup);
  EXPECT_EQ(call.purpose, HttpCall::Purpose::token);
  EXPECT_EQ(call.host, "auth.example.com");
  EXPECT_EQ(call.target, "/token?x=1&service=nvcr.io&scope=repository%3Anvidia%2Fpytorch%3Apull");
  EXPECT_EQ(call.authorization, creds.basic_authorization());
  lookup.on_reply(ok(R"({"token":"tok-1","expires_in":300})"), kLookupNow);

  call = expect_call(lookup);
  EXPECT_EQ(call.purpose, HttpCall::Purpose::manifest);
  EXPECT_EQ(call.authorization, "Bearer tok-1");
  lookup.on_reply(ok(manifest, std::string(kDockerManifest)), kLookupNow);
  call = expect_call(lookup);
  EXPECT_EQ(call.authorization, "Bearer tok-1");
  lookup.on_reply(ok(config), kLookupNow);
  ASSERT_NE(expect_config(lookup), nullptr);

  // The next lookup of the repository uses the kept token at once.
  ImageLookup again(parse_ref("nvcr.io/nvidia/pytorch:24.02-py3"), Platform{}, origin("nvcr.io"),
                    &creds, &tokens, nullptr);
  EXPECT_EQ(expect_call(again).authorization, "Bearer tok-1");
  // Until it expires (300 s, renewed 30 s early).
  auto later = kLookupNow + std::chrono::seconds(280);
  auto step = ImageLookup(parse_ref("nvcr.io/nvidia/pytorch:24.03-py3"), Platform{},
                          origin("nvcr.io"), &creds, &tokens, nullptr)
                  .next(later);
  EXPECT_TRUE(std::get<HttpCall>(step).authorization.empty());
}

TEST(ImageLookup, RefusedTokenIsUnauthorizedWithoutTheSecret) {
  Credentials creds{"robot", "s3cret-pass"};
  ImageLookup lookup(parse_ref("registry.example.com/a:1"), Platform{}, origin(), &creds, nullptr,
                     nullptr);
  expect_call(lookup);
  HttpReply challenge = status(401);
  challenge.www_authenticate = R"(Bearer realm="https://auth.example.com/token",service="r")";
  lookup.on_reply(challenge, kLookupNow);
  expect_call(lookup);
  lookup.on_reply(status(401), kLookupNow);
  const LookupFailure f = expect_failure(lookup);
  EXPECT_EQ(f.kind, LookupFailure::Kind::unauthorized);
  EXPECT_NE(f.message.find("refused the configured credentials"), std::string::npos) << f.message;
  EXPECT_EQ(f.message.find("s3cret"), std::string::npos);
  EXPECT_EQ(f.message.find(creds.basic_authorization().substr(6)), std::string::npos);
}

TEST(ImageLookup, BasicChallengeWithoutCredentialsSaysSo) {
  ImageLookup lookup(parse_ref("127.0.0.1:5000/a:1"), Platform{}, origin("127.0.0.1:5000"), nullptr,
                     nullptr, nullptr);
  expect_call(lookup);
  HttpReply challenge = status(401);
  challenge.www_authenticate = R"(Basic realm="registry")";
  lookup.on_reply(challenge, kLookupNow);
  const LookupFailure f = expect_failure(lookup);
  EXPECT_EQ(f.kind, LookupFailure::Kind::unauthorized);
  EXPECT_NE(f.message.find("none are configured for 127.0.0.1:5000"), std::string::npos)
      << f.message;
}

TEST(ImageLookup, BasicChallengeWithCredentialsRetriesOnceThenFails) {
  Credentials creds{"u", "p"};
  ImageLookup lookup(parse_ref("127.0.0.1:5000/a:1"), Platform{}, origin("127.0.0.1:5000"), &creds,
                     nullptr, nullptr);
  expect_call(lookup);
  HttpReply challenge = status(401);
  challenge.www_authenticate = R"(Basic realm="registry")";
  lookup.on_reply(challenge, kLookupNow);
  EXPECT_EQ(expect_call(lookup).authorization, "Basic dTpw");
  lookup.on_reply(challenge, kLookupNow);
  EXPECT_EQ(expect_failure(lookup).kind, LookupFailure::Kind::unauthorized);
}

TEST(ImageLookup, IndexResolvesToThePlatform) {
  const std::string amd = config_blob("12.4.1", "amd64");
  const std::string arm = config_blob("12.4.1", "arm64");
  const std::string amd_manifest = image_manifest(amd);
  const std::string arm_manifest = image_manifest(arm);
  const std::string index =
      index_of({{"linux/amd64", amd_manifest}, {"linux/arm64/v8", arm_manifest}});
  for (const auto& [platform, manifest, config] : {std::tuple{"linux/amd64", amd_manifest, amd},
                                                   std::tuple{"linux/arm64", arm_manifest, arm}}) {
    ImageLookup lookup(parse_ref("registry.example.com/vllm:0.6"), *Platform::parse(platform),
                       origin(), nullptr, nullptr, nullptr);
    expect_call(lookup);
    lookup.on_reply(ok(index, std::string(kOciIndex)), kLookupNow);
    EXPECT_EQ(lookup.resolved_digest(), sha256_digest(index));
    HttpCall call = expect_call(lookup);
    EXPECT_EQ(call.target, "/v2/vllm/manifests/" + sha256_digest(manifest)) << platform;
    lookup.on_reply(ok(manifest), kLookupNow);
    call = expect_call(lookup);
    EXPECT_EQ(call.target, "/v2/vllm/blobs/" + sha256_digest(config));
    lookup.on_reply(ok(config), kLookupNow);
    const auto result = expect_config(lookup);
    ASSERT_NE(result, nullptr);
    EXPECT_EQ(result->digest, sha256_digest(config));
  }
  ImageLookup missing(parse_ref("registry.example.com/vllm:0.6"), *Platform::parse("linux/ppc64le"),
                      origin(), nullptr, nullptr, nullptr);
  expect_call(missing);
  missing.on_reply(ok(index), kLookupNow);
  const LookupFailure f = expect_failure(missing);
  EXPECT_EQ(f.kind, LookupFailure::Kind::not_found);
  EXPECT_NE(f.message.find("no manifest for linux/ppc64le (it has linux/amd64, linux/arm64/v8)"),
            std::string::npos)
      << f.message;
}

TEST(ImageLookup, ContentNotMatchingItsDigestIsRefused) {
  const std::string config = config_blob("12.4.1");
  const std::string manifest = image_manifest(config);
  ImageLookup lookup(parse_ref("registry.example.com/a:1"), Platform{}, origin(), nullptr, nullptr,
                     nullptr);
  expect_call(lookup);
  lookup.on_reply(ok(manifest), kLookupNow);
  expect_call(lookup);
  lookup.on_reply(ok(config_blob("12.1.0")), kLookupNow);  // another config's bytes
  const LookupFailure f = expect_failure(lookup);
  EXPECT_EQ(f.kind, LookupFailure::Kind::invalid);
  EXPECT_NE(f.message.find("does not match its digest"), std::string::npos) << f.message;

  // A reference pinned by digest skips the tag and checks the manifest.
  const std::string pinned = "registry.example.com/a@" + sha256_digest(manifest);
  ImageLookup by_digest(parse_ref(pinned), Platform{}, origin(), nullptr, nullptr, nullptr);
  EXPECT_EQ(expect_call(by_digest).target, "/v2/a/manifests/" + sha256_digest(manifest));
  by_digest.on_reply(ok(image_manifest(config_blob("11.8.0"))), kLookupNow);
  EXPECT_EQ(expect_failure(by_digest).kind, LookupFailure::Kind::invalid);
}

TEST(ImageLookup, RedirectToABlobStoreCarriesNoAuthorization) {
  const std::string config = config_blob("12.4.1");
  const std::string manifest = image_manifest(config);
  Credentials creds{"u", "p"};
  ImageLookup lookup(parse_ref("registry.example.com/a:1"), Platform{}, origin(), &creds, nullptr,
                     nullptr);
  expect_call(lookup);
  HttpReply challenge = status(401);
  challenge.www_authenticate = R"(Basic realm="r")";
  lookup.on_reply(challenge, kLookupNow);
  expect_call(lookup);
  lookup.on_reply(ok(manifest), kLookupNow);
  EXPECT_EQ(expect_call(lookup).authorization, creds.basic_authorization());
  HttpReply redirect = status(307);
  redirect.location = "http://blobs.example.net:9000/data/abc?sig=xyz";
  lookup.on_reply(redirect, kLookupNow);
  const HttpCall call = expect_call(lookup);
  EXPECT_FALSE(call.tls);
  EXPECT_EQ(call.host, "blobs.example.net:9000");
  EXPECT_EQ(call.target, "/data/abc?sig=xyz");
  EXPECT_TRUE(call.authorization.empty());
  lookup.on_reply(ok(config), kLookupNow);
  EXPECT_NE(expect_config(lookup), nullptr);
}

TEST(ImageLookup, EndlessRedirectsEnd) {
  ImageLookup lookup(parse_ref("registry.example.com/a:1"), Platform{}, origin(), nullptr, nullptr,
                     nullptr);
  for (int i = 0; i < 6; ++i) {
    auto step = lookup.next(kLookupNow);
    if (!std::holds_alternative<HttpCall>(step)) break;
    HttpReply redirect = status(302);
    redirect.location = "/v2/a/manifests/1";
    lookup.on_reply(redirect, kLookupNow);
  }
  const LookupFailure f = expect_failure(lookup);
  EXPECT_NE(f.message.find("more than 5 redirects"), std::string::npos) << f.message;
}

TEST(ImageLookup, MirrorMissFallsBackToTheOrigin) {
  const std::string config = config_blob("12.4.1");
  const std::string manifest = image_manifest(config);
  std::vector<RegistryEndpoint> endpoints{{"mirror.example.com", true},
                                          {"registry-1.docker.io", true}};
  ImageLookup lookup(parse_ref("pytorch/pytorch:2.4.1-cuda12.4-cudnn9-runtime"), Platform{},
                     endpoints, nullptr, nullptr, nullptr);
  EXPECT_EQ(expect_call(lookup).host, "mirror.example.com");
  lookup.on_reply(status(404), kLookupNow);
  EXPECT_EQ(expect_call(lookup).host, "registry-1.docker.io");
  lookup.on_reply(ok(manifest), kLookupNow);
  expect_call(lookup);
  lookup.on_reply(ok(config), kLookupNow);
  EXPECT_NE(expect_config(lookup), nullptr);

  ImageLookup down(parse_ref("pytorch/pytorch:2.4.1"), Platform{}, endpoints, nullptr, nullptr,
                   nullptr);
  expect_call(down);
  down.on_transport_error("connection refused");
  EXPECT_EQ(expect_call(down).host, "registry-1.docker.io");
  down.on_reply(status(404), kLookupNow);
  const LookupFailure f = expect_failure(down);
  EXPECT_EQ(f.kind, LookupFailure::Kind::not_found);
  EXPECT_NE(f.message.find("registry-1.docker.io/pytorch/pytorch:2.4.1: not found"),
            std::string::npos)
      << f.message;
}

TEST(ImageLookup, RateLimitCarriesRetryAfter) {
  ImageLookup lookup(parse_ref("registry.example.com/a:1"), Platform{}, origin(), nullptr, nullptr,
                     nullptr);
  expect_call(lookup);
  HttpReply limited = status(429);
  limited.retry_after = "17";
  lookup.on_reply(limited, kLookupNow);
  const LookupFailure f = expect_failure(lookup);
  EXPECT_EQ(f.kind, LookupFailure::Kind::rate_limited);
  EXPECT_EQ(f.retry_after, std::chrono::seconds(17));
  EXPECT_EQ(f.host, "registry.example.com");
}

TEST(ImageLookup, AKnownConfigIsNotFetchedAgain) {
  const std::string config = config_blob("12.4.1");
  const std::string manifest = image_manifest(config);
  auto known = std::make_shared<const ImageConfig>(
      ImageConfig{{{"CUDA_VERSION", "12.4.1"}}, {}, sha256_digest(config)});
  ImageLookup lookup(
      parse_ref("registry.example.com/a:2"), Platform{}, origin(), nullptr, nullptr,
      [&](std::string_view digest) { return digest == known->digest ? known : nullptr; });
  expect_call(lookup);
  lookup.on_reply(ok(manifest), kLookupNow);
  EXPECT_EQ(expect_config(lookup), known);
  EXPECT_EQ(lookup.calls(), 1);
}

TEST(ImageLookup, UnreadableManifestsAreInvalid) {
  for (const std::string& body :
       {std::string(R"({"schemaVersion":1,"name":"a","tag":"1","fsLayers":[]})"),
        std::string("not json"),
        std::string(R"({"schemaVersion":2,"config":{"digest":"md5:1"}})")}) {
    ImageLookup lookup(parse_ref("registry.example.com/a:1"), Platform{}, origin(), nullptr,
                       nullptr, nullptr);
    expect_call(lookup);
    lookup.on_reply(ok(body), kLookupNow);
    const LookupFailure f = expect_failure(lookup);
    EXPECT_EQ(f.kind, LookupFailure::Kind::invalid) << body;
  }
}

}  // namespace
}  // namespace cudagate

// The lookup state machine driven with replies shaped as the distribution
// registry sends them: no sockets. Each test reads the calls it is asked
// to make and answers them.
#include "registry/image_lookup.h"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "registry/scan_attachment.h"

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
      ImageConfig{{{"CUDA_VERSION", "12.4.1"}}, {}, sha256_digest(config), nullptr});
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

// --- the scan attached to the manifest -------------------------------------

// A referrers index listing one scan of `subject`, as a registry answers
// the referrers API (or holds at the referrers tag).
std::string lookup_scan_index(const std::string& subject, const std::string& runtime = "12.4.127") {
  const json facts = {{"digest", subject},
                      {"platform", "linux/amd64"},
                      {"cudaRuntime", runtime},
                      {"cudaCompat", nullptr},
                      {"framework", nullptr},
                      {"files", {{{"path", "/opt/x.so"}, {"sass", {"8.0"}}, {"ptx", {"9.0"}}}}}};
  const json descriptor = {{"mediaType", kOciManifest},
                           {"digest", sha256_digest("scan of " + subject)},
                           {"size", 700},
                           {"artifactType", kScanArtifactType},
                           {"annotations",
                            {{std::string(kCreatedAnnotation), "2025-03-01T10:00:00Z"},
                             {std::string(kScanFactsAnnotation), facts.dump()}}}};
  return json{{"schemaVersion", 2}, {"mediaType", kOciIndex}, {"manifests", {descriptor}}}.dump();
}

std::string lookup_referrers_target(const std::string& repository, const std::string& digest) {
  return "/v2/" + repository + "/referrers/" + digest +
         "?artifactType=application%2Fvnd.cudagate.scan.v1%2Bjson";
}

std::string lookup_referrers_tag_target(const std::string& repository, const std::string& digest) {
  return "/v2/" + repository + "/manifests/sha256-" + digest.substr(7);
}

std::shared_ptr<const ScanFacts> scan_of_another_manifest() {
  ScanFacts facts;
  facts.digest = "sha256:other";
  return std::make_shared<const ScanFacts>(std::move(facts));
}

// A lookup of registry.example.com/ml/train:v1 that looks for scans, driven
// through its manifest and config; the next call is the scan's first.
struct ScanLookupDriver {
  std::string config = config_blob("12.4.1");
  std::string manifest = image_manifest(config);
  std::string digest = sha256_digest(manifest);
  ImageLookup lookup;

  explicit ScanLookupDriver(const Credentials* creds = nullptr, TokenCache* tokens = nullptr,
                            ImageLookup::KnownConfig known = nullptr)
      : lookup(parse_ref("registry.example.com/ml/train:v1"), Platform{}, origin(), creds, tokens,
               std::move(known), LookupLimits{}, /*scan_attached=*/true) {}

  void manifest_and_config() {
    expect_call(lookup);
    lookup.on_reply(ok(manifest, std::string(kOciManifest)), kLookupNow);
    expect_call(lookup);
    lookup.on_reply(ok(config), kLookupNow);
  }
};

TEST(ImageLookup, TheReferrersApiGivesTheScanInOneCall) {
  ScanLookupDriver s;
  EXPECT_FALSE(s.lookup.has_config());
  s.manifest_and_config();
  // Only the scan is asked for now.
  EXPECT_TRUE(s.lookup.has_config());
  const HttpCall call = expect_call(s.lookup);
  EXPECT_EQ(call.purpose, HttpCall::Purpose::referrers);
  EXPECT_EQ(call.host, "registry.example.com");
  EXPECT_EQ(call.target, lookup_referrers_target("ml/train", s.digest));
  EXPECT_EQ(call.accept, kOciIndex);
  EXPECT_EQ(call.max_body, LookupLimits{}.max_referrers_bytes);
  s.lookup.on_reply(ok(lookup_scan_index(s.digest), std::string(kOciIndex)), kLookupNow);
  const auto result = expect_config(s.lookup);
  ASSERT_NE(result, nullptr);
  EXPECT_EQ(env_of(*result, "CUDA_VERSION"), "12.4.1");
  ASSERT_NE(result->scan, nullptr);
  EXPECT_EQ(result->scan->digest, s.digest);
  EXPECT_EQ(result->scan->cuda_runtime, std::optional<std::string>("12.4.127"));
  ASSERT_EQ(result->scan->files.size(), 1U);
  EXPECT_EQ(result->scan->files[0].archs.str(), "8.0;9.0(PTX)");
  EXPECT_EQ(s.lookup.scan_result(), ImageLookup::ScanResult::found);
  EXPECT_EQ(s.lookup.scan_problem(), "");
  EXPECT_EQ(s.lookup.manifest_digest(), s.digest);
  EXPECT_EQ(s.lookup.calls(), 3);
}

TEST(ImageLookup, WithoutTheReferrersApiTheReferrersTag) {
  ScanLookupDriver s;
  s.manifest_and_config();
  expect_call(s.lookup);
  s.lookup.on_reply(status(404), kLookupNow);
  const HttpCall call = expect_call(s.lookup);
  EXPECT_EQ(call.purpose, HttpCall::Purpose::referrers);
  EXPECT_EQ(call.target, lookup_referrers_tag_target("ml/train", s.digest));
  EXPECT_EQ(call.accept, kOciIndex);
  s.lookup.on_reply(ok(lookup_scan_index(s.digest, "12.6.77")), kLookupNow);
  const auto result = expect_config(s.lookup);
  ASSERT_NE(result, nullptr);
  ASSERT_NE(result->scan, nullptr);
  EXPECT_EQ(result->scan->cuda_runtime, std::optional<std::string>("12.6.77"));
  EXPECT_EQ(s.lookup.calls(), 4);
}

// A host whose referrers API answered 404 is asked at the tag at once, for
// ReferrersMemory::kFor: one call for the scan instead of two.
TEST(ImageLookup, AHostWithoutTheReferrersApiIsRemembered) {
  ReferrersMemory memory;
  ScanLookupDriver first;
  first.lookup.remember_referrers(&memory);
  first.manifest_and_config();
  expect_call(first.lookup);
  first.lookup.on_reply(status(404), kLookupNow);
  EXPECT_TRUE(memory.lacks_api("registry.example.com", kLookupNow));
  expect_call(first.lookup);
  first.lookup.on_reply(ok(lookup_scan_index(first.digest)), kLookupNow);
  ASSERT_NE(expect_config(first.lookup), nullptr);
  EXPECT_EQ(first.lookup.calls(), 4);

  ScanLookupDriver next;
  next.lookup.remember_referrers(&memory);
  next.manifest_and_config();
  EXPECT_EQ(expect_call(next.lookup).target, lookup_referrers_tag_target("ml/train", next.digest));
  next.lookup.on_reply(ok(lookup_scan_index(next.digest)), kLookupNow);
  ASSERT_NE(expect_config(next.lookup), nullptr);
  EXPECT_EQ(next.lookup.calls(), 3);

  EXPECT_FALSE(memory.lacks_api("registry.example.com", kLookupNow + ReferrersMemory::kFor));
  EXPECT_FALSE(memory.lacks_api("other.example.com", kLookupNow));
}

TEST(ImageLookup, NoScanAttachedLeavesTheConfig) {
  ScanLookupDriver s;
  s.manifest_and_config();
  expect_call(s.lookup);
  s.lookup.on_reply(status(404), kLookupNow);
  expect_call(s.lookup);
  s.lookup.on_reply(status(404), kLookupNow);
  const auto result = expect_config(s.lookup);
  ASSERT_NE(result, nullptr);
  EXPECT_EQ(env_of(*result, "CUDA_VERSION"), "12.4.1");
  EXPECT_EQ(result->scan, nullptr);
  EXPECT_EQ(s.lookup.scan_result(), ImageLookup::ScanResult::none);
  EXPECT_NE(s.lookup.scan_problem().find("referrers tag registry.example.com/ml/train:sha256-" +
                                         s.digest.substr(7) + ": not found (404)"),
            std::string::npos)
      << s.lookup.scan_problem();
  // At most two calls more than the config's.
  EXPECT_EQ(s.lookup.calls(), 4);
}

TEST(ImageLookup, AFailureToReadTheScanNeverFailsTheConfig) {
  struct Row {
    const char* name;
    std::function<void(ImageLookup&)> answer;  // the scan's calls
    ImageLookup::ScanResult result;
    std::string problem;
    int calls;
  };
  const std::string other = sha256_digest("another manifest");
  const std::vector<Row> rows = {
      {"server error", [](ImageLookup& l) { l.on_reply(status(503), kLookupNow); },
       ImageLookup::ScanResult::unavailable, "the registry answered 503", 3},
      {"server error on the tag",
       [](ImageLookup& l) {
         l.on_reply(status(404), kLookupNow);
         expect_call(l);
         l.on_reply(status(500), kLookupNow);
       },
       ImageLookup::ScanResult::unavailable, "referrers tag", 4},
      {"transport", [](ImageLookup& l) { l.on_transport_error("connection reset"); },
       ImageLookup::ScanResult::unavailable, "connection reset", 3},
      {"rate limit",
       [](ImageLookup& l) {
         HttpReply limited = status(429);
         limited.retry_after = "30";
         l.on_reply(limited, kLookupNow);
       },
       ImageLookup::ScanResult::unavailable, "rate-limited (429)", 3},
      {"forbidden", [](ImageLookup& l) { l.on_reply(status(403), kLookupNow); },
       ImageLookup::ScanResult::unavailable, "forbidden (403)", 3},
      {"basic challenge without credentials",
       [](ImageLookup& l) {
         HttpReply challenge = status(401);
         challenge.www_authenticate = R"(Basic realm="registry")";
         l.on_reply(challenge, kLookupNow);
       },
       ImageLookup::ScanResult::unavailable, "none are configured", 3},
      {"not an index", [](ImageLookup& l) { l.on_reply(ok("<html>not here</html>"), kLookupNow); },
       ImageLookup::ScanResult::invalid, "referrers index: not valid JSON", 3},
      {"malformed facts",
       [&](ImageLookup& l) {
         std::string index = lookup_scan_index("X");
         // The facts' digest made a number: a field of the wrong type.
         const auto at = index.find(R"(\"digest\":\"X\")");
         index.replace(at, std::string(R"(\"digest\":\"X\")").size(), R"(\"digest\":7)");
         l.on_reply(ok(index), kLookupNow);
       },
       ImageLookup::ScanResult::invalid, "annotation io.cudagate.scan.facts: digest: expected", 3},
      {"a scan of another manifest",
       [&](ImageLookup& l) { l.on_reply(ok(lookup_scan_index(other)), kLookupNow); },
       ImageLookup::ScanResult::none, "no scan of sha256:", 3},
      {"redirected without a Location", [](ImageLookup& l) { l.on_reply(status(307), kLookupNow); },
       ImageLookup::ScanResult::invalid, "redirect 307 without a Location", 3},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    ScanLookupDriver s;
    s.manifest_and_config();
    expect_call(s.lookup);
    row.answer(s.lookup);
    const auto result = expect_config(s.lookup);
    ASSERT_NE(result, nullptr);
    EXPECT_EQ(env_of(*result, "CUDA_VERSION"), "12.4.1");
    EXPECT_EQ(result->scan, nullptr);
    EXPECT_EQ(s.lookup.scan_result(), row.result);
    EXPECT_NE(s.lookup.scan_problem().find(row.problem), std::string::npos)
        << s.lookup.scan_problem();
    EXPECT_NE(s.lookup.scan_problem().find("registry.example.com/ml/train"), std::string::npos)
        << s.lookup.scan_problem();
    EXPECT_EQ(s.lookup.calls(), row.calls);
  }
}

TEST(ImageLookup, TheReferrersCallDoesTheTokenDance) {
  // The manifest and config come anonymously; the referrers API asks for a token.
  Credentials creds{"robot", "s3cret-pass"};
  TokenCache tokens;
  ScanLookupDriver s(&creds, &tokens);
  s.manifest_and_config();
  EXPECT_TRUE(expect_call(s.lookup).authorization.empty());
  HttpReply challenge = status(401);
  challenge.www_authenticate =
      R"(Bearer realm="https://auth.example.com/token",service="registry.example.com",scope="repository:ml/train:pull")";
  s.lookup.on_reply(challenge, kLookupNow);
  HttpCall call = expect_call(s.lookup);
  EXPECT_EQ(call.purpose, HttpCall::Purpose::token);
  EXPECT_EQ(call.target,
            "/token?service=registry.example.com&scope=repository%3Aml%2Ftrain%3Apull");
  EXPECT_EQ(call.authorization, creds.basic_authorization());
  s.lookup.on_reply(ok(R"({"token":"tok-r","expires_in":300})"), kLookupNow);
  call = expect_call(s.lookup);
  EXPECT_EQ(call.purpose, HttpCall::Purpose::referrers);
  EXPECT_EQ(call.target, lookup_referrers_target("ml/train", s.digest));
  EXPECT_EQ(call.authorization, "Bearer tok-r");
  // Falling back to the tag keeps the token.
  s.lookup.on_reply(status(404), kLookupNow);
  call = expect_call(s.lookup);
  EXPECT_EQ(call.target, lookup_referrers_tag_target("ml/train", s.digest));
  EXPECT_EQ(call.authorization, "Bearer tok-r");
  s.lookup.on_reply(ok(lookup_scan_index(s.digest)), kLookupNow);
  const auto result = expect_config(s.lookup);
  ASSERT_NE(result, nullptr);
  EXPECT_NE(result->scan, nullptr);
  EXPECT_EQ(s.lookup.calls(), 6);

  // A refused token ends the scan step only.
  ScanLookupDriver refused(&creds, nullptr);
  refused.manifest_and_config();
  expect_call(refused.lookup);
  refused.lookup.on_reply(challenge, kLookupNow);
  expect_call(refused.lookup);
  refused.lookup.on_reply(status(401), kLookupNow);
  const auto config = expect_config(refused.lookup);
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(config->scan, nullptr);
  EXPECT_EQ(refused.lookup.scan_result(), ImageLookup::ScanResult::unavailable);
  EXPECT_EQ(refused.lookup.scan_problem().find("s3cret"), std::string::npos);
}

TEST(ImageLookup, TheManifestsAuthorizationCarriesOverToTheReferrersCall) {
  Credentials creds{"u", "p"};
  ScanLookupDriver s(&creds);
  expect_call(s.lookup);
  HttpReply challenge = status(401);
  challenge.www_authenticate = R"(Basic realm="registry")";
  s.lookup.on_reply(challenge, kLookupNow);
  expect_call(s.lookup);
  s.lookup.on_reply(ok(s.manifest), kLookupNow);
  expect_call(s.lookup);
  s.lookup.on_reply(ok(s.config), kLookupNow);
  EXPECT_EQ(expect_call(s.lookup).authorization, creds.basic_authorization());
  // A redirect to another host carries none.
  HttpReply redirect = status(307);
  redirect.location = "https://referrers.example.net/r?sig=1";
  s.lookup.on_reply(redirect, kLookupNow);
  const HttpCall call = expect_call(s.lookup);
  EXPECT_EQ(call.host, "referrers.example.net");
  EXPECT_TRUE(call.authorization.empty());
  s.lookup.on_reply(ok(lookup_scan_index(s.digest)), kLookupNow);
  EXPECT_NE(expect_config(s.lookup)->scan, nullptr);
}

TEST(ImageLookup, WithoutScanAttachedNoCallIsMadeForOne) {
  const std::string config = config_blob("12.4.1");
  const std::string manifest = image_manifest(config);
  ImageLookup lookup(parse_ref("registry.example.com/ml/train:v1"), Platform{}, origin(), nullptr,
                     nullptr, nullptr, LookupLimits{}, /*scan_attached=*/false);
  expect_call(lookup);
  lookup.on_reply(ok(manifest), kLookupNow);
  expect_call(lookup);
  lookup.on_reply(ok(config), kLookupNow);
  const auto result = expect_config(lookup);
  ASSERT_NE(result, nullptr);
  EXPECT_EQ(result->scan, nullptr);
  EXPECT_EQ(lookup.calls(), 2);
  EXPECT_EQ(lookup.scan_result(), ImageLookup::ScanResult::off);

  // A known config that carries another manifest's scan is given without it.
  auto scanned = std::make_shared<ImageConfig>(
      ImageConfig{{{"CUDA_VERSION", "12.4.1"}}, {}, sha256_digest(config), nullptr});
  scanned->scan = scan_of_another_manifest();
  ImageLookup known(parse_ref("registry.example.com/ml/train:v1"), Platform{}, origin(), nullptr,
                    nullptr, [&](std::string_view) { return scanned; });
  expect_call(known);
  known.on_reply(ok(manifest), kLookupNow);
  const auto without = expect_config(known);
  ASSERT_NE(without, nullptr);
  EXPECT_EQ(without->scan, nullptr);
  EXPECT_EQ(without->digest, scanned->digest);
  EXPECT_NE(scanned->scan, nullptr);  // the known config is not changed
  EXPECT_EQ(known.calls(), 1);
}

TEST(ImageLookup, AKnownConfigStillAsksForThisManifestsScan) {
  const std::string config = config_blob("12.4.1");
  // The config the cache holds came with another manifest's scan.
  auto known = std::make_shared<ImageConfig>(
      ImageConfig{{{"CUDA_VERSION", "12.4.1"}}, {}, sha256_digest(config), nullptr});
  known->scan = scan_of_another_manifest();
  std::shared_ptr<const ImageConfig> known_const = known;
  ScanLookupDriver s(nullptr, nullptr, [&](std::string_view digest) {
    return digest == known_const->digest ? known_const : nullptr;
  });
  expect_call(s.lookup);
  s.lookup.on_reply(ok(s.manifest), kLookupNow);
  // No blob: the referrers of this manifest at once.
  EXPECT_EQ(expect_call(s.lookup).target, lookup_referrers_target("ml/train", s.digest));
  s.lookup.on_reply(ok(lookup_scan_index(s.digest)), kLookupNow);
  const auto result = expect_config(s.lookup);
  ASSERT_NE(result, nullptr);
  ASSERT_NE(result->scan, nullptr);
  EXPECT_EQ(result->scan->digest, s.digest);
  EXPECT_EQ(known->scan->digest, "sha256:other");
  EXPECT_EQ(s.lookup.calls(), 2);

  // The same scan again: the known config itself.
  known->scan = result->scan;
  ScanLookupDriver again(nullptr, nullptr, [&](std::string_view) { return known_const; });
  expect_call(again.lookup);
  again.lookup.on_reply(ok(again.manifest), kLookupNow);
  expect_call(again.lookup);
  again.lookup.on_reply(ok(lookup_scan_index(again.digest)), kLookupNow);
  EXPECT_EQ(expect_config(again.lookup), known_const);

  // None attached: a copy without the other manifest's scan.
  ScanLookupDriver none(nullptr, nullptr, [&](std::string_view) { return known_const; });
  expect_call(none.lookup);
  none.lookup.on_reply(ok(none.manifest), kLookupNow);
  expect_call(none.lookup);
  none.lookup.on_reply(status(404), kLookupNow);
  expect_call(none.lookup);
  none.lookup.on_reply(status(404), kLookupNow);
  const auto bare = expect_config(none.lookup);
  ASSERT_NE(bare, nullptr);
  EXPECT_EQ(bare->scan, nullptr);
  EXPECT_NE(known_const->scan, nullptr);
}

TEST(ImageLookup, AnIndexAsksForThePlatformManifestsReferrers) {
  const std::string amd = config_blob("12.4.1", "amd64");
  const std::string arm = config_blob("12.8.1", "arm64");
  const std::string amd_manifest = image_manifest(amd);
  const std::string arm_manifest = image_manifest(arm);
  const std::string index =
      index_of({{"linux/amd64", amd_manifest}, {"linux/arm64/v8", arm_manifest}});
  ImageLookup lookup(parse_ref("registry.example.com/vllm:0.6"), *Platform::parse("linux/arm64"),
                     origin(), nullptr, nullptr, nullptr, LookupLimits{}, true);
  expect_call(lookup);
  lookup.on_reply(ok(index, std::string(kOciIndex)), kLookupNow);
  expect_call(lookup);
  lookup.on_reply(ok(arm_manifest), kLookupNow);
  expect_call(lookup);
  lookup.on_reply(ok(arm), kLookupNow);
  // The platform's manifest, never the index.
  const std::string digest = sha256_digest(arm_manifest);
  EXPECT_EQ(lookup.manifest_digest(), digest);
  EXPECT_EQ(lookup.resolved_digest(), sha256_digest(index));
  EXPECT_EQ(expect_call(lookup).target, lookup_referrers_target("vllm", digest));
  // A registry listing the index's scan and the platform's: the platform's.
  json both = json::parse(lookup_scan_index(sha256_digest(index), "12.4.0"));
  both["manifests"].push_back(json::parse(lookup_scan_index(digest, "12.8.0"))["manifests"][0]);
  lookup.on_reply(ok(both.dump()), kLookupNow);
  const auto result = expect_config(lookup);
  ASSERT_NE(result, nullptr);
  ASSERT_NE(result->scan, nullptr);
  EXPECT_EQ(result->scan->cuda_runtime, std::optional<std::string>("12.8.0"));
}

TEST(ImageLookup, AMirrorIsAskedForTheScanWithoutFallingBackToTheOrigin) {
  const std::string config = config_blob("12.4.1");
  const std::string manifest = image_manifest(config);
  std::vector<RegistryEndpoint> endpoints{{"mirror.example.com", true},
                                          {"registry.example.com", true}};
  ImageLookup lookup(parse_ref("registry.example.com/ml/train:v1"), Platform{}, endpoints, nullptr,
                     nullptr, nullptr, LookupLimits{}, true);
  EXPECT_EQ(expect_call(lookup).host, "mirror.example.com");
  lookup.on_reply(ok(manifest), kLookupNow);
  expect_call(lookup);
  lookup.on_reply(ok(config), kLookupNow);
  EXPECT_EQ(expect_call(lookup).host, "mirror.example.com");
  lookup.on_reply(status(404), kLookupNow);
  EXPECT_EQ(expect_call(lookup).host, "mirror.example.com");
  lookup.on_transport_error("connection reset");
  const auto result = expect_config(lookup);
  ASSERT_NE(result, nullptr);
  EXPECT_EQ(result->scan, nullptr);
  EXPECT_EQ(lookup.calls(), 4);
}

}  // namespace
}  // namespace cudagate

// Manifests, indexes and configs as real registries serve them.
#include "registry/manifest.h"

#include <gtest/gtest.h>

namespace cudagate {
namespace {

constexpr std::string_view kDigestA =
    "sha256:1111111111111111111111111111111111111111111111111111111111111111";
constexpr std::string_view kDigestB =
    "sha256:2222222222222222222222222222222222222222222222222222222222222222";

TEST(Manifest, DockerManifestListWithVariants) {
  // The shape of docker.io/library/ubuntu's manifest list.
  const std::string body =
      R"({"manifests":[
    {"digest":")" +
      std::string(kDigestA) +
      R"(","mediaType":"application/vnd.docker.distribution.manifest.v2+json","platform":{"architecture":"amd64","os":"linux"},"size":424},
    {"digest":")" +
      std::string(kDigestB) +
      R"(","mediaType":"application/vnd.docker.distribution.manifest.v2+json","platform":{"architecture":"arm64","os":"linux","variant":"v8"},"size":424}],
    "mediaType":"application/vnd.docker.distribution.manifest.list.v2+json","schemaVersion":2})";
  const auto m = parse_manifest(body, "");
  ASSERT_TRUE(m) << m.error().str();
  EXPECT_EQ(m->kind, Manifest::Kind::index);
  ASSERT_EQ(m->entries.size(), 2U);
  const auto* amd = select_platform(*m, *Platform::parse("linux/amd64"));
  ASSERT_NE(amd, nullptr);
  EXPECT_EQ(amd->digest, kDigestA);
  // containerd: arm64 without a variant means v8.
  const auto* arm = select_platform(*m, *Platform::parse("linux/arm64"));
  ASSERT_NE(arm, nullptr);
  EXPECT_EQ(arm->digest, kDigestB);
  EXPECT_EQ(select_platform(*m, *Platform::parse("linux/arm64/v9")), nullptr);
  EXPECT_EQ(select_platform(*m, *Platform::parse("windows/amd64")), nullptr);
}

TEST(Manifest, KindFromContentTypeWhenTheBodyDoesNotSay) {
  const std::string body = R"({"schemaVersion":2,"config":{"digest":")" + std::string(kDigestA) +
                           R"(","size":7},"layers":[]})";
  const auto m = parse_manifest(body, "application/vnd.oci.image.manifest.v1+json; charset=utf-8");
  ASSERT_TRUE(m) << m.error().str();
  EXPECT_EQ(m->kind, Manifest::Kind::image);
  EXPECT_EQ(m->config_digest, kDigestA);
  EXPECT_EQ(m->config_size, 7U);
}

TEST(Manifest, ErrorsSayWhere) {
  struct Row {
    std::string body;
    std::string where;
    std::string message;
  };
  const std::vector<Row> rows = {
      {"[]", "manifest", "expected a JSON object"},
      {"{", "manifest", "not valid JSON"},
      {R"({"schemaVersion":1})", "manifest", "schema 1"},
      {R"({"mediaType":"application/vnd.oci.image.index.v1+json"})", "manifest/manifests",
       "expected the array"},
      {R"({"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"digest":"x"}]})",
       "manifest/manifests/0/digest", "expected sha256"},
      {R"({"mediaType":"application/vnd.oci.image.manifest.v1+json"})", "manifest/config",
       "expected the image manifest's config"},
      {R"({"mediaType":"text/html"})", "manifest/mediaType", "unsupported manifest type"},
      {std::string(200, '[') + std::string(200, ']'), "manifest", "nested more than"},
  };
  for (const Row& row : rows) {
    const auto m = parse_manifest(row.body, "");
    ASSERT_FALSE(m) << row.body;
    EXPECT_EQ(m.error().where, row.where) << row.body;
    EXPECT_NE(m.error().message.find(row.message), std::string::npos) << m.error().str();
  }
}

TEST(ImageConfig, EnvAndLabelsAsTheNvidiaCudaImageHasThem) {
  // nvidia/cuda:12.4.1-runtime-ubuntu22.04's config, shortened.
  const std::string body = R"({"architecture":"amd64","os":"linux","config":{
    "Env":["PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/bin","NVARCH=x86_64",
      "NVIDIA_REQUIRE_CUDA=cuda>=12.4 brand=tesla,driver>=470,driver<471 brand=unknown,driver>=470,driver<471",
      "CUDA_VERSION=12.4.1","NVIDIA_VISIBLE_DEVICES=all","HOST_PASSTHROUGH","EMPTY="],
    "Labels":{"maintainer":"NVIDIA CORPORATION <cudatools@nvidia.com>","com.nvidia.cuda.version":"12.4.1"}}})";
  const auto c = parse_image_config(body, kDigestA);
  ASSERT_TRUE(c) << c.error().str();
  EXPECT_EQ(c->digest, kDigestA);
  ASSERT_EQ(c->env.size(), 6U);  // HOST_PASSTHROUGH sets nothing
  EXPECT_EQ(c->env[3].first, "CUDA_VERSION");
  EXPECT_EQ(c->env[3].second, "12.4.1");
  EXPECT_EQ(c->env[2].second.substr(0, 10), "cuda>=12.4");
  EXPECT_EQ(c->env[5], std::make_pair(std::string("EMPTY"), std::string()));
  ASSERT_EQ(c->labels.size(), 2U);
  EXPECT_EQ(c->labels[0].first, "com.nvidia.cuda.version");

  // A config without a config section (scratch images) has nothing.
  const auto empty = parse_image_config(R"({"architecture":"amd64","os":"linux"})", kDigestA);
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->env.empty());
  const auto nulls = parse_image_config(R"({"config":{"Env":null,"Labels":null}})", kDigestA);
  ASSERT_TRUE(nulls);

  const auto bad = parse_image_config(R"({"config":{"Env":[1]}})", kDigestA);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where, "config/config/Env/0");
  const auto bad_label = parse_image_config(R"({"config":{"Labels":{"a":1}}})", kDigestA);
  ASSERT_FALSE(bad_label);
  EXPECT_EQ(bad_label.error().where, "config/config/Labels/a");
}

TEST(Digest, Sha256OfContent) {
  // sha256("") from FIPS 180-2 test vectors.
  EXPECT_EQ(sha256_digest(""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_TRUE(digest_matches(
      "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "abc"));
  EXPECT_FALSE(digest_matches(
      "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "abd"));
  EXPECT_FALSE(digest_matches("sha512:00", "abc"));
  EXPECT_FALSE(
      is_sha256_digest("sha256:BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"));
}

TEST(Platform, Parse) {
  EXPECT_EQ(Platform::parse("linux/arm64/v8")->variant, "v8");
  EXPECT_EQ(Platform::parse("linux/amd64")->str(), "linux/amd64");
  for (const char* bad : {"linux", "/amd64", "linux/", "linux/arm64/", "linux/arm/v7/x"}) {
    EXPECT_FALSE(Platform::parse(bad)) << bad;
  }
}

}  // namespace
}  // namespace cudagate

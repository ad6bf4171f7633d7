// An image manifest's config and layers for a pull, and a config's
// platform; errors name the field.
#include "registry/image_layers.h"

#include <gtest/gtest.h>

namespace cudagate {
namespace {

const std::string kLayersDigestA = "sha256:" + std::string(64, 'a');
const std::string kLayersDigestB = "sha256:" + std::string(64, 'b');

TEST(ImageLayers, ConfigAndLayersBottomFirst) {
  auto out = parse_image_layers(
      R"({"schemaVersion":2,"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":")" +
      kLayersDigestA +
      R"(","size":10},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+zstd","digest":")" +
      kLayersDigestB + R"(","size":5000000000}]})");
  ASSERT_TRUE(out) << out.error().str();
  EXPECT_EQ(out->config.digest, kLayersDigestA);
  EXPECT_EQ(out->config.size, 10U);
  ASSERT_EQ(out->layers.size(), 1U);
  EXPECT_EQ(out->layers[0].media_type, "application/vnd.oci.image.layer.v1.tar+zstd");
  EXPECT_EQ(out->layers[0].size, 5000000000U);
}

TEST(ImageLayers, ErrorsNameTheField) {
  const std::string config = R"("config":{"digest":")" + kLayersDigestA + R"(","size":1})";
  struct Row {
    std::string manifest;
    std::string where;
  };
  for (const Row& row : std::vector<Row>{
           {"[]", "manifest"},
           {"{}", "manifest/config"},
           {R"({"config":{"digest":"md5:x","size":1},"layers":[]})", "manifest/config/digest"},
           {"{" + config + "}", "manifest/layers"},
           {"{" + config + R"(,"layers":[{"digest":")" + kLayersDigestB + R"(","size":-1}]})",
            "manifest/layers/0/size"},
           {"{" + config + R"(,"layers":[7]})", "manifest/layers/0"},
           {std::string(100, '[') + std::string(100, ']'), "manifest"}}) {
    auto out = parse_image_layers(row.manifest);
    ASSERT_FALSE(out) << row.manifest;
    EXPECT_EQ(out.error().where, row.where) << row.manifest;
  }
}

TEST(ImageLayers, PlatformOfAConfig) {
  EXPECT_EQ(platform_of_config(R"({"os":"linux","architecture":"amd64"})"), "linux/amd64");
  EXPECT_EQ(platform_of_config(R"({"os":"linux","architecture":"arm64","variant":"v8"})"),
            "linux/arm64/v8");
  EXPECT_EQ(platform_of_config(R"({"architecture":"amd64"})"), "");
  EXPECT_EQ(platform_of_config(R"({"os":1,"architecture":"amd64"})"), "");
  EXPECT_EQ(platform_of_config("not json"), "");
}

}  // namespace
}  // namespace cudagate

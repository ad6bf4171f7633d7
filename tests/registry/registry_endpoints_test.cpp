// Where an image is read from: its mirror first, then its origin; plain
// HTTP only where the settings say so.
#include "registry/registry_endpoints.h"

#include <gtest/gtest.h>

namespace cudagate {
namespace {

ImageRef endpoints_ref(std::string_view text) {
  auto ref = ImageRef::parse(text);
  EXPECT_TRUE(ref) << text;
  return ref ? *ref : ImageRef{};
}

TEST(RegistryEndpoints, MirrorFirstThenTheOrigin) {
  RegistrySettings settings;
  settings.mirrors = {{"docker.io", "http://10.0.0.5:5000/path"}, {"nvcr.io", "mirror.internal"}};
  settings.insecure = {"mirror.internal", "localhost:5000"};
  const auto docker = read_endpoints(endpoints_ref("ubuntu:22.04"), settings);
  ASSERT_EQ(docker.size(), 2U);
  EXPECT_EQ(docker[0].host, "10.0.0.5:5000");
  EXPECT_FALSE(docker[0].tls);
  EXPECT_EQ(docker[1].host, "registry-1.docker.io");
  EXPECT_TRUE(docker[1].tls);
  const auto nvcr = read_endpoints(endpoints_ref("nvcr.io/nvidia/pytorch:24.03-py3"), settings);
  ASSERT_EQ(nvcr.size(), 2U);
  EXPECT_EQ(nvcr[0].host, "mirror.internal");
  EXPECT_FALSE(nvcr[0].tls);
  const auto local = read_endpoints(endpoints_ref("localhost:5000/ml/app:v1"), settings);
  ASSERT_EQ(local.size(), 1U);
  EXPECT_EQ(local[0].host, "localhost:5000");
  EXPECT_FALSE(local[0].tls);
  EXPECT_TRUE(origin_endpoint(endpoints_ref("ghcr.io/x/y:1"), settings).tls);
  EXPECT_TRUE(mirror_endpoint("https://mirror.internal", settings).tls);
}

}  // namespace
}  // namespace cudagate

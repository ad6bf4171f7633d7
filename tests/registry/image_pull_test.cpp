// A pull from a registry double over plain HTTP: layers streamed to the
// visitor in order, each checked against its digest (a mismatch a problem
// naming the layer, the pull going on), Basic credentials to the registry
// and none to the blob store a redirect leads to, errors naming the image.
#include "registry/image_pull.h"

#include <gtest/gtest.h>

#include <boost/beast/http/field.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <vector>

#include "registry/manifest.h"
#include "tests/support/http_test_server.h"
#include "tests/support/registry_double.h"
#include "types/base64.h"

namespace cudagate {
namespace {

namespace http = boost::beast::http;
using test_support::HttpTestServer;

HttpTestServer::Answer pull_answer(int status, std::string body, std::string_view type = "") {
  return test_support::http_answer(status, std::move(body), type);
}

// A plain-HTTP registry whose unknown blobs are 404s.
struct PullDouble : test_support::RegistryDouble {
  PullDouble() : test_support::RegistryDouble(false, "BLOB_UNKNOWN") {}
};

struct CollectedLayers : LayerVisitor {
  std::vector<std::string> names;
  std::vector<std::string> contents;
  std::vector<std::string> problems;
  void begin_layer(const std::string& name, const Descriptor&) override {
    names.push_back(name);
    contents.emplace_back();
  }
  bool layer_bytes(std::span<const std::byte> chunk) override {
    contents.back().append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
    return contents.back().size() <= stop_after;
  }
  std::size_t stop_after = SIZE_MAX;
  void end_layer(std::optional<Error> problem) override {
    problems.push_back(problem ? problem->str() : "");
  }
};

std::string pull_descriptor(const std::string& type, const std::string& content) {
  return R"({"mediaType":")" + type + R"(","digest":")" + sha256_digest(content) + R"(","size":)" +
         std::to_string(content.size()) + "}";
}

class ImagePull : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = R"({"os":"linux","architecture":"arm64","variant":"v8"})";
    layers_ = {std::string(200000, 'a'), "second layer"};
    manifest_ = R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",)"
                R"("config":)" +
                pull_descriptor("application/vnd.oci.image.config.v1+json", config_) +
                R"(,"layers":[)" +
                pull_descriptor("application/vnd.oci.image.layer.v1.tar+gzip", layers_[0]) + "," +
                pull_descriptor("application/vnd.oci.image.layer.v1.tar+zstd", layers_[1]) + "]}";
    registry_.serve("/v2/ml/app/manifests/v1", 200, manifest_,
                    "application/vnd.oci.image.manifest.v1+json");
    registry_.serve("/v2/ml/app/blobs/" + sha256_digest(config_), 200, config_);
    settings_.insecure = {registry_.host(), store_.host()};
    settings_.credentials = "";
  }

  PullDouble registry_;
  PullDouble store_;
  RegistrySettings settings_;
  std::string config_;
  std::vector<std::string> layers_;
  std::string manifest_;
};

TEST_F(ImagePull, LayersStreamInOrderEachCheckedAgainstItsDigest) {
  registry_.serve("/v2/ml/app/blobs/" + sha256_digest(layers_[0]), 200, layers_[0]);
  registry_.serve("/v2/ml/app/blobs/" + sha256_digest(layers_[1]), 200, "SECOND LAYER");
  CollectedLayers visitor;
  auto pulled = pull_image(settings_, registry_.host() + "/ml/app:v1", "linux/arm64", visitor);
  ASSERT_TRUE(pulled) << pulled.error().str();
  EXPECT_EQ(pulled->manifest.digest, sha256_digest(manifest_));
  EXPECT_EQ(pulled->manifest.size, manifest_.size());
  EXPECT_EQ(pulled->manifest.media_type, "application/vnd.oci.image.manifest.v1+json");
  EXPECT_EQ(pulled->platform, "linux/arm64/v8");
  EXPECT_EQ(pulled->layers, 2U);
  ASSERT_EQ(visitor.names.size(), 2U);
  EXPECT_EQ(visitor.names[1], "layer 2 " + sha256_digest(layers_[1]));
  EXPECT_EQ(visitor.contents[0], layers_[0]);
  EXPECT_EQ(visitor.problems[0], "");
  EXPECT_EQ(visitor.problems[1], "layer 2 " + sha256_digest(layers_[1]) +
                                     ": content does not match its digest (it hashes to " +
                                     sha256_digest("SECOND LAYER") + ")");
}

TEST_F(ImagePull, BasicCredentialsToTheRegistryNoneToTheBlobStore) {
  const std::string authorization = "Basic " + base64_encode("robot:s3cret");
  const auto guarded = [authorization](const HttpTestServer::Answer& ok) {
    return [ok, authorization](const HttpTestServer::Request& request) {
      if (request[http::field::authorization] == authorization) return ok;
      auto refused = pull_answer(401, "");
      refused.response.set(http::field::www_authenticate, R"(Basic realm="test")");
      return refused;
    };
  };
  registry_.route(
      "/v2/ml/app/manifests/v1",
      guarded(pull_answer(200, manifest_, "application/vnd.oci.image.manifest.v1+json")));
  registry_.route("/v2/ml/app/blobs/" + sha256_digest(config_), guarded(pull_answer(200, config_)));
  for (const std::string& layer : layers_) {
    auto moved = pull_answer(307, "");
    moved.response.set(http::field::location,
                       "http://" + store_.host() + "/store/" + sha256_digest(layer) + "?sig=x");
    registry_.route("/v2/ml/app/blobs/" + sha256_digest(layer), guarded(moved));
    store_.serve("/store/" + sha256_digest(layer) + "?sig=x", 200, layer);
  }
  const auto dir =
      std::filesystem::temp_directory_path() /
      ("cudagate-image-pull-" + std::to_string(reinterpret_cast<std::uintptr_t>(this)));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"auths":{")" << registry_.host() << R"(":{"auth":")"
                                     << base64_encode("robot:s3cret") << R"("}}})";
  settings_.credentials = (dir / "config.json").string();
  CollectedLayers visitor;
  auto pulled = pull_image(settings_, registry_.host() + "/ml/app:v1", "linux/arm64", visitor);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(pulled) << pulled.error().str();
  EXPECT_EQ(visitor.contents, layers_);
  EXPECT_EQ(visitor.problems, (std::vector<std::string>{"", ""}));
  for (const std::string& seen : store_.seen()) EXPECT_TRUE(seen.ends_with("?sig=x ")) << seen;
  EXPECT_EQ(registry_.seen().front(), "/v2/ml/app/manifests/v1 ");
  EXPECT_EQ(registry_.seen()[1], "/v2/ml/app/manifests/v1 " + authorization);
}

TEST_F(ImagePull, ErrorsNameTheImageAndTheLayer) {
  CollectedLayers visitor;
  auto missing = pull_image(settings_, registry_.host() + "/ml/none:v1", "", visitor);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().str().find("ml/none"), std::string::npos) << missing.error().str();
  EXPECT_NE(missing.error().str().find("404"), std::string::npos) << missing.error().str();

  auto no_layer = pull_image(settings_, registry_.host() + "/ml/app:v1", "linux/arm64", visitor);
  ASSERT_FALSE(no_layer);
  EXPECT_NE(no_layer.error().str().find("layer 1 " + sha256_digest(layers_[0])), std::string::npos)
      << no_layer.error().str();

  auto bad = pull_image(settings_, "Not A Reference", "", visitor);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().str().find("Not A Reference"), std::string::npos);
  auto bad_platform = pull_image(settings_, registry_.host() + "/ml/app:v1", "linux", visitor);
  ASSERT_FALSE(bad_platform);
  EXPECT_EQ(bad_platform.error().where.rfind("--platform", 0), 0U) << bad_platform.error().str();
}

TEST_F(ImagePull, AVisitorStopsThePull) {
  registry_.serve("/v2/ml/app/blobs/" + sha256_digest(layers_[0]), 200, layers_[0]);
  registry_.serve("/v2/ml/app/blobs/" + sha256_digest(layers_[1]), 200, layers_[1]);
  CollectedLayers visitor;
  visitor.stop_after = 1000;
  auto pulled = pull_image(settings_, registry_.host() + "/ml/app:v1", "linux/arm64", visitor);
  ASSERT_FALSE(pulled);
  EXPECT_EQ(pulled.error().where.rfind("layer 1 " + sha256_digest(layers_[0]), 0), 0U)
      << pulled.error().str();
  EXPECT_NE(pulled.error().message.find("stopped by its reader"), std::string::npos);
  EXPECT_EQ(visitor.names.size(), 1U);
  EXPECT_TRUE(visitor.problems.empty());
}

}  // namespace
}  // namespace cudagate

// WWW-Authenticate challenges as registries send them, token answers, and
// dockerconfigjson files as kubectl create secret docker-registry writes them.
#include "registry/auth.h"

#include <gtest/gtest.h>

#include "types/base64.h"

namespace cudagate {
namespace {

TEST(Challenge, BearerAsDockerHubAndNgcSendIt) {
  const auto hub = parse_challenge(
      R"(Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/ubuntu:pull")");
  ASSERT_TRUE(hub) << hub.error().str();
  EXPECT_EQ(hub->scheme, AuthChallenge::Scheme::bearer);
  EXPECT_EQ(hub->realm, "https://auth.docker.io/token");
  EXPECT_EQ(hub->service, "registry.docker.io");
  EXPECT_EQ(hub->scope, "repository:library/ubuntu:pull");
  // Any order, spaces after commas, a lower-case scheme, token values.
  const auto other =
      parse_challenge(R"(bearer service=nvcr.io, realm="https://nvcr.io/proxy_auth")");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->realm, "https://nvcr.io/proxy_auth");
  EXPECT_EQ(other->service, "nvcr.io");
  // Several challenges: an unknown scheme first is passed over.
  const auto several = parse_challenge(R"(Negotiate abc, Basic realm="registry")");
  ASSERT_TRUE(several) << several.error().str();
  EXPECT_EQ(several->scheme, AuthChallenge::Scheme::basic);
  // Quoted-pair escapes.
  const auto escaped = parse_challenge(R"(Bearer realm="https://a/t\"x")");
  ASSERT_TRUE(escaped);
  EXPECT_EQ(escaped->realm, "https://a/t\"x");
}

TEST(Challenge, Errors) {
  for (const char* bad :
       {"", "Bearer", "Bearer service=x", R"(Bearer realm="unterminated)", "Negotiate abc", "=="}) {
    EXPECT_FALSE(parse_challenge(bad)) << bad;
  }
}

TEST(TokenResponse, TokenOrAccessTokenWithLifetime) {
  auto t = parse_token_response(
      R"({"token":"abc","expires_in":300,"issued_at":"2024-01-01T00:00:00Z"})");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->token, "abc");
  EXPECT_EQ(t->lifetime, std::chrono::seconds(300));
  t = parse_token_response(R"({"access_token":"xyz"})");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->token, "xyz");
  EXPECT_EQ(t->lifetime, std::chrono::seconds(60));  // the spec's default
  t = parse_token_response(R"({"token":"abc","expires_in":5})");
  EXPECT_EQ(t->lifetime, std::chrono::seconds(60));  // the spec's minimum
  EXPECT_FALSE(parse_token_response(R"({"expires_in":300})"));
  EXPECT_FALSE(parse_token_response("[]"));
}

TEST(DockerConfig, AuthsByHostAsDockerMatchesThem) {
  const std::string file = R"({"auths":{
    "https://index.docker.io/v1/":{"auth":")" +
                           base64_encode("hubuser:hubpass") + R"("},
    "nvcr.io":{"username":"$oauthtoken","password":"ngc-key"},
    "https://registry.example.com:5000/v2/":{"auth":")" +
                           base64_encode("u:p:with:colons") + R"("},
    "ghcr.io":{"identitytoken":"only-a-token"}}})";
  const auto config = DockerConfig::parse(file);
  ASSERT_TRUE(config) << config.error().str();
  EXPECT_EQ(config->size(), 3U);
  ASSERT_NE(config->find("docker.io"), nullptr);
  EXPECT_EQ(config->find("docker.io")->username, "hubuser");
  EXPECT_EQ(config->find("registry-1.docker.io")->password, "hubpass");
  EXPECT_EQ(config->find("nvcr.io")->username, "$oauthtoken");
  EXPECT_EQ(config->find("registry.example.com:5000")->password, "p:with:colons");
  EXPECT_EQ(config->find("ghcr.io"), nullptr);
  EXPECT_EQ(config->find("quay.io"), nullptr);
  EXPECT_EQ(Credentials({"u", "p"}).basic_authorization(), "Basic dTpw");
}

TEST(DockerConfig, ErrorsNameTheHostNeverTheSecret) {
  auto bad = DockerConfig::parse(R"({"auths":{"nvcr.io":{"auth":"!!secret!!"}}})");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where, "auths.nvcr.io.auth");
  EXPECT_EQ(bad.error().str().find("secret"), std::string::npos);
  bad = DockerConfig::parse(R"({"auths":{"nvcr.io":{"auth":")" + base64_encode("nocolon") +
                            R"("}}})");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().str().find("nocolon"), std::string::npos);
  EXPECT_FALSE(DockerConfig::parse("[]"));
  EXPECT_FALSE(DockerConfig::parse(R"({"auths":[]})"));
}

TEST(Base64, RoundTripAndRejects) {
  for (const std::string_view s : {"", "f", "fo", "foo", "foob", "fooba", "foobar"}) {
    EXPECT_EQ(base64_decode(base64_encode(s)), s);
  }
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");  // RFC 4648 section 10
  EXPECT_EQ(base64_decode("Zm9vYg"), "foob");      // padding left out
  EXPECT_FALSE(base64_decode("Zm9v!"));
  EXPECT_FALSE(base64_decode("Z"));
}

}  // namespace
}  // namespace cudagate

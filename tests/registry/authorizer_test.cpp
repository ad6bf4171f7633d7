// The authorization of a sequence of registry calls: Bearer tokens asked
// for the configured scope, Basic credentials, nothing to another host,
// and errors that never quote a secret.
#include "registry/authorizer.h"

#include <gtest/gtest.h>

namespace cudagate {
namespace {

TEST(RegistryUrl, AbsoluteHttpAndHttpsOnly) {
  const auto url = parse_registry_url("https://auth.example.com/token?x=1#frag");
  ASSERT_TRUE(url);
  EXPECT_TRUE(url->tls);
  EXPECT_EQ(url->host, "auth.example.com");
  EXPECT_EQ(url->target, "/token?x=1");
  const auto plain = parse_registry_url("http://127.0.0.1:5000?q");
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->tls);
  EXPECT_EQ(plain->target, "/?q");
  for (const char* bad : {"ftp://x/y", "/relative", "https://", "https://user@host/x", ""}) {
    EXPECT_FALSE(parse_registry_url(bad)) << bad;
  }
  EXPECT_EQ(percent_encoded("repository:ml/app:pull,push"), "repository%3Aml%2Fapp%3Apull%2Cpush");
}

TEST(Authorizer, BearerTokenForTheConfiguredScopeThenOnlyToTheRegistry) {
  const Credentials credentials{"robot", "s3cret"};
  Authorizer auth("r.example.com", "ml/app", "pull,push", &credentials);
  EXPECT_EQ(auth.authorization_for("r.example.com"), "");
  auto next = auth.on_unauthorized(
      R"(Bearer realm="https://auth.example.com/token",service="r.example.com",scope="repository:ml/app:pull")");
  ASSERT_TRUE(next) << next.error().str();
  ASSERT_TRUE(next->has_value());
  const auto& token = **next;
  EXPECT_EQ(token.url.host, "auth.example.com");
  EXPECT_EQ(token.url.target,
            "/token?service=r.example.com&scope=repository%3Aml%2Fapp%3Apull%2Cpush");
  EXPECT_EQ(token.authorization, credentials.basic_authorization());
  EXPECT_FALSE(auth.on_token(200, R"({"token":"tok-1","expires_in":300})"));
  EXPECT_EQ(auth.authorization_for("r.example.com"), "Bearer tok-1");
  EXPECT_EQ(auth.authorization_for("blobs.example.net"), "");
}

TEST(Authorizer, AnotherResourcesScopeIsAskedBesideOurs) {
  Authorizer auth("r.example.com", "ml/app", "pull", nullptr);
  auto next =
      auth.on_unauthorized(R"(Bearer realm="https://a/token",scope="repository:ml/base:pull")");
  ASSERT_TRUE(next && next->has_value());
  EXPECT_EQ((*next)->url.target,
            "/token?scope=repository%3Aml%2Fapp%3Apull&scope=repository%3Aml%2Fbase%3Apull");
  EXPECT_EQ((*next)->authorization, "");
}

TEST(Authorizer, BasicWithAndWithoutCredentials) {
  const Credentials credentials{"robot", "s3cret"};
  Authorizer with("r.example.com", "ml/app", "pull", &credentials);
  auto next = with.on_unauthorized(R"(Basic realm="registry")");
  ASSERT_TRUE(next);
  EXPECT_FALSE(next->has_value());
  EXPECT_EQ(with.authorization_for("r.example.com"), credentials.basic_authorization());

  Authorizer without("r.example.com", "ml/app", "pull", nullptr);
  auto refused = without.on_unauthorized(R"(Basic realm="registry")");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().str(),
            "r.example.com/ml/app: the registry asks for Basic credentials, and none are "
            "configured for r.example.com (policy registry.credentials)");
}

TEST(Authorizer, TokenEndpointFailuresNameItNeverTheSecret) {
  const Credentials credentials{"robot", "s3cret"};
  Authorizer auth("r.example.com", "ml/app", "pull,push", &credentials);
  ASSERT_TRUE(auth.on_unauthorized(R"(Bearer realm="https://auth.example.com/token")"));
  const auto refused = auth.on_token(401, "");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->str(),
            "token endpoint https://auth.example.com/token: refused the configured credentials "
            "for repository:ml/app:pull,push (401)");
  EXPECT_EQ(refused->str().find("s3cret"), std::string::npos);
  EXPECT_TRUE(auth.on_token(200, "not json"));
  EXPECT_TRUE(auth.on_token(500, ""));
  EXPECT_FALSE(auth.on_unauthorized(R"(Bearer realm="file:///etc/passwd")"));
  EXPECT_FALSE(auth.on_unauthorized("Negotiate"));
}

}  // namespace
}  // namespace cudagate

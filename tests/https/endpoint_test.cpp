// Endpoints: authorities as image references and mirrors write them, the
// Host header written back, and which endpoints share connections.
#include "https/endpoint.h"

#include <gtest/gtest.h>

namespace cudagate::https {
namespace {

struct AuthorityRow {
  const char* authority;
  bool tls;
  const char* host;
  const char* port;
};

TEST(Endpoint, AuthoritiesAsWritten) {
  const AuthorityRow rows[] = {
      {"registry.example.com", true, "registry.example.com", "443"},
      {"registry.example.com", false, "registry.example.com", "80"},
      {"localhost:5000", true, "localhost", "5000"},
      {"10.0.0.5:5000", false, "10.0.0.5", "5000"},
      {"[::1]:5000", true, "::1", "5000"},
      {"[fd00::2]", true, "fd00::2", "443"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.authority);
    const Endpoint e = endpoint_of_authority(row.authority, row.tls);
    EXPECT_EQ(e.host, row.host);
    EXPECT_EQ(e.port, row.port);
    EXPECT_EQ(e.tls, row.tls);
    EXPECT_EQ(e.verified_name(), row.host);
  }
}

TEST(Endpoint, AuthorityBracketsAnIpv6Address) {
  EXPECT_EQ((Endpoint{"10.0.0.1", "6443", true, ""}).authority(), "10.0.0.1:6443");
  EXPECT_EQ((Endpoint{"::1", "6443", true, ""}).authority(), "[::1]:6443");
}

TEST(Endpoint, ServerNameIsVerifiedInsteadOfTheHost) {
  const Endpoint e{"10.0.0.1", "6443", true, "kubernetes.default.svc"};
  EXPECT_EQ(e.verified_name(), "kubernetes.default.svc");
}

TEST(Endpoint, KeysTellEndpointsApart) {
  const Endpoint tls{"h", "443", true, ""};
  const Endpoint plain{"h", "443", false, ""};
  const Endpoint named{"h", "443", true, "other"};
  const Endpoint port{"h", "444", true, ""};
  EXPECT_NE(tls.key(), plain.key());
  EXPECT_NE(tls.key(), named.key());
  EXPECT_NE(tls.key(), port.key());
  EXPECT_EQ(tls.key(), (Endpoint{"h", "443", true, ""}).key());
}

TEST(Endpoint, IpAddresses) {
  EXPECT_TRUE(is_ip_address("127.0.0.1"));
  EXPECT_TRUE(is_ip_address("::1"));
  EXPECT_FALSE(is_ip_address("localhost"));
  EXPECT_FALSE(is_ip_address("10.0.0"));
}

}  // namespace
}  // namespace cudagate::https

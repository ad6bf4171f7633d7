// TLS clients from their trust: what cannot be used is an error that says
// which certificate or key it was.
#include "https/tls_client.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/support/dev_certs.h"

namespace cudagate::https {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(TlsClient, DevelopmentCertificatesAreUsable) {
  const std::string& certs = test_support::dev_certs();
  TlsTrust trust;
  trust.system_cas = false;
  trust.ca_pem = read(certs + "/ca.crt");
  trust.client_cert_pem = read(certs + "/client.crt");
  trust.client_key_pem = read(certs + "/client.key");
  auto client = TlsClient::make(trust);
  ASSERT_TRUE(client) << client.error().str();
  EXPECT_TRUE((*client)->verifies());
}

TEST(TlsClient, InsecureVerifiesNothing) {
  TlsTrust trust;
  trust.verify = false;
  trust.ca_pem = "not a certificate";  // ignored when nothing is verified
  auto client = TlsClient::make(trust);
  ASSERT_TRUE(client) << client.error().str();
  EXPECT_FALSE((*client)->verifies());
}

struct BadTrustRow {
  const char* name = "";
  TlsTrust trust;
  const char* message = "";
};

TEST(TlsClient, WhatCannotBeUsedIsNamed) {
  const std::string& certs = test_support::dev_certs();
  TlsTrust bad_ca;
  bad_ca.ca_pem = "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n";
  TlsTrust missing_file;
  missing_file.ca_file = certs + "/missing.crt";
  TlsTrust bad_cert;
  bad_cert.client_cert_pem = "garbage";
  bad_cert.client_key_pem = read(certs + "/client.key");
  TlsTrust bad_key;
  bad_key.client_cert_pem = read(certs + "/client.crt");
  bad_key.client_key_pem = "garbage";
  const BadTrustRow rows[] = {
      {"ca pem", bad_ca, "cannot use the CA certificates: "},
      {"ca file", missing_file, "as PEM certificates: "},
      {"client certificate", bad_cert, "cannot use the client certificate: "},
      {"client key", bad_key, "cannot use the client key: "},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    auto client = TlsClient::make(row.trust);
    ASSERT_FALSE(client);
    EXPECT_NE(client.error().message.find(row.message), std::string::npos)
        << client.error().message;
  }
  auto client = TlsClient::make(missing_file);
  ASSERT_FALSE(client);
  EXPECT_NE(client.error().message.find("cannot load " + certs + "/missing.crt"),
            std::string::npos);
}

}  // namespace
}  // namespace cudagate::https

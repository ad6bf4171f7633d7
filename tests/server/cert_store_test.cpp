// TLS identities from certs/dev-certs.sh: good and bad PEM files, errors naming the file, and
// a reload that keeps the current identity when the new files are refused.
#include "server/cert_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>

namespace cudagate {
namespace {

namespace fs = std::filesystem;

class CertStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() /
                        ("cudagate-cert-store-" + std::to_string(::getpid())));
    const std::string command = "bash " + std::string(CUDAGATE_SOURCE_DIR) +
                                "/certs/dev-certs.sh --out " + dir_->string() + " >/dev/null 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0);
    std::ofstream(*dir_ / "garbage.pem") << "not PEM at all\n";
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }

  static std::string path(const char* name) {
    return name[0] == '\0' ? std::string() : (*dir_ / name).string();
  }

  static fs::path* dir_;
};

fs::path* CertStoreTest::dir_ = nullptr;

TEST_F(CertStoreTest, LoadRows) {
  struct Row {
    const char* cert;
    const char* key;
    const char* client_ca;
    const char* error_file;  // "" when the load succeeds
    const char* error_text;
  };
  const Row rows[] = {
      {"server.crt", "server.key", "", "", ""},
      {"server.crt", "server.key", "client-ca.crt", "", ""},
      {"client.crt", "client.key", "", "", ""},
      {"server.crt", "client.key", "", "client.key", "does not match the certificate"},
      {"missing.crt", "server.key", "", "missing.crt", "cannot open"},
      {"server.crt", "missing.key", "", "missing.key", "cannot open"},
      {"garbage.pem", "server.key", "", "garbage.pem", "no PEM certificate found"},
      {"server.key", "server.key", "", "server.key", "no PEM certificate found"},
      {"server.crt", "server.crt", "", "server.crt", "no usable PEM private key"},
      {"server.crt", "server.key", "garbage.pem", "garbage.pem", "no PEM certificate found"},
      {"server.crt", "server.key", "missing-ca.crt", "missing-ca.crt", "cannot open"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(std::string(row.cert) + " " + row.key + " " + row.client_ca);
    const auto loaded = load_tls_identity({path(row.cert), path(row.key), path(row.client_ca)});
    if (row.error_file[0] == '\0') {
      ASSERT_TRUE(loaded.has_value()) << loaded.error().str();
      EXPECT_NE(loaded->context, nullptr);
      EXPECT_GT(loaded->not_after, std::time(nullptr));
      EXPECT_FALSE(loaded->serial.empty());
      continue;
    }
    ASSERT_FALSE(loaded.has_value());
    EXPECT_EQ(loaded.error().where, path(row.error_file));
    EXPECT_NE(loaded.error().message.find(row.error_text), std::string::npos)
        << loaded.error().message;
  }
}

TEST_F(CertStoreTest, ReloadKeepsTheCurrentIdentityOnFailure) {
  const std::string cert = path("rotating.crt");
  const std::string key = path("rotating.key");
  fs::copy_file(*dir_ / "server.crt", cert, fs::copy_options::overwrite_existing);
  fs::copy_file(*dir_ / "server.key", key, fs::copy_options::overwrite_existing);
  auto initial = load_tls_identity({cert, key, ""});
  ASSERT_TRUE(initial.has_value()) << initial.error().str();
  CertStore store({cert, key, ""}, *initial);
  const auto first = store.context();

  // A new pair (the client certificate stands in for a renewed one).
  fs::copy_file(*dir_ / "client.crt", cert, fs::copy_options::overwrite_existing);
  fs::copy_file(*dir_ / "client.key", key, fs::copy_options::overwrite_existing);
  const auto renewed = store.reload();
  ASSERT_TRUE(renewed.has_value()) << renewed.error().str();
  EXPECT_NE(renewed->serial, initial->serial);
  EXPECT_EQ(store.identity().serial, renewed->serial);
  const auto second = store.context();
  EXPECT_NE(second, first);

  // A half-rotated pair is refused and the renewed one stays.
  fs::copy_file(*dir_ / "server.crt", cert, fs::copy_options::overwrite_existing);
  const auto refused = store.reload();
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("does not match"), std::string::npos);
  EXPECT_EQ(store.context(), second);
  EXPECT_EQ(store.identity().serial, renewed->serial);
}

}  // namespace
}  // namespace cudagate

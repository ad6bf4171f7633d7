#pragma once
// The development certificates (certs/dev-certs.sh) for tests that speak
// TLS: made once a test process into a temporary folder, which the function
// returns (ca.crt, server.crt for localhost and 127.0.0.1, client.crt, ...)
// and which is removed when the process exits.

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace test_support {

class DevCerts {
 public:
  DevCerts() : dir_(make()) {}
  ~DevCerts() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  DevCerts(const DevCerts&) = delete;
  DevCerts& operator=(const DevCerts&) = delete;
  [[nodiscard]] const std::string& dir() const { return dir_; }

 private:
  static std::string make() {
    std::string templ = (std::filesystem::temp_directory_path() / "cudagate-certs-XXXXXX").string();
    if (::mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    const std::string command = "bash '" + std::string(CUDAGATE_SOURCE_DIR) +
                                "/certs/dev-certs.sh' --out '" + templ + "' >'" + templ +
                                "/dev-certs.log' 2>&1";
    if (std::system(command.c_str()) != 0) {  // NOLINT(cert-env33-c): a fixed script
      throw std::runtime_error("certs/dev-certs.sh failed; see " + templ + "/dev-certs.log");
    }
    return templ;
  }

  std::string dir_;
};

inline const std::string& dev_certs() {
  static const DevCerts certs;
  return certs.dir();
}

}  // namespace test_support

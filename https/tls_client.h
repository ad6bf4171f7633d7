#pragma once
// The TLS side of an HTTPS client: which certificate authorities verify the
// server, whether it is verified at all, and the client certificate shown to
// it. Built once from a TlsTrust and shared by every connection made with it
// (connections keep it alive while they are open).
//
// TLS 1.2 and later only. Whether the server's certificate carries the
// endpoint's name is checked per connection (https/connection.h), since one
// TlsClient serves many endpoints.
//
// Thread-safety: immutable once made; shared freely.

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>

#include "types/expected.h"

namespace cudagate::https {

struct TlsTrust {
  // false: the server's certificate is not checked at all (a kubeconfig's
  // insecure-skip-tls-verify); the CAs below are then ignored.
  bool verify = true;
  bool system_cas = true;  // the system's certificate authorities
  std::string ca_pem;      // more authorities, PEM text
  std::string ca_file;     // more authorities, a PEM file
  // A client certificate chain and its key, PEM text; both or neither.
  std::string client_cert_pem;
  std::string client_key_pem;
};

class TlsClient {
 public:
  // An Error (no place) saying which certificate or key cannot be used.
  [[nodiscard]] static Expected<std::shared_ptr<const TlsClient>> make(const TlsTrust& trust);

  [[nodiscard]] bool verifies() const { return verify_; }
  // Asio's streams take the context by reference; OpenSSL only reads it
  // once it is set up.
  [[nodiscard]] boost::asio::ssl::context& context() const { return context_; }

  TlsClient(boost::asio::ssl::context context, bool verify)
      : context_(std::move(context)), verify_(verify) {}

 private:
  mutable boost::asio::ssl::context context_;
  bool verify_;
};

}  // namespace cudagate::https

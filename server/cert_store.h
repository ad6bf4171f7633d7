#pragma once
// The server's TLS identity: certificate chain, private key and optional
// client CA, read from PEM files and replaceable while the server runs.
//
// Each load builds a fresh boost::asio::ssl::context. A session takes the
// current context when it is accepted and holds its shared_ptr until it
// closes, so a rotation affects new handshakes only and never drops an open
// connection. A load that fails (unreadable file, bad PEM, a key that does
// not match the certificate, an empty client CA bundle) leaves the current
// context in place and returns the error, naming the file.
//
// TLS settings (the same for every load): TLS 1.2 minimum; ECDHE with AEAD
// ciphers only for TLS 1.2, the standard AEAD suites for TLS 1.3; no
// compression or renegotiation; ALPN selects "http/1.1" when the client
// offers it and otherwise proceeds without ALPN. With a client CA, peers must
// present a certificate that chains to it.
//
// All members are safe to call from any thread.

#include <boost/asio/ssl/context.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "types/expected.h"

namespace cudagate {

struct TlsFiles {
  std::string cert;       // PEM: the server certificate, then its intermediates
  std::string key;        // PEM: the private key
  std::string client_ca;  // PEM bundle; "" disables client-certificate verification
};

struct TlsIdentity {
  std::shared_ptr<boost::asio::ssl::context> context;
  std::int64_t not_after = 0;  // the server certificate's notAfter, Unix seconds
  std::string serial;          // upper-case hex
  std::string subject;         // one-line distinguished name
};

// Reads `files` and builds a server context with the settings above.
[[nodiscard]] Expected<TlsIdentity> load_tls_identity(const TlsFiles& files);

class CertStore {
 public:
  CertStore(TlsFiles files, TlsIdentity initial);

  [[nodiscard]] const TlsFiles& files() const { return files_; }

  // The context for a new handshake; never null.
  [[nodiscard]] std::shared_ptr<boost::asio::ssl::context> context() const;
  [[nodiscard]] TlsIdentity identity() const;

  // Re-reads the files. On success the new identity serves new handshakes
  // and is returned; on failure the current one stays and the error is
  // returned.
  Expected<TlsIdentity> reload();

 private:
  const TlsFiles files_;
  mutable std::mutex mutex_;
  TlsIdentity current_;
};

}  // namespace cudagate

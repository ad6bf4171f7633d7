// Loading the TLS identity from PEM files into a fresh OpenSSL context with the webhook's TLS
// settings, and swapping it in on reload only when the new files are good.
#include "server/cert_store.h"

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <utility>
#include <vector>

namespace cudagate {
namespace {

namespace ssl = boost::asio::ssl;

// Mozilla's "intermediate" TLS 1.2 list without the DHE suites: forward
// secret key exchange and AEAD ciphers only.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
constexpr const char* kTls13Suites =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";
constexpr const char* kGroups = "X25519:P-256:P-384";
// Bounds what a mistaken path (a log file, a device) can make us read.
constexpr std::streamsize kMaxPemBytes = 1 << 20;
constexpr unsigned char kSessionIdContext[] = "cudagate";

struct BioDeleter {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Deleter {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct EvpKeyDeleter {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using BioPtr = std::unique_ptr<BIO, BioDeleter>;
using X509Ptr = std::unique_ptr<X509, X509Deleter>;
using EvpKeyPtr = std::unique_ptr<EVP_PKEY, EvpKeyDeleter>;

// Refuses passphrases: OpenSSL's default would prompt on a terminal.
int no_passphrase(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*userdata*/) {
  return 0;
}

EvpKeyPtr parse_private_key(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return nullptr;
  return EvpKeyPtr(PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr));
}

Expected<std::string> read_pem(const std::string& path) {
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    return Error{path, std::string("cannot open: ") + (err != 0 ? std::strerror(err) : "failed")};
  }
  std::string text;
  text.resize(static_cast<std::size_t>(kMaxPemBytes) + 1);
  in.read(text.data(), kMaxPemBytes + 1);
  if (in.bad()) return Error{path, "cannot read"};
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (static_cast<std::streamsize>(text.size()) > kMaxPemBytes) {
    return Error{path, "larger than 1 MiB; expected PEM certificates or a key"};
  }
  if (text.empty()) return Error{path, "empty; expected PEM data"};
  return text;
}

std::string openssl_errors() {
  std::string out;
  while (const unsigned long code = ERR_get_error()) {
    char buffer[256];
    ERR_error_string_n(code, buffer, sizeof buffer);
    if (!out.empty()) out += "; ";
    out += buffer;
  }
  return out;
}

// Every certificate in a PEM text, in order.
std::vector<X509Ptr> parse_certificates(const std::string& pem) {
  std::vector<X509Ptr> certs;
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return certs;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, no_passphrase, nullptr)) {
    certs.emplace_back(cert);
  }
  ERR_clear_error();  // the read past the last certificate
  return certs;
}

int select_http11(SSL* /*ssl*/, const unsigned char** out, unsigned char* outlen,
                  const unsigned char* in, unsigned int inlen, void* /*arg*/) {
  static constexpr unsigned char kHttp11[] = {'h', 't', 't', 'p', '/', '1', '.', '1'};
  for (unsigned int i = 0; i < inlen;) {
    const unsigned int len = in[i];
    if (i + 1 + len > inlen) break;
    if (len == sizeof kHttp11 && std::memcmp(in + i + 1, kHttp11, len) == 0) {
      *out = in + i + 1;
      *outlen = static_cast<unsigned char>(len);
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + len;
  }
  // A client that offers only other protocols (h2) still gets HTTP/1.1,
  // as it would from a server without ALPN.
  return SSL_TLSEXT_ERR_NOACK;
}

std::int64_t unix_time(const ASN1_TIME* time) {
  std::tm tm{};
  if (time == nullptr || ASN1_TIME_to_tm(time, &tm) != 1) return 0;
  return static_cast<std::int64_t>(timegm(&tm));
}

std::string serial_hex(const X509* cert) {
  const ASN1_INTEGER* serial = X509_get0_serialNumber(cert);
  BIGNUM* bn = ASN1_INTEGER_to_BN(serial, nullptr);
  if (bn == nullptr) return {};
  char* hex = BN_bn2hex(bn);
  std::string out = hex != nullptr ? hex : "";
  OPENSSL_free(hex);
  BN_free(bn);
  return out;
}

std::string subject_line(const X509* cert) {
  char buffer[512];
  X509_NAME_oneline(X509_get_subject_name(cert), buffer, sizeof buffer);
  return buffer;
}

}  // namespace

Expected<TlsIdentity> load_tls_identity(const TlsFiles& files) {
  ERR_clear_error();
  auto cert_pem = read_pem(files.cert);
  if (!cert_pem) return cert_pem.error();
  auto key_pem = read_pem(files.key);
  if (!key_pem) return key_pem.error();

  const auto chain = parse_certificates(*cert_pem);
  if (chain.empty()) return Error{files.cert, "no PEM certificate found"};

  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* ctx = context->native_handle();
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                       ssl::context::single_dh_use | ssl::context::no_compression);
  SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_cipher_list(ctx, kTls12Ciphers) != 1 ||
      SSL_CTX_set_ciphersuites(ctx, kTls13Suites) != 1 ||
      SSL_CTX_set1_groups_list(ctx, kGroups) != 1) {
    return Error{"", "cannot configure TLS: " + openssl_errors()};
  }
  SSL_CTX_set_alpn_select_cb(ctx, select_http11, nullptr);
  // Needed for session resumption when client certificates are verified,
  // and harmless otherwise.
  SSL_CTX_set_session_id_context(ctx, kSessionIdContext, sizeof kSessionIdContext - 1);

  if (SSL_CTX_use_certificate(ctx, chain.front().get()) != 1) {
    return Error{files.cert, "unusable certificate: " + openssl_errors()};
  }
  for (std::size_t i = 1; i < chain.size(); ++i) {
    if (SSL_CTX_add1_chain_cert(ctx, chain[i].get()) != 1) {
      return Error{files.cert, "unusable intermediate certificate " + std::to_string(i + 1) + ": " +
                                   openssl_errors()};
    }
  }
  EvpKeyPtr key = parse_private_key(*key_pem);
  if (!key) {
    ERR_clear_error();
    return Error{files.key, "no usable PEM private key (encrypted keys are not supported)"};
  }
  if (SSL_CTX_use_PrivateKey(ctx, key.get()) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
    ERR_clear_error();
    return Error{files.key, "private key does not match the certificate in " + files.cert};
  }

  if (!files.client_ca.empty()) {
    auto ca_pem = read_pem(files.client_ca);
    if (!ca_pem) return ca_pem.error();
    const auto cas = parse_certificates(*ca_pem);
    if (cas.empty()) return Error{files.client_ca, "no PEM certificate found"};
    X509_STORE* store = SSL_CTX_get_cert_store(ctx);
    STACK_OF(X509_NAME)* names = sk_X509_NAME_new_null();
    for (const auto& ca : cas) {
      if (X509_STORE_add_cert(store, ca.get()) != 1) {
        sk_X509_NAME_pop_free(names, X509_NAME_free);
        return Error{files.client_ca, "unusable CA certificate: " + openssl_errors()};
      }
      if (names != nullptr)
        sk_X509_NAME_push(names, X509_NAME_dup(X509_get_subject_name(ca.get())));
    }
    // Tells clients which CAs we accept, so they pick the right certificate.
    SSL_CTX_set_client_CA_list(ctx, names);
    context->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  } else {
    context->set_verify_mode(ssl::verify_none);
  }

  TlsIdentity identity;
  identity.context = std::move(context);
  identity.not_after = unix_time(X509_get0_notAfter(chain.front().get()));
  identity.serial = serial_hex(chain.front().get());
  identity.subject = subject_line(chain.front().get());
  ERR_clear_error();
  return identity;
}

CertStore::CertStore(TlsFiles files, TlsIdentity initial)
    : files_(std::move(files)), current_(std::move(initial)) {}

std::shared_ptr<boost::asio::ssl::context> CertStore::context() const {
  const std::lock_guard lock(mutex_);
  return current_.context;
}

TlsIdentity CertStore::identity() const {
  const std::lock_guard lock(mutex_);
  return current_;
}

Expected<TlsIdentity> CertStore::reload() {
  auto loaded = load_tls_identity(files_);
  if (!loaded) return loaded.error();
  TlsIdentity old;
  {
    const std::lock_guard lock(mutex_);
    old = std::exchange(current_, *loaded);
  }
  return loaded;
}

}  // namespace cudagate

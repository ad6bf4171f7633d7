// A TLS client context from the trust it is given.
#include "https/tls_client.h"

#include <boost/asio/buffer.hpp>

namespace cudagate::https {

namespace ssl = boost::asio::ssl;

Expected<std::shared_ptr<const TlsClient>> TlsClient::make(const TlsTrust& trust) {
  ssl::context context(ssl::context::tls_client);
  context.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                      ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  boost::system::error_code ec;
  if (trust.verify) {
    context.set_verify_mode(ssl::verify_peer);
    if (trust.system_cas) context.set_default_verify_paths(ec);  // none is not an error
    if (!trust.ca_pem.empty()) {
      context.add_certificate_authority(boost::asio::buffer(trust.ca_pem), ec);
      if (ec) return Error{"", "cannot use the CA certificates: " + ec.message()};
    }
    if (!trust.ca_file.empty()) {
      context.load_verify_file(trust.ca_file, ec);
      if (ec) {
        return Error{"", "cannot load " + trust.ca_file + " as PEM certificates: " + ec.message()};
      }
    }
  } else {
    context.set_verify_mode(ssl::verify_none);
  }
  if (!trust.client_cert_pem.empty()) {
    context.use_certificate_chain(boost::asio::buffer(trust.client_cert_pem), ec);
    if (ec) return Error{"", "cannot use the client certificate: " + ec.message()};
    context.use_private_key(boost::asio::buffer(trust.client_key_pem), ssl::context::pem, ec);
    if (ec) return Error{"", "cannot use the client key: " + ec.message()};
  }
  return std::make_shared<const TlsClient>(std::move(context), trust.verify);
}

}  // namespace cudagate::https

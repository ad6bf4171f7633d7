// Endpoints: authorities read and written, and the pool's key.
#include "https/endpoint.h"

#include <boost/asio/ip/address.hpp>

namespace cudagate::https {

std::string Endpoint::authority() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + port;
}

std::string Endpoint::key() const {
  std::string out = tls ? "https://" : "http://";
  out += authority();
  if (!server_name.empty()) out += "#" + server_name;
  return out;
}

Endpoint endpoint_of_authority(std::string_view authority, bool tls) {
  Endpoint e;
  e.tls = tls;
  e.port = tls ? "443" : "80";
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close != std::string_view::npos) {
      if (close + 2 < authority.size() && authority[close + 1] == ':') {
        e.port = std::string(authority.substr(close + 2));
      }
      e.host = std::string(authority.substr(1, close - 1));
      return e;
    }
  }
  const auto colon = authority.rfind(':');
  if (colon != std::string_view::npos && authority.find(':') == colon) {
    e.host = std::string(authority.substr(0, colon));
    e.port = std::string(authority.substr(colon + 1));
    return e;
  }
  e.host = std::string(authority);
  return e;
}

bool is_ip_address(const std::string& name) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(name, ec);
  return !ec;
}

}  // namespace cudagate::https

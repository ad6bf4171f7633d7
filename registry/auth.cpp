// WWW-Authenticate challenges, token answers and dockerconfigjson files.
#include "registry/auth.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <vector>

#include "types/ascii.h"
#include "types/base64.h"
#include "types/json_depth.h"
#include "types/quote.h"

namespace cudagate {
namespace {

using ascii::iequals;

bool is_token_char(char c) {
  return ascii::is_alnum(c) ||
         std::string_view("!#$%&'*+-.^_`|~/:").find(c) != std::string_view::npos;
}

// The host of a dockerconfigjson key: "https://index.docker.io/v1/" -> "index.docker.io".
std::string host_of_key(std::string_view key) {
  if (const auto scheme = key.find("://"); scheme != std::string_view::npos) {
    key.remove_prefix(scheme + 3);
  }
  key = key.substr(0, key.find('/'));
  std::string host = ascii::lower(key);
  if (host == "index.docker.io" || host == "registry-1.docker.io") host = "docker.io";
  return host;
}

}  // namespace

Expected<AuthChallenge> parse_challenge(std::string_view header) {
  std::size_t i = 0;
  const auto skip_space = [&] {
    while (i < header.size() && ascii::is_blank(header[i])) ++i;
  };
  while (true) {
    skip_space();
    if (i >= header.size()) break;
    const std::size_t scheme_start = i;
    while (i < header.size() && is_token_char(header[i])) ++i;
    const std::string_view scheme = header.substr(scheme_start, i - scheme_start);
    if (scheme.empty()) {
      return Error{"WWW-Authenticate",
                   "expected an authentication scheme at byte " + std::to_string(scheme_start)};
    }
    AuthChallenge challenge;
    const bool known = iequals(scheme, "bearer") || iequals(scheme, "basic");
    challenge.scheme =
        iequals(scheme, "basic") ? AuthChallenge::Scheme::basic : AuthChallenge::Scheme::bearer;
    // auth-params: name=value or name="quoted", separated by commas. A
    // name followed by anything but '=' starts the next challenge.
    while (true) {
      skip_space();
      const std::size_t name_start = i;
      while (i < header.size() && is_token_char(header[i]) && header[i] != '=') ++i;
      std::string_view name = header.substr(name_start, i - name_start);
      skip_space();
      if (name.empty() || i >= header.size() || header[i] != '=') {
        i = name_start;
        break;
      }
      ++i;
      skip_space();
      std::string value;
      if (i < header.size() && header[i] == '"') {
        ++i;
        bool closed = false;
        while (i < header.size()) {
          const char c = header[i++];
          if (c == '\\' && i < header.size()) {
            value += header[i++];
          } else if (c == '"') {
            closed = true;
            break;
          } else {
            value += c;
          }
        }
        if (!closed) {
          return Error{"WWW-Authenticate", "unterminated quoted value of " + quote(name)};
        }
      } else {
        while (i < header.size() && header[i] != ',' && !ascii::is_blank(header[i]))
          value += header[i++];
      }
      if (iequals(name, "realm")) {
        challenge.realm = std::move(value);
      } else if (iequals(name, "service")) {
        challenge.service = std::move(value);
      } else if (iequals(name, "scope")) {
        challenge.scope = std::move(value);
      }
      skip_space();
      if (i < header.size() && header[i] == ',') ++i;
    }
    if (known) {
      if (challenge.scheme == AuthChallenge::Scheme::bearer && challenge.realm.empty()) {
        return Error{"WWW-Authenticate", "Bearer challenge without a realm"};
      }
      return challenge;
    }
    // Another scheme: go on to the next challenge, if any.
    if (i == scheme_start) ++i;
    while (i < header.size() && header[i] == ',') ++i;
  }
  return Error{"WWW-Authenticate", "no Bearer or Basic challenge in " + quote(header)};
}

Expected<BearerToken> parse_token_response(std::string_view body) {
  if (json_too_deep_at(body, 16) != std::string_view::npos) {
    return Error{"token response", "nested too deeply"};
  }
  const auto doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return Error{"token response", "expected a JSON object"};
  BearerToken out;
  for (const char* key : {"token", "access_token"}) {
    if (const auto it = doc.find(key); it != doc.end() && it->is_string() && !it->empty()) {
      out.token = it->get<std::string>();
      break;
    }
  }
  if (out.token.empty()) return Error{"token response", "no token or access_token"};
  if (const auto it = doc.find("expires_in"); it != doc.end() && it->is_number()) {
    const double seconds = it->get<double>();
    // The distribution spec's minimum; a lifetime claimed beyond a day is
    // not trusted further.
    out.lifetime =
        std::chrono::seconds(static_cast<long long>(std::clamp(seconds, 60.0, 24.0 * 3600.0)));
  }
  return out;
}

std::string Credentials::basic_authorization() const {
  return "Basic " + base64_encode(username + ":" + password);
}

Expected<DockerConfig> DockerConfig::parse(std::string_view text) {
  if (json_too_deep_at(text, 16) != std::string_view::npos) {
    return Error{"", "nested too deeply for a dockerconfigjson file"};
  }
  const auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return Error{"", "expected a JSON object (a dockerconfigjson file)"};
  const nlohmann::json* auths = &doc;
  if (const auto it = doc.find("auths"); it != doc.end()) {
    if (!it->is_object()) return Error{"auths", "expected an object of registries"};
    auths = &*it;
  }
  DockerConfig out;
  for (const auto& [key, entry] : auths->items()) {
    const std::string where = "auths." + key;
    if (!entry.is_object()) continue;
    Credentials credentials;
    if (const auto it = entry.find("auth"); it != entry.end() && it->is_string() && !it->empty()) {
      const auto decoded = base64_decode(it->get<std::string>());
      if (!decoded) return Error{where + ".auth", "not base64"};
      const auto colon = decoded->find(':');
      if (colon == std::string::npos) {
        return Error{where + ".auth", "expected base64 of user:password"};
      }
      credentials.username = decoded->substr(0, colon);
      credentials.password = decoded->substr(colon + 1);
    } else {
      const auto user = entry.find("username");
      const auto password = entry.find("password");
      if (user == entry.end() || password == entry.end() || !user->is_string() ||
          !password->is_string()) {
        continue;
      }
      credentials.username = user->get<std::string>();
      credentials.password = password->get<std::string>();
    }
    out.by_host_.emplace(host_of_key(key), std::move(credentials));
  }
  return out;
}

const Credentials* DockerConfig::find(std::string_view registry) const {
  const auto it = by_host_.find(host_of_key(registry));
  return it == by_host_.end() ? nullptr : &it->second;
}

}  // namespace cudagate

#pragma once
// Registry authentication, as the distribution spec and docker's client do it:
//
//   challenge    `WWW-Authenticate: Bearer realm="...",service="...",scope="..."`
//                or `Basic realm="..."` on a 401
//   token        GET realm?service=...&scope=... (with Basic credentials when
//                there are some) answers {"token" | "access_token", "expires_in",
//                "issued_at"}; a token without expires_in lasts 60 s
//   credentials  a dockerconfigjson file (a mounted kubernetes.io/dockerconfigjson
//                Secret): auths.<host>.auth = base64("user:password"), or
//                username and password; docker.io under any of its spellings
//
// Pure functions of their input. Credentials and tokens are secrets: no
// error message here quotes them.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "types/expected.h"

namespace cudagate {

struct AuthChallenge {
  enum class Scheme : unsigned char { bearer, basic };
  Scheme scheme = Scheme::bearer;
  std::string realm;
  std::string service;
  std::string scope;
};

// Reads a WWW-Authenticate value (RFC 7235 auth-params, quoted or token
// values, any order, scheme case-insensitive). A header with several
// challenges yields the first Bearer or Basic one.
[[nodiscard]] Expected<AuthChallenge> parse_challenge(std::string_view header);

struct BearerToken {
  std::string token;
  std::chrono::seconds lifetime{60};
};

// Reads a token endpoint's JSON answer.
[[nodiscard]] Expected<BearerToken> parse_token_response(std::string_view body);

struct Credentials {
  std::string username;
  std::string password;
  // "Basic base64(username:password)".
  [[nodiscard]] std::string basic_authorization() const;
};

// The credentials of a dockerconfigjson file, by registry host.
class DockerConfig {
 public:
  // Reads {"auths": {...}} (or the legacy top-level map of hosts). Entries
  // that give no credentials (identitytoken only, empty auth) are skipped;
  // a malformed entry is an error naming its host, never its content.
  static Expected<DockerConfig> parse(std::string_view text);

  // The credentials for `registry` ("docker.io", "nvcr.io", "localhost:5000"):
  // keys are matched as docker does, after removing a scheme and a path
  // ("https://nvcr.io/v2/" is nvcr.io), with docker.io also found under
  // index.docker.io and registry-1.docker.io.
  [[nodiscard]] const Credentials* find(std::string_view registry) const;
  [[nodiscard]] std::size_t size() const { return by_host_.size(); }

 private:
  std::map<std::string, Credentials, std::less<>> by_host_;
};

}  // namespace cudagate

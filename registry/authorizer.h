#pragma once
// The authorization of calls to one repository of one registry, made one
// after another (a pull's manifests and blobs, a push's uploads), as the
// distribution spec and docker's client do it (challenges, tokens and
// credentials are read by registry/auth.h):
//
//   401 + Bearer challenge -> GET <realm>?service=..&scope=repository:<repo>:<actions>
//                             (Basic credentials when configured); the token
//                             then authorizes every later call to the host
//   401 + Basic challenge  -> the configured credentials on every later call
// A call to another host (a blob store a redirect leads to, whose URL
// carries its own signature) goes without Authorization.
//
// No I/O: the caller performs the calls and hands the answers back. Not
// thread-safe. Messages never quote a credential or a token.

#include <optional>
#include <string>
#include <string_view>

#include "registry/auth.h"
#include "types/expected.h"

namespace cudagate {

// An absolute http(s) URL split for a request.
struct RegistryUrl {
  bool tls = true;
  std::string host;    // host[:port]
  std::string target;  // path and query, "/" at least
};

// nullopt for anything but an absolute http:// or https:// URL (and for one
// with user information).
[[nodiscard]] std::optional<RegistryUrl> parse_registry_url(std::string_view text);

// RFC 3986 percent-encoding of everything but the unreserved characters.
[[nodiscard]] std::string percent_encoded(std::string_view text);

class Authorizer {
 public:
  // `host` as requests name it ("registry.example.com", "127.0.0.1:5000");
  // `actions` "pull" or "pull,push". `credentials` may be null; it must
  // outlive the Authorizer.
  Authorizer(std::string host, std::string repository, const std::string& actions,
             const Credentials* credentials);

  // The Authorization value for a call to `host`: "" for another host, or
  // while no challenge has been answered.
  [[nodiscard]] std::string authorization_for(std::string_view host) const;

  // A token to fetch: GET `url` with `authorization` ("" for none), and
  // hand the answer to on_token().
  struct TokenRequest {
    RegistryUrl url;
    std::string authorization;
  };
  // A 401's WWW-Authenticate: nullopt when the call may go again at once
  // with authorization_for() (Basic credentials), a TokenRequest for a
  // Bearer challenge, an Error when nothing can authorize it (Basic asked
  // and no credentials, an unusable realm).
  [[nodiscard]] Expected<std::optional<TokenRequest>> on_unauthorized(
      std::string_view www_authenticate);
  // The token endpoint's answer; an Error naming the endpoint and status.
  [[nodiscard]] std::optional<Error> on_token(int status, std::string_view body);

  [[nodiscard]] bool has_credentials() const { return credentials_ != nullptr; }
  [[nodiscard]] const std::string& scope() const { return scope_; }

 private:
  std::string host_;
  std::string repository_;
  std::string scope_;
  const Credentials* credentials_;
  std::string authorization_;
  std::string realm_;  // of the token being fetched
};

}  // namespace cudagate

// The token dance and Basic credentials for a sequence of calls.
#include "registry/authorizer.h"

#include "types/quote.h"

namespace cudagate {
namespace {

bool is_uri_unreserved(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

}  // namespace

std::optional<RegistryUrl> parse_registry_url(std::string_view text) {
  RegistryUrl url;
  if (text.starts_with("https://")) {
    text.remove_prefix(8);
  } else if (text.starts_with("http://")) {
    url.tls = false;
    text.remove_prefix(7);
  } else {
    return std::nullopt;
  }
  const auto slash = text.find_first_of("/?#");
  url.host = std::string(text.substr(0, slash));
  if (url.host.empty() || url.host.find('@') != std::string::npos) return std::nullopt;
  url.target = slash == std::string_view::npos ? "/" : std::string(text.substr(slash));
  if (const auto fragment = url.target.find('#'); fragment != std::string::npos) {
    url.target.erase(fragment);
  }
  if (url.target.empty() || url.target.front() != '/') url.target.insert(0, "/");
  return url;
}

std::string percent_encoded(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    if (is_uri_unreserved(c)) {
      out += c;
    } else {
      out += '%';
      out += kHex[static_cast<unsigned char>(c) >> 4];
      out += kHex[static_cast<unsigned char>(c) & 0xf];
    }
  }
  return out;
}

Authorizer::Authorizer(std::string host, std::string repository, const std::string& actions,
                       const Credentials* credentials)
    : host_(std::move(host)),
      repository_(std::move(repository)),
      scope_("repository:" + repository_ + ":" + actions),
      credentials_(credentials) {}

std::string Authorizer::authorization_for(std::string_view host) const {
  return host == host_ ? authorization_ : std::string();
}

Expected<std::optional<Authorizer::TokenRequest>> Authorizer::on_unauthorized(
    std::string_view www_authenticate) {
  auto challenge = parse_challenge(www_authenticate);
  if (!challenge)
    return Error{host_ + "/" + repository_, "401 unauthorized; " + challenge.error().str()};
  if (challenge->scheme == AuthChallenge::Scheme::basic) {
    if (credentials_ == nullptr) {
      return Error{host_ + "/" + repository_,
                   "the registry asks for Basic credentials, and none are configured for " + host_ +
                       " (policy registry.credentials)"};
    }
    authorization_ = credentials_->basic_authorization();
    return std::optional<TokenRequest>();
  }
  auto realm = parse_registry_url(challenge->realm);
  if (!realm) {
    return Error{host_ + "/" + repository_,
                 "Bearer challenge with an unusable realm " + quote(challenge->realm, 200)};
  }
  char separator = realm->target.find('?') == std::string::npos ? '?' : '&';
  const auto add = [&](std::string_view key, std::string_view value) {
    realm->target += separator;
    realm->target += key;
    realm->target += '=';
    realm->target += percent_encoded(value);
    separator = '&';
  };
  if (!challenge->service.empty()) add("service", challenge->service);
  add("scope", scope_);
  // A registry may name a scope of another resource (a repository a
  // mount reads from); it is asked for beside ours. Ours already holds
  // whatever it asks of this repository.
  if (!challenge->scope.empty() &&
      !challenge->scope.starts_with("repository:" + repository_ + ":")) {
    add("scope", challenge->scope);
  }
  realm_ = challenge->realm;
  authorization_.clear();
  return std::optional<TokenRequest>(TokenRequest{
      std::move(*realm), credentials_ != nullptr ? credentials_->basic_authorization() : ""});
}

std::optional<Error> Authorizer::on_token(int status, std::string_view body) {
  const std::string where = "token endpoint " + printable(realm_, 200);
  if (status == 401 || status == 403) {
    return Error{where, "refused " +
                            std::string(credentials_ != nullptr ? "the configured credentials"
                                                                : "an anonymous request") +
                            " for " + scope_ + " (" + std::to_string(status) + ")"};
  }
  if (status != 200) return Error{where, "answered " + std::to_string(status)};
  auto token = parse_token_response(body);
  if (!token) return Error{where, token.error().str()};
  authorization_ = "Bearer " + token->token;
  return std::nullopt;
}

}  // namespace cudagate

// Feeds arbitrary text to the WWW-Authenticate, token answer and
// dockerconfigjson readers. A dockerconfigjson error never quotes the
// file's secrets: no auth or password value appears in it.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "registry/auth.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto challenge = cudagate::parse_challenge(text);
  if (challenge) {
    if (challenge->scheme == cudagate::AuthChallenge::Scheme::bearer && challenge->realm.empty()) {
      __builtin_trap();
    }
  } else if (challenge.error().message.empty()) {
    __builtin_trap();
  }
  auto token = cudagate::parse_token_response(text);
  if (token && (token->token.empty() || token->lifetime.count() < 60)) __builtin_trap();
  auto config = cudagate::DockerConfig::parse(text);
  if (!config) {
    const std::string said = config.error().str();
    if (config.error().message.empty()) __builtin_trap();
    // No auth or password value of the file appears in the error.
    const auto doc = nlohmann::json::parse(text, nullptr, false);
    if (doc.is_object() && doc.contains("auths") && doc["auths"].is_object()) {
      for (const auto& [host, entry] : doc["auths"].items()) {
        if (!entry.is_object()) continue;
        // Errors name the host, which may hold a value's text by chance: the
        // error is searched with the host left out.
        std::string rest = said;
        if (!host.empty()) {
          for (auto at = rest.find(host); at != std::string::npos; at = rest.find(host, at)) {
            rest.erase(at, host.size());
          }
        }
        for (const char* key : {"auth", "password"}) {
          const auto it = entry.find(key);
          if (it == entry.end() || !it->is_string()) continue;
          const auto& secret = it->get_ref<const std::string&>();
          // Short values can be part of a message by chance ("a", "file").
          if (secret.size() >= 12 && rest.find(secret) != std::string::npos) __builtin_trap();
        }
      }
    }
  }
  return 0;
}

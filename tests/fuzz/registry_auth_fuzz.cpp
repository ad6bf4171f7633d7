// Feeds arbitrary text to the WWW-Authenticate, token answer and
// dockerconfigjson readers. A dockerconfigjson error never quotes the
// file's content (it holds secrets): the message names places only.
#include <cstddef>
#include <cstdint>
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
    const std::string& message = config.error().message;
    if (message.empty()) __builtin_trap();
    // Long enough that it cannot appear in a message by chance.
    if (size >= 24 && message.find(text) != std::string::npos) __builtin_trap();
  }
  return 0;
}

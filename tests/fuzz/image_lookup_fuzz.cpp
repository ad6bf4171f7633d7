// Drives the registry lookup state machine with replies made from arbitrary
// bytes (status, headers, bodies): whatever a registry answers, the lookup
// ends, in a bounded number of calls, with a config or a failure that says
// why, and never sends credentials to a host other than the registry's; a
// scan it finds is the one of the manifest it read.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "registry/image_lookup.h"

namespace {

class Bytes {
 public:
  Bytes(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  std::uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  std::string text() {
    const std::size_t length = byte() | (static_cast<std::size_t>(byte()) << 8);
    const std::size_t n = std::min(length, size_ - pos_);
    std::string out(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return out;
  }
  [[nodiscard]] bool done() const { return pos_ >= size_; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

constexpr int kStatuses[] = {200, 200, 200, 401, 404, 429, 307, 302, 500, 403, 301};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Bytes in(data, size);
  auto ref = cudagate::ImageRef::parse("registry.example.com/ml/train:v1");
  cudagate::Credentials creds{"user", "secret-password"};
  cudagate::TokenCache tokens;
  std::vector<cudagate::RegistryEndpoint> endpoints{{"mirror.example.com", true},
                                                    {"registry.example.com", true}};
  // Half the configs are known, so that the lookup reaches the scan's calls
  // without a config that hashes to its digest.
  const auto known = std::make_shared<const cudagate::ImageConfig>();
  cudagate::ImageLookup lookup(
      *ref, cudagate::Platform{}, endpoints, &creds, &tokens,
      [&](std::string_view digest) {
        return !digest.empty() && digest.back() % 2 == 0 ? known : nullptr;
      },
      cudagate::LookupLimits{}, /*scan_attached=*/true);
  const auto now = cudagate::RegistryClock::time_point{} + std::chrono::hours(1);
  for (int step = 0;; ++step) {
    auto next = lookup.next(now);
    if (const auto* failure = std::get_if<cudagate::LookupFailure>(&next)) {
      if (failure->message.empty()) __builtin_trap();
      // The password only where the registry's own answer carried it, as
      // written or as a quoted string reads (a backslash quotes the byte
      // after it, RFC 9110 section 5.6.4).
      const std::string_view input(reinterpret_cast<const char*>(data), size);
      std::string unquoted;
      for (std::size_t i = 0; i < input.size(); ++i) {
        if (input[i] == '\\' && i + 1 < input.size()) ++i;
        unquoted += input[i];
      }
      for (const std::string& secret : {creds.password, creds.basic_authorization().substr(6)}) {
        if (failure->message.find(secret) != std::string::npos &&
            input.find(secret) == std::string_view::npos &&
            unquoted.find(secret) == std::string::npos) {
          __builtin_trap();
        }
      }
      break;
    }
    if (const auto* config = std::get_if<cudagate::ImageLookup::ConfigPtr>(&next)) {
      // A scan is the manifest's own.
      if ((*config)->scan != nullptr && (*config)->scan->digest != lookup.manifest_digest()) {
        __builtin_trap();
      }
      break;
    }
    const auto& call = std::get<cudagate::HttpCall>(next);
    // Two endpoints, three resources, the scan's two on one endpoint, a
    // token and a retry each, redirects.
    if (step > 100) __builtin_trap();
    const bool to_registry =
        call.host == "registry.example.com" || call.host == "mirror.example.com";
    if (!call.authorization.empty() && !to_registry &&
        call.purpose != cudagate::HttpCall::Purpose::token) {
      __builtin_trap();
    }
    if (in.done()) break;
    const std::uint8_t kind = in.byte();
    if (kind % 16 == 15) {
      lookup.on_transport_error("connection reset");
      continue;
    }
    cudagate::HttpReply reply;
    reply.status = kStatuses[kind % std::size(kStatuses)];
    reply.body = in.text();
    reply.content_type = in.text();
    reply.location = in.text();
    reply.www_authenticate = in.text();
    reply.retry_after = in.text();
    lookup.on_reply(std::move(reply), now);
  }
  return 0;
}

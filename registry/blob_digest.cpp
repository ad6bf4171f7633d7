// sha256 over pieces with OpenSSL's EVP digest.
#include "registry/blob_digest.h"

#include <openssl/evp.h>

#include <array>

namespace cudagate {

struct BlobDigest::State {
  struct Free {
    void operator()(EVP_MD_CTX* digest) const { EVP_MD_CTX_free(digest); }
  };
  std::unique_ptr<EVP_MD_CTX, Free> context{EVP_MD_CTX_new()};
  void restart() { EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr); }
};

BlobDigest::BlobDigest() : state_(std::make_unique<State>()) {
  state_->restart();
}

BlobDigest::~BlobDigest() = default;

void BlobDigest::update(std::span<const std::byte> piece) {
  EVP_DigestUpdate(state_->context.get(), piece.data(), piece.size());
}

std::string BlobDigest::finish() {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int length = 0;
  EVP_DigestFinal_ex(state_->context.get(), md.data(), &length);
  state_->restart();
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "sha256:";
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 0xf];
  }
  return out;
}

}  // namespace cudagate

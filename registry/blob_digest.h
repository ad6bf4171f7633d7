#pragma once
// The sha256 digest of content that arrives in pieces (a layer streamed
// from a registry), to check it against the digest that named it.
//
// No I/O. One BlobDigest digests one blob, from one thread at a time.

#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace cudagate {

class BlobDigest {
 public:
  BlobDigest();
  ~BlobDigest();
  BlobDigest(const BlobDigest&) = delete;
  BlobDigest& operator=(const BlobDigest&) = delete;

  void update(std::span<const std::byte> piece);
  // "sha256:<64 hex>" of every piece given; the digest is then done, and
  // later calls start a new one.
  [[nodiscard]] std::string finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace cudagate

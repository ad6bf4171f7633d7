// A digest over pieces equals the digest of the whole, and starts anew
// after finish().
#include "registry/blob_digest.h"

#include <gtest/gtest.h>

#include "registry/manifest.h"

namespace cudagate {
namespace {

std::span<const std::byte> blob_bytes(std::string_view text) {
  return {reinterpret_cast<const std::byte*>(text.data()), text.size()};
}

TEST(BlobDigest, PiecesMakeTheWholesDigest) {
  const std::string whole(100000, 'x');
  BlobDigest digest;
  for (std::size_t at = 0; at < whole.size(); at += 4096) {
    digest.update(blob_bytes(std::string_view(whole).substr(at, 4096)));
  }
  EXPECT_EQ(digest.finish(), sha256_digest(whole));
  EXPECT_EQ(digest.finish(), sha256_digest(""));
  digest.update(blob_bytes("{}"));
  EXPECT_EQ(digest.finish(),
            "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
}

}  // namespace
}  // namespace cudagate

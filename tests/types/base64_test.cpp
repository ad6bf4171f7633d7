// Base64 (RFC 4648): its test vectors both ways, the lenient forms accepted
// (missing padding, the URL-safe alphabet) and the broken ones refused.
#include "types/base64.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace cudagate {
namespace {

TEST(Base64, Rfc4648TestVectors) {
  // RFC 4648 section 10.
  const std::pair<std::string, std::string> vectors[] = {
      {"", ""},
      {"f", "Zg=="},
      {"fo", "Zm8="},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="},
      {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"},
  };
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(base64_encode(plain), encoded) << plain;
    EXPECT_EQ(base64_decode(encoded), std::optional<std::string>(plain)) << encoded;
  }
}

TEST(Base64, BinaryRoundTrips) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  EXPECT_EQ(base64_decode(base64_encode(bytes)), std::optional<std::string>(bytes));
}

TEST(Base64, LenientFormsAccepted) {
  EXPECT_EQ(base64_decode("Zm8"), std::optional<std::string>("fo"));  // padding left out
  EXPECT_EQ(base64_decode("-_8"), base64_decode("+/8"));              // URL-safe alphabet
  EXPECT_EQ(base64_decode("+/8"), std::optional<std::string>("\xfb\xff"));
}

TEST(Base64, BrokenFormsRefused) {
  for (const char* text : {"Zm9v!", "Zm 9v", "Zm9vY", "Z", "Zm9v\n"}) {
    EXPECT_EQ(base64_decode(text), std::nullopt) << text;
  }
}

}  // namespace
}  // namespace cudagate

// PaddedStringBody as Beast's parser and serializer use it: the body read
// in any number of pieces (a declared length or chunked) is the text sent,
// always followed by kBodyPadding zero bytes; the body limit still holds;
// a written message carries the text without its padding. The review
// parser reads such a body where it lies and gives what it gives for a copy.
#include "server/padded_body.h"

#include <gtest/gtest.h>

#include <boost/beast/core/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/write.hpp>
#include <sstream>
#include <string>
#include <string_view>

#include "admission/admission_review.h"
#include "admission/review_text.h"
#include "admission/simd_json_view.h"
#include "tests/support/fixtures.h"

namespace cudagate {
namespace {

namespace http = boost::beast::http;
using Parser = http::request_parser<PaddedStringBody>;

// The kBodyPadding bytes after the text, all zero.
void expect_padding(const PaddedString& body) {
  const std::string_view text = body.view();
  for (std::size_t i = 0; i < kBodyPadding; ++i) {
    ASSERT_EQ(text.data()[text.size() + i], '\0') << "padding byte " << i;
  }
}

// Feeds `wire` to the parser in pieces of `piece` bytes, as the server's
// session does (eager: the body with the header when it is there).
boost::beast::error_code feed(Parser& parser, std::string_view wire, std::size_t piece) {
  boost::beast::error_code ec;
  std::size_t at = 0;
  std::string pending;
  parser.eager(true);
  while (!parser.is_done()) {
    const std::size_t n = std::min(piece, wire.size() - at);
    pending.append(wire.substr(at, n));
    at += n;
    const std::size_t used = parser.put(boost::asio::buffer(pending), ec);
    pending.erase(0, used);
    if (ec == http::error::need_more) {
      ec = {};
    } else if (ec) {
      return ec;
    }
    if (used == 0 && at == wire.size()) break;
  }
  return ec;
}

// `wire`, fed in pieces of `piece` bytes, is a request whose body is `text`.
void expect_read(std::string_view wire, std::size_t piece, std::string_view text) {
  SCOPED_TRACE(piece);
  Parser parser;
  parser.body_limit(1 << 20);
  ASSERT_FALSE(feed(parser, wire, piece));
  ASSERT_TRUE(parser.is_done());
  const auto request = parser.release();
  EXPECT_EQ(request.body().view(), text);
  expect_padding(request.body());
}

std::string body_text(std::size_t size) {
  std::string text;
  for (std::size_t i = 0; i < size; ++i) text += static_cast<char>('a' + i % 26);
  return text;
}

TEST(PaddedBody, HoldsItsTextAndPadding) {
  PaddedString body;
  EXPECT_TRUE(body.empty());
  expect_padding(body);
  body = "abc";
  EXPECT_EQ(body.view(), "abc");
  expect_padding(body);
  body.append("defg", 4);
  EXPECT_EQ(body.view(), "abcdefg");
  EXPECT_EQ(body.size(), 7U);
  expect_padding(body);
  EXPECT_EQ(body.padded().text, "abcdefg");
  body.clear();
  EXPECT_EQ(body.view(), "");
  expect_padding(body);

  // A moved-from string is empty, padded, and usable; the buffer moves.
  body = std::string(1000, 'x');
  const std::size_t capacity = body.capacity();
  EXPECT_GE(capacity, 1000U);
  PaddedString moved(std::move(body));
  EXPECT_EQ(moved.size(), 1000U);
  EXPECT_EQ(moved.capacity(), capacity);
  EXPECT_TRUE(body.empty());  // NOLINT(bugprone-use-after-move): the moved-from state is defined
  expect_padding(body);
  moved.clear();
  EXPECT_EQ(moved.capacity(), capacity);
  moved.append("yz", 2);
  EXPECT_EQ(moved.view(), "yz");
  expect_padding(moved);
  body = std::move(moved);
  EXPECT_EQ(body.view(), "yz");
  EXPECT_EQ(moved.view(), "");  // NOLINT(bugprone-use-after-move)
  expect_padding(moved);
}

TEST(PaddedBody, ReadWithALengthInAnyPieces) {
  const std::string text = body_text(13000);
  const std::string wire =
      "POST /validate HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
      std::to_string(text.size()) + "\r\n\r\n" + text;
  for (const std::size_t piece : {std::size_t{1}, std::size_t{7}, std::size_t{4096}, wire.size()}) {
    expect_read(wire, piece, text);
  }
}

TEST(PaddedBody, ReadChunked) {
  const std::string text = body_text(5000);
  std::string wire = "POST /validate HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (std::size_t at = 0; at < text.size(); at += 1500) {
    const std::string chunk = text.substr(at, 1500);
    std::ostringstream size;
    size << std::hex << chunk.size();
    wire += size.str() + "\r\n" + chunk + "\r\n";
  }
  wire += "0\r\n\r\n";
  for (const std::size_t piece : {std::size_t{3}, std::size_t{1000}, wire.size()}) {
    expect_read(wire, piece, text);
  }
}

TEST(PaddedBody, BodyLimitHolds) {
  const std::string text = body_text(2000);
  const std::string declared = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2000\r\n\r\n" + text;
  Parser by_length;
  by_length.body_limit(1000);
  EXPECT_EQ(feed(by_length, declared, declared.size()), http::error::body_limit);

  const std::string chunked =
      "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
      "7d0\r\n" +
      text + "\r\n0\r\n\r\n";
  Parser by_chunks;
  by_chunks.body_limit(1000);
  EXPECT_EQ(feed(by_chunks, chunked, 100), http::error::body_limit);
}

TEST(PaddedBody, WrittenWithoutPadding) {
  http::request<PaddedStringBody> request{http::verb::post, "/validate", 11};
  request.set(http::field::host, "h");
  request.body() = "{\"a\":1}";
  request.prepare_payload();
  std::ostringstream out;
  out << request;
  EXPECT_EQ(out.str(), "POST /validate HTTP/1.1\r\nHost: h\r\nContent-Length: 7\r\n\r\n{\"a\":1}");
}

TEST(PaddedBody, ReviewParsedInPlaceAsFromACopy) {
  for (const char* name : {"pod-cuda124.json", "deployment-arch80.json", "pod-bad-types.json"}) {
    SCOPED_TRACE(name);
    const std::string text = test_support::fixture(name);
    const PaddedString held(text);
    ReviewTextParser copying(1024, kMaxReviewDepth);
    ReviewTextParser in_place(1024, kMaxReviewDepth);
    bool skipped_copy = false;
    bool skipped_in_place = false;
    const auto a = copying.parse(text, &skipped_copy);
    const auto b = in_place.parse(held.padded(), &skipped_in_place);
    ASSERT_TRUE(a.has_value() && b.has_value());
    EXPECT_EQ(skipped_copy, skipped_in_place);
    EXPECT_EQ(to_nlohmann(*a), to_nlohmann(*b));
  }
  // Text the parser refuses is refused in place too.
  const PaddedString broken(std::string_view(R"({"request":{"uid":"u",)"));
  ReviewTextParser parser(1024, kMaxReviewDepth);
  EXPECT_FALSE(parser.parse(broken.padded()).has_value());
}

}  // namespace
}  // namespace cudagate

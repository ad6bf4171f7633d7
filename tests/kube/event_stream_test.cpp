// Splitting a watch body into events however it is cut into pieces.
#include "kube/event_stream.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cudagate::kube {
namespace {

const std::string kStream =
    R"({"type":"ADDED","object":{"metadata":{"name":"a","labels":{"k":"}{\"]["}}}})"
    "\n"
    R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}})"
    "\n"
    R"({"type":"DELETED","object":{"metadata":{"name":"b\\"}}})"
    "\n";

std::vector<std::string> split(const std::string& stream, std::size_t piece) {
  EventStream events;
  std::vector<std::string> out;
  for (std::size_t at = 0; at < stream.size(); at += piece) {
    auto objects = events.feed(std::string_view(stream).substr(at, piece));
    EXPECT_TRUE(objects) << objects.error().str();
    if (!objects) return out;
    for (const auto object : *objects) out.emplace_back(object);
  }
  EXPECT_EQ(events.pending(), 0u);
  return out;
}

TEST(EventStream, ObjectsWhateverTheCuts) {
  const std::vector<std::string> whole = split(kStream, kStream.size());
  ASSERT_EQ(whole.size(), 3u);
  EXPECT_EQ(whole[0].front(), '{');
  EXPECT_EQ(whole[0].back(), '}');
  EXPECT_NE(whole[0].find(R"(}{\"][)"), std::string::npos)
      << "brackets in strings count for nothing";
  EXPECT_NE(whole[2].find(R"(b\\)"), std::string::npos);
  for (const std::size_t piece : {1u, 2u, 3u, 7u, 64u}) {
    SCOPED_TRACE(piece);
    EXPECT_EQ(split(kStream, piece), whole);
  }
}

TEST(EventStream, WithoutNewlinesToo) {
  EventStream events;
  auto objects = events.feed(R"({"a":1}{"b":[2]} {"c")");
  ASSERT_TRUE(objects);
  ASSERT_EQ(objects->size(), 2u);
  EXPECT_EQ((*objects)[1], R"({"b":[2]})");
  EXPECT_GT(events.pending(), 0u);
  auto rest = events.feed(":3}");
  ASSERT_TRUE(rest);
  ASSERT_EQ(rest->size(), 1u);
  EXPECT_EQ((*rest)[0], R"({"c":3})");
}

TEST(EventStream, RefusesWhatIsNotAStreamOfObjects) {
  for (const char* text : {"[1]", "x", "{\"a\":1}}", "\"s\""}) {
    SCOPED_TRACE(text);
    EventStream events;
    EXPECT_FALSE(events.feed(text));
  }
}

TEST(EventStream, RefusesAnEventLargerThanTheLimit) {
  EventStream events(16);
  auto objects = events.feed(R"({"name":"abcdefghijklmnopqrstuvwxyz")");
  ASSERT_FALSE(objects);
  EXPECT_NE(objects.error().message.find("larger than 16 bytes"), std::string::npos);
}

}  // namespace
}  // namespace cudagate::kube

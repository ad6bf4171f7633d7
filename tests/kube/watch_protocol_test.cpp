// The list-and-watch state machine, driven without sockets: every row is a
// sequence of what happened and the action it must lead to.
#include "kube/watch_protocol.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace cudagate::kube {
namespace {

using Kind = WatchAction::Kind;
using std::chrono::milliseconds;
using std::chrono::seconds;

WatchOptions options() {
  WatchOptions o;
  o.page_size = 500;
  o.watch_timeout = seconds(300);
  o.initial_backoff = milliseconds(1000);
  o.max_backoff = milliseconds(8000);
  o.seed = 42;
  return o;
}

void expect_action(const WatchAction& a, Kind kind, const std::string& token,
                   std::string_view reason) {
  EXPECT_EQ(a.kind, kind);
  EXPECT_EQ(a.token, token);
  EXPECT_EQ(a.reason, reason);
}

TEST(WatchProtocol, ListsInPagesThenWatchesFromTheListsVersion) {
  WatchProtocol p(options());
  expect_action(p.start(), Kind::list, "", "initial");
  EXPECT_FALSE(p.synced());
  expect_action(p.page("c1", "100"), Kind::list, "c1", "page");
  expect_action(p.page("c2", "100"), Kind::list, "c2", "page");
  EXPECT_FALSE(p.synced());
  expect_action(p.page("", "100"), Kind::watch, "100", "initial");
  EXPECT_TRUE(p.synced());
  EXPECT_FALSE(p.listing());
}

TEST(WatchProtocol, TargetsCarryTheProtocolsParameters) {
  const WatchOptions o = options();
  WatchAction list;
  list.kind = Kind::list;
  EXPECT_EQ(list.target("/api/v1/nodes", o), "/api/v1/nodes?limit=500");
  list.token = "eyJ2Ijoi+/=";
  EXPECT_EQ(list.target("/api/v1/nodes", o), "/api/v1/nodes?limit=500&continue=eyJ2Ijoi%2B%2F%3D");
  WatchAction watch;
  watch.kind = Kind::watch;
  watch.token = "12345";
  EXPECT_EQ(watch.target("/api/v1/nodes", o),
            "/api/v1/nodes?watch=1&resourceVersion=12345&allowWatchBookmarks=true&"
            "timeoutSeconds=300");
}

TEST(WatchProtocol, EventsAndBookmarksMoveTheResumePoint) {
  WatchProtocol p(options());
  (void)p.start();
  (void)p.page("", "100");
  p.event("101");
  p.event("105");  // a bookmark
  p.event("");     // an event without a version leaves it
  EXPECT_EQ(p.resource_version(), "105");
  // A stream that delivered something is resumed at once from there.
  expect_action(p.stream_closed(), Kind::watch, "105", "closed");
}

TEST(WatchProtocol, AStreamClosedBeforeDeliveringBacksOff) {
  WatchProtocol p(options());
  (void)p.start();
  (void)p.page("", "100");
  const WatchAction wait = p.stream_closed();
  EXPECT_EQ(wait.kind, Kind::wait);
  EXPECT_EQ(wait.reason, "closed");
  expect_action(p.resume(), Kind::watch, "100", "closed");
}

TEST(WatchProtocol, GoneRelistsFromTheFirstPage) {
  struct Row {
    const char* name;
    bool by_event;
  };
  for (const Row row : {Row{"410 status", false}, Row{"ERROR event 410", true}}) {
    SCOPED_TRACE(row.name);
    WatchProtocol p(options());
    (void)p.start();
    (void)p.page("", "100");
    p.event("150");
    const WatchAction a = row.by_event ? p.error_event(410) : p.http_status(410, std::nullopt);
    expect_action(a, Kind::list, "", "expired");
    EXPECT_TRUE(p.listing());
    EXPECT_TRUE(p.synced()) << "the last inventory stays valid while relisting";
    expect_action(p.page("", "200"), Kind::watch, "200", "initial");
  }
}

TEST(WatchProtocol, AnExpiredContinueTokenListsFromTheStart) {
  WatchProtocol p(options());
  (void)p.start();
  (void)p.page("c1", "100");
  expect_action(p.http_status(410, std::nullopt), Kind::list, "", "expired");
}

TEST(WatchProtocol, ErrorsRetryTheSameStepAfterABackoffThatGrowsAndIsCapped) {
  WatchProtocol p(options());
  (void)p.start();
  (void)p.page("c1", "100");
  // Equal jitter: each delay in [bound/2, bound], bounds 1, 2, 4, 8, 8 s.
  const std::int64_t bounds[] = {1000, 2000, 4000, 8000, 8000, 8000};
  for (const std::int64_t bound : bounds) {
    const WatchAction wait = p.transport_error();
    ASSERT_EQ(wait.kind, Kind::wait);
    EXPECT_EQ(wait.reason, "error");
    EXPECT_GE(wait.delay.count(), bound / 2);
    EXPECT_LE(wait.delay.count(), bound);
    expect_action(p.resume(), Kind::list, "c1", "error");
  }
  // Success resets it.
  (void)p.page("", "100");
  const WatchAction after = p.http_status(500, std::nullopt);
  EXPECT_LE(after.delay.count(), 1000);
  expect_action(p.resume(), Kind::watch, "100", "error");
}

TEST(WatchProtocol, JitterSpreadsRetries) {
  // Two watchers with different seeds do not retry in lockstep.
  WatchOptions a = options();
  WatchOptions b = options();
  b.seed = 7;
  WatchProtocol pa(a);
  WatchProtocol pb(b);
  (void)pa.start();
  (void)pb.start();
  bool differed = false;
  for (int i = 0; i < 8; ++i) {
    differed = differed || pa.transport_error().delay != pb.transport_error().delay;
  }
  EXPECT_TRUE(differed);
}

TEST(WatchProtocol, TooManyRequestsWaitsRetryAfter) {
  WatchProtocol p(options());
  (void)p.start();
  const WatchAction wait = p.http_status(429, seconds(7));
  EXPECT_EQ(wait.kind, Kind::wait);
  EXPECT_EQ(wait.reason, "throttled");
  EXPECT_EQ(wait.delay, milliseconds(7000));
  expect_action(p.resume(), Kind::list, "", "throttled");
  // Without Retry-After: the backoff.
  const WatchAction backoff = p.http_status(429, std::nullopt);
  EXPECT_EQ(backoff.reason, "throttled");
  EXPECT_LE(backoff.delay.count(), 2000);
  // A Retry-After of a day is capped.
  EXPECT_EQ(p.http_status(429, seconds(86400)).delay, milliseconds(600'000));
}

TEST(WatchProtocol, OtherErrorEventsRewatchAfterABackoff) {
  WatchProtocol p(options());
  (void)p.start();
  (void)p.page("", "100");
  p.event("120");
  const WatchAction wait = p.error_event(500);
  EXPECT_EQ(wait.kind, Kind::wait);
  expect_action(p.resume(), Kind::watch, "120", "error");
}

}  // namespace
}  // namespace cudagate::kube

// The collection watcher against a real HTTPS server on loopback playing the
// API server (tests/support/http_test_server.h, the development
// certificates): list pages and watch events handed on in order, a 410 Gone
// and the relist after it, the pages of a list and the relist on one
// kept-alive connection and each watch on one of its own, a 404 judged by
// the collection, and stop() in the middle of a list and of a watch ending
// with no handler called after it.
#include "kube/collection_watcher.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kube/api_calls.h"
#include "kube/node_watcher.h"
#include "kube/object_watcher.h"
#include "tests/support/dev_certs.h"
#include "tests/support/http_test_server.h"
#include "tests/support/loopback_cluster.h"

namespace cudagate::kube {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using json = nlohmann::json;
using test_support::HttpTestServer;
using namespace std::chrono_literals;

// Long enough for any of these exchanges on a loaded machine; reached
// only when the watcher fails to do what the test waits for.
constexpr auto kWatcherTestBound = 60s;

HttpTestServer::Answer watcher_answer(int status, std::string body) {
  HttpTestServer::Answer answer;
  answer.response.result(status);
  answer.response.set(http::field::content_type, "application/json");
  answer.response.body() = std::move(body);
  return answer;
}

HttpTestServer::Answer watcher_hang() {
  HttpTestServer::Answer answer;
  answer.hang = true;
  return answer;
}

std::string watcher_status(int code, const std::string& reason, const std::string& message) {
  return json{{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
              {"message", message}, {"reason", reason},   {"code", code}}
      .dump();
}

json watched_node(const std::string& name, const std::string& resource_version) {
  return {{"kind", "Node"},
          {"apiVersion", "v1"},
          {"metadata", {{"name", name}, {"resourceVersion", resource_version}}}};
}

std::string node_page(const std::vector<std::string>& names, const std::string& continue_token,
                      const std::string& resource_version) {
  json items = json::array();
  for (const auto& name : names) items.push_back(watched_node(name, resource_version));
  json metadata = {{"resourceVersion", resource_version}};
  if (!continue_token.empty()) metadata["continue"] = continue_token;
  return json{{"kind", "NodeList"}, {"apiVersion", "v1"}, {"metadata", metadata}, {"items", items}}
      .dump();
}

// Watch events as the API server streams them: one JSON object a line.
std::string node_event(const std::string& type, const std::string& name,
                       const std::string& resource_version) {
  return json{{"type", type}, {"object", watched_node(name, resource_version)}}.dump() + "\n";
}

ClusterConfig watcher_config(const HttpTestServer& server) {
  return ::test_support::loopback_cluster(server, "watch-token");
}

// Lines appended from any thread (the server's handlers, the watcher's
// strand), and a wait for one to appear.
class WatcherLog {
 public:
  void add(std::string line) {
    std::lock_guard lock(mutex_);
    lines_.push_back(std::move(line));
    changed_.notify_all();
  }
  [[nodiscard]] std::vector<std::string> lines() const {
    std::lock_guard lock(mutex_);
    return lines_;
  }
  // False when `line` did not come within kWatcherTestBound.
  [[nodiscard]] bool wait_for(const std::string& line) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kWatcherTestBound, [&] {
      return std::find(lines_.begin(), lines_.end(), line) != lines_.end();
    });
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> lines_;
};

// "GET target" as the server was asked, with " (close)" for a request that
// asked the connection be closed after it, and the bearer token checked.
std::string asked(const HttpTestServer::Request& request) {
  std::string line = std::string(request.method_string()) + " " + std::string(request.target());
  if (!request.keep_alive()) line += " (close)";
  if (request[http::field::authorization] != "Bearer watch-token") line += " (no token)";
  return line;
}

std::string step_line(const WatchAction& action) {
  switch (action.kind) {
    case WatchAction::Kind::list:
      return "step list '" + action.token + "' " + std::string(action.reason);
    case WatchAction::Kind::watch:
      return "step watch " + action.token + " " + std::string(action.reason);
    case WatchAction::Kind::wait:
      return "step wait " + std::string(action.reason);
  }
  return "step ?";
}

NodeWatcherHandlers logging_node_handlers(WatcherLog& log) {
  NodeWatcherHandlers handlers;
  handlers.on_page = [&log](const std::vector<Node>& nodes, bool first, bool last) {
    std::string line = "page";
    for (const Node& node : nodes) line += " " + node.name;
    if (first) line += " first";
    if (last) line += " last";
    log.add(line);
  };
  // One line a change, however the stream's reads grouped them.
  handlers.on_changes = [&log](const std::vector<NodeChange>& changes) {
    for (const NodeChange& change : changes) {
      log.add((change.kind == NodeChange::Kind::upsert ? "upsert " : "remove ") + change.name);
    }
  };
  handlers.on_step = [&log](const WatchAction& action) { log.add(step_line(action)); };
  return handlers;
}

// The io_context run on a thread of its own, so that the test can wait for
// what the server and the handlers report, and stop the watcher between.
// Made once the watcher has started: run() returns at once with no work.
class WatcherLoop {
 public:
  explicit WatcherLoop(net::io_context& ioc) : ioc_(ioc) {
    thread_ = std::thread([this] {
      ioc_.run();
      ran_out_.set_value();
    });
  }
  ~WatcherLoop() {
    if (thread_.joinable()) {
      ioc_.stop();
      thread_.join();
    }
  }
  WatcherLoop(const WatcherLoop&) = delete;
  WatcherLoop& operator=(const WatcherLoop&) = delete;

  // True when run() returned on its own (nothing left in flight) within
  // kWatcherTestBound.
  [[nodiscard]] bool ran_out() {
    if (ran_out_.get_future().wait_for(kWatcherTestBound) != std::future_status::ready) {
      return false;
    }
    thread_.join();
    return true;
  }

 private:
  net::io_context& ioc_;
  std::promise<void> ran_out_;
  std::thread thread_;
};

std::shared_ptr<ApiCredentials> watcher_credentials(net::io_context& ioc,
                                                    const HttpTestServer& server) {
  return std::make_shared<ApiCredentials>(
      net::make_strand(net::any_io_executor(ioc.get_executor())), watcher_config(server));
}

const std::string kNodeList = "/api/v1/nodes?limit=500";
std::string node_watch(const std::string& resource_version) {
  return "/api/v1/nodes?watch=1&resourceVersion=" + resource_version +
         "&allowWatchBookmarks=true&timeoutSeconds=300";
}

TEST(CollectionWatcher, ListsInPagesWatchesAndListsAgainAfterGone) {
  WatcherLog log;
  std::mutex served_mutex;
  std::map<std::string, int> served;  // times each target was asked for
  HttpTestServer server(
      [&](const HttpTestServer::Request& request) {
        const std::string target(request.target());
        log.add(asked(request));
        int times = 0;
        {
          std::lock_guard lock(served_mutex);
          times = ++served[target];
        }
        if (target == kNodeList) {
          return times == 1 ? watcher_answer(200, node_page({"a", "b"}, "c1", "10"))
                            : watcher_answer(200, node_page({"a", "c"}, "c2", "20"));
        }
        if (target == kNodeList + "&continue=c1") {
          return watcher_answer(200, node_page({"c"}, "", "11"));
        }
        if (target == kNodeList + "&continue=c2") {
          return watcher_answer(200, node_page({"d"}, "", "21"));
        }
        if (target == node_watch("11")) {
          // A stream the server ends after three events (its timeout).
          return watcher_answer(200, node_event("ADDED", "d", "12") +
                                         node_event("MODIFIED", "a", "13") +
                                         node_event("DELETED", "b", "14"));
        }
        if (target == node_watch("14")) {
          return watcher_answer(410, watcher_status(410, "Expired", "too old resource version"));
        }
        if (target == node_watch("21")) {
          auto answer = watcher_answer(200, node_event("MODIFIED", "c", "22"));
          answer.stream = true;  // still open when the watcher is stopped
          return answer;
        }
        return watcher_answer(500, watcher_status(500, "InternalError", "unexpected " + target));
      },
      test_support::dev_certs());

  net::io_context ioc;
  NodeWatcher watcher(watcher_credentials(ioc, server), logging_node_handlers(log), WatchOptions{});
  watcher.start();
  WatcherLoop loop(ioc);
  ASSERT_TRUE(log.wait_for("upsert c")) << testing::PrintToString(log.lines());
  watcher.stop();
  ASSERT_TRUE(loop.ran_out());

  const std::vector<std::string> expected = {
      "step list '' initial",
      "GET " + kNodeList,
      "page a b first",
      "step list 'c1' page",
      "GET " + kNodeList + "&continue=c1",
      "page c last",
      "step watch 11 initial",
      "GET " + node_watch("11") + " (close)",
      "upsert d",
      "upsert a",
      "remove b",
      "step watch 14 closed",
      "GET " + node_watch("14") + " (close)",
      "step list '' expired",
      "GET " + kNodeList,
      "page a c first",
      "step list 'c2' page",
      "GET " + kNodeList + "&continue=c2",
      "page d last",
      "step watch 21 initial",
      "GET " + node_watch("21") + " (close)",
      "upsert c",
  };
  // Nothing after stop(): no handler, no request.
  EXPECT_EQ(log.lines(), expected);
  // The pages of both lists on the first connection, kept alive between
  // them; each watch on one of its own.
  EXPECT_EQ(server.connections_by_request(), (std::vector<int>{1, 1, 2, 3, 1, 1, 4}));
  EXPECT_EQ(server.accepted(), 4);
}

TEST(CollectionWatcher, StopInTheMiddleOfAListCallsNoHandlerAfterIt) {
  WatcherLog log;
  HttpTestServer server(
      [&](const HttpTestServer::Request& request) {
        log.add(asked(request));
        if (std::string(request.target()) == kNodeList) {
          return watcher_answer(200, node_page({"a", "b"}, "c1", "10"));
        }
        return watcher_hang();  // the second page never comes
      },
      test_support::dev_certs());

  net::io_context ioc;
  NodeWatcher watcher(watcher_credentials(ioc, server), logging_node_handlers(log), WatchOptions{});
  watcher.start();
  WatcherLoop loop(ioc);
  ASSERT_TRUE(log.wait_for("GET " + kNodeList + "&continue=c1"))
      << testing::PrintToString(log.lines());
  watcher.stop();
  // run() returns: the pooled exchange held by the server was cancelled.
  ASSERT_TRUE(loop.ran_out());

  const std::vector<std::string> expected = {
      "step list '' initial",
      "GET " + kNodeList,
      "page a b first",
      "step list 'c1' page",
      "GET " + kNodeList + "&continue=c1",
  };
  EXPECT_EQ(log.lines(), expected);
  EXPECT_EQ(server.connections_by_request(), (std::vector<int>{1, 1}));
}

TEST(CollectionWatcher, StopBeforeAWatchAnswersCallsNoHandlerAfterIt) {
  WatcherLog log;
  HttpTestServer server(
      [&](const HttpTestServer::Request& request) {
        log.add(asked(request));
        if (std::string(request.target()) == kNodeList) {
          return watcher_answer(200, node_page({"a"}, "", "10"));
        }
        return watcher_hang();  // the watch's header never comes
      },
      test_support::dev_certs());

  net::io_context ioc;
  NodeWatcher watcher(watcher_credentials(ioc, server), logging_node_handlers(log), WatchOptions{});
  watcher.start();
  WatcherLoop loop(ioc);
  ASSERT_TRUE(log.wait_for("GET " + node_watch("10") + " (close)"))
      << testing::PrintToString(log.lines());
  watcher.stop();
  ASSERT_TRUE(loop.ran_out());

  const std::vector<std::string> expected = {
      "step list '' initial",
      "GET " + kNodeList,
      "page a first last",
      "step watch 10 initial",
      "GET " + node_watch("10") + " (close)",
  };
  EXPECT_EQ(log.lines(), expected);
  EXPECT_EQ(server.connections_by_request(), (std::vector<int>{1, 2}));
}

// The ResourceSlices of an ObjectWatcher over the DRA versions: `served`
// is the one version the server serves ("" for none), its list empty (what
// becomes of the objects is the collection's, not the watcher's).
struct SliceCase {
  std::string served;
  std::vector<std::string> expected;
  std::vector<int> connections;
  bool gives_up;  // the io_context runs out of work without stop()
};

TEST(CollectionWatcher, A404GoesToTheCollection) {
  const std::string slices = "/apis/resource.k8s.io/";
  const auto list = [&](const std::string& version) {
    return "GET " + slices + version + "/resourceslices?limit=500";
  };
  const std::vector<SliceCase> cases = {
      // Each 404 moves to the next version (the collection's relist), on
      // the same kept connection; the version served is listed and watched.
      {"v1beta1",
       {"step list '' initial", list("v1"), "step list '' initial", list("v1beta2"),
        "step list '' initial", list("v1beta1"), "page of 0 first last", "step watch 7 initial",
        "GET " + slices +
            "v1beta1/resourceslices?watch=1&resourceVersion=7&allowWatchBookmarks=true&"
            "timeoutSeconds=300 (close)"},
       {1, 1, 1, 2},
       false},
      // None served: the collection gives up (absent) and nothing more is
      // asked, so the io_context runs out of work without stop().
      {"",
       {"step list '' initial", list("v1"), "step list '' initial", list("v1beta2"),
        "step list '' initial", list("v1beta1"), "absent"},
       {1, 1, 1},
       true},
  };
  for (const SliceCase& c : cases) {
    SCOPED_TRACE("served: " + c.served);
    WatcherLog log;
    HttpTestServer server(
        [&](const HttpTestServer::Request& request) {
          log.add(asked(request));
          const std::string target(request.target());
          if (c.served.empty() || target.find("/" + c.served + "/") == std::string::npos) {
            return watcher_answer(404, watcher_status(404, "NotFound",
                                                      "the server could not "
                                                      "find the requested "
                                                      "resource"));
          }
          if (target.find("watch=1") != std::string::npos) return watcher_hang();
          return watcher_answer(200, json{{"kind", "ResourceSliceList"},
                                          {"apiVersion", "resource.k8s.io/" + c.served},
                                          {"metadata", {{"resourceVersion", "7"}}},
                                          {"items", json::array()}}
                                         .dump());
        },
        test_support::dev_certs());

    ObjectWatcherHandlers<ResourceSlice> handlers;
    handlers.on_page = [&log](const std::vector<ResourceSlice>& page, bool first, bool last) {
      std::string line = "page of " + std::to_string(page.size());
      if (first) line += " first";
      if (last) line += " last";
      log.add(line);
    };
    handlers.on_step = [&log](const WatchAction& action) { log.add(step_line(action)); };
    handlers.on_absent = [&log] { log.add("absent"); };

    net::io_context ioc;
    ObjectWatcher<ResourceSlice> watcher(watcher_credentials(ioc, server), handlers, WatchOptions{},
                                         ApiCallId::inventory_list_resourceslices,
                                         ApiCallId::inventory_watch_resourceslices,
                                         std::span<const std::string_view>(kDraVersions));
    watcher.start();
    WatcherLoop loop(ioc);
    if (!c.gives_up) {
      ASSERT_TRUE(log.wait_for(c.expected.back())) << testing::PrintToString(log.lines());
      watcher.stop();
    }
    ASSERT_TRUE(loop.ran_out());
    EXPECT_EQ(log.lines(), c.expected);
    EXPECT_EQ(server.connections_by_request(), c.connections);
  }
}

}  // namespace
}  // namespace cudagate::kube

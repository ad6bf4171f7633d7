// The Node collection as the watcher drives it, without sockets: the
// targets of its lists and watches, NodeList pages handed on as Nodes (an
// unreadable Node left out and logged), watch events as NodeChanges (an
// unreadable Node a removal, so that it is judged by nothing rather than by
// stale facts), and a 404 retried as any error.
#include "kube/node_watcher.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/captured_log.h"

namespace cudagate::kube {
namespace {

using nlohmann::json;

json watched_node(const std::string& name, const std::string& product) {
  return {{"kind", "Node"},
          {"apiVersion", "v1"},
          {"metadata",
           {{"name", name},
            {"resourceVersion", "5"},
            {"labels", {{"kubernetes.io/hostname", name}, {"nvidia.com/gpu.product", product}}}}},
          {"status", {{"allocatable", {{"nvidia.com/gpu", "4"}, {"cpu", "8"}}}}}};
}

json unreadable_node(const std::string& name) {
  json node = watched_node(name, "NVIDIA-L4");
  node["metadata"]["labels"]["bad"] = 7;
  return node;
}

// spdlog's default logger writes into a string for the test's length, and
// the collection's handlers write down what they are handed.
class NodeCollectionTest : public ::testing::Test {
 protected:
  NodeCollectionTest() {
    handlers_.on_page = [this](std::vector<Node> nodes, bool first, bool last) {
      pages_.push_back(std::move(nodes));
      bounds_.emplace_back(first, last);
    };
    handlers_.on_changes = [this](std::vector<NodeChange> changes) {
      batches_.push_back(std::move(changes));
    };
  }
  // The lines logged since the last call.
  std::vector<std::string> logged() { return log_.lines(); }

  test_support::CapturedLog log_{"node-watcher-test"};
  NodeWatcherHandlers handlers_;
  NodeCollection nodes_{handlers_};
  std::vector<std::vector<Node>> pages_;
  std::vector<std::pair<bool, bool>> bounds_;  // first, last
  std::vector<std::vector<NodeChange>> batches_;
};

TEST_F(NodeCollectionTest, TargetsOfListsAndWatches) {
  WatchOptions options;
  options.page_size = 250;
  options.watch_timeout = std::chrono::seconds(120);
  WatchAction list;
  list.kind = WatchAction::Kind::list;
  EXPECT_EQ(nodes_.target(list, options), "/api/v1/nodes?limit=250");
  list.token = "a+b";
  EXPECT_EQ(nodes_.target(list, options), "/api/v1/nodes?limit=250&continue=a%2Bb");
  WatchAction watch;
  watch.kind = WatchAction::Kind::watch;
  watch.token = "48123100";
  EXPECT_EQ(nodes_.target(watch, options),
            "/api/v1/nodes?watch=1&resourceVersion=48123100&allowWatchBookmarks=true&"
            "timeoutSeconds=120");
  EXPECT_EQ(nodes_.name(), "nodes");
  // A cluster always serves Nodes: a 404 is an error like any other.
  EXPECT_EQ(nodes_.on_not_found(), WatchedCollection::NotFound::retry);
}

TEST_F(NodeCollectionTest, PagesAreHandedOnAsNodesWithoutTheUnreadableOnes) {
  const json page = {
      {"kind", "NodeList"},
      {"apiVersion", "v1"},
      {"metadata", {{"resourceVersion", "48123100"}, {"continue", "next"}}},
      {"items", json::array({watched_node("gpu-a", "NVIDIA-L4"), unreadable_node("gpu-b"),
                             watched_node("gpu-c", "NVIDIA-H100-80GB-HBM3")})}};
  auto meta = nodes_.read_page(page.dump());
  ASSERT_TRUE(meta) << meta.error().str();
  EXPECT_EQ(meta->continue_token, "next");
  EXPECT_EQ(meta->resource_version, "48123100");
  EXPECT_EQ(logged(),
            (std::vector<std::string>{"warning API server: node list: left out items[1]: "
                                      "metadata.labels.bad: expected a string, got number"}));
  EXPECT_TRUE(pages_.empty()) << "nothing is handed on before deliver_page";
  nodes_.deliver_page(true, false);
  ASSERT_EQ(pages_.size(), 1U);
  EXPECT_EQ(bounds_[0], std::make_pair(true, false));
  ASSERT_EQ(pages_[0].size(), 2U);
  EXPECT_EQ(pages_[0][0].name, "gpu-a");
  ASSERT_NE(pages_[0][0].label("nvidia.com/gpu.product"), nullptr);
  EXPECT_EQ(*pages_[0][0].label("nvidia.com/gpu.product"), "NVIDIA-L4");
  EXPECT_EQ(pages_[0][1].name, "gpu-c");

  const json last = {{"kind", "NodeList"},
                     {"metadata", {{"resourceVersion", "48123101"}}},
                     {"items", json::array({watched_node("gpu-d", "NVIDIA-L4")})}};
  ASSERT_TRUE(nodes_.read_page(last.dump()));
  nodes_.deliver_page(false, true);
  ASSERT_EQ(pages_.size(), 2U);
  EXPECT_EQ(bounds_[1], std::make_pair(false, true));
  ASSERT_EQ(pages_[1].size(), 1U);
  EXPECT_EQ(pages_[1][0].name, "gpu-d");

  auto status = nodes_.read_page(R"({"kind":"Status","code":410})");
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().str(), "NodeList: kind: expected NodeList, got \"Status\"");
}

TEST_F(NodeCollectionTest, EventsAreHandedOnAsNodeChangesAtEachFlush) {
  const std::vector<json> events = {
      {{"type", "ADDED"}, {"object", watched_node("gpu-a", "NVIDIA-L4")}},
      {{"type", "MODIFIED"}, {"object", unreadable_node("gpu-b")}},
      {{"type", "DELETED"}, {"object", watched_node("gpu-c", "NVIDIA-L4")}},
      {{"type", "BOOKMARK"}, {"object", {{"metadata", {{"resourceVersion", "48123200"}}}}}},
  };
  std::vector<std::string> versions;
  for (const json& event : events) {
    auto envelope = nodes_.read_event(event.dump());
    ASSERT_TRUE(envelope) << envelope.error().str();
    versions.push_back(envelope->resource_version);
    EXPECT_TRUE(envelope->object.is_null()) << "the object is the collection's now";
  }
  EXPECT_EQ(versions, (std::vector<std::string>{"5", "5", "5", "48123200"}));
  EXPECT_EQ(logged(),
            (std::vector<std::string>{"warning API server: node gpu-b left out: object: "
                                      "metadata.labels.bad: expected a string, got number"}));
  EXPECT_TRUE(batches_.empty()) << "nothing is handed on before flush_events";
  nodes_.flush_events();
  ASSERT_EQ(batches_.size(), 1U);
  const auto& changes = batches_[0];
  ASSERT_EQ(changes.size(), 3U) << "a bookmark changes nothing";
  EXPECT_EQ(changes[0].kind, NodeChange::Kind::upsert);
  EXPECT_EQ(changes[0].name, "gpu-a");
  EXPECT_EQ(changes[0].node.name, "gpu-a");
  EXPECT_EQ(changes[0].node.allocatable,
            (std::vector<std::pair<std::string, std::int64_t>>{{"nvidia.com/gpu", 4}}));
  // Judged by nothing rather than by stale facts.
  EXPECT_EQ(changes[1].kind, NodeChange::Kind::remove);
  EXPECT_EQ(changes[1].name, "gpu-b");
  EXPECT_EQ(changes[2].kind, NodeChange::Kind::remove);
  EXPECT_EQ(changes[2].name, "gpu-c");

  nodes_.flush_events();
  EXPECT_EQ(batches_.size(), 1U) << "a flush with nothing read hands nothing on";
  EXPECT_FALSE(nodes_.read_event(R"({"type":"ADDED"})"));
  nodes_.flush_events();
  EXPECT_EQ(batches_.size(), 1U);
}

}  // namespace
}  // namespace cudagate::kube

// NodeList pages and watch events as the API server sends them.
#include "kube/node_events.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace cudagate::kube {
namespace {

using json = nlohmann::json;

// The fleet fixture's nodes, with managedFields as a live API server sends them.
json fleet_items() {
  std::ifstream in(std::string(CUDAGATE_TEST_DATA) + "/nodes/fleet.json");
  std::stringstream text;
  text << in.rdbuf();
  json items = json::parse(text.str())["items"];
  for (json& node : items) {
    node["metadata"]["managedFields"] =
        json::array({{{"manager", "kubelet"},
                      {"operation", "Update"},
                      {"fieldsType", "FieldsV1"},
                      {"fieldsV1", {{"f:status", {{"f:allocatable", json::object()}}}}}}});
  }
  return items;
}

TEST(ParseNodePage, ItemsContinueAndVersion) {
  json page = {{"kind", "NodeList"},
               {"apiVersion", "v1"},
               {"metadata", {{"resourceVersion", "48123100"}, {"continue", "eyJ2IjoibWV0YSJ9"}}},
               {"items", fleet_items()}};
  auto parsed = parse_node_page(page.dump());
  ASSERT_TRUE(parsed) << parsed.error().str();
  EXPECT_EQ(parsed->nodes.size(), 13u);
  EXPECT_EQ(parsed->continue_token, "eyJ2IjoibWV0YSJ9");
  EXPECT_EQ(parsed->resource_version, "48123100");
  EXPECT_TRUE(parsed->skipped.empty());
  const Node& t4 = parsed->nodes[2];
  EXPECT_EQ(t4.name, "ip-10-0-2-21.ec2.internal");
  ASSERT_NE(t4.label("nvidia.com/cuda.driver.major"), nullptr);
  EXPECT_EQ(*t4.label("nvidia.com/cuda.driver.major"), "535");
  ASSERT_EQ(t4.taints.size(), 1u);
  EXPECT_EQ(t4.allocatable,
            (std::vector<std::pair<std::string, std::int64_t>>{{"nvidia.com/gpu", 1}}));
}

TEST(ParseNodePage, AnUnreadableItemIsLeftOutAndNamed) {
  json items = fleet_items();
  items[1]["metadata"]["labels"]["bad"] = 7;
  json page = {{"kind", "NodeList"}, {"metadata", json::object()}, {"items", items}};
  auto parsed = parse_node_page(page.dump());
  ASSERT_TRUE(parsed) << parsed.error().str();
  EXPECT_EQ(parsed->nodes.size(), 12u);
  ASSERT_EQ(parsed->skipped.size(), 1u);
  EXPECT_EQ(parsed->skipped[0].where, "items[1]: metadata.labels.bad");
}

TEST(ParseNodePage, Refusals) {
  EXPECT_FALSE(parse_node_page("not json"));
  auto status = parse_node_page(R"({"kind":"Status","code":410})");
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().where, "NodeList: kind");
  EXPECT_EQ(status.error().message, "expected NodeList, got \"Status\"");
  EXPECT_FALSE(parse_node_page(R"({"kind":"NodeList","items":{}})"));
}

TEST(ParseWatchEvent, EveryType) {
  const json node = fleet_items()[5];
  auto added = parse_watch_event(json{{"type", "ADDED"}, {"object", node}}.dump());
  ASSERT_TRUE(added) << added.error().str();
  EXPECT_EQ(added->type, WatchEvent::Type::added);
  EXPECT_EQ(added->name, "ip-10-0-3-31.ec2.internal");
  EXPECT_EQ(added->resource_version, node["metadata"]["resourceVersion"]);
  ASSERT_TRUE(added->node);
  EXPECT_EQ(added->node->name, "ip-10-0-3-31.ec2.internal");

  auto modified = parse_watch_event(json{{"type", "MODIFIED"}, {"object", node}}.dump());
  ASSERT_TRUE(modified);
  EXPECT_EQ(modified->type, WatchEvent::Type::modified);

  auto deleted = parse_watch_event(json{{"type", "DELETED"}, {"object", node}}.dump());
  ASSERT_TRUE(deleted);
  EXPECT_EQ(deleted->type, WatchEvent::Type::deleted);
  EXPECT_FALSE(deleted->node);

  auto bookmark = parse_watch_event(
      R"({"type":"BOOKMARK","object":{"kind":"Node","apiVersion":"v1","metadata":{"resourceVersion":"12746","annotations":{"k8s.io/initial-events-end":"true"}}}})");
  ASSERT_TRUE(bookmark) << bookmark.error().str();
  EXPECT_EQ(bookmark->type, WatchEvent::Type::bookmark);
  EXPECT_EQ(bookmark->resource_version, "12746");

  auto error = parse_watch_event(
      R"json({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},
              "status":"Failure","message":"too old resource version: 1 (12746)",
              "reason":"Expired","code":410}})json");
  ASSERT_TRUE(error) << error.error().str();
  EXPECT_EQ(error->type, WatchEvent::Type::error);
  EXPECT_EQ(error->code, 410);
  EXPECT_EQ(error->message, "too old resource version: 1 (12746)");
}

TEST(ParseWatchEvent, AnUnreadableNodeIsSaidSo) {
  json node = fleet_items()[0];
  node["spec"]["unschedulable"] = "yes";
  auto event = parse_watch_event(json{{"type", "MODIFIED"}, {"object", node}}.dump());
  ASSERT_TRUE(event) << event.error().str();
  EXPECT_FALSE(event->node);
  ASSERT_TRUE(event->node_error);
  EXPECT_EQ(event->node_error->where, "object: spec.unschedulable");
}

TEST(ParseWatchEvent, Refusals) {
  struct Row {
    const char* text;
    const char* where;
  };
  for (const Row row :
       {Row{"[]", "watch event"}, Row{R"({"type":"ADDED"})", "watch event: object"},
        Row{R"({"type":"SYNC","object":{}})", "watch event: type"},
        Row{R"({"type":"ADDED","object":{"metadata":{}}})", "watch event: object.metadata.name"}}) {
    SCOPED_TRACE(row.text);
    auto event = parse_watch_event(row.text);
    ASSERT_FALSE(event);
    EXPECT_EQ(event.error().where, row.where);
  }
}

}  // namespace
}  // namespace cudagate::kube

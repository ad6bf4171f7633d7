// The object collections as the watcher drives them, without sockets: the
// targets of lists and watches at each version, pages and events handed on
// as values (an unreadable object left out of its page and no object in its
// change, a claim made for a pod likewise), the next version after a 404
// and giving up (on_absent) when none is served, and a forbidden list told
// once.
#include "kube/object_watcher.h"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cudagate::kube {
namespace {

using nlohmann::json;

// What a collection handed on, one line a call.
template <typename T>
struct ObjectWatcherLog {
  std::vector<std::vector<T>> pages;
  std::vector<std::pair<bool, bool>> page_bounds;  // first, last
  std::vector<std::vector<ObjectChange<T>>> batches;
  int absent = 0;

  ObjectWatcherHandlers<T> handlers() {
    ObjectWatcherHandlers<T> out;
    out.on_page = [this](std::vector<T> objects, bool first, bool last) {
      pages.push_back(std::move(objects));
      page_bounds.emplace_back(first, last);
    };
    out.on_changes = [this](std::vector<ObjectChange<T>> changes) {
      batches.push_back(std::move(changes));
    };
    out.on_absent = [this] { ++absent; };
    return out;
  }
};

json object_watcher_slice(const std::string& name, const std::string& driver) {
  return {{"metadata", {{"name", name}, {"resourceVersion", "8"}}},
          {"spec",
           {{"driver", driver},
            {"nodeName", "gpu-a"},
            {"pool", {{"name", "gpu-a"}, {"generation", 1}}},
            {"devices", json::array()}}}};
}

json object_watcher_claim(const std::string& name, bool made_for_pod) {
  json claim = {
      {"kind", "ResourceClaim"},
      {"apiVersion", "resource.k8s.io/v1"},
      {"metadata", {{"name", name}, {"namespace", "ml"}, {"resourceVersion", "9"}}},
      {"spec",
       {{"devices",
         {{"requests", json::array({{{"name", "gpu"},
                                     {"exactly", {{"deviceClassName", "gpu.nvidia.com"}}}}})}}}}}};
  if (made_for_pod) {
    claim["metadata"]["ownerReferences"] =
        json::array({{{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", "train"}, {"uid", "1"}}});
  }
  return claim;
}

std::string object_watcher_event(const char* type, const json& object) {
  return json{{"type", type}, {"object", object}}.dump();
}

WatchAction object_watcher_action(WatchAction::Kind kind, std::string token) {
  WatchAction action;
  action.kind = kind;
  action.token = std::move(token);
  return action;
}

TEST(ObjectCollection, TargetsOfListsAndWatchesAtTheVersionAskedFor) {
  ObjectWatcherLog<ResourceSlice> log;
  ObjectWatcherHandlers<ResourceSlice> handlers = log.handlers();
  ObjectCollection<ResourceSlice> slices(handlers, ApiCallId::inventory_list_resourceslices,
                                         ApiCallId::inventory_watch_resourceslices, kDraVersions);
  ObjectWatcherHandlers<NodePool> pool_handlers;
  // No versions: the rows' own.
  ObjectCollection<NodePool> pools(pool_handlers, ApiCallId::inventory_list_nodepools,
                                   ApiCallId::inventory_watch_nodepools, {});
  ObjectWatcherHandlers<ClaimSpec> claim_handlers;
  ObjectCollection<ClaimSpec> claims(claim_handlers, ApiCallId::inventory_list_resourceclaims,
                                     ApiCallId::inventory_watch_resourceclaims, kDraVersions);
  WatchOptions options;
  options.page_size = 100;
  options.watch_timeout = std::chrono::seconds(60);

  EXPECT_EQ(slices.name(), "resourceslices");
  EXPECT_EQ(pools.name(), "nodepools");
  EXPECT_EQ(claims.name(), "resourceclaims");
  struct Row {
    const WatchedCollection& collection;
    WatchAction action;
    std::string target;
  };
  const std::vector<Row> rows = {
      {slices, object_watcher_action(WatchAction::Kind::list, ""),
       "/apis/resource.k8s.io/v1/resourceslices?limit=100"},
      {slices, object_watcher_action(WatchAction::Kind::list, "eyJ9"),
       "/apis/resource.k8s.io/v1/resourceslices?limit=100&continue=eyJ9"},
      {slices, object_watcher_action(WatchAction::Kind::watch, "7"),
       "/apis/resource.k8s.io/v1/resourceslices?watch=1&resourceVersion=7&"
       "allowWatchBookmarks=true&timeoutSeconds=60"},
      {pools, object_watcher_action(WatchAction::Kind::list, ""),
       "/apis/karpenter.sh/v1/nodepools?limit=100"},
      {pools, object_watcher_action(WatchAction::Kind::watch, "3"),
       "/apis/karpenter.sh/v1/nodepools?watch=1&resourceVersion=3&allowWatchBookmarks=true&"
       "timeoutSeconds=60"},
      // Of every namespace.
      {claims, object_watcher_action(WatchAction::Kind::list, ""),
       "/apis/resource.k8s.io/v1/resourceclaims?limit=100"},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(row.collection.target(row.action, options), row.target);
  }
}

TEST(ObjectCollection, PagesAreHandedOnReadWithoutWhatCannotBeRead) {
  ObjectWatcherLog<ResourceSlice> log;
  ObjectWatcherHandlers<ResourceSlice> handlers = log.handlers();
  ObjectCollection<ResourceSlice> slices(handlers, ApiCallId::inventory_list_resourceslices,
                                         ApiCallId::inventory_watch_resourceslices, kDraVersions);
  json broken = object_watcher_slice("broken", "gpu.nvidia.com");
  broken["spec"]["pool"]["generation"] = "one";
  const json page = {
      {"kind", "ResourceSliceList"},
      {"apiVersion", "resource.k8s.io/v1"},
      {"metadata", {{"resourceVersion", "12"}, {"continue", "next"}}},
      {"items", json::array({object_watcher_slice("a-gpu", "gpu.nvidia.com"), broken,
                             object_watcher_slice("a-cd", "compute-domain.nvidia.com")})}};
  auto meta = slices.read_page(page.dump());
  ASSERT_TRUE(meta) << meta.error().str();
  EXPECT_EQ(meta->continue_token, "next");
  EXPECT_EQ(meta->resource_version, "12");
  EXPECT_TRUE(log.pages.empty()) << "nothing is handed on before deliver_page";
  slices.deliver_page(true, false);
  ASSERT_EQ(log.pages.size(), 1U);
  EXPECT_EQ(log.page_bounds[0], std::make_pair(true, false));
  // Every driver's slices: which count is the server's to choose.
  ASSERT_EQ(log.pages[0].size(), 2U);
  EXPECT_EQ(log.pages[0][0].name, "a-gpu");
  EXPECT_EQ(log.pages[0][0].node_name, "gpu-a");
  EXPECT_EQ(log.pages[0][1].driver, "compute-domain.nvidia.com");

  const json last = {{"kind", "ResourceSliceList"},
                     {"apiVersion", "resource.k8s.io/v1"},
                     {"metadata", {{"resourceVersion", "13"}}},
                     {"items", json::array({object_watcher_slice("b-gpu", "gpu.nvidia.com")})}};
  ASSERT_TRUE(slices.read_page(last.dump()));
  slices.deliver_page(false, true);
  ASSERT_EQ(log.pages.size(), 2U);
  EXPECT_EQ(log.page_bounds[1], std::make_pair(false, true));
  ASSERT_EQ(log.pages[1].size(), 1U);
  EXPECT_EQ(log.pages[1][0].name, "b-gpu");

  // Not a page of the collection: an Error, and nothing kept.
  auto status = slices.read_page(R"({"kind":"Status","code":500})");
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().str(),
            "ResourceSliceList: kind: expected ResourceSliceList, got \"Status\"");
  EXPECT_EQ(log.pages.size(), 2U);
}

TEST(ObjectCollection, EventsAreHandedOnAsChangesAtEachFlush) {
  ObjectWatcherLog<ResourceSlice> log;
  ObjectWatcherHandlers<ResourceSlice> handlers = log.handlers();
  ObjectCollection<ResourceSlice> slices(handlers, ApiCallId::inventory_list_resourceslices,
                                         ApiCallId::inventory_watch_resourceslices, kDraVersions);
  json broken = object_watcher_slice("b-gpu", "gpu.nvidia.com");
  broken["spec"]["pool"]["generation"] = "one";
  const std::vector<std::string> events = {
      object_watcher_event("ADDED", object_watcher_slice("a-gpu", "gpu.nvidia.com")),
      object_watcher_event("MODIFIED", broken),
      object_watcher_event("DELETED", object_watcher_slice("c-gpu", "gpu.nvidia.com")),
      object_watcher_event("BOOKMARK", {{"metadata", {{"resourceVersion", "20"}}}}),
  };
  std::vector<std::string> versions;
  for (const std::string& text : events) {
    auto envelope = slices.read_event(text);
    ASSERT_TRUE(envelope) << envelope.error().str();
    versions.push_back(envelope->resource_version);
    EXPECT_TRUE(envelope->object.is_null()) << "the object is the collection's now";
  }
  EXPECT_EQ(versions, (std::vector<std::string>{"8", "8", "8", "20"}));
  EXPECT_TRUE(log.batches.empty()) << "nothing is handed on before flush_events";
  slices.flush_events();
  ASSERT_EQ(log.batches.size(), 1U);
  const auto& changes = log.batches[0];
  ASSERT_EQ(changes.size(), 3U) << "a bookmark changes nothing";
  EXPECT_EQ(changes[0].kind, SliceChange::Kind::upsert);
  EXPECT_EQ(changes[0].name, "a-gpu");
  EXPECT_EQ(changes[0].namespace_, "");
  ASSERT_TRUE(changes[0].object.has_value());
  EXPECT_EQ(changes[0].object->node_name, "gpu-a");
  // An unreadable upsert: no object, so that the one of its name is dropped.
  EXPECT_EQ(changes[1].kind, SliceChange::Kind::upsert);
  EXPECT_EQ(changes[1].name, "b-gpu");
  EXPECT_FALSE(changes[1].object.has_value());
  EXPECT_EQ(changes[2].kind, SliceChange::Kind::remove);
  EXPECT_EQ(changes[2].name, "c-gpu");
  EXPECT_FALSE(changes[2].object.has_value());

  // A flush with nothing read hands nothing on.
  slices.flush_events();
  EXPECT_EQ(log.batches.size(), 1U);
  // An event that is no event is an Error, and no change.
  EXPECT_FALSE(slices.read_event(R"({"type":"PATCHED","object":{}})"));
  slices.flush_events();
  EXPECT_EQ(log.batches.size(), 1U);
}

TEST(ObjectCollection, ClaimsMadeForPodsAreLeftOutOfPagesAndNoObjectInChanges) {
  ObjectWatcherLog<ClaimSpec> log;
  ObjectWatcherHandlers<ClaimSpec> handlers = log.handlers();
  ObjectCollection<ClaimSpec> claims(handlers, ApiCallId::inventory_list_resourceclaims,
                                     ApiCallId::inventory_watch_resourceclaims, kDraVersions);
  const json page = {{"kind", "ResourceClaimList"},
                     {"apiVersion", "resource.k8s.io/v1"},
                     {"metadata", {{"resourceVersion", "9"}}},
                     {"items", json::array({object_watcher_claim("train-gpu-x7k2p", true),
                                            object_watcher_claim("shared", false)})}};
  ASSERT_TRUE(claims.read_page(page.dump()));
  claims.deliver_page(true, true);
  ASSERT_EQ(log.pages.size(), 1U);
  ASSERT_EQ(log.pages[0].size(), 1U);
  EXPECT_EQ(log.pages[0][0].resource.name, "shared");
  EXPECT_EQ(log.pages[0][0].resource.namespace_, "ml");

  ASSERT_TRUE(
      claims.read_event(object_watcher_event("ADDED", object_watcher_claim("train-gpu-q8", true))));
  ASSERT_TRUE(
      claims.read_event(object_watcher_event("MODIFIED", object_watcher_claim("shared", false))));
  claims.flush_events();
  ASSERT_EQ(log.batches.size(), 1U);
  const auto& changes = log.batches[0];
  ASSERT_EQ(changes.size(), 2U);
  EXPECT_EQ(changes[0].kind, ClaimChange::Kind::upsert);
  EXPECT_EQ(changes[0].namespace_, "ml");
  EXPECT_EQ(changes[0].name, "train-gpu-q8");
  EXPECT_FALSE(changes[0].object.has_value());
  EXPECT_EQ(changes[1].namespace_, "ml");
  ASSERT_TRUE(changes[1].object.has_value());
  EXPECT_EQ(changes[1].object->resource.kind, "ResourceClaim");
}

TEST(ObjectCollection, A404MovesToTheNextVersionThenGivesUp) {
  ObjectWatcherLog<ResourceSlice> log;
  ObjectWatcherHandlers<ResourceSlice> handlers = log.handlers();
  ObjectCollection<ResourceSlice> slices(handlers, ApiCallId::inventory_list_resourceslices,
                                         ApiCallId::inventory_watch_resourceslices, kDraVersions);
  const WatchAction list = object_watcher_action(WatchAction::Kind::list, "");
  const WatchAction watch = object_watcher_action(WatchAction::Kind::watch, "5");
  const WatchOptions options;
  EXPECT_EQ(slices.on_not_found(), WatchedCollection::NotFound::relist);
  EXPECT_EQ(slices.target(list, options), "/apis/resource.k8s.io/v1beta2/resourceslices?limit=500");
  EXPECT_EQ(slices.on_not_found(), WatchedCollection::NotFound::relist);
  EXPECT_EQ(slices.target(list, options), "/apis/resource.k8s.io/v1beta1/resourceslices?limit=500");
  EXPECT_EQ(slices.target(watch, options),
            "/apis/resource.k8s.io/v1beta1/resourceslices?watch=1&resourceVersion=5&"
            "allowWatchBookmarks=true&timeoutSeconds=300");
  EXPECT_EQ(log.absent, 0);
  EXPECT_EQ(slices.on_not_found(), WatchedCollection::NotFound::absent);
  EXPECT_EQ(log.absent, 1);

  // One version only: absent at the first 404.
  ObjectWatcherLog<NodePool> pool_log;
  ObjectWatcherHandlers<NodePool> pool_handlers = pool_log.handlers();
  ObjectCollection<NodePool> pools(pool_handlers, ApiCallId::inventory_list_nodepools,
                                   ApiCallId::inventory_watch_nodepools, kKarpenterVersions);
  EXPECT_EQ(pools.on_not_found(), WatchedCollection::NotFound::absent);
  EXPECT_EQ(pool_log.absent, 1);
}

TEST(ObjectCollection, AForbiddenListIsToldOnce) {
  ObjectWatcherLog<ClaimSpec> log;
  ObjectWatcherHandlers<ClaimSpec> handlers = log.handlers();
  ObjectCollection<ClaimSpec> templates(handlers, ApiCallId::inventory_list_resourceclaimtemplates,
                                        ApiCallId::inventory_watch_resourceclaimtemplates,
                                        kDraVersions);
  templates.on_refused(500);
  templates.on_refused(401);
  EXPECT_EQ(log.absent, 0) << "only a 403 says the collection is not for us";
  templates.on_refused(403);
  EXPECT_EQ(log.absent, 1);
  templates.on_refused(403);  // the list is retried, and refused again
  EXPECT_EQ(log.absent, 1);
  // The version asked for stays: a 403 is no 404.
  EXPECT_EQ(templates.target(object_watcher_action(WatchAction::Kind::list, ""), WatchOptions{}),
            "/apis/resource.k8s.io/v1/resourceclaimtemplates?limit=500");
}

}  // namespace
}  // namespace cudagate::kube

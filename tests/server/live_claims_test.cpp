// ResourceClaimTemplate and ResourceClaim lists and watch events folded into
// published claim catalogs: a list replaces its own collection's objects,
// events change the objects they name, and claims made for pods stay out.
#include "server/live_claims.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kube/watched_objects.h"

namespace cudagate {
namespace {

using nlohmann::json;
using Source = LiveClaims::Source;

json template_object(const std::string& name) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaimTemplate"},
          {"metadata", {{"name", name}, {"namespace", "ml"}}},
          {"spec",
           {{"spec",
             {{"devices",
               {{"requests",
                 json::array({{{"name", "gpu"},
                               {"exactly", {{"deviceClassName", "gpu.nvidia.com"}}}}})}}}}}}}};
}

json claim_object(const std::string& name) {
  return {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceClaim"},
      {"metadata", {{"name", name}, {"namespace", "ml"}}},
      {"spec",
       {{"devices",
         {{"requests", json::array({{{"name", "gpu"},
                                     {"exactly", {{"deviceClassName", "gpu.nvidia.com"}}}}})}}}}}};
}

// The claim of `object`, read as the watcher reads it.
ClaimSpec read_claim(const json& object) {
  auto claim = kube::read_watched<ClaimSpec>(object, "");
  if (!claim) throw std::runtime_error(claim.error().str());
  if (!*claim) throw std::runtime_error("made for a pod");
  return std::move(**claim);
}

class LiveClaimsTest : public ::testing::Test {
 protected:
  LiveClaimsTest()
      : live_(ioc_.get_executor(), std::chrono::milliseconds(1),
              [this](const LiveClaims::Update& update) { published_.push_back(update); }) {}

  void settle() {
    ioc_.restart();
    ioc_.run_for(std::chrono::seconds(10));
  }
  bool knows(const char* kind, const char* name) {
    return published_.back().catalog->find(kind, "ml", name) != nullptr;
  }

  boost::asio::io_context ioc_;
  std::vector<LiveClaims::Update> published_;
  LiveClaims live_;
};

TEST_F(LiveClaimsTest, ListsThenEvents) {
  live_.add_page(Source::templates, {read_claim(template_object("one-gpu"))}, true, false);
  live_.add_page(Source::templates, {read_claim(template_object("h100"))}, false, true);
  live_.add_page(Source::claims, {read_claim(claim_object("isolated-gpu"))}, true, true);
  settle();
  ASSERT_FALSE(published_.empty());
  EXPECT_TRUE(published_.back().templates_listed);
  EXPECT_TRUE(published_.back().claims_listed);
  EXPECT_EQ(published_.back().catalog->size(), 3u);
  const auto before = published_.back().catalog;

  live_.apply(Source::templates,
              {{kube::ClaimChange::Kind::upsert, "ml", "late", read_claim(template_object("late"))},
               {kube::ClaimChange::Kind::remove, "ml", "h100", std::nullopt}});
  settle();
  EXPECT_TRUE(knows("ResourceClaimTemplate", "late"));
  EXPECT_FALSE(knows("ResourceClaimTemplate", "h100"));
  EXPECT_TRUE(knows("ResourceClaim", "isolated-gpu"));
  // The catalog decisions in flight hold is unchanged.
  EXPECT_NE(before->find("ResourceClaimTemplate", "ml", "h100"), nullptr);

  // A relist of templates replaces the templates only.
  live_.add_page(Source::templates, {read_claim(template_object("one-gpu"))}, true, true);
  settle();
  EXPECT_FALSE(knows("ResourceClaimTemplate", "late"));
  EXPECT_TRUE(knows("ResourceClaim", "isolated-gpu"));
}

// What the watcher leaves out of a page never reaches the catalog, and a
// change it could not read drops the claim of its name.
TEST_F(LiveClaimsTest, ClaimsMadeForPodsAndUnreadableOnesAreLeftOut) {
  kube::ObjectWatcherHandlers<ClaimSpec> handlers;
  handlers.on_page = [this](std::vector<ClaimSpec> claims, bool first, bool last) {
    live_.add_page(Source::claims, std::move(claims), first, last);
  };
  handlers.on_changes = [this](std::vector<kube::ClaimChange> changes) {
    live_.apply(Source::claims, std::move(changes));
  };
  kube::ObjectCollection<ClaimSpec> collection(
      handlers, kube::ApiCallId::inventory_list_resourceclaims,
      kube::ApiCallId::inventory_watch_resourceclaims, kube::kDraVersions);

  json made = claim_object("train-gpu-x7k2p");
  made["metadata"]["ownerReferences"] =
      json::array({{{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", "train"}, {"uid", "1"}}});
  json annotated = claim_object("train-gpu-q8");
  annotated["metadata"]["annotations"] = {{"resource.kubernetes.io/pod-claim-name", "gpu"}};
  json broken = claim_object("broken");
  broken["spec"]["devices"]["requests"] = "gpu";
  const json page = {{"kind", "ResourceClaimList"},
                     {"metadata", {{"resourceVersion", "1"}}},
                     {"items", json::array({made, annotated, broken, claim_object("shared"),
                                            claim_object("other")})}};
  ASSERT_TRUE(collection.read_page(page.dump()));
  collection.deliver_page(true, true);
  settle();
  ASSERT_FALSE(published_.empty());
  EXPECT_EQ(published_.back().catalog->size(), 2u);
  EXPECT_TRUE(knows("ResourceClaim", "shared"));

  // An edit that cannot be read: the claim is no longer judged as it was.
  json shared_broken = claim_object("shared");
  shared_broken["spec"]["devices"]["requests"] = "gpu";
  ASSERT_TRUE(collection.read_event(json{{"type", "MODIFIED"}, {"object", shared_broken}}.dump()));
  collection.flush_events();
  settle();
  EXPECT_EQ(published_.back().catalog->size(), 1u);
  EXPECT_FALSE(knows("ResourceClaim", "shared"));
  EXPECT_TRUE(knows("ResourceClaim", "other"));
}

}  // namespace
}  // namespace cudagate

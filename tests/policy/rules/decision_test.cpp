// The decision's strings (verdicts, outcomes, sources), NodeNames, whether owned, viewed or
// too many to keep inline, and which differences make two decisions unequal.
#include "policy/rules/decision.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "policy/rules/metadata.h"

namespace cudagate {
namespace {

TEST(DecisionStrings, Verdicts) {
  const std::vector<std::pair<Verdict, std::string>> cases = {
      {Verdict::pass, "pass"},
      {Verdict::partial, "partial"},
      {Verdict::fail, "fail"},
      {Verdict::unknown, "unknown"},
      {Verdict::no_candidates, "no-candidates"},
      {Verdict::skip, "skip"}};
  for (const auto& [verdict, text] : cases) EXPECT_EQ(to_string(verdict), text);
}

TEST(DecisionStrings, OutcomesAndSources) {
  EXPECT_EQ(to_string(Outcome::compatible), "compatible");
  EXPECT_EQ(to_string(Outcome::incompatible), "incompatible");
  EXPECT_EQ(to_string(Outcome::unknown), "unknown");
  const std::vector<std::pair<Source, std::string>> sources = {
      {Source::annotation, "annotation"}, {Source::env, "env"},
      {Source::catalog, "catalog"},       {Source::registry, "registry"},
      {Source::inference, "inference"},   {Source::flag, "flag"},
      {Source::unknown, "unknown"}};
  for (const auto& [source, text] : sources) EXPECT_EQ(to_string(source), text);
}

// Names given as strings are owned and shared by copies; names pushed are
// views; more than fit inline still keep their order.
TEST(NodeNames, OwnedViewedAndLong) {
  NodeNames copy;
  {
    std::vector<std::string> names = {"gpu-t4-1", "a-node-name-longer-than-any-small-string"};
    const NodeNames owned = std::move(names);
    copy = owned;
  }
  EXPECT_EQ(copy,
            (std::vector<std::string>{"gpu-t4-1", "a-node-name-longer-than-any-small-string"}));
  EXPECT_FALSE(copy == (std::vector<std::string>{"gpu-t4-1"}));
  EXPECT_FALSE(copy == (std::vector<std::string>{"gpu-t4-1", "other"}));

  std::vector<std::string> storage;
  for (int i = 0; i < 30; ++i) storage.push_back("node-" + std::to_string(i));
  NodeNames viewed;
  for (const std::string& name : storage) viewed.push_back(name);
  ASSERT_EQ(viewed.size(), 30U);
  EXPECT_EQ(viewed, storage);
  EXPECT_EQ(viewed.front(), "node-0");
  EXPECT_EQ(viewed[kMaxGroupNodeNames], "node-20");
  EXPECT_EQ(viewed.back(), "node-29");
  const NodeNames again = viewed;
  EXPECT_EQ(again, viewed);
  viewed.clear();
  EXPECT_TRUE(viewed.empty());
  EXPECT_EQ(viewed, NodeNames{});
  EXPECT_EQ(NodeNames({"x", "y"}), (std::vector<std::string>{"x", "y"}));
}

TEST(DecisionEquality, EveryValueCountsButWhereTheNamesAreHeld) {
  Decision base;
  base.resource = ResourceRef{"v1", "Pod", "ml", "train"};
  base.verdict = Verdict::fail;
  base.containers.push_back(
      ContainerDecision{"train", "img", true, {"12.4", "env"}, {"8.0", "env"}, {}, {}});
  base.candidates = 2;
  base.compatible = 1;
  GroupDecision g;
  g.count = 1;
  g.nodes = {"gpu-t4-1"};
  g.facts.has_gpu = true;
  g.outcome = Outcome::incompatible;
  g.findings.push_back(Finding{Rule::cuda_driver, "train", "needs CUDA 12.4", "upgrade", false});
  base.groups.push_back(g);
  base.claims = {"gpu: selector evaluated"};
  base.device_requests = {{"gpu.nvidia.com/gpu", 1}};

  Decision same = base;
  same.node_name_storage = std::make_shared<const std::vector<std::string>>();
  EXPECT_TRUE(same == base);

  const std::vector<std::pair<std::string, std::function<void(Decision&)>>> changes = {
      {"resource", [](Decision& d) { d.resource.name = "other"; }},
      {"verdict", [](Decision& d) { d.verdict = Verdict::partial; }},
      {"reason", [](Decision& d) { d.reason = "why"; }},
      {"container", [](Decision& d) { d.containers[0].cuda.source = "registry"; }},
      {"candidates", [](Decision& d) { d.candidates = 3; }},
      {"compatible", [](Decision& d) { d.compatible = 0; }},
      {"group nodes", [](Decision& d) { d.groups[0].nodes = {"gpu-t4-2"}; }},
      {"group facts", [](Decision& d) { d.groups[0].facts.product = "Tesla-T4"; }},
      {"finding", [](Decision& d) { d.groups[0].findings[0].unknown = true; }},
      {"unknown image", [](Decision& d) { d.unknown_image = true; }},
      {"unknown node", [](Decision& d) { d.unknown_node = true; }},
      {"unknown claim", [](Decision& d) { d.unknown_claim = true; }},
      {"claims", [](Decision& d) { d.claims.clear(); }},
      {"device requests", [](Decision& d) { d.device_requests[0].second = 2; }},
      {"device container", [](Decision& d) { d.device_container = 1; }},
      {"notes", [](Decision& d) { d.notes.emplace_back("container \"train\": a note"); }},
  };
  for (const auto& [what, change] : changes) {
    Decision other = base;
    change(other);
    EXPECT_FALSE(other == base) << what;
  }
}

}  // namespace
}  // namespace cudagate

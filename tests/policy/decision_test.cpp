// The decision's strings (verdicts, outcomes, sources) and NodeNames, whether owned, viewed or
// too many to keep inline.
#include "policy/decision.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "policy/metadata.h"

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

}  // namespace
}  // namespace cudagate

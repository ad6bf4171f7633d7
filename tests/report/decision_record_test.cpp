// The decision record's JSON: the fields of docs/contract.md §7.1's example, unknown values as
// null, a reason only when one is given, and the claims and devices of a pod that claims GPUs
// through Dynamic Resource Allocation.
#include "report/decision_record.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "policy/inventory/inventory.h"
#include "policy/rules/evaluate.h"
#include "policy/rules/metadata.h"
#include "tests/support/dra_fixture.h"

namespace cudagate {
namespace {

using nlohmann::json;

// The decision of the example in docs/contract.md §7.1.
Decision spec_example() {
  Decision d;
  d.resource = ResourceRef{"v1", "Pod", "ml", "trainer-0"};
  d.verdict = Verdict::fail;
  ContainerDecision c;
  c.name = "train";
  c.image = "registry.example.com/ml/train:cu124";
  c.gpu = true;
  c.cuda = SourcedValue{"12.4", "registry"};
  c.archs = SourcedValue{"8.0;9.0+PTX", "env"};
  c.require = SourcedValue{"cuda>=12.4", "registry"};
  d.containers.push_back(c);
  d.candidates = 12;
  d.compatible = 0;
  GroupDecision g;
  g.count = 8;
  g.nodes = {"gpu-t4-1", "gpu-t4-2"};
  g.facts.has_gpu = true;
  g.facts.driver = *DriverVersion::parse("535.129.03");
  g.facts.max_cuda = *CudaVersion::parse("12.2");
  g.facts.cc = *ComputeCapability::parse("7.5");
  g.facts.product = "Tesla-T4";
  g.facts.family = "turing";
  g.outcome = Outcome::incompatible;
  g.findings.push_back(Finding{
      Rule::cuda_driver, "train", "needs CUDA 12.4; driver 535.129.03 supports up to CUDA 12.2",
      "upgrade the driver to 550.54.14 or newer, or use an image built for CUDA 12.2 or older",
      false});
  d.groups.push_back(g);
  return d;
}

TEST(DecisionJson, SpecExampleFieldsAndAllowedExtras) {
  const json expected = json::parse(R"({
    "apiVersion": "cudagate.io/v1alpha1", "kind": "Decision",
    "resource": {"apiVersion": "v1", "kind": "Pod", "namespace": "ml", "name": "trainer-0"},
    "verdict": "fail",
    "containers": [
      {"name": "train", "image": "registry.example.com/ml/train:cu124", "gpu": true,
       "cuda":    {"value": "12.4", "source": "registry"},
       "archs":   {"value": "8.0;9.0+PTX", "source": "env"},
       "require": {"value": "cuda>=12.4", "source": "registry"},
       "minComputeCapability": {"value": null, "source": "unknown"}}],
    "candidates": 12, "compatible": 0,
    "groups": [
      {"count": 8, "nodes": ["gpu-t4-1", "gpu-t4-2"],
       "driver": "535.129.03", "maxCuda": "12.2", "computeCapability": "7.5",
       "product": "Tesla-T4", "family": "turing", "compatible": false, "outcome": "incompatible",
       "findings": [{"rule": "cuda-driver", "container": "train",
                     "message": "needs CUDA 12.4; driver 535.129.03 supports up to CUDA 12.2",
                     "fix": "upgrade the driver to 550.54.14 or newer, or use an image built for CUDA 12.2 or older"}]}]})");
  EXPECT_EQ(to_json(spec_example()), expected) << to_json(spec_example()).dump(2);
}

TEST(DecisionJson, UnknownValuesAreNullAndReasonAppearsWhenGiven) {
  Decision d;
  d.resource = ResourceRef{"apps/v1", "Deployment", "ml", "trainer"};
  d.verdict = Verdict::unknown;
  ContainerDecision c;
  c.name = "train";
  c.image = "x";
  c.gpu = true;
  d.containers.push_back(c);
  d.candidates = 1;
  GroupDecision g;
  g.count = 1;
  g.nodes = {"bare-1"};
  g.facts.has_gpu = true;
  g.outcome = Outcome::unknown;
  g.findings.push_back(Finding{Rule::cuda_driver, "train", "the node's driver version is unknown",
                               "label the nodes", true});
  d.groups.push_back(g);
  const json out = to_json(d);
  EXPECT_EQ(out["verdict"], "unknown");
  EXPECT_FALSE(out.contains("reason"));
  EXPECT_EQ(out["containers"][0]["cuda"], json::parse(R"({"value": null, "source": "unknown"})"));
  EXPECT_TRUE(out["groups"][0]["driver"].is_null());
  EXPECT_TRUE(out["groups"][0]["maxCuda"].is_null());
  EXPECT_TRUE(out["groups"][0]["computeCapability"].is_null());
  EXPECT_TRUE(out["groups"][0]["product"].is_null());
  EXPECT_EQ(out["groups"][0]["compatible"], false);
  EXPECT_EQ(out["groups"][0]["outcome"], "unknown");
  EXPECT_EQ(out["groups"][0]["findings"][0]["unknown"], true);

  Decision skip;
  skip.verdict = Verdict::skip;
  skip.reason = "no GPU container";
  const json s = to_json(skip);
  EXPECT_EQ(s["verdict"], "skip");
  EXPECT_EQ(s["reason"], "no GPU container");
  EXPECT_EQ(s["groups"], json::array());
  EXPECT_EQ(s["containers"], json::array());
  EXPECT_EQ(s["candidates"], 0);
}

TEST(DecisionJson, ADraDecisionListsItsClaimsAndTheGroupsDevices) {
  const test_support::DraFixture& dra = test_support::dra();
  EvaluationInputs inputs;
  inputs.claims = &dra.claims;
  auto d = evaluate(dra.pod("train-cuda124"), Inventory::build(dra.nodes, test_support::db()),
                    Policy{}, test_support::db(), inputs);
  ASSERT_TRUE(d) << d.error().str();
  const json record = to_json(*d);
  ASSERT_TRUE(record.contains("claims"));
  bool devices = false;
  for (const json& g : record["groups"]) devices = devices || g.contains("devices");
  EXPECT_TRUE(devices);
}

}  // namespace
}  // namespace cudagate

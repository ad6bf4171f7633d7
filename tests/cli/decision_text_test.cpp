// The decision as terminal text (cli/decision_text.h): the verdict line of each verdict, the
// containers' values and sources, the groups with their findings and fixes, the notes and the
// colour, printed from decisions written out by hand and from one evaluate() gives.
#include "cli/decision_text.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "policy/objects/node.h"
#include "policy/rules/evaluate.h"
#include "tests/support/cli_run.h"
#include "tests/support/embedded_compat_db.h"
#include "types/version.h"

namespace cudagate::cli {
namespace {

std::string decision_text(const Decision& decision, bool colour = false) {
  std::ostringstream out;
  print_decision_text(out, decision, Paint(colour));
  return out.str();
}

GpuFacts t4_facts() {
  GpuFacts facts;
  facts.has_gpu = true;
  facts.driver = *DriverVersion::parse("535.129.03");
  facts.max_cuda = *CudaVersion::parse("12.2");
  facts.cc = *ComputeCapability::parse("7.5");
  facts.product = "Tesla-T4";
  return facts;
}

GpuFacts a100_facts() {
  GpuFacts facts;
  facts.has_gpu = true;
  facts.driver = *DriverVersion::parse("550.54.15");
  facts.max_cuda = *CudaVersion::parse("12.4");
  facts.cc = *ComputeCapability::parse("8.0");
  facts.product = "NVIDIA-A100-SXM4-80GB";
  return facts;
}

// A CUDA 12.4 trainer on two T4s (driver too old) and an A100: partial.
Decision partial_trainer() {
  Decision d;
  d.resource = ResourceRef{"v1", "Pod", "ml", "trainer"};
  d.verdict = Verdict::partial;
  d.candidates = 3;
  d.compatible = 1;
  ContainerDecision gpu;
  gpu.name = "train";
  gpu.image = "pytorch/pytorch:2.4.1-cuda12.4-cudnn9-runtime";
  gpu.gpu = true;
  gpu.cuda = SourcedValue{"12.4", "inference"};
  gpu.archs = SourcedValue{"8.0;9.0", "annotation"};
  ContainerDecision sidecar;
  sidecar.name = "logs";
  sidecar.image = "fluent-bit:3";
  d.containers = {gpu, sidecar};
  GroupDecision t4;
  t4.count = 2;
  t4.nodes = NodeNames(std::vector<std::string>{"gpu-t4-1", "gpu-t4-2"});
  t4.facts = t4_facts();
  t4.outcome = Outcome::incompatible;
  t4.findings.push_back(Finding{Rule::cuda_driver, "train",
                                "needs CUDA 12.4; driver 535.129.03 supports up to CUDA 12.2",
                                "upgrade the driver to 550.54.14 or newer", false});
  GroupDecision a100;
  a100.count = 1;
  a100.nodes = NodeNames(std::vector<std::string>{"gpu-a100-1"});
  a100.facts = a100_facts();
  a100.outcome = Outcome::compatible;
  d.groups = {t4, a100};
  return d;
}

TEST(DecisionText, PartialDecisionLineByLine) {
  EXPECT_EQ(decision_text(partial_trainer()),
            "PARTIAL  Pod ml/trainer: 1 of 3 candidate nodes can run it\n"
            "\n"
            "  container train  pytorch/pytorch:2.4.1-cuda12.4-cudnn9-runtime\n"
            "    cuda     12.4  (inference)\n"
            "    archs    8.0;9.0  (annotation)\n"
            "    require  unknown\n"
            "\n"
            "  incompatible  2 nodes: gpu-t4-1, gpu-t4-2\n"
            "    driver 535.129.03, max CUDA 12.2, compute capability 7.5, product Tesla-T4\n"
            "    x [cuda-driver] train: needs CUDA 12.4; driver 535.129.03 supports up to CUDA "
            "12.2\n"
            "      fix: upgrade the driver to 550.54.14 or newer\n"
            "\n"
            "  compatible  1 node: gpu-a100-1\n"
            "    driver 550.54.15, max CUDA 12.4, compute capability 8.0, product "
            "NVIDIA-A100-SXM4-80GB\n");
}

TEST(DecisionText, HeadlineOfEachVerdict) {
  struct Row {
    Verdict verdict;
    std::string reason;
    std::string headline;
  };
  const std::vector<Row> rows = {
      {Verdict::pass, "", "PASS  Pod ml/trainer: 1 of 3 candidate nodes can run it"},
      {Verdict::fail, "", "FAIL  Pod ml/trainer: 1 of 3 candidate nodes can run it"},
      {Verdict::unknown, "", "UNKNOWN  Pod ml/trainer: 1 of 3 candidate nodes can run it"},
      // skip and no-candidates say why instead of counting.
      {Verdict::skip, "", "SKIP  Pod ml/trainer: not checked"},
      {Verdict::skip, "no GPU container", "SKIP  Pod ml/trainer: no GPU container"},
      {Verdict::no_candidates, "",
       "NO-CANDIDATES  Pod ml/trainer: no node of the inventory can take it"},
      {Verdict::no_candidates, "every GPU node is tainted",
       "NO-CANDIDATES  Pod ml/trainer: every GPU node is tainted"},
  };
  for (const auto& row : rows) {
    Decision d = partial_trainer();
    d.verdict = row.verdict;
    d.reason = row.reason;
    const auto lines = test_support::cli_lines(decision_text(d));
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(lines[0], row.headline);
  }
}

TEST(DecisionText, UnknownGroupsAreCountedInTheHeadline) {
  Decision d = partial_trainer();
  d.groups[0].outcome = Outcome::unknown;
  d.groups[0].findings[0].unknown = true;
  d.groups[0].facts.driver.reset();
  d.groups[0].facts.max_cuda.reset();
  const std::string text = decision_text(d);
  EXPECT_TRUE(
      text.starts_with("PARTIAL  Pod ml/trainer: 1 of 3 candidate nodes can run it, 2 "
                       "unknown\n"))
      << text;
  EXPECT_NE(text.find("\n  unknown  2 nodes: gpu-t4-1, gpu-t4-2\n"
                      "    driver unknown, max CUDA unknown, compute capability 7.5"),
            std::string::npos)
      << text;
  // An unknown finding is marked "?", not "x".
  EXPECT_NE(text.find("\n    ? [cuda-driver] train: "), std::string::npos) << text;
  EXPECT_EQ(text.find("    x ["), std::string::npos) << text;
}

TEST(DecisionText, ValuesUnknownAndSummarisedRequirementsAndMinimumCapability) {
  Decision d = partial_trainer();
  ContainerDecision& c = d.containers[0];
  c.image.clear();
  c.cuda = SourcedValue{};
  c.require = SourcedValue{
      "cuda>=12.3 brand=tesla,driver>=470,driver<471 brand=unknown,driver>=470,driver<471 "
      "brand=tesla,driver>=535,driver<536 brand=unknown,driver>=535,driver<536",
      "env"};
  c.min_cc = SourcedValue{"8.0", "annotation"};
  const std::string text = decision_text(d);
  // No image: the container's name alone.
  EXPECT_NE(text.find("\n  container train\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n    cuda     unknown\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n    require  cuda>=12.3, or forward compatibility on drivers 470+, 535+ "
                      "(brands tesla, unknown)  (env)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\n    min cc   8.0  (annotation)\n"), std::string::npos) << text;
  // The container without a GPU is not listed.
  EXPECT_EQ(text.find("logs"), std::string::npos) << text;
}

TEST(DecisionText, LongNodeListsAreCut) {
  Decision d = partial_trainer();
  std::vector<std::string> names;
  for (int i = 1; i <= 7; ++i) names.push_back("gpu-t4-" + std::to_string(i));
  d.groups[0].nodes = NodeNames(names);
  d.groups[0].count = 12;  // more members than names kept
  EXPECT_NE(decision_text(d).find("  incompatible  12 nodes: gpu-t4-1, gpu-t4-2, gpu-t4-3, "
                                  "gpu-t4-4, gpu-t4-5, +7 more\n"),
            std::string::npos)
      << decision_text(d);
  d.groups[0].nodes = NodeNames{};
  EXPECT_NE(decision_text(d).find("  incompatible  12 nodes\n"), std::string::npos);
}

TEST(DecisionText, DraDevicesOfTheGroup) {
  Decision d = partial_trainer();
  DeviceKind gpu;
  gpu.driver = std::string(kNvidiaDraDriver);
  gpu.type = "gpu";
  gpu.count = 8;
  gpu.attributes.push_back(DeviceAttribute{std::string(kNvidiaDraDriver) + "/productName",
                                           DeviceAttribute::Type::string, "NVIDIA A100-SXM4-80GB"});
  DeviceKind mig;
  mig.driver = std::string(kNvidiaDraDriver);
  mig.type = "mig";
  mig.count = 2;
  d.groups[1].facts.devices = {gpu, mig};
  EXPECT_NE(decision_text(d).find("product NVIDIA-A100-SXM4-80GB; DRA devices: 8 gpu NVIDIA "
                                  "A100-SXM4-80GB, 2 mig (no productName)\n"),
            std::string::npos)
      << decision_text(d);
}

TEST(DecisionText, NotesAndClaimsComeLast) {
  Decision d = partial_trainer();
  d.unknown_image = true;
  d.unknown_node = true;
  d.claims = {"claim ml/gpu: request gpu judged on its selectors"};
  const std::string text = decision_text(d);
  const auto image_note = text.find("\n  note: nothing is known about the image's CUDA version");
  const auto node_note = text.find("\n  note: some candidate GPU nodes have no known driver");
  const auto claim = text.find("\n  claim: claim ml/gpu: request gpu judged on its selectors\n");
  ASSERT_NE(image_note, std::string::npos) << text;
  ASSERT_NE(node_note, std::string::npos) << text;
  ASSERT_NE(claim, std::string::npos) << text;
  EXPECT_LT(text.find("fix: "), image_note);
  EXPECT_LT(image_note, node_note);
  EXPECT_LT(node_note, claim);
  EXPECT_TRUE(text.ends_with("selectors\n"));
  // Without them, none is printed.
  EXPECT_EQ(decision_text(partial_trainer()).find("note:"), std::string::npos);
}

TEST(DecisionText, ColourOnlyWhenPainted) {
  const std::string plain = decision_text(partial_trainer());
  EXPECT_EQ(plain.find('\x1b'), std::string::npos);
  const std::string coloured = decision_text(partial_trainer(), /*colour=*/true);
  EXPECT_TRUE(coloured.starts_with("\x1b[1;33mPARTIAL\x1b[0m  \x1b[1mPod ml/trainer\x1b[0m: "))
      << coloured;
  EXPECT_NE(coloured.find("  \x1b[1;31mincompatible\x1b[0m  2 nodes"), std::string::npos);
  EXPECT_NE(coloured.find("  \x1b[1;32mcompatible\x1b[0m  1 node"), std::string::npos);
  EXPECT_NE(coloured.find("    \x1b[1;31mx \x1b[0m[cuda-driver]"), std::string::npos);
  EXPECT_NE(coloured.find("      \x1b[1mfix:\x1b[0m upgrade"), std::string::npos);
  EXPECT_NE(coloured.find("12.4  \x1b[2m(inference)\x1b[0m"), std::string::npos);
  Decision pass = partial_trainer();
  pass.verdict = Verdict::pass;
  EXPECT_TRUE(decision_text(pass, true).starts_with("\x1b[1;32mPASS\x1b[0m"));
  Decision fail = partial_trainer();
  fail.verdict = Verdict::fail;
  EXPECT_TRUE(decision_text(fail, true).starts_with("\x1b[1;31mFAIL\x1b[0m"));
  Decision skip = partial_trainer();
  skip.verdict = Verdict::skip;
  EXPECT_TRUE(decision_text(skip, true).starts_with("\x1b[2mSKIP\x1b[0m"));
}

TEST(DecisionText, DecisionOfEvaluateOnTheCliFleet) {
  // tests/fixtures/cli/pod.yaml on nodes.json, as `check -f pod.yaml` prints it.
  const auto nodes =
      parse_nodes(test_support::file_text(test_support::test_data("cli/nodes.json")), "nodes.json");
  ASSERT_TRUE(nodes) << nodes.error().str();
  const Inventory inventory = Inventory::build(*nodes, test_support::db());
  const auto workloads =
      parse_workloads(test_support::file_text(test_support::test_data("cli/pod.yaml")), "pod.yaml");
  ASSERT_TRUE(workloads) << workloads.error().str();
  ASSERT_EQ(workloads->size(), 1U);
  const auto decision =
      evaluate(workloads->front(), inventory, Policy{}, test_support::db(), EvaluationInputs{});
  ASSERT_TRUE(decision) << decision.error().str();
  const std::string text = decision_text(*decision);
  EXPECT_TRUE(text.starts_with("FAIL  Pod ml/trainer: 0 of 2 candidate nodes can run it\n"))
      << text;
  EXPECT_NE(text.find("\n    cuda     12.4  (inference)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n  incompatible  2 nodes: gpu-t4-1, gpu-t4-2\n"
                      "    driver 535.129.03, max CUDA 12.2, compute capability 7.5"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    x [cuda-driver] train: needs CUDA 12.4; driver 535.129.03 supports "
                      "up to CUDA 12.2\n      fix: "),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace cudagate::cli

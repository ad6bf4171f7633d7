// What the webhook does with a decision: denial messages a person can act on, warnings, audit
// annotations and pins, and the unpinnable, input-error and internal-error cases.
#include "admission/enforcement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "admission/admission_response.h"

namespace cudagate {
namespace {

const char* kDriverFix =
    "upgrade the driver to 550.54.14 or newer, or use an image built for CUDA 12.2 or older";

std::vector<std::string> names(const std::string& prefix, int n) {
  std::vector<std::string> out;
  for (int i = 1; i <= n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

ContainerDecision train(const std::string& cuda_source) {
  ContainerDecision c;
  c.name = "train";
  c.image = "registry.example.com/ml/train:2024.05";
  c.gpu = true;
  c.cuda = {"12.4", cuda_source};
  c.require = {"cuda>=12.4", cuda_source};
  return c;
}

GroupDecision group(std::size_t index, std::size_t count, std::vector<std::string> nodes,
                    Outcome outcome, std::vector<Finding> findings) {
  GroupDecision g;
  g.group = index;
  g.count = count;
  g.nodes = std::move(nodes);
  g.outcome = outcome;
  g.findings = std::move(findings);
  return g;
}

Decision base(Verdict verdict) {
  Decision d;
  d.resource = {"v1", "Pod", "ml", "trainer-0"};
  d.verdict = verdict;
  return d;
}

// The seed scenario: CUDA 12.4 from the pod's env on 8 nodes with driver 535.
Decision fail_cuda124() {
  Decision d = base(Verdict::fail);
  d.containers = {train("env")};
  d.candidates = 8;
  d.groups = {group(0, 8, names("gpu-t4-", 8), Outcome::incompatible,
                    {{Rule::cuda_driver, "train",
                      "needs CUDA 12.4; driver 535.129.03 supports up to CUDA 12.2", kDriverFix}})};
  return d;
}

// TORCH_CUDA_ARCH_LIST="8.0" on 4 T4 and 4 A100 nodes.
Decision partial_arch80() {
  Decision d = base(Verdict::partial);
  ContainerDecision c;
  c.name = "train";
  c.gpu = true;
  c.cuda = {"12.1", "env"};
  c.archs = {"8.0", "env"};
  d.containers = {c};
  d.candidates = 8;
  d.compatible = 4;
  d.groups = {
      group(0, 4, names("gpu-t4-", 4), Outcome::incompatible,
            {{Rule::gpu_arch, "train",
              "compiled for 8.0 (TORCH_CUDA_ARCH_LIST, env); no kernel image for compute "
              "capability 7.5 (Tesla-T4)",
              "add 7.5 to the arch list (TORCH_CUDA_ARCH_LIST=\"7.5;8.0\"), or add +PTX to an "
              "entry at or below 7.5"}}),
      group(1, 4, names("gpu-a100-", 4), Outcome::compatible, {})};
  return d;
}

Decision unknown_image() {
  Decision d = base(Verdict::unknown);
  ContainerDecision c;
  c.name = "train";
  c.gpu = true;
  d.containers = {c};
  d.candidates = 2;
  d.unknown_image = true;
  d.groups = {
      group(0, 2, names("gpu-a100-", 2), Outcome::unknown,
            {{Rule::cuda_driver, "train",
              "the image's CUDA version is unknown (no CUDA_VERSION, NVIDIA_REQUIRE_CUDA or "
              "com.nvidia.cuda.version)",
              "annotate the pod with cudagate.io/cuda-version", true}})};
  return d;
}

Decision unknown_node() {
  Decision d = base(Verdict::unknown);
  d.containers = {train("env")};
  d.candidates = 3;
  d.unknown_node = true;
  d.groups = {group(0, 3, names("gpu-x-", 3), Outcome::unknown,
                    {{Rule::cuda_driver, "train", "the node's driver version is unknown",
                      "label the nodes with cudagate.io/driver-version", true}})};
  return d;
}

Decision unknown_both() {
  Decision d = unknown_image();
  d.unknown_node = true;
  return d;
}

Decision unknown_plain() {
  Decision d = unknown_node();
  d.unknown_node = false;
  return d;
}

Decision no_candidates() {
  Decision d = base(Verdict::no_candidates);
  d.containers = {train("env")};
  d.reason = "none of the 9 nodes passes the pod's nodeSelector";
  return d;
}

Decision pass() {
  Decision d = base(Verdict::pass);
  d.containers = {train("env")};
  d.candidates = 4;
  d.compatible = 4;
  d.groups = {group(0, 4, names("gpu-h100-", 4), Outcome::compatible, {})};
  return d;
}

Decision skip() {
  Decision d = base(Verdict::skip);
  d.reason = "no GPU container";
  return d;
}

Decision as_deployment(Decision d) {
  d.resource = {"apps/v1", "Deployment", "ml", "resnet"};
  return d;
}

struct Row {
  std::string name;
  std::function<Decision()> decision;
  Mode mode;
  Endpoint endpoint;
  bool controller;
  std::function<void(Policy&)> tweak;
  EnforcementAction expected;
  std::string text;  // found in the message (deny) or the first warning; "" for none
};

void PrintTo(const Row& row, std::ostream* os) {
  *os << row.name;
}

void none(Policy&) {}

class Enforce : public testing::TestWithParam<Row> {};

const std::string* annotation(const Enforcement& e, std::string_view key) {
  for (const auto& [k, v] : e.audit_annotations) {
    if (k == key) return &v;
  }
  return nullptr;
}

TEST_P(Enforce, Table) {
  const Row& row = GetParam();
  Policy policy;
  row.tweak(policy);
  const Decision d = row.decision();
  const Enforcement e = enforce(d, policy, {row.mode, row.endpoint, row.controller});
  EXPECT_EQ(e.action, row.expected) << to_string(e.action);

  // Messages belong to their actions only.
  EXPECT_EQ(e.message.empty(), e.action != EnforcementAction::deny) << e.message;
  EXPECT_EQ(e.pin_reason.empty(), e.action != EnforcementAction::patch);
  if (row.mode == Mode::dryrun || e.action == EnforcementAction::allow) {
    EXPECT_TRUE(e.warnings.empty()) << e.warnings.front();
  }
  if (e.action == EnforcementAction::warn) {
    EXPECT_FALSE(e.warnings.empty());
  }
  if (!row.text.empty()) {
    const std::string& where = e.action == EnforcementAction::deny ? e.message : e.warnings.at(0);
    EXPECT_NE(where.find(row.text), std::string::npos) << where;
  }
  if (e.action == EnforcementAction::deny) {
    EXPECT_EQ(e.message.rfind("cudagate: ", 0), 0U);
  }

  // Warnings the API server keeps as they are.
  EXPECT_LE(e.warnings.size(), kMaxWarnings);
  EXPECT_EQ(sanitize_warnings(e.warnings), e.warnings);
  for (const auto& w : e.warnings) EXPECT_LE(rune_count(w), kMaxWarningRunes) << w;

  // Every evaluated GPU workload is recorded; a skip is not.
  if (d.verdict == Verdict::skip) {
    EXPECT_TRUE(e.audit_annotations.empty());
  } else {
    ASSERT_NE(annotation(e, kAuditVerdict), nullptr);
    EXPECT_EQ(*annotation(e, kAuditVerdict), to_string(d.verdict));
    EXPECT_EQ(*annotation(e, kAuditDecision), to_string(e.action));
    EXPECT_EQ(*annotation(e, kAuditMode), to_string(row.mode));
    EXPECT_EQ(annotation(e, kAuditEnforceDecision) != nullptr, row.mode != Mode::enforce);
  }
  for (const auto& [k, v] : e.audit_annotations) {
    EXPECT_TRUE(valid_audit_annotation_key(k)) << k;
    EXPECT_FALSE(v.empty()) << k;
  }
}

const auto V = Endpoint::validate;
const auto M = Endpoint::mutate;
const auto kAllow = EnforcementAction::allow;
const auto kDeny = EnforcementAction::deny;
const auto kWarn = EnforcementAction::warn;
const auto kPatch = EnforcementAction::patch;

INSTANTIATE_TEST_SUITE_P(
    Modes, Enforce,
    testing::Values(
        Row{"pass_enforce", pass, Mode::enforce, V, false, none, kAllow, ""},
        Row{"pass_warn", pass, Mode::warn, M, false, none, kAllow, ""},
        Row{"skip_enforce", skip, Mode::enforce, V, false, none, kAllow, ""},
        Row{"fail_enforce_validate", fail_cuda124, Mode::enforce, V, false, none, kDeny,
            "550.54.14"},
        Row{"fail_enforce_mutate", fail_cuda124, Mode::enforce, M, false, none, kDeny,
            "8 of 8 candidate nodes cannot run it"},
        Row{"fail_enforce_controller", [] { return as_deployment(fail_cuda124()); }, Mode::enforce,
            V, true, none, kDeny, "container \"train\""},
        Row{"fail_warn", fail_cuda124, Mode::warn, V, false, none, kWarn,
            "cudagate: this pod would be denied in enforce mode"},
        Row{"fail_warn_mutate", fail_cuda124, Mode::warn, M, false, none, kWarn, "enforce mode"},
        Row{"fail_dryrun", fail_cuda124, Mode::dryrun, V, false, none, kAllow, ""},
        Row{"partial_validate_deny", partial_arch80, Mode::enforce, V, false, none, kDeny,
            "The 4 compatible nodes (gpu-a100-1, gpu-a100-2, gpu-a100-3, ...) can run it"},
        Row{"partial_validate_warn", partial_arch80, Mode::enforce, V, false,
            [](Policy& p) { p.partial = PartialAction::warn; }, kWarn,
            "cudagate: only 4 of 8 candidate nodes can run this pod"},
        Row{"partial_controller_pinned_later", [] { return as_deployment(partial_arch80()); },
            Mode::enforce, V, true, none, kWarn,
            "can run this deployment's pods; they will be pinned to them at creation"},
        Row{"partial_controller_no_mutation", [] { return as_deployment(partial_arch80()); },
            Mode::enforce, V, true, [](Policy& p) { p.mutate = false; }, kDeny,
            "4 of 8 candidate nodes cannot run it"},
        Row{"partial_controller_warn_mode", [] { return as_deployment(partial_arch80()); },
            Mode::warn, V, true, none, kWarn, "the scheduler may pick one that cannot"},
        Row{"partial_mutate", partial_arch80, Mode::enforce, M, false, none, kPatch,
            "cudagate: pinned to the 4 of 8 candidate nodes that can run it"},
        Row{"partial_mutate_controller", [] { return as_deployment(partial_arch80()); },
            Mode::enforce, M, true, none, kPatch, "pinned"},
        Row{"partial_mutate_off", partial_arch80, Mode::enforce, M, false,
            [](Policy& p) { p.mutate = false; }, kAllow, ""},
        Row{"partial_warn_mutate", partial_arch80, Mode::warn, M, false, none, kWarn,
            "cudagate: only 4 of 8"},
        Row{"partial_dryrun_mutate", partial_arch80, Mode::dryrun, M, false, none, kAllow, ""},
        Row{"unknown_image_warn", unknown_image, Mode::enforce, V, false, none, kWarn,
            "2 of 2 candidate nodes may not run it"},
        Row{"unknown_image_deny", unknown_image, Mode::enforce, V, false,
            [](Policy& p) { p.unknown_image = Action::deny; }, kDeny,
            "the image's CUDA version is unknown"},
        Row{"unknown_image_allow", unknown_image, Mode::enforce, V, false,
            [](Policy& p) { p.unknown_image = Action::allow; }, kAllow, ""},
        Row{"unknown_image_deny_warn_mode", unknown_image, Mode::warn, V, false,
            [](Policy& p) { p.unknown_image = Action::deny; }, kWarn, "would be denied"},
        Row{"unknown_node_deny", unknown_node, Mode::enforce, M, false,
            [](Policy& p) { p.unknown_node = Action::deny; }, kDeny,
            "the node's driver version is unknown"},
        Row{"unknown_node_image_policy_ignored", unknown_node, Mode::enforce, V, false,
            [](Policy& p) { p.unknown_image = Action::deny; }, kWarn, "may not run it"},
        Row{"unknown_both_strictest", unknown_both, Mode::enforce, V, false,
            [](Policy& p) {
              p.unknown_image = Action::allow;
              p.unknown_node = Action::deny;
            },
            kDeny, ""},
        Row{"unknown_plain_is_the_image", unknown_plain, Mode::enforce, V, false,
            [](Policy& p) {
              p.unknown_image = Action::deny;
              p.unknown_node = Action::allow;
            },
            kDeny, ""},
        Row{"no_candidates_warn", no_candidates, Mode::enforce, V, false, none, kWarn,
            "cudagate: no node can take this pod: none of the 9 nodes"},
        Row{"no_candidates_deny", no_candidates, Mode::enforce, V, false,
            [](Policy& p) { p.no_candidates = Action::deny; }, kDeny,
            "cudagate: no node can take this pod: none of the 9 nodes passes the pod's "
            "nodeSelector."},
        Row{"no_candidates_allow", no_candidates, Mode::enforce, V, false,
            [](Policy& p) { p.no_candidates = Action::allow; }, kAllow, ""},
        Row{"no_candidates_dryrun", no_candidates, Mode::dryrun, V, false,
            [](Policy& p) { p.no_candidates = Action::deny; }, kAllow, ""}),
    [](const auto& p) { return p.param.name; });

TEST(Enforce, DenialMessageIsOnePersonCanActOn) {
  const Enforcement e = enforce(fail_cuda124(), Policy{}, {Mode::enforce, V, false});
  EXPECT_EQ(e.message,
            "cudagate: container \"train\" needs CUDA 12.4 (from env); 8 of 8 candidate nodes "
            "cannot run it: driver 535.129.03 supports up to CUDA 12.2 (gpu-t4-1, gpu-t4-2, "
            "gpu-t4-3, ...). Fix: upgrade the driver to 550.54.14 or newer, or use an image "
            "built for CUDA 12.2 or older.");
}

TEST(Enforce, PartialDenialNamesBothSides) {
  const Enforcement e = enforce(partial_arch80(), Policy{}, {Mode::enforce, V, false});
  EXPECT_EQ(e.message,
            "cudagate: container \"train\" compiled for 8.0 (TORCH_CUDA_ARCH_LIST, env); 4 of 8 "
            "candidate nodes cannot run it: no kernel image for compute capability 7.5 "
            "(Tesla-T4) (gpu-t4-1, gpu-t4-2, gpu-t4-3, ...). Fix: add 7.5 to the arch list "
            "(TORCH_CUDA_ARCH_LIST=\"7.5;8.0\"), or add +PTX to an entry at or below 7.5. The 4 "
            "compatible nodes (gpu-a100-1, gpu-a100-2, gpu-a100-3, ...) can run it: select them "
            "with a nodeSelector or node affinity on their GPU labels.");
}

TEST(Enforce, SameFindingOnSeveralGroupsIsOneStatement) {
  Decision d = fail_cuda124();
  d.candidates = 10;
  d.groups.push_back(
      group(1, 2, {"gpu-a100-1", "gpu-a100-2"}, Outcome::incompatible, d.groups[0].findings));
  const Enforcement e = enforce(d, Policy{}, {Mode::enforce, V, false});
  EXPECT_NE(e.message.find("10 of 10 candidate nodes cannot run it"), std::string::npos)
      << e.message;
  EXPECT_EQ(e.message.find("Fix:"), e.message.rfind("Fix:"));
}

TEST(Enforce, ManyFindingsAreBounded) {
  Decision d = base(Verdict::fail);
  d.candidates = 40;
  for (int i = 0; i < 20; ++i) {
    d.groups.push_back(group(
        static_cast<std::size_t>(i), 2, names("n" + std::to_string(i) + "-", 2),
        Outcome::incompatible,
        {{Rule::cuda_driver, "c" + std::to_string(i),
          "needs CUDA 12.4; driver 1." + std::to_string(i) + " is old", std::string(200, 'f')}}));
  }
  for (const Mode mode : {Mode::enforce, Mode::warn}) {
    const Enforcement e = enforce(d, Policy{}, {mode, V, false});
    if (mode == Mode::enforce) {
      EXPECT_NE(e.message.find("16 more findings: run cudagate check"), std::string::npos);
      EXPECT_LT(e.message.size(), 2000U);
    } else {
      EXPECT_LE(e.warnings.size(), kMaxWarnings);
      EXPECT_EQ(sanitize_warnings(e.warnings), e.warnings);
    }
  }
}

TEST(Enforce, WarningsCarryTheFindingAndTheFix) {
  const Enforcement e = enforce(fail_cuda124(), Policy{}, {Mode::warn, V, false});
  ASSERT_EQ(e.warnings.size(), 3U);
  EXPECT_EQ(e.warnings[1],
            "cudagate: container \"train\" needs CUDA 12.4 (from env); 8 of 8 candidate nodes "
            "cannot run it: driver 535.129.03 supports up to CUDA 12.2");
  EXPECT_EQ(e.warnings[2], std::string("cudagate: fix for container \"train\": ") + kDriverFix);
}

// Notes (an image's scan disagreeing with its variables, a file not
// counted that lacks a candidate's kernels) warn, and never deny.
TEST(Enforce, NotesAreWarningsUnlessDenied) {
  Decision passing = pass();
  passing.notes = {"container \"train\": /opt/flash.so has kernels for 9.0: ..."};
  const Enforcement allowed = enforce(passing, Policy{}, {Mode::enforce, V, false});
  EXPECT_EQ(allowed.action, EnforcementAction::allow);
  EXPECT_EQ(allowed.warnings,
            std::vector<std::string>{"cudagate: container \"train\": /opt/flash.so has kernels "
                                     "for 9.0: ..."});
  Decision failing = fail_cuda124();
  failing.notes = passing.notes;
  const Enforcement denied = enforce(failing, Policy{}, {Mode::enforce, V, false});
  EXPECT_EQ(denied.action, EnforcementAction::deny);
  EXPECT_TRUE(denied.warnings.empty());
}

TEST(Enforce, AuditAnnotationsCarryTheFindings) {
  const Enforcement e = enforce(fail_cuda124(), Policy{}, {Mode::dryrun, V, false});
  ASSERT_NE(annotation(e, "cuda-driver"), nullptr);
  EXPECT_NE(annotation(e, "cuda-driver")->find("needs CUDA 12.4 (from env)"), std::string::npos);
  EXPECT_EQ(annotation(e, "gpu-arch"), nullptr);
  EXPECT_EQ(*annotation(e, kAuditEnforceDecision), "deny");
  EXPECT_EQ(*annotation(e, kAuditCandidates), "8");
  EXPECT_EQ(*annotation(e, kAuditCompatible), "0");
  EXPECT_NE(annotation(e, kAuditFindings)->find("Fix: upgrade the driver"), std::string::npos);
}

TEST(Enforce, PatchRecordsThePin) {
  const Enforcement e = enforce(partial_arch80(), Policy{}, {Mode::enforce, M, false});
  ASSERT_EQ(e.action, EnforcementAction::patch);
  EXPECT_EQ(e.pin_reason,
            "pinned to the 4 of 8 candidate nodes that can run it; the other 4 cannot: container "
            "\"train\" compiled for 8.0 (TORCH_CUDA_ARCH_LIST, env); no kernel image for compute "
            "capability 7.5 (Tesla-T4)");
  ASSERT_NE(annotation(e, kAuditPinned), nullptr);
  EXPECT_EQ(*annotation(e, kAuditPinned), e.pin_reason);
}

TEST(EnforceUnpinnable, DeniesOrWarnsByThePartialPolicy) {
  const std::string why = "more than 50 nodes would have to be named";
  const Enforcement denied =
      enforce_unpinnable(partial_arch80(), Policy{}, {Mode::enforce, M, false}, why);
  EXPECT_EQ(denied.action, EnforcementAction::deny);
  EXPECT_NE(denied.message.find("cannot pin this pod to the nodes that can run it: " + why),
            std::string::npos)
      << denied.message;
  EXPECT_TRUE(denied.pin_reason.empty());
  EXPECT_EQ(*annotation(denied, kAuditDecision), "deny");
  EXPECT_EQ(annotation(denied, kAuditPinned), nullptr);

  Policy lenient;
  lenient.partial = PartialAction::warn;
  const Enforcement warned =
      enforce_unpinnable(partial_arch80(), lenient, {Mode::enforce, M, false}, why);
  EXPECT_EQ(warned.action, EnforcementAction::warn);
  EXPECT_NE(warned.warnings.at(0).find(why), std::string::npos);
  EXPECT_NE(annotation(warned, kAuditError), nullptr);

  // Nothing to pin: unchanged.
  const Enforcement failed =
      enforce_unpinnable(fail_cuda124(), Policy{}, {Mode::enforce, M, false}, why);
  EXPECT_EQ(failed.message, enforce(fail_cuda124(), Policy{}, {Mode::enforce, M, false}).message);
}

TEST(EnforceInputError, DeniesInEnforceWarnsInWarnRecordsInDryrun) {
  const Error error{"metadata.annotations.cudagate.io/cuda-version",
                    "expected a CUDA version like 12.4, got \"12.x\""};
  const Enforcement enforced =
      enforce_input_error(error, "Pod \"ml/x\"", {Mode::enforce, V, false});
  EXPECT_EQ(enforced.action, EnforcementAction::deny);
  EXPECT_EQ(enforced.message,
            "cudagate: cannot evaluate Pod \"ml/x\": metadata.annotations.cudagate.io/"
            "cuda-version: expected a CUDA version like 12.4, got \"12.x\".");
  const Enforcement warned = enforce_input_error(error, "Pod \"ml/x\"", {Mode::warn, V, false});
  EXPECT_EQ(warned.action, EnforcementAction::warn);
  ASSERT_EQ(warned.warnings.size(), 1U);
  const Enforcement recorded = enforce_input_error(error, "Pod \"ml/x\"", {Mode::dryrun, V, false});
  EXPECT_EQ(recorded.action, EnforcementAction::allow);
  EXPECT_TRUE(recorded.warnings.empty());
  ASSERT_NE(annotation(recorded, kAuditError), nullptr);
  EXPECT_NE(annotation(recorded, kAuditError)->find("12.x"), std::string::npos);
}

TEST(EnforceInternalError, FollowsOnError) {
  Policy allow;
  Policy deny;
  deny.on_error = Action::deny;
  const Enforcement a = enforce_internal_error("boom", allow, {Mode::enforce, V, false});
  EXPECT_EQ(a.action, EnforcementAction::allow);
  EXPECT_TRUE(a.internal_error);
  EXPECT_FALSE(a.warnings.empty());
  const Enforcement d = enforce_internal_error("boom", deny, {Mode::enforce, V, false});
  EXPECT_EQ(d.action, EnforcementAction::deny);
  EXPECT_TRUE(d.internal_error);
  EXPECT_NE(d.message.find("boom"), std::string::npos);
  EXPECT_EQ(enforce_internal_error("boom", deny, {Mode::warn, V, false}).action,
            EnforcementAction::allow);
  const Enforcement dry = enforce_internal_error("boom", deny, {Mode::dryrun, V, false});
  EXPECT_EQ(dry.action, EnforcementAction::allow);
  EXPECT_TRUE(dry.warnings.empty());
}

}  // namespace
}  // namespace cudagate

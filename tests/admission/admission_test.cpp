// The admission handler end to end on captured-shape reviews against the test fleet: each mode,
// /validate and /mutate, Pods and controllers, untouched requests, and bad bodies answered 400.
#include "admission/admission.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <memory>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "admission/admission_response.h"
#include "policy/inventory/inventory.h"
#include "policy/objects/node.h"
#include "tests/support/fixtures.h"

namespace cudagate {
namespace {

using test_support::base64_decode;
using test_support::db;
using test_support::fixture;
using test_support::fleet;

using nlohmann::json;

// One workspace for every admission of these tests, as a server thread
// keeps one from admission to admission.
AdmissionWorkspace& workspace() {
  static AdmissionWorkspace shared;
  return shared;
}

json review(const std::string& name) {
  return json::parse(fixture(name));
}

// What the API server checks of one answer (k8s.io/apiserver
// pkg/admission/plugin/webhook/request/admissionreview.go, VerifyAdmissionResponse).
json check_contract(const AdmissionOutcome& out, const json& sent, Endpoint endpoint) {
  EXPECT_EQ(out.http_status, 200) << out.body;
  EXPECT_EQ(out.content_type, "application/json");
  const json body = json::parse(out.body);
  EXPECT_EQ(body["apiVersion"], sent["apiVersion"]);
  EXPECT_EQ(body["kind"], "AdmissionReview");
  const json& r = body.at("response");
  EXPECT_EQ(r.at("uid"), sent["request"]["uid"]);
  EXPECT_EQ(out.uid, sent["request"]["uid"]);
  EXPECT_TRUE(r.at("allowed").is_boolean());
  if (endpoint == Endpoint::validate) {
    EXPECT_FALSE(r.contains("patch"));
    EXPECT_FALSE(r.contains("patchType"));
  } else {
    EXPECT_EQ(r.contains("patch"), r.contains("patchType"));
    if (r.contains("patchType")) {
      EXPECT_EQ(r["patchType"], "JSONPatch");
      EXPECT_TRUE(r["allowed"].get<bool>());
      const json ops = json::parse(base64_decode(r["patch"]));
      EXPECT_TRUE(ops.is_array());
      EXPECT_FALSE(ops.empty());
    }
  }
  if (!r["allowed"].get<bool>()) {
    EXPECT_GE(r["status"]["code"].get<int>(), 400);
    EXPECT_EQ(r["status"]["status"], "Failure");
    EXPECT_FALSE(r["status"]["message"].get<std::string>().empty());
  }
  if (r.contains("warnings")) {
    std::vector<std::string> warnings = r["warnings"];
    EXPECT_LE(warnings.size(), kMaxWarnings);
    EXPECT_EQ(sanitize_warnings(warnings), warnings);
  }
  if (r.contains("auditAnnotations")) {
    for (const auto& [key, value] : r["auditAnnotations"].items()) {
      EXPECT_TRUE(valid_audit_annotation_key(key)) << key;
      EXPECT_TRUE(value.is_string());
    }
  }
  return r;
}

struct Call {
  AdmissionOutcome outcome;
  json response;
};

Call call(Endpoint endpoint, const json& sent, std::string_view mode = "",
          const Policy& policy = Policy{}) {
  const AdmissionContext context{db(), policy, fleet()};
  Call c{handle_admission(endpoint, mode, sent.dump(), context, workspace()), {}};
  c.response = check_contract(c.outcome, sent, endpoint);
  return c;
}

json apply_patch(const json& doc, const json& response) {
  return doc.patch(json::parse(base64_decode(response["patch"])));
}

std::string message(const Call& c) {
  return c.response["status"]["message"];
}

// --- bad input: 400 with a JSON error body ---

struct BadRow {
  std::string name;
  std::string body;
  std::string mode;
  std::string error;
};

void PrintTo(const BadRow& row, std::ostream* os) {
  *os << row.name;
}

class BadInput : public testing::TestWithParam<BadRow> {};

TEST_P(BadInput, Is400WithAnErrorBody) {
  const AdmissionContext context{db(), Policy{}, fleet()};
  const auto out =
      handle_admission(Endpoint::validate, GetParam().mode, GetParam().body, context, workspace());
  EXPECT_EQ(out.http_status, 400);
  EXPECT_EQ(out.content_type, "application/json");
  const json body = json::parse(out.body);
  ASSERT_TRUE(body.contains("error")) << out.body;
  EXPECT_NE(body["error"].get<std::string>().find(GetParam().error), std::string::npos)
      << body["error"];
  EXPECT_FALSE(out.record.has_value());
}

std::string truncated() {
  const std::string full = fixture("pod-cuda124.json");
  return full.substr(0, full.size() / 2);
}

INSTANTIATE_TEST_SUITE_P(
    Bodies, BadInput,
    testing::Values(BadRow{"not_json", "<html>", "", "request body is not JSON"},
                    BadRow{"truncated", truncated(), "", "request body is truncated JSON"},
                    BadRow{"not_a_review",
                           R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"}})", "",
                           "expected kind AdmissionReview, got \"Pod\""},
                    BadRow{"missing_request",
                           R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})", "",
                           "AdmissionReview has no request"},
                    BadRow{"create_without_object",
                           R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
                   "request":{"uid":"u","operation":"CREATE","object":null}})",
                           "", "request.object: expected the object being created"},
                    BadRow{"invalid_mode", fixture("pod-cuda124.json"), "strict",
                           "invalid mode parameter \"strict\": expected enforce, warn or dryrun"}),
    [](const auto& p) { return p.param.name; });

// --- the seed scenarios ---

TEST(Admission, Cuda124OnDriver535IsDenied) {
  const json sent = review("pod-cuda124.json");
  const Call c = call(Endpoint::validate, sent);
  EXPECT_FALSE(c.response["allowed"].get<bool>());
  EXPECT_EQ(c.response["status"]["code"], 403);
  EXPECT_EQ(c.response["status"]["reason"], "Forbidden");
  EXPECT_NE(message(c).find("container \"train\" needs CUDA 12.4 (from env); 8 of 8 candidate "
                            "nodes cannot run it: driver 535.129.03 supports up to CUDA 12.2"),
            std::string::npos)
      << message(c);
  EXPECT_NE(message(c).find("upgrade the driver to 550.54.14 or newer"), std::string::npos);
  EXPECT_EQ(c.response["auditAnnotations"]["verdict"], "fail");
  EXPECT_TRUE(c.response["auditAnnotations"].contains("cuda-driver"));
  EXPECT_EQ(c.outcome.verdict, Verdict::fail);
  EXPECT_EQ(c.outcome.decision, AdmissionDecision::deny);
  EXPECT_EQ(c.outcome.mode, Mode::enforce);
  EXPECT_EQ(c.outcome.namespace_, "ml");
  EXPECT_EQ(c.outcome.kind, "Pod");
  EXPECT_EQ(c.outcome.name, "trainer-0");
  EXPECT_FALSE(c.outcome.dry_run);
  ASSERT_TRUE(c.outcome.record.has_value());
  EXPECT_EQ(c.outcome.record->verdict, Verdict::fail);

  // /mutate denies it too: there is nothing to pin it to.
  EXPECT_FALSE(call(Endpoint::mutate, sent).response["allowed"].get<bool>());
}

TEST(Admission, WarnModeAllowsWithWarnings) {
  const Call c = call(Endpoint::validate, review("pod-cuda124.json"), "warn");
  EXPECT_TRUE(c.response["allowed"].get<bool>());
  ASSERT_TRUE(c.response.contains("warnings"));
  EXPECT_EQ(c.response["warnings"][0], "cudagate: this pod would be denied in enforce mode");
  EXPECT_NE(c.response["warnings"].dump().find("550.54.14"), std::string::npos);
  EXPECT_EQ(c.outcome.decision, AdmissionDecision::warn);
  EXPECT_EQ(c.outcome.mode, Mode::warn);
}

TEST(Admission, DryrunOnlyRecords) {
  for (const Endpoint ep : {Endpoint::validate, Endpoint::mutate}) {
    for (const char* name : {"pod-cuda124.json", "pod-arch80.json"}) {
      const Call c = call(ep, review(name), "dryrun");
      EXPECT_TRUE(c.response["allowed"].get<bool>()) << name;
      EXPECT_FALSE(c.response.contains("warnings")) << name;
      EXPECT_FALSE(c.response.contains("patch")) << name;
      EXPECT_EQ(c.response["auditAnnotations"]["mode"], "dryrun");
      EXPECT_EQ(c.outcome.decision, AdmissionDecision::allow);
      EXPECT_EQ(c.outcome.mode, Mode::dryrun);
      EXPECT_TRUE(c.outcome.record.has_value());
    }
  }
  EXPECT_EQ(call(Endpoint::validate, review("pod-cuda124.json"), "dryrun")
                .response["auditAnnotations"]["enforce-decision"],
            "deny");
}

TEST(Admission, PolicyModeAndTheUrlOverride) {
  Policy warn;
  warn.mode = Mode::warn;
  EXPECT_TRUE(call(Endpoint::validate, review("pod-cuda124.json"), "", warn)
                  .response["allowed"]
                  .get<bool>());
  EXPECT_FALSE(call(Endpoint::validate, review("pod-cuda124.json"), "enforce", warn)
                   .response["allowed"]
                   .get<bool>());
}

TEST(Admission, Arch80IsPinnedToTheA100s) {
  const json sent = review("pod-arch80.json");
  const Call c = call(Endpoint::mutate, sent);
  ASSERT_TRUE(c.response.contains("patch")) << c.response.dump();
  EXPECT_EQ(c.outcome.verdict, Verdict::partial);
  EXPECT_EQ(c.outcome.decision, AdmissionDecision::patch);
  EXPECT_NE(c.response["auditAnnotations"]["pinned"].get<std::string>().find("4 of 8"),
            std::string::npos);

  json again = sent;
  again["request"]["object"] = apply_patch(sent["request"]["object"], c.response);
  again["request"]["uid"] = "second-call";
  EXPECT_NE(again["request"]["object"]["metadata"]["annotations"]["cudagate.io/pinned"]
                .get<std::string>()
                .find("pinned to the 4 of 8"),
            std::string::npos);
  const Call second = call(Endpoint::mutate, again);
  EXPECT_FALSE(second.response.contains("patch"));
  EXPECT_EQ(second.outcome.verdict, Verdict::pass);
  ASSERT_TRUE(second.outcome.record.has_value());
  EXPECT_EQ(second.outcome.record->candidates, 4U);
  EXPECT_EQ(second.outcome.record->compatible, 4U);
  // And /validate admits the pinned pod.
  EXPECT_TRUE(call(Endpoint::validate, again).response["allowed"].get<bool>());
}

TEST(Admission, ExistingAffinityIsKeptAndAnded) {
  const json sent = review("pod-arch80-affinity.json");
  const Call c = call(Endpoint::mutate, sent);
  ASSERT_TRUE(c.response.contains("patch"));
  json again = sent;
  again["request"]["object"] = apply_patch(sent["request"]["object"], c.response);
  const json& affinity = again["request"]["object"]["spec"]["affinity"];
  // Each of the 3 existing terms ANDed with each of the 4 pin terms written
  // on the rules (the driver's CUDA 12.1 to 12.9, or 13 and later, each on
  // GFD's newer and older labels; compute capability 8.x).
  EXPECT_EQ(affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                    ["nodeSelectorTerms"]
                        .size(),
            12U);
  EXPECT_EQ(affinity["podAntiAffinity"],
            sent["request"]["object"]["spec"]["affinity"]["podAntiAffinity"]);
  EXPECT_EQ(affinity["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"],
            sent["request"]["object"]["spec"]["affinity"]["nodeAffinity"]
                ["preferredDuringSchedulingIgnoredDuringExecution"]);
  const Call second = call(Endpoint::mutate, again);
  EXPECT_FALSE(second.response.contains("patch"));
  EXPECT_EQ(second.outcome.verdict, Verdict::pass);
}

TEST(Admission, PartialPodOnValidate) {
  const Call denied = call(Endpoint::validate, review("pod-arch80.json"));
  EXPECT_FALSE(denied.response["allowed"].get<bool>());
  EXPECT_NE(message(denied).find("The 4 compatible nodes"), std::string::npos);
  Policy lenient;
  lenient.partial = PartialAction::warn;
  const Call warned = call(Endpoint::validate, review("pod-arch80.json"), "", lenient);
  EXPECT_TRUE(warned.response["allowed"].get<bool>());
  EXPECT_FALSE(warned.response["warnings"].empty());
}

TEST(Admission, MutateInWarnModeDoesNotPatch) {
  const Call c = call(Endpoint::mutate, review("pod-arch80.json"), "warn");
  EXPECT_TRUE(c.response["allowed"].get<bool>());
  EXPECT_FALSE(c.response.contains("patch"));
  EXPECT_FALSE(c.response["warnings"].empty());
}

TEST(Admission, DeploymentIsWarnedThenPinned) {
  const json sent = review("deployment-arch80.json");
  const Call v = call(Endpoint::validate, sent);
  EXPECT_TRUE(v.response["allowed"].get<bool>());
  EXPECT_NE(v.response["warnings"][0].get<std::string>().find("pinned to them at creation"),
            std::string::npos);
  EXPECT_EQ(v.outcome.kind, "Deployment");

  const Call m = call(Endpoint::mutate, sent);
  ASSERT_TRUE(m.response.contains("patch"));
  const json patched = apply_patch(sent["request"]["object"], m.response);
  EXPECT_TRUE(patched["spec"]["template"]["spec"]["affinity"]["nodeAffinity"].contains(
      "requiredDuringSchedulingIgnoredDuringExecution"));
  EXPECT_TRUE(
      patched["spec"]["template"]["metadata"]["annotations"].contains("cudagate.io/pinned"));

  // Its pods, created from the pinned template, pass untouched.
  json pod = review("pod-arch80.json");
  pod["request"]["object"]["spec"] = patched["spec"]["template"]["spec"];
  pod["request"]["object"]["metadata"]["annotations"] =
      patched["spec"]["template"]["metadata"]["annotations"];
  const Call p = call(Endpoint::mutate, pod);
  EXPECT_FALSE(p.response.contains("patch"));
  EXPECT_EQ(p.outcome.verdict, Verdict::pass);
}

TEST(Admission, CronJobV1beta1) {
  const json sent = review("cronjob-arch80-v1beta1.json");
  const Call m = call(Endpoint::mutate, sent);
  ASSERT_TRUE(m.response.contains("patch"));
  const json ops = json::parse(base64_decode(m.response["patch"]));
  EXPECT_EQ(ops[0]["path"], "/spec/jobTemplate/spec/template/spec/affinity");
  const Call v = call(Endpoint::validate, sent);
  EXPECT_TRUE(v.response["allowed"].get<bool>());
}

TEST(Admission, CronJobUpdateOnlyWhenTheTemplateChanges) {
  json sent = review("cronjob-arch80-v1beta1.json");
  sent["request"]["operation"] = "UPDATE";
  sent["request"]["oldObject"] = sent["request"]["object"];
  sent["request"]["object"]["spec"]["schedule"] = "0 3 * * *";
  EXPECT_EQ(call(Endpoint::mutate, sent).outcome.verdict, std::nullopt);
  sent["request"]["object"]["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
      ["image"] = "registry.example.com/ml/train:2024.06";
  const Call changed = call(Endpoint::mutate, sent);
  EXPECT_EQ(changed.outcome.verdict, Verdict::partial);
  EXPECT_TRUE(changed.response.contains("patch"));
}

TEST(Admission, DeploymentUpdate) {
  json sent = review("deployment-arch80.json");
  sent["request"]["operation"] = "UPDATE";
  sent["request"]["oldObject"] = sent["request"]["object"];
  sent["request"]["object"]["spec"]["replicas"] = 5;
  const Call same = call(Endpoint::validate, sent);
  EXPECT_TRUE(same.response["allowed"].get<bool>());
  EXPECT_FALSE(same.response.contains("warnings"));
  EXPECT_FALSE(same.response.contains("auditAnnotations"));
  EXPECT_FALSE(same.outcome.record.has_value());

  auto& env = sent["request"]["object"]["spec"]["template"]["spec"]["containers"][0]["env"];
  env[0]["value"] = "12.4.1";
  env[1]["value"] = "7.5;8.0";
  const Call changed = call(Endpoint::validate, sent);
  EXPECT_FALSE(changed.response["allowed"].get<bool>());
  EXPECT_EQ(changed.outcome.verdict, Verdict::fail);
}

TEST(Admission, UntouchedRequests) {
  const auto untouched = [](const json& sent, Endpoint ep = Endpoint::validate) {
    Call c = call(ep, sent);
    EXPECT_TRUE(c.response["allowed"].get<bool>()) << sent["request"].dump().substr(0, 200);
    EXPECT_FALSE(c.response.contains("warnings"));
    EXPECT_FALSE(c.response.contains("auditAnnotations"));
    EXPECT_FALSE(c.response.contains("patch"));
    EXPECT_FALSE(c.outcome.record.has_value());
    EXPECT_EQ(c.outcome.decision, AdmissionDecision::allow);
    return c;
  };
  json update = review("pod-cuda124.json");
  update["request"]["operation"] = "UPDATE";
  update["request"]["oldObject"] = update["request"]["object"];
  EXPECT_EQ(untouched(update).outcome.verdict, std::nullopt);

  json del = review("pod-cuda124.json");
  del["request"]["operation"] = "DELETE";
  del["request"]["oldObject"] = del["request"]["object"];
  del["request"]["object"] = nullptr;
  untouched(del, Endpoint::mutate);

  json connect = review("pod-cuda124.json");
  connect["request"]["operation"] = "CONNECT";
  connect["request"]["subResource"] = "exec";
  connect["request"]["object"] = {{"kind", "PodExecOptions"}, {"apiVersion", "v1"}};
  untouched(connect);

  json status = review("pod-cuda124.json");
  status["request"]["subResource"] = "status";
  untouched(status);

  json config = review("pod-cpu.json");
  config["request"]["kind"] = {{"group", ""}, {"version", "v1"}, {"kind", "ConfigMap"}};
  config["request"]["object"] = {
      {"kind", "ConfigMap"}, {"apiVersion", "v1"}, {"metadata", {{"name", "c"}}}};
  untouched(config);

  // A custom resource that happens to be called Job.
  json crd = review("deployment-arch80.json");
  crd["request"]["kind"] = {
      {"group", "batch.volcano.sh"}, {"version", "v1alpha1"}, {"kind", "Job"}};
  untouched(crd, Endpoint::mutate);

  json excluded = review("pod-cuda124.json");
  excluded["request"]["namespace"] = "kube-system";
  excluded["request"]["object"]["metadata"]["namespace"] = "kube-system";
  EXPECT_EQ(untouched(excluded).outcome.verdict, Verdict::skip);

  EXPECT_EQ(untouched(review("pod-cpu.json")).outcome.verdict, Verdict::skip);
}

TEST(Admission, ExcludedNamespacesFollowThePolicy) {
  Policy policy;
  policy.exclude_namespaces = {"ml"};
  const Call c = call(Endpoint::validate, review("pod-cuda124.json"), "", policy);
  EXPECT_TRUE(c.response["allowed"].get<bool>());
  EXPECT_EQ(c.outcome.verdict, Verdict::skip);
}

TEST(Admission, RequestDryRunIsEvaluatedAndFlagged) {
  json sent = review("pod-cuda124.json");
  sent["request"]["dryRun"] = true;
  const Call c = call(Endpoint::validate, sent);
  EXPECT_TRUE(c.outcome.dry_run);
  EXPECT_FALSE(c.response["allowed"].get<bool>());
  EXPECT_EQ(c.outcome.verdict, Verdict::fail);
}

TEST(Admission, WrongFieldTypesAreTheUsersInput) {
  const json sent = review("pod-bad-types.json");
  const Call enforced = call(Endpoint::validate, sent);
  EXPECT_FALSE(enforced.response["allowed"].get<bool>());
  EXPECT_EQ(enforced.response["status"]["code"], 403);
  EXPECT_NE(message(enforced).find("nvidia.com/gpu"), std::string::npos) << message(enforced);
  EXPECT_NE(message(enforced).find("Pod \"ml/broken-0\""), std::string::npos);
  EXPECT_EQ(enforced.outcome.verdict, Verdict::unknown);
  EXPECT_EQ(enforced.outcome.decision, AdmissionDecision::deny);

  const Call warned = call(Endpoint::validate, sent, "warn");
  EXPECT_TRUE(warned.response["allowed"].get<bool>());
  EXPECT_NE(warned.response["warnings"][0].get<std::string>().find("nvidia.com/gpu"),
            std::string::npos);

  const Call recorded = call(Endpoint::mutate, sent, "dryrun");
  EXPECT_TRUE(recorded.response["allowed"].get<bool>());
  EXPECT_FALSE(recorded.response.contains("warnings"));
  EXPECT_TRUE(recorded.response["auditAnnotations"].contains("error"));
}

// What the API server would validate is not ours to judge: an object that
// asks for no GPU is admitted untouched however odd it is, and a GPU pod is
// judged on the fields a decision reads, the rest left alone. The shapes are
// those that other projects' AdmissionReview test data holds.
TEST(Admission, NotOursToJudgeIsAdmittedUntouched) {
  struct Row {
    const char* name;
    std::function<void(json&)> edit;
  };
  const Row rows[] = {
      {"object without kind", [](json& r) { r["request"]["object"].erase("kind"); }},
      {"annotation that is a number",
       [](json& r) {
         r["request"]["object"]["metadata"]["annotations"] = {{"replicas", 3}};
       }},
      {"cudagate annotation that is a number",
       [](json& r) {
         r["request"]["object"]["metadata"]["annotations"] = {{"cudagate.io/cuda-version", 12.4}};
       }},
      {"no containers",
       [](json& r) { r["request"]["object"]["spec"]["containers"] = json::array(); }},
      {"containers missing", [](json& r) { r["request"]["object"]["spec"].erase("containers"); }},
      {"spec that is a string", [](json& r) { r["request"]["object"]["spec"] = "x"; }},
      {"nodeSelector that is a number",
       [](json& r) { r["request"]["object"]["spec"]["nodeSelector"] = 5; }},
      {"container name that is a number",
       [](json& r) { r["request"]["object"]["spec"]["containers"][0]["name"] = 7; }},
      {"metadata that is an array",
       [](json& r) { r["request"]["object"]["metadata"] = json::array(); }},
      {"controller without a template",
       [](json& r) {
         r["request"]["kind"] = {{"group", "apps"}, {"version", "v1"}, {"kind", "Deployment"}};
         r["request"]["object"] = {{"kind", "Deployment"},
                                   {"apiVersion", "apps/v1"},
                                   {"metadata", {{"name", "d"}}},
                                   {"spec", json::object()}};
       }},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    json sent = review("pod-cpu.json");
    row.edit(sent);
    for (const Endpoint ep : {Endpoint::validate, Endpoint::mutate}) {
      const Call c = call(ep, sent);
      EXPECT_TRUE(c.response["allowed"].get<bool>()) << c.response.dump();
      EXPECT_FALSE(c.response.contains("warnings"));
      EXPECT_FALSE(c.response.contains("patch"));
      EXPECT_EQ(c.outcome.verdict, Verdict::skip);
      EXPECT_EQ(c.outcome.decision, AdmissionDecision::allow);
    }
  }
}

TEST(Admission, GpuPodsAreJudgedOnWhatADecisionReads) {
  // Judged as they would be without the oddity: CUDA 12.4 is denied on the T4s' driver.
  const std::function<void(json&)> harmless[] = {
      [](json& r) { r["request"]["object"].erase("kind"); },
      [](json& r) { r["request"]["object"]["metadata"]["annotations"]["replicas"] = 3; },
  };
  for (const auto& edit : harmless) {
    json sent = review("pod-cuda124.json");
    edit(sent);
    const Call c = call(Endpoint::validate, sent);
    EXPECT_FALSE(c.response["allowed"].get<bool>());
    EXPECT_EQ(c.outcome.verdict, Verdict::fail) << message(c);
    EXPECT_NE(message(c).find("CUDA 12.4"), std::string::npos) << message(c);
  }
  // A field a decision reads, malformed: denied with the field named.
  struct Row {
    std::function<void(json&)> edit;
    std::string field;
  };
  const Row named[] = {
      {[](json& r) {
         r["request"]["object"]["metadata"]["annotations"]["cudagate.io/cuda-version"] = 12.4;
       },
       "metadata.annotations.cudagate.io/cuda-version"},
      {[](json& r) { r["request"]["object"]["spec"]["nodeSelector"] = 5; }, "spec.nodeSelector"},
  };
  for (const Row& row : named) {
    json sent = review("pod-cuda124.json");
    row.edit(sent);
    const Call c = call(Endpoint::validate, sent);
    EXPECT_FALSE(c.response["allowed"].get<bool>());
    EXPECT_EQ(c.outcome.verdict, Verdict::unknown);
    EXPECT_NE(message(c).find(row.field), std::string::npos) << message(c);
  }
}

TEST(Admission, BadAnnotationValueIsDeniedNamingIt) {
  json sent = review("pod-arch80.json");
  sent["request"]["object"]["metadata"]["annotations"]["cudagate.io/cuda-version"] = "12.x";
  const Call c = call(Endpoint::validate, sent);
  EXPECT_FALSE(c.response["allowed"].get<bool>());
  EXPECT_NE(message(c).find("cudagate.io/cuda-version"), std::string::npos) << message(c);
  EXPECT_NE(message(c).find("12.x"), std::string::npos);
}

TEST(Admission, EmptyInventoryHasNoCandidates) {
  const Inventory empty;
  const Policy policy;
  const AdmissionContext context{db(), policy, empty};
  const json sent = review("pod-cuda124.json");
  const auto out = handle_admission(Endpoint::validate, "", sent.dump(), context, workspace());
  const json r = check_contract(out, sent, Endpoint::validate);
  EXPECT_TRUE(r["allowed"].get<bool>());  // noCandidates: warn
  EXPECT_EQ(out.verdict, Verdict::no_candidates);
  EXPECT_EQ(out.decision, AdmissionDecision::warn);
}

TEST(Admission, SharedCaptureShapesAreAnswered) {
  // The captured requests are bare; wrapped as the contract says.
  for (const char* name : {"pod-cpu.json", "pod-cuda124.json"}) {
    json sent = {{"apiVersion", "admission.k8s.io/v1"},
                 {"kind", "AdmissionReview"},
                 {"request", review(name)["request"]}};
    sent["request"].erase("kind");
    sent["request"].erase("resource");
    sent["request"].erase("namespace");
    const Call c = call(Endpoint::validate, sent);
    EXPECT_EQ(c.outcome.namespace_, "ml");
  }
}

// --- registry facts: the images listed when read, their configs given to the decision ---

ReadReview read_with(const json& sent, const Policy& policy = Policy{},
                     Endpoint endpoint = Endpoint::validate) {
  const AdmissionContext context{db(), policy, fleet()};
  return read_admission(endpoint, "", sent.dump(), context, workspace());
}

AdmissionOutcome decide_with(ReadReview read, const RegistryFacts& facts,
                             const Policy& policy = Policy{}) {
  const AdmissionContext context{db(), policy, fleet()};
  return std::move(decide_admission(read, context, facts, workspace()));
}

json without_pod_env(json sent) {
  for (auto& c : sent["request"]["object"]["spec"]["containers"]) c.erase("env");
  return sent;
}

TEST(RegistryFacts, TheImagesToLookUpAreListedWhenRead) {
  const json sent = without_pod_env(review("pod-cuda124.json"));
  ReadReview read = read_with(sent);
  EXPECT_FALSE(read.answered);
  EXPECT_TRUE(read.outcome.body.empty());
  ASSERT_EQ(read.images.size(), 1U);
  EXPECT_EQ(read.images[0].image, "registry.example.com/ml/train:2024.05");
  EXPECT_EQ(read.images[0].platform, "linux/amd64");

  // Judged without the config when none came.
  const AdmissionOutcome judged = decide_with(std::move(read), RegistryFacts{});
  check_contract(judged, sent, Endpoint::validate);
  EXPECT_EQ(judged.verdict, Verdict::unknown);
}

TEST(RegistryFacts, AGatheredConfigIsTheImagesEnvironment) {
  const json sent = without_pod_env(review("pod-cuda124.json"));
  auto config = std::make_shared<const ImageConfig>(
      ImageConfig{{{"CUDA_VERSION", "12.4.1"}, {"NVIDIA_REQUIRE_CUDA", "cuda>=12.4"}},
                  {},
                  "sha256:abc",
                  nullptr});
  RegistryFacts facts;
  facts.add("registry.example.com/ml/train:2024.05", config);
  const AdmissionOutcome out = decide_with(read_with(sent), facts);
  ASSERT_TRUE(out.record);
  EXPECT_EQ(out.record->containers[0].cuda.source, "registry");
  EXPECT_EQ(out.record->containers[0].cuda.value, "12.4");
  // The same verdict as the image's variables written in the pod.
  EXPECT_EQ(out.verdict, call(Endpoint::validate, review("pod-cuda124.json")).outcome.verdict);
}

TEST(RegistryFacts, NothingIsListedForPodsWithoutGpusCatalogImagesOrWhenDisabled) {
  const ReadReview cpu = read_with(review("pod-cpu.json"));
  EXPECT_TRUE(cpu.answered);
  EXPECT_TRUE(cpu.images.empty());
  EXPECT_EQ(cpu.outcome.verdict, Verdict::skip);

  Policy catalog;
  catalog.images.push_back(CatalogEntry{"registry.example.com/ml/*", "12.1", "8.0", std::nullopt});
  EXPECT_TRUE(read_with(review("pod-cuda124.json"), catalog).images.empty());

  Policy disabled;
  disabled.registry.enabled = false;
  EXPECT_TRUE(read_with(review("pod-cuda124.json"), disabled).images.empty());
}

// While its images are looked up, a read review is detached and its
// workspace reads others: the decision is the one made without waiting,
// from the one parse, the patch of /mutate included.
TEST(RegistryFacts, ADetachedReviewIsDecidedAfterTheWorkspaceReadsOthers) {
  for (const Endpoint endpoint : {Endpoint::validate, Endpoint::mutate}) {
    for (const char* name : {"pod-cuda124.json", "pod-arch80.json"}) {
      const json sent = review(name);
      const AdmissionOutcome at_once = decide_with(read_with(sent, Policy{}, endpoint), {});
      ReadReview read = read_with(sent, Policy{}, endpoint);
      read.detach();
      EXPECT_FALSE(read.object_view.has_value());
      const AdmissionOutcome between = call(endpoint, review("pod-cpu.json")).outcome;
      EXPECT_EQ(between.verdict, Verdict::skip);
      const AdmissionOutcome later = decide_with(std::move(read), {});
      EXPECT_EQ(later.body, at_once.body) << name;
      EXPECT_EQ(later.verdict, at_once.verdict) << name;
      EXPECT_EQ(later.decision, at_once.decision) << name;
    }
    const AdmissionOutcome pinned = decide_with(
        [&] {
          ReadReview read = read_with(review("pod-arch80.json"), Policy{}, endpoint);
          read.detach();
          return read;
        }(),
        {});
    EXPECT_EQ(pinned.decision,
              endpoint == Endpoint::mutate ? AdmissionDecision::patch : AdmissionDecision::deny);
  }
}

}  // namespace
}  // namespace cudagate

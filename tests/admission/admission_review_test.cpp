// Decoding review bodies: captured v1 and v1beta1 shapes, trimmed requests that fall back to the
// object, UPDATE and DELETE, and bodies refused with an error that names the problem.
#include "admission/admission_review.h"

#include <gtest/gtest.h>

#include <fstream>
#include <ostream>
#include <sstream>
#include <string>

#include "tests/support/fixtures.h"

namespace cudagate {
namespace {

using test_support::fixture;

struct BadBody {
  std::string name;
  std::string body;
  std::string error;  // a part of the message
};

void PrintTo(const BadBody& row, std::ostream* os) {
  *os << row.name;
}

class DecodeRejects : public testing::TestWithParam<BadBody> {};

TEST_P(DecodeRejects, NamesTheProblem) {
  const auto& row = GetParam();
  const auto r = decode_admission_review(row.body);
  ASSERT_FALSE(r.has_value()) << row.body;
  EXPECT_NE(r.error().str().find(row.error), std::string::npos) << r.error().str();
}

const std::string kHead = R"({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1",)";

INSTANTIATE_TEST_SUITE_P(
    Bodies, DecodeRejects,
    testing::Values(
        BadBody{"empty", "", "request body is empty"},
        BadBody{"blank", " \n\t", "request body is empty"},
        BadBody{"not_json", "hello", "request body is not JSON: syntax error at byte 1"},
        BadBody{"form", "a=1&b=2", "request body is not JSON"},
        BadBody{"trailing_garbage", kHead + R"("request":{"uid":"u","operation":"CREATE"}} x)",
                "request body is not JSON"},
        BadBody{"truncated", kHead + R"("request":{"uid":"u","operation":"CRE)",
                "request body is truncated JSON"},
        BadBody{"truncated_object", R"({"kind":"AdmissionReview")",
                "request body is truncated JSON"},
        BadBody{"array", "[1,2]", "expected an AdmissionReview object, got a JSON array"},
        BadBody{"string", "\"AdmissionReview\"", "got a JSON string"},
        BadBody{"pod", R"({"kind":"Pod","apiVersion":"v1","metadata":{}})",
                "expected kind AdmissionReview, got \"Pod\""},
        BadBody{"no_kind", R"({"apiVersion":"admission.k8s.io/v1","request":{}})",
                "expected kind AdmissionReview, got no kind"},
        BadBody{"kind_number", R"({"kind":7,"apiVersion":"admission.k8s.io/v1"})", "got a number"},
        BadBody{"other_version", R"({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v2"})",
                "expected apiVersion admission.k8s.io/v1 or admission.k8s.io/v1beta1, got "
                "\"admission.k8s.io/v2\""},
        BadBody{"no_version", R"({"kind":"AdmissionReview","request":{}})", "got none"},
        BadBody{"no_request", kHead + R"("response":{"uid":"u","allowed":true}})",
                "AdmissionReview has no request"},
        BadBody{"null_request", kHead + R"("request":null})", "AdmissionReview has no request"},
        BadBody{"request_string", kHead + R"("request":"x"})",
                "request: expected an object, got string"},
        BadBody{"no_uid", kHead + R"("request":{"operation":"CREATE"}})",
                "request.uid: expected a non-empty string"},
        BadBody{"empty_uid", kHead + R"("request":{"uid":"","operation":"CREATE"}})",
                "request.uid"},
        BadBody{"uid_number", kHead + R"("request":{"uid":5,"operation":"CREATE"}})",
                "request.uid"},
        BadBody{"no_operation", kHead + R"("request":{"uid":"u"}})",
                "request.operation: expected CREATE, UPDATE, DELETE or CONNECT, got \"\""},
        BadBody{"bad_operation", kHead + R"("request":{"uid":"u","operation":"PATCH"}})",
                "got \"PATCH\""},
        BadBody{"object_array",
                kHead + R"("request":{"uid":"u","operation":"CREATE","object":[]}})",
                "request.object: expected an object or null, got array"},
        BadBody{"old_object_string",
                kHead + R"("request":{"uid":"u","operation":"UPDATE","oldObject":"x"}})",
                "request.oldObject"},
        BadBody{"kind_string",
                kHead + R"("request":{"uid":"u","operation":"CREATE","kind":"Pod"}})",
                "request.kind: expected an object, got string"},
        BadBody{"kind_kind_number",
                kHead + R"("request":{"uid":"u","operation":"CREATE","kind":{"kind":1}}})",
                "request.kind.kind: expected a string, got number"},
        BadBody{"namespace_number",
                kHead + R"("request":{"uid":"u","operation":"CREATE","namespace":1}})",
                "request.namespace: expected a string"},
        BadBody{"dry_run_string",
                kHead + R"("request":{"uid":"u","operation":"CREATE","dryRun":"yes"}})",
                "request.dryRun: expected a boolean, got string"},
        BadBody{"too_deep", std::string(300, '[') + std::string(300, ']'),
                "nested deeper than 256 levels"}),
    [](const auto& p) { return p.param.name; });

TEST(DecodeAdmissionReview, DepthInsideStringsDoesNotCount) {
  const std::string brackets(1000, '[');
  const auto r = decode_admission_review(
      kHead + R"("request":{"uid":"u","operation":"CREATE","name":")" + brackets + "\"}}");
  ASSERT_TRUE(r.has_value()) << r.error().str();
  EXPECT_EQ(r->name, brackets);
}

TEST(DecodeAdmissionReview, CapturedShapePodV1) {
  const auto r = decode_admission_review(fixture("pod-cuda124.json"));
  ASSERT_TRUE(r.has_value()) << r.error().str();
  EXPECT_EQ(r->version, ReviewVersion::v1);
  EXPECT_EQ(r->uid, "0b3e2a5c-1f7d-4c1e-9d0a-6a4b2f9e1c01");
  EXPECT_EQ(r->group, "");
  EXPECT_EQ(r->kind, "Pod");
  EXPECT_EQ(r->operation, "CREATE");
  EXPECT_EQ(r->namespace_, "ml");
  EXPECT_EQ(r->name, "trainer-0");
  EXPECT_EQ(r->sub_resource, "");
  EXPECT_FALSE(r->dry_run);
  ASSERT_TRUE(r->object.is_object());
  EXPECT_EQ(r->object["spec"]["containers"][0]["name"], "train");
  EXPECT_TRUE(r->old_object.is_null());
}

TEST(DecodeAdmissionReview, CronJobV1beta1) {
  const auto r = decode_admission_review(fixture("cronjob-arch80-v1beta1.json"));
  ASSERT_TRUE(r.has_value()) << r.error().str();
  EXPECT_EQ(r->version, ReviewVersion::v1beta1);
  EXPECT_EQ(api_version_of(r->version), "admission.k8s.io/v1beta1");
  EXPECT_EQ(r->group, "batch");
  EXPECT_EQ(r->kind, "CronJob");
  EXPECT_EQ(r->name, "nightly-eval");
}

TEST(DecodeAdmissionReview, TrimmedRequestFallsBackToTheObject) {
  // A hand-trimmed review (no kind, namespace or name): the object names itself.
  const auto r = decode_admission_review(kHead + R"("request":{"uid":"u","operation":"CREATE",
      "object":{"apiVersion":"apps/v1","kind":"Deployment",
                "metadata":{"generateName":"web-","namespace":"team-a"}}}})");
  ASSERT_TRUE(r.has_value()) << r.error().str();
  EXPECT_EQ(r->group, "apps");
  EXPECT_EQ(r->kind, "Deployment");
  EXPECT_EQ(r->namespace_, "team-a");
  EXPECT_EQ(r->name, "web-");
}

TEST(DecodeAdmissionReview, UpdateCarriesBothObjectsAndDryRun) {
  const auto r = decode_admission_review(kHead + R"("request":{"uid":"u","operation":"UPDATE",
      "kind":{"group":"apps","version":"v1","kind":"Deployment"},"subResource":"scale",
      "dryRun":true,"object":{"spec":{"replicas":2}},"oldObject":{"spec":{"replicas":1}}}})");
  ASSERT_TRUE(r.has_value()) << r.error().str();
  EXPECT_TRUE(r->dry_run);
  EXPECT_EQ(r->sub_resource, "scale");
  EXPECT_EQ(r->object["spec"]["replicas"], 2);
  EXPECT_EQ(r->old_object["spec"]["replicas"], 1);
}

TEST(DecodeAdmissionReview, DeleteHasNullObject) {
  const auto r = decode_admission_review(kHead + R"("request":{"uid":"u","operation":"DELETE",
      "kind":{"group":"","version":"v1","kind":"Pod"},"object":null,"oldObject":{"kind":"Pod"}}})");
  ASSERT_TRUE(r.has_value()) << r.error().str();
  EXPECT_TRUE(r->object.is_null());
  EXPECT_TRUE(r->old_object.is_object());
}

}  // namespace
}  // namespace cudagate

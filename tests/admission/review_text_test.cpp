// The review parser's managedFields skip: it leaves out exactly that field
// of request.object.metadata (or oldObject's), only when the field's text is
// valid JSON of the plain kind, and otherwise parses the whole text; either
// way the document it gives is the ordinary parse's, less managedFields, and
// it refuses exactly the texts the ordinary parse refuses.
#include "admission/review_text.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "admission/admission.h"
#include "admission/admission_review.h"
#include "tests/support/fixtures.h"

namespace cudagate {
namespace {

using nlohmann::json;
using test_support::fixture;

struct Parsed {
  bool ok = false;
  bool skipped = false;
  json document;
};

Parsed parse_review_text(const std::string& text) {
  ReviewTextParser parser(1024, kMaxReviewDepth);
  Parsed out;
  const auto root = parser.parse(text, &out.skipped);
  out.ok = root.has_value();
  if (root) out.document = to_nlohmann(*root);
  return out;
}

Parsed parse_plain(const std::string& text) {
  PaddedDomParser parser(1024, kMaxReviewDepth);
  Parsed out;
  const auto root = parser.parse(text);
  out.ok = root.has_value();
  if (root) out.document = to_nlohmann(*root);
  return out;
}

const std::string kManaged =
    R"([{"manager":"kubectl-client-side-apply","operation":"Update","apiVersion":"v1",)"
    R"("time":"2024-05-01T10:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":)"
    R"({"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"trainer\"}":)"
    R"({".":{},"f:image":{},"f:env":{"k:{\"name\":\"CUDA_VERSION\"}":{".":{},"f:name":{}}}}}}}},)"
    R"({"manager":"kube-scheduler","operation":"Update","subresource":"status","a":[true,false,null,[],{}]}])";

std::string review_with(const std::string& managed, const std::string& where = "object") {
  return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":)"
         R"({"uid":"u-1","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE",)"
         R"("userInfo":{"username":"a","groups":["g"]},")" +
         where +
         R"(":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"b"},)"
         R"("managedFields":)" +
         managed + R"(,"namespace":"ns"},"spec":{"containers":[{"name":"c","image":"i"}]}}}})";
}

TEST(ReviewText, SkipsManagedFieldsAndKeepsTheRest) {
  for (const std::string where : {"object", "oldObject"}) {
    const std::string text = review_with(kManaged, where);
    const Parsed skipped = parse_review_text(text);
    const Parsed plain = parse_plain(text);
    ASSERT_TRUE(skipped.ok) << where;
    ASSERT_TRUE(plain.ok);
    EXPECT_TRUE(skipped.skipped) << where;
    json expected = plain.document;
    expected["request"][where]["metadata"]["managedFields"] = json::array();
    EXPECT_EQ(skipped.document, expected) << where;
    EXPECT_EQ(json::parse(text)["request"][where]["metadata"]["namespace"], "ns");
  }
}

TEST(ReviewText, SkipsTheFixturesManagedFields) {
  for (const char* name : {"pod-cuda124.json", "pod-arch80.json", "deployment-arch80.json",
                           "cronjob-arch80-v1beta1.json", "pod-bad-types.json"}) {
    const std::string text = fixture(name);
    const Parsed skipped = parse_review_text(text);
    const Parsed plain = parse_plain(text);
    ASSERT_TRUE(skipped.ok && plain.ok) << name;
    EXPECT_TRUE(skipped.skipped) << name;
    json expected = plain.document;
    expected["request"]["object"]["metadata"]["managedFields"] = json::array();
    EXPECT_EQ(skipped.document, expected) << name;
  }
}

// The field in other places is parsed as usual.
TEST(ReviewText, LeavesOtherManagedFieldsAlone) {
  const std::vector<std::string> texts = {
      // Under the pod's spec, in a label, at the top of the review.
      R"({"request":{"object":{"metadata":{"name":"p"},"spec":{"managedFields":[{"a":"b"}]}}}})",
      R"({"request":{"object":{"metadata":{"labels":{"managedFields":"x"}}}}})",
      R"({"managedFields":[{"a":"b"}],"request":{}})",
      R"({"request":{"managedFields":[{"a":"b"}]}})",
      // Not a list, empty, an escaped name.
      R"({"request":{"object":{"metadata":{"managedFields":{"a":"b"}}}}})",
      R"({"request":{"object":{"metadata":{"managedFields":[]}}}})",
      R"({"request":{"object":{"metadata":{"managed\u0046ields":[{"a":"b"}]}}}})",
      // After the first metadata has ended.
      R"({"request":{"object":{"metadata":{"name":"p"}},"oldObject":{"metadata":{"managedFields":[{"a":"b"}]}}}})",
  };
  for (const std::string& text : texts) {
    const Parsed skipped = parse_review_text(text);
    const Parsed plain = parse_plain(text);
    ASSERT_TRUE(skipped.ok && plain.ok) << text;
    EXPECT_EQ(skipped.document, plain.document) << text;
  }
  EXPECT_FALSE(parse_review_text(texts[0]).skipped);
  EXPECT_FALSE(parse_review_text(texts[7]).skipped);
}

// Whatever is wrong inside the field is refused, as by the ordinary parse;
// what is right but outside the plain kind is parsed whole.
TEST(ReviewText, RefusesWhatTheOrdinaryParseRefuses) {
  const std::vector<std::string> bad = {
      R"([{"a":tru}])",      R"([{"a":nul}])",        R"([{"a":truex}])",   R"([{"a":"b"},])",
      R"([{"a":"b",}])",     R"([{"a" "b"}])",        R"([{"a":"b"}}])",    R"([{"a":"b"])",
      R"([{"a":"b""c"}])",   R"([{"a":"x\qy"}])",     R"([{"a":"x\u12"}])", R"([{"a":"\ud800"}])",
      R"([{"a":01}])",       R"([{"a":1.}])",         R"([{,"a":"b"}])",    R"([{"a"::"b"}])",
      R"([{"a":"b"}x])",     R"([{"a":"b"} "c"])",    R"([{"a":[}]}])",     R"([{"a":{]}])",
      R"([{1:"b"}])",        R"([{"a":true false}])", R"([{"a":-}])",       R"([{"a":"b":"c"}])",
      R"([{"a":{}"b":{}}])", R"([{"a":{},}])",        R"([{"a":{}])",       R"([{"a":{}}}])",
      R"([{"a":{}:{}}])",    "[{\"a\":\"x\ty\"}]",    "[{\"a\":\"\xff\"}]", R"([{"a":"b\"}])",
      R"([[[[[[[[]]]]]]])",
  };
  for (const std::string& managed : bad) {
    const std::string text = review_with(managed);
    const Parsed skipped = parse_review_text(text);
    const Parsed plain = parse_plain(text);
    EXPECT_EQ(skipped.ok, plain.ok) << managed;
    EXPECT_EQ(skipped.ok, json::accept(text)) << managed;
    EXPECT_FALSE(skipped.skipped) << managed;
    if (skipped.ok) {
      EXPECT_EQ(skipped.document, plain.document) << managed;
    }
  }
  const std::vector<std::string> unusual = {
      R"([{"a":1}])",
      R"([{"a":-2.5e3}])",
      R"([{"a":"\u00e9"}])",
      R"([{"a":"\ud83d\ude00"}])",
      "[" + std::string(70, '[') + std::string(70, ']') + "]",
  };
  for (const std::string& managed : unusual) {
    const std::string text = review_with(managed);
    const Parsed skipped = parse_review_text(text);
    const Parsed plain = parse_plain(text);
    ASSERT_TRUE(skipped.ok && plain.ok) << managed;
    EXPECT_FALSE(skipped.skipped) << managed;
    EXPECT_EQ(skipped.document, plain.document) << managed;
  }
}

// The benchmark's review, whose managedFields is the one gen.py writes, is
// one the skip applies to.
TEST(ReviewText, SkipsTheBenchmarkReview) {
  std::ifstream in(std::string(CUDAGATE_SOURCE_DIR) + "/bench/data/gpu-pod.json");
  std::stringstream text;
  text << in.rdbuf();
  const Parsed skipped = parse_review_text(text.str());
  ASSERT_TRUE(skipped.ok);
  EXPECT_TRUE(skipped.skipped);
}

// Escapes are checked sixteen bytes at a time: runs of escaped backslashes
// and quotes at every offset across block edges, then a bad escape there.
TEST(ReviewText, ChecksEscapesAtEveryOffset) {
  for (std::size_t pad = 0; pad < 40; ++pad) {
    for (const std::string& body :
         {std::string(R"(\\\\\")"), std::string(R"(\\)"), std::string(R"(\"\\\\)")}) {
      const std::string good = R"([{"k":")" + std::string(pad, 'x') + body + R"(y"}])";
      const Parsed skipped = parse_review_text(review_with(good));
      const Parsed plain = parse_plain(review_with(good));
      ASSERT_TRUE(skipped.ok && plain.ok) << good;
      EXPECT_TRUE(skipped.skipped) << good;
      json expected = plain.document;
      expected["request"]["object"]["metadata"]["managedFields"] = json::array();
      EXPECT_EQ(skipped.document, expected) << good;
    }
    for (const std::string& body : {std::string(R"(\\\q)"), std::string(R"(\\\\\x)")}) {
      const std::string bad = R"([{"k":")" + std::string(pad, 'x') + body + R"(y"}])";
      const Parsed skipped = parse_review_text(review_with(bad));
      EXPECT_FALSE(skipped.ok) << bad;
      EXPECT_FALSE(skipped.skipped) << bad;
    }
  }
}

// A review whose managedFields is broken gets the reference parser's error,
// the same whichever parser handle_admission is told to use.
TEST(ReviewText, BrokenManagedFieldsGetTheReferenceError) {
  const Inventory& fleet = test_support::fleet();
  const Policy policy;
  const AdmissionContext context{test_support::db(), policy, fleet};
  const std::string body = review_with(R"([{"a":"x\qy"}])");
  AdmissionWorkspace workspace;
  const AdmissionOutcome fast = handle_admission(Endpoint::validate, "", body, context, workspace);
  const AdmissionOutcome reference =
      handle_admission(Endpoint::validate, "", body, context, workspace, ReviewParser::reference);
  EXPECT_EQ(fast.http_status, 400);
  EXPECT_EQ(fast.body, reference.body);
}

}  // namespace
}  // namespace cudagate

// The AdmissionReview answer: each constructor's fields in v1 and v1beta1, no patch on
// /validate, and warnings and audit annotations cut and cleaned as the API server requires.
#include "admission/admission_response.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "tests/support/fixtures.h"

namespace cudagate {
namespace {

using nlohmann::json;
using test_support::base64_decode;

TEST(AdmissionResponse, AllowedCarriesOnlyUidAndAllowed) {
  const json r =
      AdmissionResponse::allowed().complete(ReviewVersion::v1, "abc", Endpoint::validate);
  EXPECT_EQ(r, json::parse(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
                               "response":{"uid":"abc","allowed":true}})"));
}

TEST(AdmissionResponse, AnswersInTheVersionAsked) {
  const json r =
      AdmissionResponse::allowed().complete(ReviewVersion::v1beta1, "u-1", Endpoint::mutate);
  EXPECT_EQ(r["apiVersion"], "admission.k8s.io/v1beta1");
  EXPECT_EQ(r["kind"], "AdmissionReview");
  EXPECT_EQ(r["response"]["uid"], "u-1");
}

TEST(AdmissionResponse, DeniedIsForbiddenWithTheMessage) {
  const json r = AdmissionResponse::denied("cudagate: no")
                     .complete(ReviewVersion::v1, "u", Endpoint::validate);
  EXPECT_EQ(r["response"]["allowed"], false);
  EXPECT_EQ(r["response"]["status"], json::parse(R"({"code":403,"status":"Failure",
      "reason":"Forbidden","message":"cudagate: no"})"));
  EXPECT_FALSE(r["response"].contains("patch"));
}

TEST(AdmissionResponse, ErroredIsAnInternalError) {
  const auto e = AdmissionResponse::errored(500, "boom");
  const json r = e.complete(ReviewVersion::v1, "u", Endpoint::validate);
  EXPECT_EQ(r["response"]["allowed"], false);
  EXPECT_EQ(r["response"]["status"]["code"], 500);
  EXPECT_EQ(r["response"]["status"]["reason"], "InternalError");
  EXPECT_EQ(r["response"]["status"]["message"], "boom");
  // A code below 400 would be turned into 400 by the API server; we say 500.
  EXPECT_EQ(AdmissionResponse::errored(200, "x").code(), 500);
}

TEST(AdmissionResponse, PatchOnMutateIsBase64WithPatchType) {
  const json patch = json::parse(R"([{"op":"add","path":"/metadata/annotations","value":{}}])");
  const json r =
      AdmissionResponse::patched(patch).complete(ReviewVersion::v1, "u", Endpoint::mutate);
  EXPECT_EQ(r["response"]["allowed"], true);
  EXPECT_EQ(r["response"]["patchType"], "JSONPatch");
  EXPECT_EQ(json::parse(base64_decode(r["response"]["patch"])), patch);
}

TEST(AdmissionResponse, NoPatchOnValidate) {
  const json patch = json::parse(R"([{"op":"add","path":"/x","value":1}])");
  const json r =
      AdmissionResponse::patched(patch).complete(ReviewVersion::v1, "u", Endpoint::validate);
  EXPECT_FALSE(r["response"].contains("patch"));
  EXPECT_FALSE(r["response"].contains("patchType"));
  EXPECT_EQ(r["response"]["allowed"], true);
}

TEST(AdmissionResponse, EmptyPatchIsNoPatch) {
  const json r =
      AdmissionResponse::patched(json::array()).complete(ReviewVersion::v1, "u", Endpoint::mutate);
  EXPECT_FALSE(r["response"].contains("patch"));
  EXPECT_FALSE(r["response"].contains("patchType"));
}

TEST(AdmissionResponse, WarningsAndAuditAnnotations) {
  auto response = AdmissionResponse::allowed();
  response.with_warning("first").with_warnings({"second", "first"});
  response.with_audit_annotation("verdict", "fail")
      .with_audit_annotation("cudagate.io/bad", "dropped")
      .with_audit_annotation("verdict", "partial");
  const json r = response.complete(ReviewVersion::v1, "u", Endpoint::validate);
  EXPECT_EQ(r["response"]["warnings"], json::parse(R"(["first","second"])"));
  EXPECT_EQ(r["response"]["auditAnnotations"], json::parse(R"({"verdict":"partial"})"));
}

TEST(AdmissionResponse, InvalidUtf8InAMessageStillSerialises) {
  const json r = AdmissionResponse::denied("bad \xff byte")
                     .complete(ReviewVersion::v1, "u", Endpoint::validate);
  const std::string text = r.dump();
  EXPECT_NE(text.find("bad \xEF\xBF\xBD byte"), std::string::npos);
}

// is_valid_utf8() holds exactly for the texts valid_utf8() leaves as they are.
TEST(AdmissionResponse, ValidUtf8AsValidUtf8LeavesIt) {
  const std::vector<std::pair<std::string, bool>> rows = {
      {"", true},
      {"plain ascii", true},
      {"\xc3\xa9", true},                // é
      {"\xe2\x9c\x93", true},            // check mark
      {"\xf0\x9f\x98\x80", true},        // emoji, 4 bytes
      {"\xff", false},                   // never valid
      {"\xc0\xaf", false},               // overlong '/'
      {"\xed\xa0\x80", false},           // surrogate
      {"\xe2\x9c", false},               // cut short
      {"\xf4\x90\x80\x80", false},       // above U+10FFFF
      {"ok \xc3\xa9 then \x80", false},  // a lone continuation byte
  };
  for (const auto& [text, valid] : rows) {
    EXPECT_EQ(is_valid_utf8(text), valid) << text;
    EXPECT_EQ(valid_utf8(text) == text, valid) << text;
  }
}

TEST(AdmissionResponse, LongAuditValuesAreCut) {
  auto response = AdmissionResponse::allowed();
  response.with_audit_annotation("findings", std::string(10000, 'x'));
  const json r = response.complete(ReviewVersion::v1, "u", Endpoint::validate);
  const auto& v = r["response"]["auditAnnotations"]["findings"].get_ref<const std::string&>();
  EXPECT_EQ(v.size(), kMaxAuditAnnotationValueBytes);
  EXPECT_EQ(v.substr(v.size() - 3), "...");
}

struct KeyRow {
  std::string key;
  bool valid;
};

void PrintTo(const KeyRow& row, std::ostream* os) {
  *os << '"' << row.key << '"';
}

class AuditKey : public testing::TestWithParam<KeyRow> {};

TEST_P(AuditKey, QualifiedNamePart) {
  EXPECT_EQ(valid_audit_annotation_key(GetParam().key), GetParam().valid) << GetParam().key;
}

INSTANTIATE_TEST_SUITE_P(
    Keys, AuditKey,
    testing::Values(KeyRow{"verdict", true}, KeyRow{"cuda-driver", true},
                    KeyRow{"enforce-decision", true}, KeyRow{"a", true}, KeyRow{"A.b_c-9", true},
                    KeyRow{std::string(63, 'k'), true}, KeyRow{std::string(64, 'k'), false},
                    KeyRow{"", false}, KeyRow{"-a", false}, KeyRow{"a-", false},
                    KeyRow{".a", false}, KeyRow{"cudagate.io/verdict", false}, KeyRow{"a b", false},
                    KeyRow{"invalid*key", false}, KeyRow{"\xc3\xbc", false}));

TEST(SanitizeWarnings, ControlCharactersBecomeSpaces) {
  EXPECT_EQ(sanitize_warnings({"line one\nline\ttwo\r\n"}),
            std::vector<std::string>{"line one line two"});
  EXPECT_EQ(sanitize_warnings({"a\x7f"
                               "b\xc2\x85"
                               "c"}),
            std::vector<std::string>{"a b c"});
}

TEST(SanitizeWarnings, InvalidUtf8IsReplaced) {
  const auto out = sanitize_warnings({"x\xff\xfey", "over\xc0\xaflong", "cut \xe2\x82"});
  ASSERT_EQ(out.size(), 3U);
  EXPECT_EQ(out[0], "x\xEF\xBF\xBD\xEF\xBF\xBDy");
  EXPECT_EQ(out[1], "over\xEF\xBF\xBD\xEF\xBF\xBDlong");
  EXPECT_EQ(out[2], "cut \xEF\xBF\xBD\xEF\xBF\xBD");
  for (const auto& w : out) EXPECT_EQ(valid_utf8(w), w);
}

TEST(SanitizeWarnings, BlankAndRepeatedAreDropped) {
  EXPECT_EQ(sanitize_warnings({"", " ", "\n", "same", "same", "other"}),
            (std::vector<std::string>{"same", "other"}));
}

TEST(SanitizeWarnings, EachIsCutAt256RunesCountingCodePoints) {
  std::string euros;
  for (int i = 0; i < 300; ++i) euros += "\xe2\x82\xac";  // U+20AC, 3 bytes
  const auto out = sanitize_warnings({euros, std::string(256, 'a'), std::string(257, 'b')});
  ASSERT_EQ(out.size(), 3U);
  EXPECT_EQ(rune_count(out[0]), kMaxWarningRunes);
  EXPECT_EQ(out[0].substr(out[0].size() - 3), "...");
  EXPECT_EQ(out[1], std::string(256, 'a'));
  EXPECT_EQ(rune_count(out[2]), kMaxWarningRunes);
  EXPECT_EQ(out[2], std::string(253, 'b') + "...");
}

TEST(SanitizeWarnings, AtMostTenAndUnder4096RunesInAll) {
  std::vector<std::string> many;
  for (int i = 0; i < 30; ++i) many.push_back(std::to_string(i) + std::string(300, 'w'));
  const auto kept = sanitize_warnings(many);
  ASSERT_EQ(kept.size(), kMaxWarnings);
  EXPECT_EQ(kept[0].substr(0, 2), "0w");
  std::size_t total = 0;
  for (const auto& w : kept) total += rune_count(w);
  EXPECT_LT(total, kMaxWarningTotalRunes);
}

struct Base64Row {
  std::string in;
  std::string out;
};

void PrintTo(const Base64Row& row, std::ostream* os) {
  *os << '"' << row.in << '"';
}

class Base64 : public testing::TestWithParam<Base64Row> {};

TEST_P(Base64, StandardWithPadding) {
  EXPECT_EQ(base64_encode(GetParam().in), GetParam().out);
}

INSTANTIATE_TEST_SUITE_P(
    Rfc4648, Base64,
    testing::Values(Base64Row{"", ""}, Base64Row{"f", "Zg=="}, Base64Row{"fo", "Zm8="},
                    Base64Row{"foo", "Zm9v"}, Base64Row{"foob", "Zm9vYg=="},
                    Base64Row{"fooba", "Zm9vYmE="}, Base64Row{"foobar", "Zm9vYmFy"},
                    Base64Row{"\xff\xfe\xfd", "//79"},
                    // The Kubernetes documentation's example patch.
                    Base64Row{R"([{"op": "add", "path": "/spec/replicas", "value": 3}])",
                              "W3sib3AiOiAiYWRkIiwgInBhdGgiOiAiL3NwZWMvcmVwbGljYXMiLCAidmFsdWUiOiAz"
                              "fV0="}));

}  // namespace
}  // namespace cudagate

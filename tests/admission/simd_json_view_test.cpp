// The fast path against the reference: simdjson's view answers as
// nlohmann::json does, workloads read through either are the same (errors
// included), handle_admission gives the same outcome with either parser,
// and the response written directly is complete().dump() byte for byte.
#include "admission/simd_json_view.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "admission/admission.h"
#include "admission/admission_response.h"
#include "admission/admission_review.h"
#include "admission/padded_text.h"
#include "policy/objects/node.h"
#include "policy/objects/workload_reader.h"
#include "tests/support/fixtures.h"

namespace cudagate {
namespace {

using test_support::db;
using test_support::fixture;
using test_support::fleet;

using nlohmann::json;

// A parsed document kept alive with its view.
struct SimdDoc {
  explicit SimdDoc(const std::string& text) : padded(text) {
    const auto result = parser.parse(padded);
    if (result.error() != simdjson::SUCCESS) throw std::runtime_error("simdjson refused " + text);
    root = SimdJsonView(parser.doc);
  }
  simdjson::padded_string padded;
  simdjson::dom::parser parser;
  SimdJsonView root;
};

// Everything a workload holds, as text, so that two reads compare whole.
std::string dump(const Expected<Workload>& w) {
  if (!w) return "error: " + w.error().str();
  json j;
  j["resource"] = {w->resource.api_version, w->resource.kind, w->resource.namespace_,
                   w->resource.name};
  j["annotations"] = w->annotations;
  j["pointer"] = w->spec_pointer;
  const PodSpec& s = w->spec;
  j["nodeName"] = s.node_name;
  j["nodeSelector"] = s.node_selector;
  if (s.required_terms) {
    json terms = json::array();
    for (const auto& term : *s.required_terms) {
      json t = json::array();
      for (const auto* list : {&term.match_expressions, &term.match_fields}) {
        json l = json::array();
        for (const auto& r : *list) l.push_back({r.key, r.op, r.values});
        t.push_back(l);
      }
      terms.push_back(t);
    }
    j["terms"] = terms;
  }
  for (const auto& t : s.tolerations) j["tolerations"].push_back({t.key, t.op, t.value, t.effect});
  for (const auto& c : s.containers) {
    json env = json::array();
    for (const auto& e : c.env) env.push_back({e.name, e.value ? json(*e.value) : json(nullptr)});
    j["containers"].push_back({c.name, c.image, c.init, env, c.resources});
  }
  return j.dump();
}

// --- the view itself ---

TEST(SimdJsonView, AnswersAsNlohmann) {
  struct Row {
    std::string text;
  };
  const std::vector<Row> rows = {
      {R"({"b":1,"a":2,"b":3})"},
      {R"({"n":null,"t":true,"f":false,"s":"x","a":[1,2],"o":{}})"},
      {R"({"u":5,"i":-3,"z":0,"f":1.5,"g":2.0,"e":1e3,"big":18446744073709551615})"},
      {R"({"k":"v","k":{"x":1},"k":[1]})"},
      {R"([])"},
      {R"("text")"},
  };
  for (const auto& row : rows) {
    SimdDoc simd(row.text);
    const json reference = json::parse(row.text);
    const NlohmannView nl(reference);
    std::function<void(const SimdJsonView&, const NlohmannView&, const std::string&)> same =
        [&](const SimdJsonView& a, const NlohmannView& b, const std::string& where) {
          ASSERT_EQ(std::string(a.type_name()), std::string(b.type_name())) << row.text << where;
          EXPECT_EQ(a.is_number_unsigned(), b.is_number_unsigned()) << row.text << where;
          EXPECT_EQ(a.is_number_integer(), b.is_number_integer()) << row.text << where;
          EXPECT_EQ(a.is_number_float(), b.is_number_float()) << row.text << where;
          if (a.is_number_unsigned()) {
            EXPECT_EQ(a.as_unsigned(), b.as_unsigned());
          }
          if (a.is_number_integer()) {
            EXPECT_EQ(a.as_integer(), b.as_integer());
          }
          if (a.is_number_float()) {
            EXPECT_EQ(a.as_float(), b.as_float()) << row.text << where;
          }
          if (a.is_string()) {
            EXPECT_EQ(a.string(), b.string());
          }
          if (a.is_boolean()) {
            EXPECT_EQ(a.boolean(), b.boolean());
          }
          if (a.is_array() || a.is_object()) {
            EXPECT_EQ(a.size(), b.size()) << row.text << where;
          }
          if (a.is_object()) {
            std::vector<std::string> keys_a;
            std::vector<std::string> keys_b;
            a.for_each_member([&](std::string_view k, const SimdJsonView& v) {
              keys_a.emplace_back(k);
              same(v, b.find(k), where + "." + std::string(k));
              same(a.find(k), b.find(k), where + "." + std::string(k));
            });
            b.for_each_member(
                [&](std::string_view k, const NlohmannView&) { keys_b.emplace_back(k); });
            EXPECT_EQ(keys_a, keys_b) << row.text;
            EXPECT_FALSE(a.find("absent").valid());
          }
          if (a.is_array()) {
            a.for_each_element([&](std::size_t i, const SimdJsonView& v) {
              same(v, NlohmannView(b.json()[i]), where + "[" + std::to_string(i) + "]");
            });
          }
        };
    same(simd.root, nl, "");
  }
}

// "-0" is the one number the parsers type differently; what the reader does
// with numbers (count_quantity) gives the same either way.
// A parser remembers the sorted order of large objects' keys and reuses it
// for the next object of the same keys in the same written order: whatever
// it remembers, each object is visited in key order, the last of repeated
// keys winning, as nlohmann::json visits it.
TEST(SimdJsonView, RememberedKeyOrdersVisitAsNlohmann) {
  PaddedDomParser parser(1024, 64);
  std::mt19937 random(7);
  std::vector<std::string> keys;
  for (int i = 0; i < 20; ++i) keys.push_back("label-" + std::to_string((i * 7) % 20));
  for (int round = 0; round < 12; ++round) {
    // The same written order twice in a row, then another; a repeated key
    // in some rounds.
    if (round % 2 == 0) std::shuffle(keys.begin(), keys.end(), random);
    std::string text = "{";
    for (std::size_t k = 0; k < keys.size(); ++k) {
      if (k > 0) text += ",";
      text += "\"" + keys[k] + "\":" + std::to_string(round * 100 + static_cast<int>(k));
    }
    if (round % 3 == 0) text += ",\"" + keys.front() + "\":-1";
    text += "}";
    SCOPED_TRACE(text);
    const auto view = parser.parse(text);
    ASSERT_TRUE(view);
    std::vector<std::pair<std::string, std::int64_t>> visited;
    view->for_each_member([&](std::string_view key, const KeyOrderSimdJsonView& value) {
      visited.emplace_back(key, value.as_integer());
    });
    std::vector<std::pair<std::string, std::int64_t>> expected;
    const json reference = json::parse(text);
    for (const auto& [key, value] : reference.items()) {
      expected.emplace_back(key, value.get<std::int64_t>());
    }
    EXPECT_EQ(visited, expected);
  }
}

TEST(SimdJsonView, NegativeZeroCountsAsZero) {
  SimdDoc simd(R"({"q":-0})");
  const json reference = json::parse(R"({"q":-0})");
  const auto a = workload_reader::count_quantity(simd.root.find("q"));
  const auto b = workload_reader::count_quantity(NlohmannView(reference["q"]));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, *b);
}

// Keys of every length up to 20 bytes, each beside others that differ from
// it in the first, a middle or the last byte only: find() and find_each()
// tell them apart (the comparison goes by words of 4 and 8 bytes).
TEST(SimdJsonView, FindsKeysOfEveryLength) {
  std::vector<std::string> keys;
  for (std::size_t n = 1; n <= 20; ++n) {
    std::string key;
    for (std::size_t k = 0; k < n; ++k) key += static_cast<char>('a' + k % 26);
    keys.push_back(key);
    std::string first = key;
    first.front() = 'X';
    std::string middle = key;
    middle[n / 2] = 'Y';
    std::string last = key;
    last.back() = 'Z';
    for (const std::string& other : {first, middle, last}) {
      if (std::find(keys.begin(), keys.end(), other) == keys.end()) keys.push_back(other);
    }
  }
  json object = json::object();
  for (std::size_t i = 0; i < keys.size(); ++i) object[keys[i]] = i;
  SimdDoc simd(object.dump());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const SimdJsonView found = simd.root.find(keys[i]);
    ASSERT_TRUE(found.valid()) << keys[i];
    EXPECT_EQ(found.as_unsigned(), i) << keys[i];
    EXPECT_FALSE(simd.root.find(keys[i] + "!").valid()) << keys[i];
    const std::array<std::string_view, 2> wanted = {keys[i], "none"};
    std::array<SimdJsonView, 2> out;
    simd.root.find_each(wanted, out);
    ASSERT_TRUE(out[0].valid()) << keys[i];
    EXPECT_EQ(out[0].as_unsigned(), i) << keys[i];
    EXPECT_FALSE(out[1].valid());
  }
}

// --- workloads: the same facts and the same errors through both ---

// The pods of the admission fixtures, then random mutations of them: values
// of other types, removed and added members, repeated keys.
std::vector<std::string> workload_texts() {
  std::vector<json> seeds;
  for (const char* name :
       {"pod-cuda124.json", "pod-arch80.json", "pod-arch80-affinity.json", "deployment-arch80.json",
        "cronjob-arch80-v1beta1.json", "pod-cpu.json", "pod-bad-types.json"}) {
    seeds.push_back(json::parse(fixture(name))["request"]["object"]);
  }
  seeds.push_back(json::parse(R"({"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"d"},
    "spec":{"template":{"metadata":{"annotations":{"a":"1"}},"spec":{"hostNetwork":true,
    "containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":1}}}]}}}})"));

  const std::vector<std::string> values = {"\"x\"",
                                           "5",
                                           "-3",
                                           "1.5",
                                           "2.0",
                                           "-0",
                                           "1e3",
                                           "18446744073709551615",
                                           "null",
                                           "true",
                                           "[]",
                                           "{}",
                                           "[\"a\"]",
                                           "{\"a\":1}",
                                           "\"2k\"",
                                           "\"500m\"",
                                           "\"\"",
                                           "9223372036854775808",
                                           "{\"nvidia.com/gpu\":\"1.5\"}"};
  const std::vector<std::string> keys = {
      "name",     "image",        "env",        "resources",      "limits",      "requests",
      "nodeName", "nodeSelector", "affinity",   "tolerations",    "value",       "valueFrom",
      "key",      "operator",     "values",     "annotations",    "metadata",    "kind",
      "spec",     "template",     "containers", "initContainers", "hostNetwork", "nvidia.com/gpu"};
  std::mt19937_64 rng(20240611);
  auto pick = [&rng](std::size_t n) { return static_cast<std::size_t>(rng() % n); };

  std::vector<std::string> out;
  for (const json& seed : seeds) {
    out.push_back(seed.dump());
    for (int round = 0; round < 150; ++round) {
      json doc = seed;
      for (int m = 0; m < 1 + static_cast<int>(pick(3)); ++m) {
        std::vector<json*> all;
        std::function<void(json&)> collect = [&](json& j) {
          all.push_back(&j);
          if (j.is_object()) {
            for (auto& [k, v] : j.items()) collect(v);
          } else if (j.is_array()) {
            for (auto& v : j) collect(v);
          }
        };
        collect(doc);
        json* target = all[pick(all.size())];
        switch (pick(3)) {
          case 0:
            if (target != &doc) *target = json::parse(values[pick(values.size())]);
            break;
          case 1:
            if (target->is_object() && !target->empty()) {
              auto it = target->begin();
              std::advance(it, static_cast<std::ptrdiff_t>(pick(target->size())));
              target->erase(it);
            } else if (target->is_array() && !target->empty()) {
              target->erase(target->begin() + static_cast<std::ptrdiff_t>(pick(target->size())));
            }
            break;
          default:
            if (target->is_object()) {
              (*target)[keys[pick(keys.size())]] = json::parse(values[pick(values.size())]);
            }
            break;
        }
      }
      std::string text = doc.dump();
      // A repeated key in front of some objects: the later one must win.
      if (round % 5 == 0) {
        const auto at = text.find("{\"name\":");
        if (at != std::string::npos) text.insert(at + 1, R"("name":"first",)");
      }
      out.push_back(std::move(text));
    }
  }
  return out;
}

TEST(SimdJsonView, WorkloadsReadTheSame) {
  std::size_t errors = 0;
  for (const std::string& text : workload_texts()) {
    SimdDoc simd(text);
    const json reference = json::parse(text);
    const std::string expected = dump(workload_from_json(reference, "request"));
    EXPECT_EQ(dump(workload_from_view(simd.root, "request")), expected) << text;
    if (expected.rfind("error", 0) == 0) ++errors;
  }
  // The mutations reach the error paths, not only the happy one.
  EXPECT_GT(errors, 100U);
}

// --- handle_admission: the same outcome whichever parser reads the body ---

std::vector<std::string> review_bodies() {
  std::vector<std::string> out;
  for (const char* name :
       {"pod-cuda124.json", "pod-arch80.json", "pod-arch80-affinity.json", "deployment-arch80.json",
        "cronjob-arch80-v1beta1.json", "pod-cpu.json", "pod-bad-types.json"}) {
    const std::string body = fixture(name);
    out.push_back(body);
    json review = json::parse(body);
    // UPDATE of the object (the template compared with the old one), a
    // dry run, a DELETE, a subresource, another namespace.
    json update = review;
    update["request"]["operation"] = "UPDATE";
    update["request"]["oldObject"] = review["request"]["object"];
    out.push_back(update.dump());
    if (update["request"]["oldObject"].contains("spec")) {
      update["request"]["oldObject"]["spec"]["changed"] = true;
      out.push_back(update.dump());
    }
    // Server-side apply's managedFields (left out of what the patch writer
    // reads), and the word in places where it is not that field.
    json managed = review;
    json& metadata = managed["request"]["object"]["metadata"];
    metadata["managedFields"] = json::parse(
        R"([{"manager":"kubectl","operation":"Apply","apiVersion":"v1","fieldsType":"FieldsV1",)"
        R"("fieldsV1":{"f:spec":{"f:affinity":{".":{}},"f:containers":{}}}}])");
    metadata["annotations"]["example.com/managedFields"] = "managedFields: []";
    out.push_back(managed.dump());
    json dry = review;
    dry["request"]["dryRun"] = true;
    out.push_back(dry.dump());
    json del = review;
    del["request"]["operation"] = "DELETE";
    del["request"]["object"] = nullptr;
    out.push_back(del.dump());
    json sub = review;
    sub["request"]["subResource"] = "status";
    out.push_back(sub.dump());
    json excluded = review;
    excluded["request"]["namespace"] = "kube-system";
    out.push_back(excluded.dump());
    json trimmed = review;
    trimmed["request"].erase("kind");
    trimmed["request"].erase("namespace");
    trimmed["request"].erase("name");
    out.push_back(trimmed.dump());
  }
  // Bodies the reference path answers: not JSON, not a review, refused by
  // the fast parser (too deep, too large integers, a byte order mark,
  // invalid UTF-8), and odd field types.
  const std::string pod = json::parse(fixture("pod-cuda124.json"))["request"]["object"].dump();
  const std::string head = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",)";
  for (
      const std::string& body : std::vector<std::string>{
          "",
          "   ",
          "{",
          "[1,2]",
          "nul",
          R"({"kind":"Pod"})",
          R"({"kind":"AdmissionReview","apiVersion":"v2"})",
          head + R"("request":null})",
          head + R"("request":[]})",
          head + R"("request":{"uid":""}})",
          head + R"("request":{"uid":"u","operation":"PATCH"}})",
          head + R"("request":{"uid":"u","operation":"CREATE"}})",
          head + R"("request":{"uid":"u","operation":"CREATE","object":5}})",
          head + R"("request":{"uid":"u","operation":"CREATE","kind":"Pod","object":)" + pod + "}}",
          head + R"("request":{"uid":"u","operation":"CREATE","dryRun":"yes","object":)" + pod +
              "}}",
          head +
              R"("request":{"uid":"u","operation":"CREATE","big":123456789012345678901234567890,"object":)" +
              pod + "}}",
          "\xEF\xBB\xBF" + head + R"("request":{"uid":"u","operation":"CREATE","object":)" + pod +
              "}}",
          head + R"("request":{"uid":"u\xff","operation":"CREATE","object":)" + pod + "}}",
          head + R"("request":{"uid":"u","uid":"v","operation":"CREATE","object":)" + pod + "}}",
          head + R"("request":{"uid":"u","operation":"CREATE","deep":)" + std::string(300, '[') +
              std::string(300, ']') + R"(,"object":)" + pod + "}}",
          head + R"("request":{"uid":"u","operation":"CREATE","deep":)" + std::string(250, '[') +
              std::string(250, ']') + R"(,"object":)" + pod + "}}",
      }) {
    out.push_back(body);
  }
  return out;
}

TEST(HandleAdmission, FastAndReferenceParsersAgree) {
  Policy warn;
  warn.mode = Mode::warn;
  const std::vector<std::pair<const Policy*, std::string>> policies = {{nullptr, ""},
                                                                       {&warn, "warn"}};
  const Policy enforce;
  AdmissionWorkspace workspace;
  for (const std::string& body : review_bodies()) {
    for (const auto endpoint : {Endpoint::validate, Endpoint::mutate}) {
      for (const auto& [policy, mode] : policies) {
        const AdmissionContext context{db(), policy == nullptr ? enforce : *policy, fleet()};
        const AdmissionOutcome fast =
            handle_admission(endpoint, mode, body, context, workspace, ReviewParser::fast);
        const AdmissionOutcome reference =
            handle_admission(endpoint, mode, body, context, workspace, ReviewParser::reference);
        // The body as the server holds it, read where it lies.
        const PaddedString held(body);
        const AdmissionOutcome in_place =
            handle_admission(endpoint, mode, held.padded(), context, workspace, ReviewParser::fast);
        const std::string what = body.substr(0, 200);
        EXPECT_EQ(in_place.http_status, reference.http_status) << what;
        EXPECT_EQ(in_place.body, reference.body) << what;
        EXPECT_EQ(in_place.verdict, reference.verdict) << what;
        EXPECT_EQ(in_place.decision, reference.decision) << what;
        EXPECT_EQ(fast.http_status, reference.http_status) << what;
        EXPECT_EQ(fast.body, reference.body) << what;
        EXPECT_EQ(fast.uid, reference.uid) << what;
        EXPECT_EQ(fast.namespace_, reference.namespace_) << what;
        EXPECT_EQ(fast.kind, reference.kind) << what;
        EXPECT_EQ(fast.name, reference.name) << what;
        EXPECT_EQ(fast.verdict, reference.verdict) << what;
        EXPECT_EQ(fast.decision, reference.decision) << what;
        EXPECT_EQ(fast.mode, reference.mode) << what;
        EXPECT_EQ(fast.dry_run, reference.dry_run) << what;
        EXPECT_EQ(fast.record.has_value(), reference.record.has_value()) << what;
      }
    }
  }
}

// --- the response text ---

TEST(AdmissionResponse, SerializeIsCompleteDumped) {
  std::vector<AdmissionResponse> responses;
  responses.push_back(AdmissionResponse::allowed());
  responses.push_back(AdmissionResponse::denied(
      "cudagate: container \"train\" needs CUDA 12.4 \"quoted\" \\ back\tslash\n\x01\x7f é ✓"));
  responses.push_back(AdmissionResponse::denied("invalid \xff\xfe UTF-8"));
  responses.push_back(AdmissionResponse::errored(500, "internal"));
  responses.push_back(AdmissionResponse::errored(200, "code below 400"));
  responses.push_back(AdmissionResponse::patched(json::parse(
      R"([{"op":"add","path":"/metadata/annotations/cudagate.io~1pinned","value":"x"}])")));
  responses.push_back(AdmissionResponse::patched(json::array()));
  AdmissionResponse full = AdmissionResponse::allowed();
  full.with_warning("first warning")
      .with_warning("first warning")
      .with_warning("control\x02 chars")
      .with_warning(std::string(300, 'w'))
      .with_audit_annotation("verdict", "pass")
      .with_audit_annotation("mode", "enforce")
      .with_audit_annotation("verdict", "fail")
      .with_audit_annotation("bad/key", "dropped")
      .with_audit_annotation("long", std::string(5000, 'v') + "\xc3\xa9")
      .with_audit_annotation("zeta", "\"q\"");
  responses.push_back(full);
  // More annotations than a decision makes, out of order, repeated, one
  // value not valid UTF-8.
  AdmissionResponse many = AdmissionResponse::allowed();
  for (const char* key : {"k9", "k1", "k8", "k2", "k7", "k3", "k6", "k4", "k5", "k1", "k0"}) {
    many.with_audit_annotation(key, std::string("v-") + key);
  }
  many.with_audit_annotation("bytes", "a\xff\xfe b").with_audit_annotation("k8", "again");
  responses.push_back(many);
  AdmissionResponse denied_with_extras = AdmissionResponse::denied("no");
  denied_with_extras.with_warning("w").with_audit_annotation("decision", "deny");
  responses.push_back(denied_with_extras);

  for (const auto& response : responses) {
    for (const auto version : {ReviewVersion::v1, ReviewVersion::v1beta1}) {
      for (const auto endpoint : {Endpoint::validate, Endpoint::mutate}) {
        for (const std::string uid : {"705ab4f5-6393-11e8", "u\"id", "u\xffid"}) {
          EXPECT_EQ(response.serialize(version, uid, endpoint),
                    response.complete(version, uid, endpoint)
                        .dump(-1, ' ', false, json::error_handler_t::replace));
        }
      }
    }
  }
}

}  // namespace
}  // namespace cudagate

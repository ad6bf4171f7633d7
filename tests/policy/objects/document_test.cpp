// Reading JSON and YAML documents: scalars typed as Kubernetes types them, anchors and merge
// keys, errors naming the source and the line, and the field readers' errors.
#include "policy/objects/document.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cudagate {
namespace {

using nlohmann::json;

json one(std::string_view text) {
  auto docs = parse_documents(text, "t.yaml");
  EXPECT_TRUE(docs) << docs.error().str();
  if (!docs) return nullptr;
  EXPECT_EQ(docs->size(), 1U);
  return docs->empty() ? json() : docs->front();
}

struct ScalarRow {
  std::string yaml;  // the value of key `v`
  json expected;
};

TEST(Document, YamlScalarsAreTypedAsKubernetesTypesThem) {
  const std::vector<ScalarRow> rows = {
      {"~", nullptr},
      {"null", nullptr},
      {"Null", nullptr},
      {"NULL", nullptr},
      {"", nullptr},
      {"true", true},
      {"True", true},
      {"TRUE", true},
      {"false", false},
      {"yes", true},
      {"No", false},
      {"on", true},
      {"OFF", false},
      {"y", true},
      {"n", false},
      {"0", 0},
      {"42", 42},
      {"-7", -7},
      {"+7", 7},
      {"1_000", 1000},
      {"0x1F", 31},
      {"0o17", 15},
      {"017", 15},
      {"0b101", 5},
      {"9223372036854775807", 9223372036854775807LL},
      {"18446744073709551615", 18446744073709551615ULL},
      {"1.5", 1.5},
      {"1e3", 1000.0},
      {".5", 0.5},
      {"-2.5e-1", -0.25},
      {"08", 8.0},  // not octal, but still a float to go-yaml
      // Strings: quoted, block, tagged, and plain text that is no number.
      {"\"null\"", "null"},
      {"'true'", "true"},
      {"\"42\"", "42"},
      {"'1.5'", "1.5"},
      {"!!str 5", "5"},
      {"|\n  block\n", "block\n"},
      {"12.4.1", "12.4.1"},
      {"535.129.03", "535.129.03"},
      {"2001-12-14", "2001-12-14"},
      {"1e400", "1e400"},
      {"0x", "0x"},
      {"-x", "-x"},
      {"+", "+"},
      {"1.2.3", "1.2.3"},
      {"Tesla-T4", "Tesla-T4"},
      {"nvidia-tesla-t4", "nvidia-tesla-t4"},
      {"yess", "yess"},
      {".", "."},
      {"8.0;9.0+PTX", "8.0;9.0+PTX"},
  };
  for (const auto& row : rows) {
    const json doc = one("v: " + row.yaml + "\n");
    ASSERT_TRUE(doc.is_object()) << row.yaml;
    EXPECT_EQ(doc["v"], row.expected) << "v: " << row.yaml << " gave " << doc["v"].dump();
    EXPECT_EQ(doc["v"].type(), row.expected.type()) << row.yaml;
  }
}

TEST(Document, FloatsThatJsonCannotHoldAreErrors) {
  for (const std::string v : {".inf", "-.Inf", ".nan"}) {
    auto docs = parse_documents("a: 1\nv: " + v + "\n", "x.yaml");
    ASSERT_FALSE(docs) << v;
    EXPECT_EQ(docs.error().where, "x.yaml:2");
    EXPECT_NE(docs.error().message.find("quote it"), std::string::npos);
  }
}

TEST(Document, MultiDocumentYamlSkipsEmptyDocuments) {
  auto docs = parse_source_documents(
      "---\n# only a comment\n---\nkind: Pod\n---\nkind: Node\n---\n", "m.yaml");
  ASSERT_TRUE(docs) << docs.error().str();
  ASSERT_EQ(docs->documents.size(), 2U);
  EXPECT_EQ(docs->documents[0].value["kind"], "Pod");
  EXPECT_EQ(docs->documents[0].index, 2U);
  EXPECT_EQ(docs->documents[0].line, 4);
  EXPECT_EQ(docs->documents[1].value["kind"], "Node");
  EXPECT_EQ(docs->documents[1].index, 3U);
  EXPECT_GE(docs->count, 3U);

  auto plain = parse_documents("kind: A\n---\nkind: B\n", "m.yaml");
  ASSERT_TRUE(plain);
  ASSERT_EQ(plain->size(), 2U);
  EXPECT_EQ((*plain)[1]["kind"], "B");
}

TEST(Document, WindowsLineEndingsAndByteOrderMark) {
  auto crlf =
      parse_documents("kind: Pod\r\nmetadata:\r\n  name: p\r\n---\r\nkind: B\r\n", "w.yaml");
  ASSERT_TRUE(crlf) << crlf.error().str();
  ASSERT_EQ(crlf->size(), 2U);
  EXPECT_EQ((*crlf)[0]["metadata"]["name"], "p");
  EXPECT_EQ((*crlf)[1]["kind"], "B");
  auto bom = parse_documents("\xEF\xBB\xBFkind: Pod\n", "b.yaml");
  ASSERT_TRUE(bom) << bom.error().str();
  EXPECT_EQ((*bom)[0]["kind"], "Pod");
}

TEST(Document, EmptyInputHasNoDocuments) {
  for (const std::string text : {"", "   \n", "# nothing\n", "---\n"}) {
    auto docs = parse_documents(text, "e.yaml");
    ASSERT_TRUE(docs) << text;
    EXPECT_TRUE(docs->empty()) << text;
  }
}

TEST(Document, NestedYamlBecomesJson) {
  const json doc = one(R"(
apiVersion: v1
kind: Pod
metadata:
  name: p
  labels: {app: x, "team": ml}
spec:
  containers:
  - name: c
    resources:
      limits:
        nvidia.com/gpu: 1
    env:
    - {name: A, value: "1"}
)");
  EXPECT_EQ(doc["metadata"]["labels"]["team"], "ml");
  EXPECT_EQ(doc["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], 1);
  EXPECT_EQ(doc["spec"]["containers"][0]["env"][0]["value"], "1");
}

TEST(Document, MappingKeysStayText) {
  const json doc = one("labels:\n  1: a\n  true: b\n  \"x\": c\n  ~: d\n");
  EXPECT_EQ(doc["labels"]["1"], "a");
  EXPECT_EQ(doc["labels"]["true"], "b");
  EXPECT_EQ(doc["labels"]["x"], "c");
  EXPECT_EQ(doc["labels"]["null"], "d");
}

TEST(Document, AnchorsAliasesAndMergeKeys) {
  const json doc = one(R"(
base: &base {a: 1, b: 2}
list: &l [x, z]
copy: *l
merged:
  <<: *base
  b: 3
multi:
  <<: [{a: first}, {a: second, c: 4}]
)");
  EXPECT_EQ(doc["copy"], json::array({"x", "z"}));
  EXPECT_EQ(doc["merged"], (json{{"a", 1}, {"b", 3}}));
  EXPECT_EQ(doc["multi"], (json{{"a", "first"}, {"c", 4}}));
  EXPECT_FALSE(doc["merged"].contains("<<"));
}

struct DocumentErrorRow {
  std::string text;
  std::string where;
  std::string message_part;
};

TEST(Document, ErrorsNameTheSourceAndLine) {
  const std::vector<DocumentErrorRow> rows = {
      {"a: [1, 2\nb: 3\n", "bad.yaml:2", "invalid YAML: end of sequence flow not found"},
      {"a: 1\n  b: 2\n", "bad.yaml:2", "invalid YAML"},
      {"a: 1\nb: 2\n- c\n", "bad.yaml:3", "invalid YAML"},
      {"a: 1\nb: \xff\xfe\n", "bad.yaml:2", "invalid UTF-8"},
      {"a: 1\n? [x, y]\n: 2\n", "bad.yaml:2", "mapping key must be a string"},
      {"a: &x [1, *x]\n", "bad.yaml:1", "an alias refers to a node that contains it"},
      {",\n", "bad.yaml:1", "invalid YAML"},
      {"---\n# c\n,--\nkind: A\n", "bad.yaml:", "invalid YAML"},
      {"a: 1\n---\n,x\n", "bad.yaml:3", "invalid YAML"},
      {"a: *nothing\n", "bad.yaml:1", "invalid YAML"},
      {"a: " + std::string(600, '[') + std::string(600, ']'), "bad.yaml:1", "nesting too deep"},
      {"a: 1\nm:\n  <<: 5\n", "bad.yaml:3", "merge key"},
      {"{\"a\": 1,\n \"b\": }\n", "bad.yaml:2:7", "invalid JSON: syntax error"},
      {"\n\n  {\"a\": tru}", "bad.yaml:3:", "invalid JSON"},
      {"[1, 2", "bad.yaml:1:", "invalid JSON"},
      {"{\"a\": 1} {\"b\": 2}", "bad.yaml:1:", "invalid JSON"},
      {"{\"a\": \"\xff\"}", "bad.yaml:1:", "invalid JSON"},
      {std::string(600, '[') + std::string(600, ']'), "bad.yaml:1:513", "nesting deeper"},
  };
  for (const auto& row : rows) {
    auto docs = parse_documents(row.text, "bad.yaml");
    ASSERT_FALSE(docs) << row.text;
    EXPECT_EQ(docs.error().where.substr(0, row.where.size()), row.where)
        << row.text << " -> " << docs.error().str();
    EXPECT_NE(docs.error().message.find(row.message_part), std::string::npos)
        << row.text << " -> " << docs.error().str();
  }
}

TEST(Document, ExponentialAliasesAreRefused) {
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 9; ++i) {
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) text += (k ? ", *a" : "*a") + std::to_string(i - 1);
    text += "]\n";
  }
  auto docs = parse_documents(text, "lol.yaml");
  ASSERT_FALSE(docs);
  EXPECT_NE(docs.error().message.find("too large"), std::string::npos) << docs.error().str();
}

TEST(Document, JsonIsRecognisedByItsFirstCharacter) {
  auto obj = parse_documents("  \n{\"kind\": \"Pod\", \"n\": 1.0}", "p.json");
  ASSERT_TRUE(obj) << obj.error().str();
  ASSERT_EQ(obj->size(), 1U);
  EXPECT_EQ((*obj)[0]["kind"], "Pod");

  auto arr = parse_documents("[{\"kind\": \"Pod\"}, 2]", "p.json");
  ASSERT_TRUE(arr);
  ASSERT_EQ(arr->size(), 1U);
  EXPECT_TRUE((*arr)[0].is_array());

  auto bom = parse_documents("\xEF\xBB\xBF{\"a\": 1}", "p.json");
  ASSERT_TRUE(bom) << bom.error().str();
  EXPECT_EQ((*bom)[0]["a"], 1);

  // JSON documents between "---" lines are a YAML stream.
  auto stream = parse_documents("{\"kind\": \"Pod\"}\n---\n{\"kind\": \"Node\"}\n", "p.yaml");
  ASSERT_TRUE(stream) << stream.error().str();
  ASSERT_EQ(stream->size(), 2U);
  EXPECT_EQ((*stream)[1]["kind"], "Node");

  // Without a brace it is YAML, and YAML's flow style reads JSON-like text.
  auto yaml = parse_documents("kind: Pod\nspec: {\"a\": [1, 2]}\n", "p.yaml");
  ASSERT_TRUE(yaml);
  EXPECT_EQ((*yaml)[0]["spec"]["a"][1], 2);
}

TEST(Document, ErrorWithoutSourceNamesTheLine) {
  auto docs = parse_documents("a: [\n", "");
  ASSERT_FALSE(docs);
  EXPECT_EQ(docs.error().where.rfind("line ", 0), 0U) << docs.error().str();
}

struct FieldRow {
  json object;
  std::string key;
  bool required;
  bool ok;
  std::string value_or_error;
};

// One entry per document of a stream: the value or the error with its own line.
struct StreamRow {
  std::string text;
  // Per entry: the value's "name" member, or "!" + the error's place.
  std::vector<std::string> expected;
};

TEST(DocumentStream, EachDocumentIsReadOnItsOwn) {
  const std::vector<StreamRow> rows = {
      {"name: a\n---\nname: b\n", {"a", "b"}},
      // A syntax error costs only its document; the error names its line, the
      // document's last when the parser only finds it at the end.
      {"name: a\n---\nname: [b\n---\nname: c\n", {"a", "!s.yaml:3", "c"}},
      {"name: a\n---\nx: y: z\n---\nname: c\n", {"a", "!s.yaml:3", "c"}},
      // Comments and empty documents, as Helm renders them, are left out.
      {"# header\n---\n---\n# Source: x.yaml\nname: a\n---\n", {"a"}},
      // Directives stay with the document after them.
      {"name: a\n---\n%YAML 1.2\n---\nname: b\n", {"a", "b"}},
      // "---" inside a block scalar is still a marker only at column 0.
      {"name: a\nbody: |\n  ---\n  text\n---\nname: b\n", {"a", "b"}},
      {"--- {name: a}\n--- {name: b}\n", {"a", "b"}},
      {"{\"name\": \"a\"}", {"a"}},
      {"{\"name\": ", {"!s.yaml:1:10"}},
      // JSON documents between "---" lines, as a YAML stream holds them.
      {"{\"name\": \"a\"}\n---\n{\"name\": \"b\"}\n", {"a", "b"}},
      {"{\"name\": \"a\"}\n--- \n[1]\n---\n{\"name\": \"c\"}", {"a", "[1]", "c"}},
      // A "---" inside a JSON string is no marker: JSON strings hold no raw line break.
      {"{\"name\": \"a\\n---\\nb\"}", {"a\n---\nb"}},
      {"{\"name\":\n\"---x\"}", {"---x"}},
  };
  for (const auto& row : rows) {
    const auto docs = parse_document_stream(row.text, "s.yaml");
    std::vector<std::string> got;
    for (const auto& doc : docs) {
      if (!doc) {
        got.push_back("!" + doc.error().where);
      } else {
        got.push_back(doc->value.is_object() ? doc->value.value("name", std::string("?"))
                                             : doc->value.dump());
      }
    }
    EXPECT_EQ(got, row.expected) << row.text;
  }
}

TEST(DocumentStream, LinesAndIndexesCountFromTheStreamStart) {
  const auto docs = parse_document_stream("a: 1\n---\n# c\nb: 2\n---\nc: 3\n", "s.yaml");
  ASSERT_EQ(docs.size(), 3U);
  ASSERT_TRUE(docs[1]);
  EXPECT_EQ(docs[1]->line, 4);
  EXPECT_EQ(docs[1]->index, 2U);
  ASSERT_TRUE(docs[2]);
  EXPECT_EQ(docs[2]->line, 6);
  EXPECT_EQ(docs[2]->index, 3U);
}

TEST(Document, StringField) {
  const std::vector<FieldRow> rows = {
      {{{"name", "x"}}, "name", true, true, "x"},
      {{{"name", "x"}}, "other", false, true, ""},
      {{{"name", nullptr}}, "name", false, true, ""},
      {{{"name", "x"}}, "other", true, false, "spec.c.other: is required"},
      {{{"name", nullptr}}, "name", true, false, "spec.c.name: is required"},
      {{{"name", 5}}, "name", false, false, "spec.c.name: expected a string, got number"},
      {{{"name", true}}, "name", false, false, "spec.c.name: expected a string, got boolean"},
      {{{"name", json::array()}},
       "name",
       false,
       false,
       "spec.c.name: expected a string, got array"},
      {json::array(), "name", false, false, "spec.c: expected an object, got array"},
  };
  for (const auto& row : rows) {
    auto got = string_field(row.object, row.key, "spec.c", row.required);
    ASSERT_EQ(static_cast<bool>(got), row.ok) << row.object.dump();
    EXPECT_EQ(got ? *got : got.error().str(), row.value_or_error);
  }
  auto top = string_field(json::object(), "kind", "", true);
  ASSERT_FALSE(top);
  EXPECT_EQ(top.error().str(), "kind: is required");
}

TEST(Document, ObjectAndArrayFields) {
  const json obj = {{"m", {{"a", 1}}}, {"l", {1, 2}}, {"s", "x"}, {"n", nullptr}};
  auto m = object_field(obj, "m", "meta");
  ASSERT_TRUE(m);
  ASSERT_NE(*m, nullptr);
  EXPECT_EQ((**m)["a"], 1);
  auto absent = object_field(obj, "zz", "meta");
  ASSERT_TRUE(absent);
  EXPECT_EQ(*absent, nullptr);
  auto null_field = array_field(obj, "n", "meta");
  ASSERT_TRUE(null_field);
  EXPECT_EQ(*null_field, nullptr);
  auto wrong = object_field(obj, "l", "meta");
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().str(), "meta.l: expected an object, got array");
  auto list = array_field(obj, "l", "meta");
  ASSERT_TRUE(list);
  EXPECT_EQ((*list)->size(), 2U);
  auto wrong_list = array_field(obj, "s", "meta");
  ASSERT_FALSE(wrong_list);
  EXPECT_EQ(wrong_list.error().str(), "meta.s: expected a list, got string");
  EXPECT_EQ(field_path("", "spec"), "spec");
  EXPECT_EQ(field_path("spec", "containers"), "spec.containers");
  EXPECT_EQ(index_path("spec.containers", 3), "spec.containers[3]");
}

}  // namespace
}  // namespace cudagate

// JSON values as block YAML: read back by the project's YAML reader (typed as Kubernetes
// types YAML) they are the same values, and strings YAML would retype are quoted.
#include "report/yaml_text.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "policy/objects/document.h"

namespace cudagate {
namespace {

using nlohmann::json;

json read_back(const std::string& text) {
  auto docs = parse_documents(text, "y.yaml");
  EXPECT_TRUE(docs) << docs.error().str() << "\n" << text;
  if (!docs || docs->size() != 1) return json("<unreadable>");
  return docs->front();
}

TEST(YamlText, ValuesReadBackUnchanged) {
  const std::vector<json> rows = {
      json{{"s", "plain text"}},
      json{{"s", ""}},
      json{{"yes", "no"}, {"on", "off"}, {"y", "n"}, {"null", "~"}, {"t", "True"}},
      json{{"n", "12.4"}, {"i", "0x1F"}, {"o", "017"}, {"f", ".5"}, {"inf", ".inf"}},
      json{{"colon", "a: b"}, {"hash", "a #b"}, {"dash", "- x"}, {"star", "*alias"}},
      json{{"quote", "say \"hi\""}, {"nl", "two\nlines"}, {"tab", "a\tb"}, {"trail", "x "}},
      json{{"utf8", "caf\xC3\xA9 \xE2\x9C\x93"}, {"brace", "{x}"}, {"pct", "%x"}},
      json{{"numbers", {1, -2, 3.5, 0}}, {"bools", {true, false}}, {"nothing", nullptr}},
      json{{"nested",
            {{"list", {{{"a", 1}, {"b", {{"c", "d"}}}}, json::array(), json::object()}},
             {"empty", json::object()},
             {"none", json::array()}}}},
      json{{"lists", {{1, 2}, {"a"}}}},
      json{{"cuda>=12.4 brand=tesla,driver>=470", "key with: colon"}},
  };
  for (const json& value : rows) {
    const std::string text = to_yaml(value);
    EXPECT_EQ(read_back(text), value) << text;
  }
}

TEST(YamlText, LayoutIsKubectlStyle) {
  const json value = json::parse(R"({"kind": "PolicyReport", "metadata": {"name": "cudagate"},
    "results": [{"policy": "cudagate", "resources": [{"kind": "Pod", "name": "a"}]}]})");
  EXPECT_EQ(to_yaml(value),
            "kind: PolicyReport\n"
            "metadata:\n"
            "  name: cudagate\n"
            "results:\n"
            "- policy: cudagate\n"
            "  resources:\n"
            "  - kind: Pod\n"
            "    name: a\n");
  EXPECT_EQ(to_yaml(json("12")), "\"12\"\n");
  EXPECT_EQ(to_yaml(json::object()), "{}\n");
}

}  // namespace
}  // namespace cudagate

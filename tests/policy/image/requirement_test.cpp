// NVIDIA_REQUIRE_* parsing and evaluation, held to what libnvidia-container does with the same
// operators, versions and alternatives.
#include "policy/image/requirement.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cudagate {
namespace {

const std::string kAdvice =
    ", please update your driver to a newer version, or use an earlier cuda container";

// NVIDIA_REQUIRE_CUDA of nvidia/cuda:<version>-base (amd64): cuda>=X.Y and,
// per driver branch, one brand group for each brand of the set.
std::string nvidia_cuda_require(const std::string& cuda, const std::vector<int>& branches,
                                const std::vector<std::string>& brands) {
  std::string out = "cuda>=" + cuda;
  for (int branch : branches) {
    for (const std::string& brand : brands) {
      out += " brand=" + brand + ",driver>=" + std::to_string(branch) + ",driver<" +
             std::to_string(branch + 1);
    }
  }
  return out;
}

const std::vector<std::string> kBrandSetA = {"tesla",   "unknown",    "nvidia", "nvidiartx",
                                             "geforce", "geforcertx", "quadro", "quadrortx",
                                             "titan",   "titanrtx"};
const std::vector<std::string> kBrandSetB = {"unknown", "grid",      "tesla",     "nvidia",
                                             "quadro",  "quadrortx", "nvidiartx", "vapps",
                                             "vpc",     "vcs",       "vws",       "cloudgaming"};

// 12.8.1 base image (NVIDIA_REQUIRE_CUDA of dist/12.8.1/ubuntu2204/base/Dockerfile in
// gitlab.com/nvidia/container-images/cuda: branches 470..565, brand set B).
const std::string kCuda1281 = nvidia_cuda_require("12.8", {470, 535, 550, 560, 565}, kBrandSetB);
// 12.4.1 base image (branches 470, 525, 535, brand set A).
const std::string kCuda1241 = nvidia_cuda_require("12.4", {470, 525, 535}, kBrandSetA);

DeviceFacts node(std::optional<std::string> driver, std::optional<std::string> max_cuda,
                 std::optional<std::string> cc, std::optional<std::string> brand) {
  DeviceFacts f;
  if (driver) f.driver = *DriverVersion::parse(*driver);
  if (max_cuda) f.max_cuda = *CudaVersion::parse(*max_cuda);
  if (cc) f.cc = *ComputeCapability::parse(*cc);
  f.brand = std::move(brand);
  return f;
}

RequirementSet set_of(const std::vector<std::pair<std::string, std::string>>& vars) {
  RequirementSet set;
  for (const auto& [name, value] : vars) set.requirements.push_back(parse_requirement(name, value));
  return set;
}

const char* name_of(Tristate t) {
  switch (t) {
    case Tristate::yes:
      return "yes";
    case Tristate::no:
      return "no";
    case Tristate::unknown:
      return "unknown";
  }
  return "?";
}

TEST(ParseRequirement, SplitsAlternativesAndTerms) {
  // dsl.c dsl_evaluate: strsep on ' ' for groups, then on ',' for terms.
  const Requirement parsed = parse_requirement(
      "NVIDIA_REQUIRE_CUDA", "cuda>=12.8 brand=Tesla,driver>=470,driver<471  BRAND!=geforce");
  const Requirement* req = &parsed;
  EXPECT_EQ(req->first_invalid(), nullptr);
  EXPECT_EQ(req->variable, "NVIDIA_REQUIRE_CUDA");
  EXPECT_EQ(req->text, "cuda>=12.8 brand=Tesla,driver>=470,driver<471  BRAND!=geforce");
  ASSERT_EQ(req->alternatives.size(), 3U);
  EXPECT_EQ(req->alternatives[0].text, "cuda>=12.8");
  EXPECT_EQ(req->alternatives[1].text, "brand=Tesla,driver>=470,driver<471");
  EXPECT_EQ(req->alternatives[2].text, "BRAND!=geforce");

  ASSERT_EQ(req->alternatives[0].terms.size(), 1U);
  const RequireTerm& cuda = req->alternatives[0].terms[0];
  EXPECT_EQ(cuda.key, RequireKey::cuda);
  EXPECT_EQ(cuda.op, RequireOp::ge);
  EXPECT_EQ(cuda.value, "12.8");
  EXPECT_EQ(cuda.numbers, (std::vector<std::uint64_t>{12, 8}));
  EXPECT_EQ(cuda.text, "cuda>=12.8");
  EXPECT_TRUE(cuda.valid());

  const auto& group = req->alternatives[1].terms;
  ASSERT_EQ(group.size(), 3U);
  EXPECT_EQ(group[0].key, RequireKey::brand);
  EXPECT_EQ(group[0].op, RequireOp::eq);
  EXPECT_EQ(group[0].value, "tesla");
  EXPECT_EQ(group[1].key, RequireKey::driver);
  EXPECT_EQ(group[1].op, RequireOp::ge);
  EXPECT_EQ(group[1].numbers, (std::vector<std::uint64_t>{470}));
  EXPECT_EQ(group[2].op, RequireOp::lt);
  EXPECT_EQ(group[2].numbers, (std::vector<std::uint64_t>{471}));

  EXPECT_EQ(req->alternatives[2].terms[0].key, RequireKey::brand);
  EXPECT_EQ(req->alternatives[2].terms[0].op, RequireOp::ne);
}

TEST(ParseRequirement, ReadsOperatorsAndVersionsAsTheToolkitDoes) {
  // dsl.c evaluate_rule (operator run, key before it, value after it) and
  // dsl_compare_version (numeric parts, strtoumax, trailing ".0" ignored).
  struct Row {
    std::string text;
    RequireKey key;
    RequireOp op;
    std::vector<std::uint64_t> numbers;
  };
  const std::vector<Row> rows = {
      {"cuda=12.2", RequireKey::cuda, RequireOp::eq, {12, 2}},
      {"cuda!=12.2", RequireKey::cuda, RequireOp::ne, {12, 2}},
      {"cuda<12.2", RequireKey::cuda, RequireOp::lt, {12, 2}},
      {"cuda<=12.2", RequireKey::cuda, RequireOp::le, {12, 2}},
      {"cuda>12.2", RequireKey::cuda, RequireOp::gt, {12, 2}},
      {"cuda>=12.2", RequireKey::cuda, RequireOp::ge, {12, 2}},
      {"CUDA>=12.3", RequireKey::cuda, RequireOp::ge, {12, 3}},
      {"Driver>=535.129.03", RequireKey::driver, RequireOp::ge, {535, 129, 3}},
      {"arch>=8.0", RequireKey::arch, RequireOp::ge, {8}},
      {"cuda>=12.0.0", RequireKey::cuda, RequireOp::ge, {12}},
      {"cuda>=12..4.", RequireKey::cuda, RequireOp::ge, {12, 4}},
      {"cuda>=0", RequireKey::cuda, RequireOp::ge, {}},
      {"driver>=000000000000470", RequireKey::driver, RequireOp::ge, {470}},
      // strtoumax reads parts up to 2^64-2.
      {"driver>=18446744073709551614", RequireKey::driver, RequireOp::ge, {18446744073709551614U}},
      // The toolkit reads a lone '!' as the first operator it prefixes: "!=".
      {"cuda!12.0", RequireKey::cuda, RequireOp::ne, {12}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.text);
    const Requirement req = parse_requirement("NVIDIA_REQUIRE_CUDA", row.text);
    ASSERT_EQ(req.alternatives.size(), 1U);
    ASSERT_EQ(req.alternatives[0].terms.size(), 1U);
    const RequireTerm& t = req.alternatives[0].terms[0];
    EXPECT_TRUE(t.valid()) << t.error;
    EXPECT_EQ(t.key, row.key);
    EXPECT_EQ(t.op, row.op);
    EXPECT_EQ(t.numbers, row.numbers);
  }
}

TEST(ParseRequirement, SkipsEmptyTokens) {
  // dsl.c dsl_evaluate: `if (*or_expr == '\0') continue;` and the same for terms.
  struct Row {
    std::string text;
    std::size_t alternatives;
    std::size_t terms_in_first;
  };
  const std::vector<Row> rows = {
      {"", 0, 0},
      {"   ", 0, 0},
      {" cuda>=12.0 ", 1, 1},
      {"cuda>=12.0,,driver>=535,", 1, 2},
      {",", 1, 0},
      {"cuda>=12.0  , ", 2, 1},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE("\"" + row.text + "\"");
    const Requirement req = parse_requirement("NVIDIA_REQUIRE_CUDA", row.text);
    ASSERT_EQ(req.alternatives.size(), row.alternatives);
    if (row.alternatives > 0) {
      EXPECT_EQ(req.alternatives[0].terms.size(), row.terms_in_first);
    }
  }
}

TEST(ParseRequirement, MarksInvalidExpressionsNamingTheTerm) {
  // dsl.c evaluate_rule returns -1 ("invalid expression") for these, and
  // dsl_compare_version / dsl_compare_string for the values; parsing keeps
  // them, as the toolkit only fails when it reaches one.
  struct Row {
    std::string text;
    std::string message;
  };
  const std::vector<Row> rows = {
      {"foo>=1", "unknown key \"foo\" in term \"foo>=1\": expected cuda, driver, arch or brand"},
      {"cuda>=12.0 jetpack>=5",
       "unknown key \"jetpack\" in term \"jetpack>=5\": expected cuda, driver, arch or brand"},
      {"cuda",
       "term \"cuda\" has no operator: expected <key><op><value>, op one of =, !=, <, <=, >, >="},
      {">=12.0",
       "term \">=12.0\" has no key: expected one of cuda, driver, arch, brand before the "
       "operator"},
      {"cuda>=", "term \"cuda>=\" has no value after the operator"},
      {"cuda=>12", "unknown operator \"=>\" in term \"cuda=>12\": expected =, !=, <, <=, > or >="},
      {"cuda==12", "unknown operator \"==\" in term \"cuda==12\": expected =, !=, <, <=, > or >="},
      {"cuda<>12", "unknown operator \"<>\" in term \"cuda<>12\": expected =, !=, <, <=, > or >="},
      {"cuda>=!12",
       "unknown operator \">=!\" in term \"cuda>=!12\": expected =, !=, <, <=, > or >="},
      {"cuda>=12.x", "version \"12.x\" in term \"cuda>=12.x\" may only contain digits and dots"},
      {"cuda>=-1", "version \"-1\" in term \"cuda>=-1\" may only contain digits and dots"},
      {"cuda>=12.4\tbrand=tesla",
       "version \"12.4\\x09brand=tesla\" in term \"cuda>=12.4\\x09brand=tesla\" may only contain "
       "digits and dots"},
      {"cuda>=.5", "version \".5\" in term \"cuda>=.5\" must start with a digit"},
      {"driver>=.", "version \".\" in term \"driver>=.\" must start with a digit"},
      {"driver>=18446744073709551615",
       "version \"18446744073709551615\" in term \"driver>=18446744073709551615\" has a part too "
       "large to compare"},
      {"driver>=1.99999999999999999999",
       "version \"1.99999999999999999999\" in term \"driver>=1.99999999999999999999\" has a "
       "part too large to compare"},
      {"brand>=tesla", "brand in term \"brand>=tesla\" can only be compared with = or !="},
      {"brand<tesla", "brand in term \"brand<tesla\" can only be compared with = or !="},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.text);
    const Requirement req = parse_requirement("NVIDIA_REQUIRE_CUDA", row.text);
    const RequireTerm* invalid = req.first_invalid();
    ASSERT_NE(invalid, nullptr);
    EXPECT_FALSE(invalid->valid());
    EXPECT_EQ(invalid->error, row.message);
  }
}

TEST(EvaluateRequirements, MatchesTheToolkitOnOneVariable) {
  struct Row {
    std::string name;
    std::string text;
    DeviceFacts device;
    Tristate want;
    std::string condition;  // when want == no
  };
  const DeviceFacts tesla535 = node("535.129.03", "12.2", "8.0", "tesla");
  const DeviceFacts geforce535 = node("535.129.03", "12.2", "8.6", "geforce");
  const DeviceFacts tesla550 = node("550.54.15", "12.4", "9.0", "tesla");
  const DeviceFacts tesla570 = node("570.86.10", "12.8", "10.0", "tesla");
  const DeviceFacts unknown_all = node(std::nullopt, std::nullopt, std::nullopt, std::nullopt);
  const std::vector<Row> rows = {
      {"12.8.1 base on 535 tesla: forward compatibility group", kCuda1281, tesla535, Tristate::yes,
       ""},
      {"12.8.1 base on 535 geforce: no group for geforce", kCuda1281, geforce535, Tristate::no,
       "unsatisfied condition: cuda>=12.8" + kAdvice},
      {"12.8.1 base on 570: new enough driver", kCuda1281, tesla570, Tristate::yes, ""},
      {"12.8.1 base on 550 tesla", kCuda1281, tesla550, Tristate::yes, ""},
      {"12.4.1 base on 535 geforce: set A lists geforce", kCuda1241, geforce535, Tristate::yes, ""},
      {"12.4.1 base on 525 with cuda 12.0", kCuda1241, node("525.60.13", "12.0", "8.6", "geforce"),
       Tristate::yes, ""},
      {"12.4.1 base on 515 grid", kCuda1241, node("515.65.01", "11.7", "8.6", "grid"), Tristate::no,
       "unsatisfied condition: cuda>=12.4" + kAdvice},
      {"bare cuda>=12.4 on 535", "cuda>=12.4", tesla535, Tristate::no,
       "unsatisfied condition: cuda>=12.4" + kAdvice},
      {"bare cuda>=12.4 on 550", "cuda>=12.4", tesla550, Tristate::yes, ""},
      {"bare cuda>=12.4 on a newer minor", "cuda>=12.4", tesla570, Tristate::yes, ""},
      {"upper-case key gets no advice", "CUDA>=12.3", tesla535, Tristate::no,
       "unsatisfied condition: CUDA>=12.3"},
      {"upper-case key passes", "CUDA>=12.3", tesla550, Tristate::yes, ""},
      {"trailing zeros", "cuda>=12.2.0", tesla535, Tristate::yes, ""},
      {"cuda=", "cuda=12.2", tesla535, Tristate::yes, ""},
      {"cuda!=", "cuda!=12.2", tesla535, Tristate::no, "unsatisfied condition: cuda!=12.2"},
      {"cuda<", "cuda<12.2", tesla535, Tristate::no, "unsatisfied condition: cuda<12.2"},
      {"cuda<=", "cuda<=12.2", tesla535, Tristate::yes, ""},
      {"cuda>", "cuda>12.2", tesla535, Tristate::no, "unsatisfied condition: cuda>12.2"},
      {"cuda> a shorter version", "cuda>12", tesla535, Tristate::yes, ""},
      {"cuda> equal after zeros", "cuda>12.2.0.0", tesla535, Tristate::no,
       "unsatisfied condition: cuda>12.2.0.0"},
      {"lone ! as !=", "cuda!12.2", tesla535, Tristate::no, "unsatisfied condition: cuda!12.2"},
      {"driver range in", "driver>=470,driver<471", node("470.57.02", "11.4", "7.5", "tesla"),
       Tristate::yes, ""},
      {"driver range out", "driver>=470,driver<471", node("471.11", "11.4", "7.5", "tesla"),
       Tristate::no, "unsatisfied condition: driver>=470,driver<471"},
      {"driver leading zero", "driver>=535.129.3", tesla535, Tristate::yes, ""},
      {"driver patch below", "driver>=535.129.10", tesla535, Tristate::no,
       "unsatisfied condition: driver>=535.129.10"},
      {"driver custom floor", "cuda>=13.0 driver>=580.95.05",
       node("580.95.05", "13.0", "9.0", "nvidia"), Tristate::yes, ""},
      {"driver custom floor below", "cuda>=13.0 driver>=580.95.05",
       node("580.82.07", "12.9", "9.0", "nvidia"), Tristate::no,
       "unsatisfied condition: cuda>=13.0" + kAdvice},
      {"arch floor", "arch>=8.0", node("535.129.03", "12.2", "7.5", "tesla"), Tristate::no,
       "unsatisfied condition: arch>=8.0"},
      {"arch floor met", "arch>=8.0", tesla535, Tristate::yes, ""},
      {"arch exact", "arch=8.6", geforce535, Tristate::yes, ""},
      {"brand case-insensitive", "brand=TESLA", tesla535, Tristate::yes, ""},
      {"brand device upper case", "brand=tesla", node("535.129.03", "12.2", "8.0", "Tesla"),
       Tristate::yes, ""},
      {"brand !=", "brand!=geforce", geforce535, Tristate::no,
       "unsatisfied condition: brand!=geforce"},
      {"first alternative is named, not the one that failed",
       "brand=tesla,driver>=470,driver<471 cuda>=12.8", tesla535, Tristate::no,
       "unsatisfied condition: brand=tesla,driver>=470,driver<471"},
      // dsl.c dsl_evaluate: the message is strsep(predicate, " "), whose first
      // token is empty when the value starts with a space.
      {"a leading space empties the named condition", "  cuda>=12.8", tesla535, Tristate::no,
       "unsatisfied condition: "},
      {"empty value holds", "", tesla535, Tristate::yes, ""},
      {"blank value holds", "   ", tesla535, Tristate::yes, ""},
      // dsl.c dsl_evaluate: an all-comma group ends the loop with `ret` as the
      // last evaluated term left it: true before any term, false after a
      // failed group; later groups are never reached.
      {"a group of commas first holds", ",,", tesla535, Tristate::yes, ""},
      {"a group of commas first holds before anything else", ", cuda>=99.0", tesla535,
       Tristate::yes, ""},
      {"an empty group after a failed one fails", "cuda>=12.4 ,", tesla535, Tristate::no,
       "unsatisfied condition: cuda>=12.4" + kAdvice},
      {"an empty group after a failed one fails, commas", "cuda>=99.0 ,,", tesla535, Tristate::no,
       "unsatisfied condition: cuda>=99.0" + kAdvice},
      {"an empty group after a satisfied one is not reached", "cuda>=12.4 ,", tesla550,
       Tristate::yes, ""},
      {"an empty group hides the groups after it", "cuda>=99.0 , cuda>=12.0", tesla535,
       Tristate::no, "unsatisfied condition: cuda>=99.0" + kAdvice},
      {"an empty group after an unknown one", "cuda>=12.0 ,", unknown_all, Tristate::unknown, ""},
      {"unknown driver", "cuda>=12.0", unknown_all, Tristate::unknown, ""},
      {"empty value holds on an unknown node", "", unknown_all, Tristate::yes, ""},
      {"unknown brand, failing cuda", kCuda1281, node("535.129.03", "12.2", "8.0", std::nullopt),
       Tristate::unknown, ""},
      {"unknown brand, wrong branch settles it", kCuda1281,
       node("525.60.13", "12.0", "8.0", std::nullopt), Tristate::no,
       "unsatisfied condition: cuda>=12.8" + kAdvice},
      {"unknown brand, cuda suffices", kCuda1281, node("570.86.10", "12.8", "8.0", std::nullopt),
       Tristate::yes, ""},
      {"unknown cuda, driver suffices", "cuda>=99.0 driver>=470",
       node("535.129.03", std::nullopt, std::nullopt, std::nullopt), Tristate::yes, ""},
      {"a no term settles an alternative with unknowns", "brand=tesla,driver>=600",
       node("535.129.03", std::nullopt, std::nullopt, std::nullopt), Tristate::no,
       "unsatisfied condition: brand=tesla,driver>=600"},
      {"a no term before an unknown one settles it too", "driver>=600,brand=tesla",
       node("535.129.03", std::nullopt, std::nullopt, std::nullopt), Tristate::no,
       "unsatisfied condition: driver>=600,brand=tesla"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const RequirementSet set = set_of({{"NVIDIA_REQUIRE_CUDA", row.text}});
    const RequirementResult result = evaluate_requirements(set, row.device);
    EXPECT_STREQ(name_of(result.satisfied), name_of(row.want));
    EXPECT_EQ(result.condition, row.condition);
    EXPECT_EQ(result.variable, row.want == Tristate::yes ? "" : "NVIDIA_REQUIRE_CUDA");
  }
}

TEST(EvaluateRequirements, AnInvalidTermCountsOnlyWhereItIsReached) {
  // dsl.c dsl_evaluate: evaluate_rule runs term by term, left to right; the
  // loop stops at the first satisfied group and at a group's first false
  // term, and only a term it evaluates can return -1 ("invalid expression").
  struct Row {
    std::string name;
    std::string text;
    DeviceFacts device;
    Tristate want;
    std::string invalid;  // the invalid term reported, when want == no
    std::string condition;
  };
  const DeviceFacts tesla535 = node("535.129.03", "12.2", "8.0", "tesla");
  const DeviceFacts tesla550 = node("550.54.15", "12.4", "9.0", "tesla");
  const DeviceFacts no_cuda = node(std::nullopt, std::nullopt, "8.0", "tesla");
  const std::vector<Row> rows = {
      {"after a satisfied group", "cuda>=12.4 jetpack>=5", tesla550, Tristate::yes, "", ""},
      {"reached after a failed group", "cuda>=12.4 jetpack>=5", tesla535, Tristate::no,
       "jetpack>=5", ""},
      {"a bad operator after a satisfied group", "cuda>=12.0 cuda=>13", tesla535, Tristate::yes, "",
       ""},
      {"first in the value", "jetpack>=5 cuda>=12.0", tesla550, Tristate::no, "jetpack>=5", ""},
      {"after a false term of its group", "cuda>=12.4,cuda~1", tesla535, Tristate::no, "",
       "unsatisfied condition: cuda>=12.4,cuda~1" + kAdvice},
      {"after a true term of its group", "cuda>=12.4,cuda~1", tesla550, Tristate::no, "cuda~1", ""},
      {"behind an empty group", "cuda>=99.0 , jetpack>=5", tesla550, Tristate::no, "",
       "unsatisfied condition: cuda>=99.0" + kAdvice},
      {"a bad version is found when compared", "driver>=535 arch>=8.x", tesla535, Tristate::yes, "",
       ""},
      {"a bad version reached", "driver>=550 arch>=8.x", tesla535, Tristate::no, "arch>=8.x", ""},
      {"brand with an ordering operator reached", "brand>=tesla", tesla535, Tristate::no,
       "brand>=tesla", ""},
      {"unknown facts may or may not reach it", "cuda>=12.4 jetpack>=5", no_cuda, Tristate::unknown,
       "", ""},
      {"unknown facts that reach one on every path", "brand=tesla,jetpack>=5 foo>=1",
       node(std::nullopt, std::nullopt, std::nullopt, std::nullopt), Tristate::no, "jetpack>=5",
       ""},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const RequirementSet set = set_of({{"NVIDIA_REQUIRE_CUDA", row.text}});
    const RequirementResult result = evaluate_requirements(set, row.device);
    EXPECT_STREQ(name_of(result.satisfied), name_of(row.want));
    EXPECT_EQ(result.condition, row.condition);
    if (row.invalid.empty()) {
      EXPECT_EQ(result.invalid, nullptr) << result.invalid->text;
    } else {
      ASSERT_NE(result.invalid, nullptr);
      EXPECT_EQ(result.invalid->text, row.invalid);
      EXPECT_FALSE(result.invalid->error.empty());
      EXPECT_EQ(result.variable, "NVIDIA_REQUIRE_CUDA");
    }
  }
}

TEST(EvaluateRequirements, TheFirstFailingVariableMayBeInvalid) {
  // configure.c configure_command: each --require is evaluated in turn and
  // the first error ends the container's start.
  const RequirementSet set = set_of({{"NVIDIA_REQUIRE_ARCH", "arch>=8.0"},
                                     {"NVIDIA_REQUIRE_FOO", "foo>=1"},
                                     {"NVIDIA_REQUIRE_CUDA", "cuda>=99.0"}});
  const RequirementResult result =
      evaluate_requirements(set, node("535.129.03", "12.2", "8.0", "tesla"));
  EXPECT_STREQ(name_of(result.satisfied), "no");
  EXPECT_EQ(result.variable, "NVIDIA_REQUIRE_FOO");
  ASSERT_NE(result.invalid, nullptr);
  EXPECT_EQ(result.invalid->error,
            "unknown key \"foo\" in term \"foo>=1\": expected cuda, driver, arch or brand");
  EXPECT_EQ(result.condition, "");
}

TEST(EvaluateRequirements, EveryVariableMustHold) {
  const DeviceFacts tesla535 = node("535.129.03", "12.2", "8.0", "tesla");
  const DeviceFacts no_arch = node("535.129.03", "12.2", std::nullopt, "tesla");
  struct Row {
    std::string name;
    std::vector<std::pair<std::string, std::string>> vars;
    DeviceFacts device;
    Tristate want;
    std::string variable;
    std::string condition;
  };
  const std::vector<Row> rows = {
      {"both hold",
       {{"NVIDIA_REQUIRE_CUDA", "cuda>=12.0"}, {"NVIDIA_REQUIRE_ARCH", "arch>=7.0"}},
       tesla535,
       Tristate::yes,
       "",
       ""},
      {"the second fails",
       {{"NVIDIA_REQUIRE_CUDA", "cuda>=12.0"}, {"NVIDIA_REQUIRE_DRIVER", "driver>=550"}},
       tesla535,
       Tristate::no,
       "NVIDIA_REQUIRE_DRIVER",
       "unsatisfied condition: driver>=550"},
      {"the first failing one is reported",
       {{"NVIDIA_REQUIRE_A", "arch>=9.0"}, {"NVIDIA_REQUIRE_B", "cuda>=12.4"}},
       tesla535,
       Tristate::no,
       "NVIDIA_REQUIRE_A",
       "unsatisfied condition: arch>=9.0"},
      {"unknown then failing is failing",
       {{"NVIDIA_REQUIRE_ARCH", "arch>=8.0"}, {"NVIDIA_REQUIRE_CUDA", "cuda>=12.4"}},
       no_arch,
       Tristate::no,
       "NVIDIA_REQUIRE_CUDA",
       "unsatisfied condition: cuda>=12.4" + kAdvice},
      {"unknown and holding is unknown",
       {{"NVIDIA_REQUIRE_CUDA", "cuda>=12.0"}, {"NVIDIA_REQUIRE_ARCH", "arch>=8.0"}},
       no_arch,
       Tristate::unknown,
       "NVIDIA_REQUIRE_ARCH",
       ""},
      {"no variables hold", {}, tesla535, Tristate::yes, "", ""},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const RequirementResult result = evaluate_requirements(set_of(row.vars), row.device);
    EXPECT_STREQ(name_of(result.satisfied), name_of(row.want));
    EXPECT_EQ(result.variable, row.variable);
    EXPECT_EQ(result.condition, row.condition);
  }
}

TEST(RequirementSet, StrJoinsValuesInOrder) {
  EXPECT_EQ(RequirementSet{}.str(), "");
  const RequirementSet set =
      set_of({{"NVIDIA_REQUIRE_CUDA", "cuda>=12.4 brand=tesla,driver>=470,driver<471"},
              {"NVIDIA_REQUIRE_ARCH", "arch>=8.0"}});
  EXPECT_FALSE(set.empty());
  EXPECT_EQ(set.str(), "cuda>=12.4 brand=tesla,driver>=470,driver<471; arch>=8.0");
  EXPECT_TRUE(RequirementSet{}.empty());
}

}  // namespace
}  // namespace cudagate

// The policy file: defaults, every field and value, errors naming the file, the line and the
// field, glob matching and catalog lookups.
#include "policy/config/policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "compat-db/compat_db.h"
#include "tests/support/embedded_compat_db.h"

namespace cudagate {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

using test_support::db;

Policy parse_ok(const std::string& text) {
  auto p = parse_policy(text, "policy.yaml", db());
  EXPECT_TRUE(p) << text << "\n-> " << (p ? "" : p.error().str());
  return p ? std::move(*p) : Policy{};
}

std::string parse_error(const std::string& text) {
  auto p = parse_policy(text, "policy.yaml", db());
  EXPECT_FALSE(p) << "accepted:\n" << text;
  return p ? std::string() : p.error().str();
}

void expect_defaults(const Policy& p) {
  EXPECT_EQ(p.mode, Mode::enforce);
  EXPECT_TRUE(p.mutate);
  EXPECT_EQ(p.partial, PartialAction::deny);
  EXPECT_EQ(p.unknown_image, Action::warn);
  EXPECT_EQ(p.unknown_node, Action::warn);
  EXPECT_EQ(p.no_candidates, Action::warn);
  EXPECT_EQ(p.on_error, Action::allow);
  EXPECT_FALSE(p.minor_version_compatibility);
  EXPECT_EQ(p.arch_match, ArchMatch::cuda);
  EXPECT_EQ(p.arch_list_reading, ArchListReading::cpp_extension);
  EXPECT_EQ(p.toolkit_mode, ToolkitMode::legacy);
  EXPECT_FALSE(p.allow_pod_opt_out);
  EXPECT_EQ(p.exclude_namespaces, std::vector<std::string>{"kube-system"});
  EXPECT_EQ(p.gpu_resources, std::vector<std::string>{"nvidia.com/gpu"});
  EXPECT_TRUE(p.images.empty());
  EXPECT_TRUE(p.registry.enabled);
  EXPECT_EQ(p.registry.timeout, 2000ms);
  EXPECT_EQ(p.registry.cache_ttl, 600s);
  EXPECT_EQ(p.registry.max_cache_entries, 10000U);
  EXPECT_EQ(p.registry.platform, "linux/amd64");
  EXPECT_EQ(p.registry.credentials, "/etc/cudagate/registry/config.json");
  EXPECT_TRUE(p.registry.insecure.empty());
  EXPECT_EQ(p.registry.ca_file, "");
  EXPECT_TRUE(p.registry.mirrors.empty());
}

TEST(ParsePolicy, EmptyInputsAreTheDefaultPolicy) {
  for (const char* text :
       {"", "\n\n", "# only a comment\n", "---\n", "---\n...\n", "null\n", "~"}) {
    SCOPED_TRACE(text);
    expect_defaults(parse_ok(text));
  }
}

TEST(ParsePolicy, ApiVersionAndKindAloneAreTheDefaultPolicy) {
  expect_defaults(parse_ok("apiVersion: cudagate.io/v1alpha1\nkind: Policy\n"));
  expect_defaults(parse_ok("{}"));
}

TEST(ParsePolicy, NullFieldsKeepTheirDefaults) {
  expect_defaults(parse_ok("mode:\nimages:\nexcludeNamespaces: ~\nregistry:\n"));
}

constexpr const char* kSpecExample = R"(apiVersion: cudagate.io/v1alpha1
kind: Policy
mode: warn
mutate: false
partial: warn
unknownImage: deny
unknownNode: allow
noCandidates: deny
onError: deny
minorVersionCompatibility: true
archMatch: exact
allowPodOptOut: true
excludeNamespaces: [kube-system, gpu-operator]
gpuResources: [nvidia.com/gpu, amd.com/gpu]
images:
  - match: "registry.example.com/ml/*"
    cudaVersion: "12.1"
    archList: "8.0;9.0"
  - match: docker.io/library/train:?
    requireCuda: "cuda>=12.4 brand=tesla,driver>=535,driver<536"
registry:
  enabled: false
  timeout: 500ms
  cacheTTL: 1h
  maxCacheEntries: 50
  platform: linux/arm64/v8
  credentials: /run/creds.json
  insecure: [localhost:5000]
  caFile: /etc/ca.pem
  mirrors: {docker.io: mirror.example.com}
)";

TEST(ParsePolicy, EveryFieldOfTheSpecExample) {
  const Policy p = parse_ok(kSpecExample);
  EXPECT_EQ(p.mode, Mode::warn);
  EXPECT_FALSE(p.mutate);
  EXPECT_EQ(p.partial, PartialAction::warn);
  EXPECT_EQ(p.unknown_image, Action::deny);
  EXPECT_EQ(p.unknown_node, Action::allow);
  EXPECT_EQ(p.no_candidates, Action::deny);
  EXPECT_EQ(p.on_error, Action::deny);
  EXPECT_TRUE(p.minor_version_compatibility);
  EXPECT_EQ(p.arch_match, ArchMatch::exact);
  EXPECT_TRUE(p.allow_pod_opt_out);
  EXPECT_EQ(p.exclude_namespaces, (std::vector<std::string>{"kube-system", "gpu-operator"}));
  EXPECT_EQ(p.gpu_resources, (std::vector<std::string>{"nvidia.com/gpu", "amd.com/gpu"}));
  ASSERT_EQ(p.images.size(), 2U);
  EXPECT_EQ(p.images[0].match, "registry.example.com/ml/*");
  EXPECT_EQ(p.images[0].cuda_version, "12.1");
  EXPECT_EQ(p.images[0].arch_list, "8.0;9.0");
  EXPECT_FALSE(p.images[0].require_cuda);
  EXPECT_EQ(p.images[1].require_cuda, "cuda>=12.4 brand=tesla,driver>=535,driver<536");
  EXPECT_FALSE(p.registry.enabled);
  EXPECT_EQ(p.registry.timeout, 500ms);
  EXPECT_EQ(p.registry.cache_ttl, 3600s);
  EXPECT_EQ(p.registry.max_cache_entries, 50U);
  EXPECT_EQ(p.registry.platform, "linux/arm64/v8");
  EXPECT_EQ(p.registry.credentials, "/run/creds.json");
  EXPECT_EQ(p.registry.insecure, std::vector<std::string>{"localhost:5000"});
  EXPECT_EQ(p.registry.ca_file, "/etc/ca.pem");
  EXPECT_EQ(p.registry.mirrors.at("docker.io"), "mirror.example.com");
}

TEST(ParsePolicy, JsonIsReadToo) {
  const Policy p = parse_ok(R"({"apiVersion": "cudagate.io/v1alpha1", "kind": "Policy",
    "mode": "dryrun", "mutate": false, "excludeNamespaces": [],
    "images": [{"match": "a/*", "cudaVersion": 12.4}],
    "registry": {"timeout": "10s", "mirrors": {}}})");
  EXPECT_EQ(p.mode, Mode::dryrun);
  EXPECT_FALSE(p.mutate);
  EXPECT_TRUE(p.exclude_namespaces.empty());
  ASSERT_EQ(p.images.size(), 1U);
  EXPECT_EQ(p.images[0].cuda_version, "12.4");
  EXPECT_EQ(p.registry.timeout, 10s);
}

struct FieldCase {
  std::string yaml;
  std::function<bool(const Policy&)> holds;
};

TEST(ParsePolicy, EachValueOfEachEnumeratedField) {
  const std::vector<FieldCase> cases = {
      {"mode: enforce", [](const Policy& p) { return p.mode == Mode::enforce; }},
      {"mode: warn", [](const Policy& p) { return p.mode == Mode::warn; }},
      {"mode: dryrun", [](const Policy& p) { return p.mode == Mode::dryrun; }},
      {"partial: deny", [](const Policy& p) { return p.partial == PartialAction::deny; }},
      {"partial: warn", [](const Policy& p) { return p.partial == PartialAction::warn; }},
      {"unknownImage: allow", [](const Policy& p) { return p.unknown_image == Action::allow; }},
      {"unknownImage: deny", [](const Policy& p) { return p.unknown_image == Action::deny; }},
      {"unknownNode: deny", [](const Policy& p) { return p.unknown_node == Action::deny; }},
      {"noCandidates: allow", [](const Policy& p) { return p.no_candidates == Action::allow; }},
      {"onError: allow", [](const Policy& p) { return p.on_error == Action::allow; }},
      {"onError: deny", [](const Policy& p) { return p.on_error == Action::deny; }},
      {"archMatch: cuda", [](const Policy& p) { return p.arch_match == ArchMatch::cuda; }},
      {"archMatch: exact", [](const Policy& p) { return p.arch_match == ArchMatch::exact; }},
      {"archListReading: cpp-extension",
       [](const Policy& p) { return p.arch_list_reading == ArchListReading::cpp_extension; }},
      {"archListReading: cmake",
       [](const Policy& p) { return p.arch_list_reading == ArchListReading::cmake; }},
      {"toolkitMode: legacy",
       [](const Policy& p) { return p.toolkit_mode == ToolkitMode::legacy; }},
      {"toolkitMode: cdi", [](const Policy& p) { return p.toolkit_mode == ToolkitMode::cdi; }},
      {"mutate: False", [](const Policy& p) { return !p.mutate; }},
      {"mutate: TRUE", [](const Policy& p) { return p.mutate; }},
      {"allowPodOptOut: true", [](const Policy& p) { return p.allow_pod_opt_out; }},
      {"minorVersionCompatibility: true",
       [](const Policy& p) { return p.minor_version_compatibility; }},
      {"registry: {enabled: false}", [](const Policy& p) { return !p.registry.enabled; }},
      {"registry: {timeout: 2s}", [](const Policy& p) { return p.registry.timeout == 2s; }},
      {"registry: {timeout: 1h30m}", [](const Policy& p) { return p.registry.timeout == 90min; }},
      {"registry: {timeout: 1.5s}", [](const Policy& p) { return p.registry.timeout == 1500ms; }},
      {"registry: {timeout: 250ms}", [](const Policy& p) { return p.registry.timeout == 250ms; }},
      {"registry: {cacheTTL: 10m}", [](const Policy& p) { return p.registry.cache_ttl == 600s; }},
      {"registry: {cacheTTL: 0}", [](const Policy& p) { return p.registry.cache_ttl == 0s; }},
      {"registry: {cacheTTL: 2h}", [](const Policy& p) { return p.registry.cache_ttl == 7200s; }},
      {"registry: {maxCacheEntries: 1}",
       [](const Policy& p) { return p.registry.max_cache_entries == 1; }},
      {"registry: {platform: linux/arm64}",
       [](const Policy& p) { return p.registry.platform == "linux/arm64"; }},
      {"registry: {credentials: ''}",
       [](const Policy& p) { return p.registry.credentials.empty(); }},
      {"registry: {mirrors: {docker.io: m.example.com, ghcr.io: g.example.com}}",
       [](const Policy& p) { return p.registry.mirrors.size() == 2; }},
      {"images: []", [](const Policy& p) { return p.images.empty(); }},
      {"images: [{match: '*', archList: Ampere}]",
       [](const Policy& p) { return p.images.size() == 1 && p.images[0].arch_list == "Ampere"; }},
  };
  for (const FieldCase& c : cases) {
    SCOPED_TRACE(c.yaml);
    EXPECT_TRUE(c.holds(parse_ok(c.yaml)));
  }
}

struct ErrorCase {
  std::string yaml;
  std::string error;  // the whole message
};

TEST(ParsePolicy, BadValuesNameFileLineAndField) {
  const std::vector<ErrorCase> cases = {
      {"apiVersion: cudagate.io/v1alpha1\nkind: Policy\nmode: warn\nmutate: true\n"
       "partial: deny\n# comment\nunknownImage: maybe\n",
       "policy.yaml:7: unknownImage: expected one of allow, warn, deny, got \"maybe\""},
      {"mode: audit", "policy.yaml:1: mode: expected one of enforce, warn, dryrun, got \"audit\""},
      {"mode: [warn]", "policy.yaml:1: mode: expected one of enforce, warn, dryrun"},
      {"partial: allow", "policy.yaml:1: partial: expected one of deny, warn, got \"allow\""},
      {"unknownNode: Warn",
       "policy.yaml:1: unknownNode: expected one of allow, warn, deny, got \"Warn\""},
      {"noCandidates: 1",
       "policy.yaml:1: noCandidates: expected one of allow, warn, deny, got \"1\""},
      {"onError: warn", "policy.yaml:1: onError: expected one of allow, deny, got \"warn\""},
      {"archMatch: sass", "policy.yaml:1: archMatch: expected one of cuda, exact, got \"sass\""},
      {"archListReading: cpp_extension",
       "policy.yaml:1: archListReading: expected one of cpp-extension, cmake, got "
       "\"cpp_extension\""},
      {"toolkitMode: jit-cdi",
       "policy.yaml:1: toolkitMode: expected one of legacy, cdi, got \"jit-cdi\""},
      {"toolkitMode: [cdi]", "policy.yaml:1: toolkitMode: expected one of legacy, cdi"},
      {"apiVersion: v1",
       "policy.yaml:1: apiVersion: expected \"cudagate.io/v1alpha1\", got \"v1\""},
      {"\nkind: Pod", "policy.yaml:2: kind: expected \"Policy\", got \"Pod\""},
      {"mutate: yes", "policy.yaml:1: mutate: expected true or false, got \"yes\""},
      {"mutate: \"true\"", "policy.yaml:1: mutate: expected true or false, got \"true\""},
      {"allowPodOptOut: {}", "policy.yaml:1: allowPodOptOut: expected true or false"},
      {"minorVersionCompatibility: 1",
       "policy.yaml:1: minorVersionCompatibility: expected true or false, got \"1\""},
      {"excludeNamespaces: kube-system",
       "policy.yaml:1: excludeNamespaces: expected a list of strings"},
      {"excludeNamespaces:\n  - a\n  - ''\n",
       "policy.yaml:3: excludeNamespaces[1]: expected a non-empty string"},
      {"gpuResources: [[nvidia.com/gpu]]",
       "policy.yaml:1: gpuResources[0]: expected a non-empty string"},
      {"registry: true", "policy.yaml:1: registry: expected a mapping (enabled, timeout, ...)"},
      {"registry:\n  timeout: 2\n",
       "policy.yaml:2: registry.timeout: expected a duration like 2s, 500ms, 10m or 1h, got \"2\""},
      {"registry:\n  timeout: 2 s\n",
       "policy.yaml:2: registry.timeout: expected a duration like 2s, 500ms, 10m or 1h, got \"2 "
       "s\""},
      {"registry:\n  timeout: 0s\n",
       "policy.yaml:2: registry.timeout: expected a positive duration, got \"0s\""},
      {"registry:\n  timeout: 1d\n",
       "policy.yaml:2: registry.timeout: expected a duration like 2s, 500ms, 10m or 1h, got "
       "\"1d\""},
      {"registry:\n  timeout: -1s\n",
       "policy.yaml:2: registry.timeout: expected a duration like 2s, 500ms, 10m or 1h, got "
       "\"-1s\""},
      {"registry:\n  cacheTTL: 1500ms\n",
       "policy.yaml:2: registry.cacheTTL: expected whole seconds like 30s or 10m, got \"1500ms\""},
      {"registry:\n  cacheTTL: 99999999h\n",
       "policy.yaml:2: registry.cacheTTL: expected a duration like 2s, 500ms, 10m or 1h, got "
       "\"99999999h\""},
      {"registry:\n  maxCacheEntries: 0\n",
       "policy.yaml:2: registry.maxCacheEntries: expected a positive integer below 1000000000, "
       "got \"0\""},
      {"registry:\n  maxCacheEntries: -5\n",
       "policy.yaml:2: registry.maxCacheEntries: expected a positive integer below 1000000000, "
       "got \"-5\""},
      {"registry:\n  maxCacheEntries: \"10\"\n",
       "policy.yaml:2: registry.maxCacheEntries: expected a positive integer below 1000000000, "
       "got \"10\""},
      {"registry:\n  platform: linux\n",
       "policy.yaml:2: registry.platform: expected os/arch[/variant] like linux/amd64, got "
       "\"linux\""},
      {"registry:\n  credentials: [a]\n", "policy.yaml:2: registry.credentials: expected a string"},
      {"registry:\n  mirrors: [a]\n",
       "policy.yaml:2: registry.mirrors: expected a mapping of registry to mirror (docker.io: "
       "mirror.example.com)"},
      {"registry:\n  mirrors:\n    docker.io: ''\n",
       "policy.yaml:3: registry.mirrors.docker.io: expected a mirror host name"},
      {"images: {match: a}",
       "policy.yaml:1: images: expected a list of catalog entries (match, cudaVersion, ...)"},
      {"images:\n  - registry.example.com/*\n",
       "policy.yaml:2: images[0]: expected a catalog entry with match and cudaVersion, archList "
       "or requireCuda"},
      {"images:\n  - cudaVersion: '12.1'\n",
       "policy.yaml:2: images[0].match: missing: each catalog entry needs an image pattern"},
      {"images:\n  - match: a/*\n",
       "policy.yaml:2: images[0]: declares nothing: expected at least one of cudaVersion, "
       "archList, requireCuda"},
      {"images:\n  - match: a/*\n    cudaVersion: 12.1\n  - match: b/*\n    cudaVersion: 12.x\n",
       "policy.yaml:5: images[1].cudaVersion: expected a CUDA version like 12.4 or 12.4.1, got "
       "\"12.x\""},
      {"images:\n  - match: ''\n    cudaVersion: '12.1'\n",
       "policy.yaml:2: images[0].match: expected a non-empty image pattern"},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.yaml);
    EXPECT_EQ(parse_error(c.yaml), c.error);
  }
}

TEST(ParsePolicy, CatalogValuesAreCheckedWithTheirParsers) {
  EXPECT_THAT(parse_error("images:\n  - match: a/*\n    archList: '8.0;Bogus'\n"),
              HasSubstr("policy.yaml:3: images[0].archList: "));
  EXPECT_THAT(parse_error("images:\n  - match: a/*\n    archList: '8.0;Bogus'\n"),
              HasSubstr("Bogus"));
  EXPECT_THAT(parse_error("images:\n  - match: a/*\n    requireCuda: 'cuda~12.4'\n"),
              HasSubstr("policy.yaml:3: images[0].requireCuda: "));
  EXPECT_THAT(parse_error("images:\n  - match: a/*\n    requireCuda: 'gpu>=12.4'\n"),
              HasSubstr("unknown key"));
  // A term the toolkit would reach only on some nodes is still the author's to fix.
  EXPECT_EQ(parse_error("images:\n  - match: a/*\n    requireCuda: 'cuda>=12.4 jetpack>=5'\n"),
            "policy.yaml:3: images[0].requireCuda: NVIDIA_REQUIRE_CUDA: unknown key \"jetpack\" "
            "in term \"jetpack>=5\": expected cuda, driver, arch or brand");
  // Arch lists as PyTorch reads them.
  EXPECT_THAT(parse_error("images:\n  - match: a/*\n    archList: 'ampere'\n"),
              HasSubstr("write \"Ampere\""));
  EXPECT_THAT(parse_error("images:\n  - match: a/*\n    archList: '8.0a'\n"),
              HasSubstr("no CUDA release builds sm_80a"));
  EXPECT_EQ(parse_error("images:\n  - match: a/*\n    requireCuda: ''\n"),
            "policy.yaml:3: images[0].requireCuda: expected an NVIDIA_REQUIRE_CUDA value like "
            "cuda>=12.4");
}

TEST(ParsePolicy, UnknownFieldsNameTheFieldAndLine) {
  EXPECT_THAT(parse_error("mode: warn\nmdoe: warn\n"),
              HasSubstr("policy.yaml:2: mdoe: unknown field (expected one of apiVersion, kind, "));
  EXPECT_THAT(parse_error("toolkitmode: cdi\n"),
              HasSubstr("archMatch, archListReading, toolkitMode, allowPodOptOut"));
  EXPECT_THAT(parse_error("registry:\n  enabled: true\n  timeot: 2s\n"),
              HasSubstr("policy.yaml:3: registry.timeot: unknown field (expected one of enabled, "
                        "timeout, cacheTTL"));
  EXPECT_THAT(parse_error("images:\n  - match: a\n    cuda: '12.4'\n"),
              HasSubstr("policy.yaml:3: images[0].cuda: unknown field (expected one of match, "
                        "cudaVersion, archList, requireCuda)"));
  EXPECT_THAT(parse_error("{\"mode\": \"warn\",\n \"Mode\": \"warn\"}"),
              HasSubstr("policy.yaml:2: Mode: unknown field"));
}

TEST(ParsePolicy, StructuralErrors) {
  EXPECT_EQ(parse_error("mode: warn\nmode: dryrun\n"), "policy.yaml:2: mode: field given twice");
  EXPECT_EQ(parse_error("- mode: warn\n"),
            "policy.yaml:1: expected a Policy mapping (apiVersion, kind, mode, ...)");
  EXPECT_EQ(parse_error("just text"),
            "policy.yaml:1: expected a Policy mapping (apiVersion, kind, mode, ...)");
  EXPECT_EQ(parse_error("mode: warn\n---\nmode: dryrun\n"),
            "policy.yaml:2: expected one policy document, found more than one");
  EXPECT_EQ(parse_error("[1, 2]: x\n"), "policy.yaml:1: expected a field name");
  EXPECT_THAT(parse_error("mode: warn\nregistry: {timeout: 2s\n"), HasSubstr("policy.yaml:"));
  EXPECT_THAT(parse_error("mode: warn\nregistry: {timeout: 2s\n"), HasSubstr("invalid YAML: "));
  EXPECT_THAT(parse_error("mode: warn: dryrun\n"), HasSubstr("invalid YAML: "));
  EXPECT_THAT(parse_error("{\"mode\": \"warn\""), HasSubstr("invalid YAML: "));
  // yaml-cpp 0.7 alone loops for ever on these.
  for (const char* text : {",", ",a: b", "mode: warn\n---\n,\n", "- a\n,", "\"a\" ,", "# c\n,"}) {
    SCOPED_TRACE(text);
    EXPECT_THAT(parse_error(text), HasSubstr("invalid YAML: unexpected ','"));
  }
  EXPECT_EQ(parse_error(std::string(5000, '[')), "policy.yaml:1: invalid YAML: nesting too deep");
  EXPECT_EQ(parse_error("mode: " + std::string(3000, '{')),
            "policy.yaml:1: invalid YAML: nesting too deep");
  EXPECT_EQ(parse_error("# c\n  ,\n"),
            "policy.yaml:2: invalid YAML: unexpected ',' or flow indicator where a value should "
            "start");
}

TEST(ParsePolicy, SourceNamesTheFile) {
  auto p = parse_policy("mode: x", "/etc/cudagate/policy.json", db());
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().where, "/etc/cudagate/policy.json:1: mode");
}

struct GlobCase {
  std::string pattern;
  std::string text;
  bool matches;
};

TEST(GlobMatch, StarCrossesSlashesAndQuestionMarkIsOneCharacter) {
  const std::vector<GlobCase> cases = {
      {"*", "", true},
      {"*", "anything/at/all:tag", true},
      {"", "", true},
      {"", "a", false},
      {"registry.example.com/ml/*", "registry.example.com/ml/train:cu124", true},
      {"registry.example.com/ml/*", "registry.example.com/ml/team/train:v1", true},
      {"registry.example.com/ml/*", "registry.example.com/mlx/train", false},
      {"registry.example.com/ml/*", "registry.example.com/ml", false},
      {"*/pytorch:*-cuda12.4-*", "docker.io/pytorch/pytorch:2.4.1-cuda12.4-cudnn9-runtime", true},
      {"train:v?", "train:v1", true},
      {"train:v?", "train:v10", false},
      {"train:v?", "train:v", false},
      {"a*b*c", "aXXbYYc", true},
      {"a*b*c", "aXXbYY", false},
      {"a**c", "abc", true},
      {"*c", "ccccd", false},
      {"a*a*a*a*a*a*a*b", std::string(200, 'a'), false},
      {"exact", "exact", true},
      {"exact", "Exact", false},
  };
  for (const GlobCase& c : cases) {
    SCOPED_TRACE(c.pattern + " ~ " + c.text);
    EXPECT_EQ(glob_match(c.pattern, c.text), c.matches);
  }
}

TEST(CatalogEntry, MatchesWrittenNormalisedAndUntaggedForms) {
  const Policy p = parse_ok(R"(images:
  - match: "registry.example.com/ml/*"
    cudaVersion: "12.1"
  - match: "docker.io/library/ubuntu"
    cudaVersion: "11.8"
  - match: "docker.io/nvidia/cuda:12.4.1-*"
    cudaVersion: "12.4"
  - match: "train:v?"
    cudaVersion: "12.2"
)");
  struct Case {
    std::string image;
    std::optional<std::string> cuda;
  };
  const std::vector<Case> cases = {
      {"registry.example.com/ml/train:cu124", "12.1"},
      {"registry.example.com/ml/train@sha256:" + std::string(64, 'a'), "12.1"},
      {"ubuntu", "11.8"},        // normalised name, tag latest
      {"ubuntu:22.04", "11.8"},  // name without tag
      {"index.docker.io/library/ubuntu:22.04", "11.8"},
      {"nvidia/cuda:12.4.1-base-ubuntu22.04", "12.4"},
      {"nvidia/cuda:12.8.1-base-ubuntu22.04", std::nullopt},
      {"train:v1", "12.2"},  // as written
      {"registry.example.com/other/train:v1", std::nullopt},
      {"", std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.image);
    const CatalogEntry* e = p.catalog_entry(c.image);
    if (!c.cuda) {
      EXPECT_EQ(e, nullptr);
    } else {
      ASSERT_NE(e, nullptr);
      EXPECT_EQ(e->cuda_version, c.cuda);
    }
  }
}

TEST(CatalogEntry, FirstMatchWins) {
  const Policy p = parse_ok(R"(images:
  - {match: "registry.example.com/ml/train:*", cudaVersion: "12.4"}
  - {match: "registry.example.com/ml/*", cudaVersion: "12.1"}
)");
  ASSERT_NE(p.catalog_entry("registry.example.com/ml/train:v2"), nullptr);
  EXPECT_EQ(p.catalog_entry("registry.example.com/ml/train:v2")->cuda_version, "12.4");
  EXPECT_EQ(p.catalog_entry("registry.example.com/ml/eval:v2")->cuda_version, "12.1");
}

TEST(Mode, RoundTrips) {
  for (Mode m : {Mode::enforce, Mode::warn, Mode::dryrun}) {
    EXPECT_EQ(parse_mode(to_string(m)), m);
  }
  EXPECT_EQ(to_string(Mode::dryrun), "dryrun");
  EXPECT_EQ(parse_mode("off"), std::nullopt);
  EXPECT_EQ(parse_mode("Enforce"), std::nullopt);
  EXPECT_EQ(parse_mode(""), std::nullopt);
}

TEST(Policy, ScanSettings) {
  expect_defaults(parse_ok("scan:\n"));
  const Policy p = parse_ok("scan:\n  attached: false\n  countedFiles: [\"/opt/app/*.so\"]\n");
  EXPECT_FALSE(p.registry.scan_attached);
  EXPECT_EQ(p.scan.counted_files, std::vector<std::string>{"/opt/app/*.so"});
  EXPECT_TRUE(parse_ok("{}").registry.scan_attached);
  EXPECT_EQ(parse_error("scan:\n  countedFiles: [\"/a\", \"lib/*.so\"]\n"),
            "policy.yaml:2: scan.countedFiles[1]: expected a glob over a path from the image's "
            "root, starting with \"/\", got \"lib/*.so\"");
  EXPECT_FALSE(p.scan.background);
  const Policy background =
      parse_ok("scan:\n  background: true\n  maxImageBytes: 512Mi\n  maxBytesPerHour: 4096\n");
  EXPECT_TRUE(background.scan.background);
  EXPECT_EQ(background.scan.max_image_bytes, std::uint64_t{512} << 20);
  EXPECT_EQ(background.scan.max_bytes_per_hour, 4096U);
  EXPECT_EQ(parse_error("scan:\n  maxImageBytes: 10GB\n"),
            "policy.yaml:2: scan.maxImageBytes: expected a positive size in bytes like 16Gi, "
            "512Mi or 4096, got \"10GB\"");
  EXPECT_EQ(parse_error("scan:\n  maxBytesPerHour: 0\n"),
            "policy.yaml:2: scan.maxBytesPerHour: expected a positive size in bytes like 16Gi, "
            "512Mi or 4096, got \"0\"");
  EXPECT_EQ(parse_error("scan:\n  schedule: daily\n"),
            "policy.yaml:2: scan.schedule: unknown field (expected one of attached, "
            "countedFiles, background, maxImageBytes, maxBytesPerHour)");
}

}  // namespace
}  // namespace cudagate

// Resolving container metadata: the precedence of annotations, flags, pod env, catalog,
// registry and inference, and which bad values are errors and which leave values unknown.
#include "policy/rules/metadata.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compat-db/compat_db.h"
#include "tests/support/embedded_compat_db.h"
#include "tests/support/scan_facts.h"

namespace cudagate {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

using test_support::db;
using test_support::kTorchCudaLib;
using test_support::scan_of;
using test_support::scanned_code;
using test_support::scanned_config;

using Pairs = std::vector<std::pair<std::string, std::string>>;

struct MetadataPodEnv {
  std::string name;
  std::optional<std::string> value;
};

Workload workload(const std::string& image, const std::vector<MetadataPodEnv>& env,
                  Pairs annotations = {}, const std::string& container = "train") {
  Workload w;
  w.resource = ResourceRef{"v1", "Pod", "ml", "trainer-0"};
  std::sort(annotations.begin(), annotations.end());  // Workload::annotation searches
  w.annotations = std::move(annotations);
  ContainerSpec c;
  c.name = container;
  c.image = image;
  for (const MetadataPodEnv& e : env) c.env.push_back(EnvVar{e.name, e.value});
  c.resources = {{"nvidia.com/gpu", 1}};
  w.spec.containers.push_back(std::move(c));
  return w;
}

// Everything a resolution found, as text.
template <class T>
std::string sourced_text(const Sourced<T>& v) {
  return (v.value ? v.value->str() : std::string("-")) + "|" + std::string(to_string(v.source)) +
         "|" + v.text + "|" + v.name;
}
std::string text_of(const Expected<ContainerMetadata>& md) {
  if (!md) return "error: " + md.error().str();
  return sourced_text(md->cuda) + "/" + sourced_text(md->archs) + "/" + sourced_text(md->require) +
         "/" + sourced_text(md->min_cc) + "/" + (md->require_disabled ? "disabled" : "");
}

// Every resolution is made twice: without a memo, and with one that all
// tests share (so that it holds the results of earlier ones); both must agree.
Expected<ContainerMetadata> resolve(const Workload& w, const Policy& policy = {},
                                    const RegistryFacts* registry = nullptr,
                                    const FlagValues* flags = nullptr) {
  static MetadataMemo memo;
  auto plain = resolve_metadata(w, w.spec.containers.front(), policy, db(), registry, flags);
  const auto remembered =
      resolve_metadata(w, w.spec.containers.front(), policy, db(), registry, flags, &memo);
  EXPECT_EQ(text_of(remembered), text_of(plain));
  return plain;
}

ContainerMetadata resolve_ok(const Workload& w, const Policy& policy = {},
                             const RegistryFacts* registry = nullptr,
                             const FlagValues* flags = nullptr) {
  auto md = resolve(w, policy, registry, flags);
  EXPECT_TRUE(md) << md.error().str();
  return md ? std::move(*md) : ContainerMetadata{};
}

std::string cuda_of(const ContainerMetadata& md) {
  return md.cuda.value ? md.cuda.value->str() : "unknown";
}
std::string require_of(const ContainerMetadata& md) {
  return md.require.value ? md.require.value->str() : "unknown";
}
std::string archs_of(const ContainerMetadata& md) {
  return md.archs.value ? md.archs.value->str() : "unknown";
}

constexpr const char* kMetadataImage = "registry.example.com/ml/train:v1";

TEST(Metadata, PodEnvLiteralGivesCudaAndTheImplicitRequirement) {
  const ContainerMetadata md = resolve_ok(workload(kMetadataImage, {{"CUDA_VERSION", "12.4.1"}}));
  EXPECT_EQ(cuda_of(md), "12.4");
  EXPECT_EQ(md.cuda.source, Source::env);
  EXPECT_EQ(md.cuda.text, "12.4.1");
  EXPECT_EQ(md.cuda.name, "CUDA_VERSION");
  EXPECT_EQ(require_of(md), "cuda>=12.4");
  EXPECT_EQ(md.require.source, Source::env);
  EXPECT_FALSE(md.archs.value);
  EXPECT_EQ(md.archs.source, Source::unknown);
  EXPECT_FALSE(md.min_cc.value);
}

TEST(Metadata, NothingKnownLeavesEveryValueUnknown) {
  const ContainerMetadata md = resolve_ok(workload("registry.example.com/ml/train:v1", {}));
  EXPECT_FALSE(md.cuda.value);
  EXPECT_FALSE(md.archs.value);
  EXPECT_FALSE(md.require.value);
  EXPECT_EQ(md.cuda.source, Source::unknown);
  EXPECT_EQ(md.require.source, Source::unknown);
}

TEST(Metadata, RegistryConfigAndPodEnvOverride) {
  RegistryFacts registry;
  registry.add(kMetadataImage,
               std::make_shared<const ImageConfig>(ImageConfig{
                   {{"PATH", "/usr/bin"},
                    {"CUDA_VERSION", "12.1.1"},
                    {"NVIDIA_REQUIRE_CUDA", "cuda>=12.1 brand=tesla,driver>=470,driver<471"},
                    {"TORCH_CUDA_ARCH_LIST", "8.0 9.0+PTX"}},
                   {},
                   "",
                   nullptr}));
  const ContainerMetadata from_image = resolve_ok(workload(kMetadataImage, {}), {}, &registry);
  EXPECT_EQ(cuda_of(from_image), "12.1");
  EXPECT_EQ(from_image.cuda.source, Source::registry);
  EXPECT_EQ(require_of(from_image), "cuda>=12.1 brand=tesla,driver>=470,driver<471");
  EXPECT_EQ(from_image.require.source, Source::registry);
  EXPECT_EQ(from_image.require.name, "NVIDIA_REQUIRE_CUDA");
  EXPECT_EQ(archs_of(from_image), "8.0;9.0+PTX");
  EXPECT_EQ(from_image.archs.source, Source::registry);

  // The pod's literal env is what the runtime sees.
  const ContainerMetadata overridden =
      resolve_ok(workload(kMetadataImage,
                          {{"TORCH_CUDA_ARCH_LIST", "7.5"}, {"NVIDIA_REQUIRE_CUDA", "cuda>=12.2"}}),
                 {}, &registry);
  EXPECT_EQ(archs_of(overridden), "7.5");
  EXPECT_EQ(overridden.archs.source, Source::env);
  EXPECT_EQ(require_of(overridden), "cuda>=12.2");
  EXPECT_EQ(overridden.require.source, Source::env);
  EXPECT_EQ(cuda_of(overridden), "12.1");  // CUDA_VERSION still the image's
  EXPECT_EQ(overridden.cuda.source, Source::registry);

  // The last duplicate of a pod variable wins, as in the kubelet.
  const ContainerMetadata duplicate =
      resolve_ok(workload(kMetadataImage, {{"CUDA_VERSION", "11.8"}, {"CUDA_VERSION", "12.6"}}), {},
                 &registry);
  EXPECT_EQ(cuda_of(duplicate), "12.6");
}

TEST(Metadata, CudaFallsBackToRequireCudaThenToTheLabel) {
  RegistryFacts registry;
  registry.add(
      "a:1",
      std::make_shared<const ImageConfig>(ImageConfig{
          {{"NVIDIA_REQUIRE_CUDA", "brand=tesla,driver>=470 cuda>=12.2"}}, {}, "", nullptr}));
  registry.add("b:1", std::make_shared<const ImageConfig>(
                          ImageConfig{{}, {{"com.nvidia.cuda.version", "11.8.0"}}, "", nullptr}));
  registry.add(
      "c:1",
      std::make_shared<const ImageConfig>(ImageConfig{
          {{"CUDA_VERSION", "12.0"}}, {{"com.nvidia.cuda.version", "11.8.0"}}, "", nullptr}));
  const ContainerMetadata a = resolve_ok(workload("a:1", {}), {}, &registry);
  EXPECT_EQ(cuda_of(a), "12.2");
  EXPECT_EQ(a.cuda.name, "NVIDIA_REQUIRE_CUDA");
  EXPECT_EQ(a.cuda.source, Source::registry);
  const ContainerMetadata b = resolve_ok(workload("b:1", {}), {}, &registry);
  EXPECT_EQ(cuda_of(b), "11.8");
  EXPECT_EQ(b.cuda.name, "com.nvidia.cuda.version");
  EXPECT_FALSE(b.require.value);  // a label is no requirement
  const ContainerMetadata c = resolve_ok(workload("c:1", {}), {}, &registry);
  EXPECT_EQ(cuda_of(c), "12.0");
}

TEST(Metadata, CatalogComesBeforeRegistryAndInference) {
  Policy policy;
  policy.images.push_back(
      CatalogEntry{"registry.example.com/ml/*", "12.1", "8.0;9.0", std::nullopt});
  policy.images.push_back(
      CatalogEntry{"docker.io/nvidia/cuda:*", std::nullopt, std::nullopt, "cuda>=11.0"});
  RegistryFacts registry;
  registry.add(kMetadataImage, std::make_shared<const ImageConfig>(
                                   ImageConfig{{{"CUDA_VERSION", "12.8"}}, {}, "", nullptr}));
  const ContainerMetadata md = resolve_ok(workload(kMetadataImage, {}), policy, &registry);
  EXPECT_EQ(cuda_of(md), "12.1");
  EXPECT_EQ(md.cuda.source, Source::catalog);
  EXPECT_EQ(archs_of(md), "8.0;9.0");
  EXPECT_EQ(md.archs.source, Source::catalog);
  EXPECT_EQ(require_of(md), "cuda>=12.1");  // implicit, from the catalog's CUDA_VERSION
  EXPECT_EQ(md.require.source, Source::catalog);

  const ContainerMetadata cuda =
      resolve_ok(workload("nvidia/cuda:12.8.1-base-ubuntu24.04", {}), policy);
  EXPECT_EQ(require_of(cuda), "cuda>=11.0");
  EXPECT_EQ(cuda_of(cuda), "11.0");
  EXPECT_EQ(cuda.cuda.source, Source::catalog);
}

// cuda_image.go GetRequirements: with NVIDIA_DISABLE_REQUIRE true the
// toolkit returns before it reads CUDA_VERSION, so a CUDA_VERSION it could
// not parse stops nothing: the CUDA version is unknown, not an error.
TEST(Metadata, DisableRequireMakesAnUnparsableCudaVersionUnknown) {
  const ContainerMetadata md = resolve_ok(
      workload(kMetadataImage, {{"NVIDIA_DISABLE_REQUIRE", "true"}, {"CUDA_VERSION", "twelve"}}));
  EXPECT_EQ(cuda_of(md), "unknown");
  EXPECT_EQ(md.cuda.text, "twelve");
  EXPECT_TRUE(md.require_disabled);
  // Without it the toolkit would refuse the container: a person's error.
  const auto refused = resolve(workload(kMetadataImage, {{"CUDA_VERSION", "twelve"}}));
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error().str(), ::testing::HasSubstr("env CUDA_VERSION"));
  const auto not_disabled = resolve(
      workload(kMetadataImage, {{"NVIDIA_DISABLE_REQUIRE", "false"}, {"CUDA_VERSION", "twelve"}}));
  EXPECT_FALSE(not_disabled);
}

// A compute capability newer than the matrix knows, from any source, is
// unknown and says which; one that never existed stays an error.
TEST(Metadata, AnArchNewerThanTheMatrixIsUnknownNotAnError) {
  const ContainerMetadata env = resolve_ok(workload(
      kMetadataImage, {{"CUDA_VERSION", "13.4"}, {"TORCH_CUDA_ARCH_LIST", "9.0;10.9+PTX"}}));
  EXPECT_EQ(archs_of(env), "unknown");
  EXPECT_TRUE(env.archs_beyond_matrix);
  EXPECT_EQ(env.archs_unknown, "CUDA arch \"10.9+PTX\" in TORCH_CUDA_ARCH_LIST: " +
                                   db().describe() + " does not know that compute capability");
  const ContainerMetadata cmake = resolve_ok(
      workload(kMetadataImage, {{"CUDA_VERSION", "13.4"}, {"CUDAARCHS", "90;130-real"}}));
  EXPECT_TRUE(cmake.archs_beyond_matrix);
  const ContainerMetadata annotated = resolve_ok(
      workload(kMetadataImage, {{"CUDA_VERSION", "13.4"}}, {{"cudagate.io/arch-list", "12.5"}}));
  EXPECT_TRUE(annotated.archs_beyond_matrix);
  EXPECT_EQ(annotated.archs.source, Source::annotation);
  // Rubin's 10.7 is known.
  const ContainerMetadata rubin = resolve_ok(
      workload(kMetadataImage, {{"CUDA_VERSION", "13.4"}, {"TORCH_CUDA_ARCH_LIST", "10.7"}}));
  EXPECT_EQ(archs_of(rubin), "10.7");
  EXPECT_FALSE(resolve(workload(kMetadataImage, {{"TORCH_CUDA_ARCH_LIST", "7.1"}})));
}

// pytorch/pytorch tags carry the torch release and the CUDA variant; PyTorch's
// own build scripts give the arch list those wheels were built for.
TEST(Metadata, PytorchTagsGiveTheBuildsArchList) {
  const ContainerMetadata md =
      resolve_ok(workload("pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime", {}));
  EXPECT_EQ(cuda_of(md), "12.8");
  EXPECT_EQ(md.archs.source, Source::inference);
  EXPECT_EQ(md.archs.text, "7.0;7.5;8.0;8.6;9.0;10.0;12.0");
  // A torch release the matrix has no build for: the CUDA version only.
  const ContainerMetadata old =
      resolve_ok(workload("pytorch/pytorch:1.13.1-cuda11.6-cudnn8-runtime", {}));
  EXPECT_EQ(cuda_of(old), "11.6");
  EXPECT_EQ(archs_of(old), "unknown");
}

TEST(Metadata, DisableRequireReadsLikeGoParseBool) {
  struct Case {
    std::string value;
    bool disabled;
  };
  const std::vector<Case> cases = {{"1", true},    {"t", true},      {"T", true},
                                   {"TRUE", true}, {"true", true},   {"True", true},
                                   {"0", false},   {"false", false}, {"yes", false},
                                   {"on", false},  {"tRUE", false},  {"", false}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.value);
    const ContainerMetadata md = resolve_ok(
        workload(kMetadataImage, {{"CUDA_VERSION", "12.4"}, {"NVIDIA_DISABLE_REQUIRE", c.value}}));
    EXPECT_EQ(md.require_disabled, c.disabled);
    EXPECT_EQ(md.require.value.has_value(), !c.disabled);
    EXPECT_EQ(cuda_of(md), "12.4");  // cuda is still known either way
  }
}

TEST(Metadata, EveryRequireVariableButJetpackIsAnded) {
  const ContainerMetadata md =
      resolve_ok(workload(kMetadataImage, {{"NVIDIA_REQUIRE_CUDA", "cuda>=12.2"},
                                           {"NVIDIA_REQUIRE_ARCH", "arch>=8.0"},
                                           {"NVIDIA_REQUIRE_JETPACK", "csv-mounts=all"},
                                           {"NVIDIA_REQUIRE_JETPACK_HOST_MOUNTS", "x"},
                                           {"NVIDIA_REQUIRE_DRIVER", ""}}));
  ASSERT_TRUE(md.require.value);
  ASSERT_EQ(md.require.value->requirements.size(), 2U);
  EXPECT_EQ(md.require.value->requirements[0].variable, "NVIDIA_REQUIRE_ARCH");
  EXPECT_EQ(md.require.value->requirements[1].variable, "NVIDIA_REQUIRE_CUDA");
}

TEST(Metadata, EmptyRequireCudaCountsAsUnsetForTheImplicitRule) {
  const ContainerMetadata md = resolve_ok(
      workload(kMetadataImage, {{"CUDA_VERSION", "11.8.0"}, {"NVIDIA_REQUIRE_CUDA", ""}}));
  EXPECT_EQ(require_of(md), "cuda>=11.8");
  const ContainerMetadata none = resolve_ok(workload(kMetadataImage, {{"CUDA_VERSION", ""}}));
  EXPECT_FALSE(none.cuda.value);
  EXPECT_FALSE(none.require.value);
}

TEST(Metadata, ArchListsInOrderOfPrecedence) {
  struct Case {
    std::vector<MetadataPodEnv> env;
    std::string archs;
    std::string name;
  };
  const std::vector<Case> cases = {
      {{{"TORCH_CUDA_ARCH_LIST", "7.5;8.0"}, {"CUDAARCHS", "90"}},
       "7.5;8.0",
       "TORCH_CUDA_ARCH_LIST"},
      {{{"CUDAARCHS", "80-real;90"}, {"CMAKE_CUDA_ARCHITECTURES", "75"}},
       "8.0;9.0+PTX",
       "CUDAARCHS"},
      {{{"CMAKE_CUDA_ARCHITECTURES", "75-real;80-virtual"}},
       "7.5;8.0(PTX)",
       "CMAKE_CUDA_ARCHITECTURES"},
      {{{"TORCH_CUDA_ARCH_LIST", ""}, {"CUDAARCHS", "86"}}, "8.6+PTX", "CUDAARCHS"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.archs);
    const ContainerMetadata md = resolve_ok(workload(kMetadataImage, c.env));
    EXPECT_EQ(archs_of(md), c.archs);
    EXPECT_EQ(md.archs.name, c.name);
    EXPECT_EQ(md.archs.source, Source::env);
  }
}

TEST(Metadata, CmakeAllExpandsForTheResolvedCuda) {
  const ContainerMetadata md =
      resolve_ok(workload(kMetadataImage, {{"CUDA_VERSION", "12.4"}, {"CUDAARCHS", "all-major"}}));
  ASSERT_TRUE(md.archs.value);
  EXPECT_TRUE(md.archs.value->runs_on(ComputeCapability(9, 0), ArchMatch::cuda, db()));
  // The annotation's CUDA version is the one "all" expands against.
  const ContainerMetadata annotated = resolve_ok(
      workload(kMetadataImage, {{"CUDAARCHS", "all"}}, {{"cudagate.io/cuda-version", "12.4"}}));
  EXPECT_TRUE(annotated.archs.value);
  // Without any CUDA version "all" cannot be expanded: the pod's own value is an error.
  auto err = resolve(workload(kMetadataImage, {{"CUDAARCHS", "all"}}));
  ASSERT_FALSE(err);
  EXPECT_THAT(err.error().str(), StartsWith("container \"train\": env CUDAARCHS: "));
}

TEST(Metadata, AnnotationsOverrideCudaArchsAndMinCcButNotRequire) {
  const Pairs annotations = {{"cudagate.io/cuda-version", "12.2"},
                             {"cudagate.io/arch-list", "Ampere"},
                             {"cudagate.io/min-compute-capability", "8.0"}};
  const ContainerMetadata md = resolve_ok(workload(
      kMetadataImage, {{"CUDA_VERSION", "12.4"}, {"TORCH_CUDA_ARCH_LIST", "7.5"}}, annotations));
  EXPECT_EQ(cuda_of(md), "12.2");
  EXPECT_EQ(md.cuda.source, Source::annotation);
  EXPECT_EQ(md.cuda.name, "cudagate.io/cuda-version");
  EXPECT_EQ(archs_of(md), "8.0;8.6+PTX");
  EXPECT_EQ(md.archs.source, Source::annotation);
  ASSERT_TRUE(md.min_cc.value);
  EXPECT_EQ(md.min_cc.value->str(), "8.0");
  EXPECT_EQ(md.min_cc.source, Source::annotation);
  EXPECT_EQ(md.min_cc.name, "cudagate.io/min-compute-capability");
  // The runtime still enforces the environment's requirement.
  EXPECT_EQ(require_of(md), "cuda>=12.4");
  EXPECT_EQ(md.require.source, Source::env);
}

TEST(Metadata, ContainerAnnotationWinsOverPodWide) {
  const Pairs annotations = {{"cudagate.io/cuda-version", "12.2"},
                             {"cudagate.io/cuda-version.train", "11.8"},
                             {"cudagate.io/cuda-version.other", "13.0"}};
  const ContainerMetadata md = resolve_ok(workload(kMetadataImage, {}, annotations));
  EXPECT_EQ(cuda_of(md), "11.8");
  EXPECT_EQ(md.cuda.name, "cudagate.io/cuda-version.train");
  const ContainerMetadata other = resolve_ok(workload(kMetadataImage, {}, annotations, "eval"));
  EXPECT_EQ(cuda_of(other), "12.2");
}

TEST(Metadata, FlagsOverrideEverythingButRequire) {
  FlagValues flags;
  flags.cuda = "12.6";
  flags.arch_list = "9.0";
  flags.min_cc = "9.0";
  const ContainerMetadata md =
      resolve_ok(workload(kMetadataImage, {{"CUDA_VERSION", "12.4"}},
                          {{"cudagate.io/cuda-version", "12.2"}, {"cudagate.io/arch-list", "8.0"}}),
                 {}, nullptr, &flags);
  EXPECT_EQ(cuda_of(md), "12.6");
  EXPECT_EQ(md.cuda.source, Source::flag);
  EXPECT_EQ(archs_of(md), "9.0");
  EXPECT_EQ(md.archs.source, Source::flag);
  EXPECT_EQ(md.min_cc.source, Source::flag);
  EXPECT_EQ(require_of(md), "cuda>=12.4");
}

TEST(Metadata, ValuesAPersonWroteMustParse) {
  struct Case {
    std::vector<MetadataPodEnv> env;
    Pairs annotations;
    FlagValues flags;
    std::string error;
  };
  const std::vector<Case> cases = {
      {{},
       {{"cudagate.io/cuda-version", "12.x"}},
       {},
       "container \"train\": annotation cudagate.io/cuda-version: expected a CUDA version like "
       "12.4 or 12.4.1, got \"12.x\""},
      {{},
       {{"cudagate.io/min-compute-capability.train", "eight"}},
       {},
       "container \"train\": annotation cudagate.io/min-compute-capability.train: expected a "
       "compute capability like 8.0 or 9.0, got \"eight\""},
      {{{"CUDA_VERSION", "twelve"}},
       {},
       {},
       "container \"train\": env CUDA_VERSION: expected a CUDA version like 12.4 or 12.4.1, got "
       "\"twelve\""},
      {{},
       {},
       FlagValues{"12.x", std::nullopt, std::nullopt},
       "container \"train\": flag --cuda: expected a CUDA version like 12.4 or 12.4.1, got "
       "\"12.x\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.error);
    auto md = resolve(workload(kMetadataImage, c.env, c.annotations), {}, nullptr, &c.flags);
    ASSERT_FALSE(md);
    EXPECT_EQ(md.error().str(), c.error);
  }
  // Errors of the other parsers keep their text, under the container's name.
  struct Prefix {
    std::vector<MetadataPodEnv> env;
    Pairs annotations;
    std::string prefix;
  };
  const std::vector<Prefix> prefixed = {
      {{},
       {{"cudagate.io/arch-list", "8.0;Bogus"}},
       "container \"train\": annotation cudagate.io/arch-list: "},
      {{{"TORCH_CUDA_ARCH_LIST", "8.0;Bogus"}},
       {},
       "container \"train\": env TORCH_CUDA_ARCH_LIST: "},
  };
  for (const Prefix& c : prefixed) {
    SCOPED_TRACE(c.prefix);
    auto md = resolve(workload(kMetadataImage, c.env, c.annotations));
    ASSERT_FALSE(md);
    EXPECT_THAT(md.error().str(), StartsWith(c.prefix));
  }
}

TEST(Metadata, BadValuesFromTheImageLeaveValuesUnknown) {
  RegistryFacts registry;
  registry.add(
      kMetadataImage,
      std::make_shared<const ImageConfig>(ImageConfig{
          {{"CUDA_VERSION", "12.x"}, {"TORCH_CUDA_ARCH_LIST", "Bogus"}}, {}, "", nullptr}));
  const ContainerMetadata md = resolve_ok(workload(kMetadataImage, {}), {}, &registry);
  EXPECT_FALSE(md.cuda.value);
  EXPECT_FALSE(md.archs.value);
  EXPECT_FALSE(md.require.value);
}

TEST(Metadata, RequirementsWithInvalidTermsAreKeptForTheNodesToJudge) {
  // libnvidia-container dsl.c: a term is an error only when evaluation
  // reaches it, so the value itself is never unreadable, from the image or
  // from the pod.
  RegistryFacts registry;
  registry.add(kMetadataImage,
               std::make_shared<const ImageConfig>(ImageConfig{
                   {{"NVIDIA_REQUIRE_CUDA", "cuda>=12.4 jetpack>=5"}}, {}, "", nullptr}));
  const ContainerMetadata image = resolve_ok(workload(kMetadataImage, {}), {}, &registry);
  ASSERT_TRUE(image.require.value);
  ASSERT_EQ(image.require.value->requirements.size(), 1U);
  ASSERT_NE(image.require.value->requirements[0].first_invalid(), nullptr);
  EXPECT_EQ(image.require.value->requirements[0].first_invalid()->text, "jetpack>=5");
  EXPECT_EQ(cuda_of(image), "12.4");  // from the valid cuda>= term

  const ContainerMetadata pod = resolve_ok(workload(
      kMetadataImage, {{"NVIDIA_REQUIRE_CUDA", "cuda~12"}, {"NVIDIA_REQUIRE_FOO", "gpu>=1"}}));
  ASSERT_TRUE(pod.require.value);
  EXPECT_EQ(require_of(pod), "cuda~12; gpu>=1");
  EXPECT_EQ(pod.require.source, Source::env);
  EXPECT_FALSE(pod.cuda.value);  // no valid cuda>= term
}

TEST(Metadata, CudaVersionReadAsTheToolkitReadsIt) {
  // nvidia-container-toolkit internal/config/image/cuda_image.go
  // parseMajorMinorVersion (Masterminds semver, coercing) and its tests
  // TestParseMajorMinorVersionValid / Invalid.
  struct Row {
    std::string value;
    std::string cuda;  // "" when the value is refused
  };
  const std::vector<Row> rows = {
      {"v11.6", "11.6"},
      {"9.0.116", "9.0"},
      {"8", "8.0"},
      {"7.5", "7.5"},
      {"0", "0.0"},
      {"12.4.1-1", "12.4"},
      {"12.4.1-rc.1", "12.4"},
      {"12.4.1+build.7", "12.4"},
      {"v12.8.1-0+x", "12.8"},
      {"012.4", "12.4"},
      {"foo", ""},
      {"foo.5.10", ""},
      {"9.0.116.50", ""},
      {"9.0.116foo", ""},
      {"7.foo", ""},
      {"9.0.bar", ""},
      {"9.0.116.", ""},
      {"9..0", ""},
      {"9.", ""},
      {".5.10", ""},
      {"-9", ""},
      {"+9", ""},
      {"-9.1.116", ""},
      {"-9.-1.-116", ""},
      {"V11.6", ""},
      {"12.4-01", ""},
      {"12.4-", ""},
      {"12.4+", ""},
      {"12.4-a..b", ""},
      {"vv12.4", ""},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.value);
    auto md = resolve(workload(kMetadataImage, {{"CUDA_VERSION", row.value}}));
    if (row.cuda.empty()) {
      ASSERT_FALSE(md);
      EXPECT_EQ(md.error().str(),
                "container \"train\": env CUDA_VERSION: expected a CUDA version like 12.4 or "
                "12.4.1, got \"" +
                    row.value + "\"");
      continue;
    }
    ASSERT_TRUE(md) << md.error().str();
    EXPECT_EQ(cuda_of(*md), row.cuda);
    EXPECT_EQ(md->cuda.text, row.value);
    // The legacy rule uses the same major.minor (cuda_image.go GetRequirements).
    EXPECT_EQ(require_of(*md), "cuda>=" + row.cuda);
  }
}

TEST(Metadata, DisabledRequirementsAreNotRead) {
  // cuda_image.go GetRequirements: with NVIDIA_DISABLE_REQUIRE true it
  // returns before reading any NVIDIA_REQUIRE_* or the legacy CUDA_VERSION rule.
  const ContainerMetadata md =
      resolve_ok(workload(kMetadataImage, {{"NVIDIA_DISABLE_REQUIRE", "true"},
                                           {"NVIDIA_REQUIRE_CUDA", "cuda>=12.4 cuda~x"},
                                           {"NVIDIA_REQUIRE_ARCH", "arch>=9.x"}}));
  EXPECT_TRUE(md.require_disabled);
  EXPECT_FALSE(md.require.value);
  EXPECT_EQ(md.require.text, "NVIDIA_DISABLE_REQUIRE=true");
  EXPECT_EQ(cuda_of(md), "12.4");  // what the image says it was built with
}

TEST(Metadata, NativeArchListsAreUnknownWithTheirReason) {
  // cpp_extension _get_cuda_arch_flags: "native" builds for the visible
  // GPUs; CMake CUDA_ARCHITECTURES "native" for the build host's.
  for (const std::string name : {"TORCH_CUDA_ARCH_LIST", "CUDAARCHS"}) {
    SCOPED_TRACE(name);
    const ContainerMetadata md =
        resolve_ok(workload(kMetadataImage, {{"CUDA_VERSION", "12.4"}, {name, "native"}}));
    EXPECT_FALSE(md.archs.value);
    EXPECT_EQ(md.archs.source, Source::env);
    EXPECT_EQ(md.archs.name, name);
    EXPECT_EQ(md.archs_unknown,
              name +
                  " is \"native\": the image was built for the GPUs of the machine that built "
                  "it, which the image does not record");
  }
  // An annotation wins, and says what the image carries.
  const ContainerMetadata annotated = resolve_ok(workload(
      kMetadataImage, {{"TORCH_CUDA_ARCH_LIST", "native"}}, {{"cudagate.io/arch-list", "8.0"}}));
  EXPECT_EQ(archs_of(annotated), "8.0");
  EXPECT_TRUE(annotated.archs_unknown.empty());
  // A person declaring "native" declares nothing.
  auto declared = resolve(workload(kMetadataImage, {}, {{"cudagate.io/arch-list", "native"}}));
  ASSERT_FALSE(declared);
  EXPECT_THAT(declared.error().str(),
              StartsWith("container \"train\": annotation cudagate.io/arch-list: "
                         "TORCH_CUDA_ARCH_LIST \"native\" builds for the GPUs"));
}

TEST(Metadata, ArchListNamesFollowTheImagesCudaAndThePolicysReading) {
  struct Row {
    std::string cuda;
    std::string list;
    ArchListReading reading;
    std::string archs;
    const char* source;
  };
  const std::vector<Row> rows = {
      {"12.8", "Blackwell+Tegra", ArchListReading::cpp_extension, "10.1",
       "cpp_extension.py @0011ec5c"},
      {"13.0", "Blackwell+Tegra", ArchListReading::cpp_extension, "11.0",
       "cpp_extension.py after pytorch PR #156176"},
      {"12.4", "Ampere", ArchListReading::cpp_extension, "8.0;8.6+PTX", "cpp_extension.py"},
      {"12.4", "Ampere", ArchListReading::cmake, "8.0;8.6", "select_compute_arch.cmake"},
      {"12.4", "Ampere+Tegra+PTX", ArchListReading::cmake, "8.7+PTX", "select_compute_arch.cmake"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.list + " with CUDA " + row.cuda + " (" + row.source + ")");
    Policy policy;
    policy.arch_list_reading = row.reading;
    const ContainerMetadata md = resolve_ok(
        workload(kMetadataImage, {{"CUDA_VERSION", row.cuda}, {"TORCH_CUDA_ARCH_LIST", row.list}}),
        policy);
    EXPECT_EQ(archs_of(md), row.archs);
    // The annotation is read the same way.
    const ContainerMetadata annotated =
        resolve_ok(workload(kMetadataImage, {{"CUDA_VERSION", row.cuda}},
                            {{"cudagate.io/arch-list", row.list}}),
                   policy);
    EXPECT_EQ(archs_of(annotated), row.archs);
  }
}

TEST(Metadata, ValueFromHidesTheImageValue) {
  RegistryFacts registry;
  registry.add(kMetadataImage,
               std::make_shared<const ImageConfig>(ImageConfig{
                   {{"CUDA_VERSION", "12.4"}, {"TORCH_CUDA_ARCH_LIST", "8.0"}}, {}, "", nullptr}));
  const ContainerMetadata md =
      resolve_ok(workload(kMetadataImage,
                          {{"CUDA_VERSION", std::nullopt}, {"TORCH_CUDA_ARCH_LIST", std::nullopt}}),
                 {}, &registry);
  EXPECT_FALSE(md.cuda.value);
  EXPECT_EQ(md.cuda.source, Source::env);
  EXPECT_FALSE(md.archs.value);
  EXPECT_FALSE(md.require.value);  // the implicit requirement depends on the hidden value
  const ContainerMetadata disable = resolve_ok(
      workload(kMetadataImage, {{"NVIDIA_DISABLE_REQUIRE", std::nullopt}}), {}, &registry);
  EXPECT_FALSE(disable.require_disabled);
  EXPECT_FALSE(disable.require.value);  // it may or may not be disabled
  EXPECT_EQ(cuda_of(disable), "12.4");
}

struct InferenceCase {
  std::string image;
  std::string cuda;     // "unknown" when nothing is inferred
  std::string require;  // prefix of the requirement, "unknown" when none
  std::string min_cc;   // "" when none
};

TEST(Metadata, InferenceFromWellKnownReferences) {
  const std::vector<InferenceCase> cases = {
      {"nvidia/cuda:12.8.1-base-ubuntu24.04", "12.8",
       "cuda>=12.8 brand=unknown,driver>=470,driver<471 ", ""},
      {"docker.io/nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04", "12.4",
       "cuda>=12.4 brand=tesla,driver>=470,driver<471 ", ""},
      {"nvcr.io/nvidia/cuda:11.8.0-devel-ubuntu22.04", "11.8", "cuda>=11.8 brand=", ""},
      // Not in the table: CUDA_VERSION alone, and the runtime's implicit rule.
      {"nvidia/cuda:12.7.9-base-ubuntu24.04", "12.7", "cuda>=12.7", ""},
      {"nvidia/cuda:latest", "unknown", "unknown", ""},
      {"nvcr.io/nvidia/pytorch:24.01-py3", "12.3", "cuda>=12.3 brand=", "6.0"},
      {"nvcr.io/nvidia/tritonserver:25.01-py3", "12.8", "cuda>=12.8 brand=", "7.5"},
      {"nvcr.io/nvidia/pytorch:24.03", "12.4", "cuda>=12.4 brand=", "6.0"},
      {"nvcr.io/nvidia/pytorch:99.99-py3", "unknown", "unknown", ""},
      {"nvcr.io/nvidia/pytorch:2401-py3", "unknown", "unknown", ""},
      {"pytorch/pytorch:2.4.1-cuda12.4-cudnn9-runtime", "12.4", "unknown", ""},
      {"vllm/vllm-openai:v0.9.0-cu128", "12.8", "unknown", ""},
      {"ghcr.io/acme/infer:cu118", "11.8", "unknown", ""},
      {"ghcr.io/acme/infer:torch2.5_cu124_py3", "12.4", "unknown", ""},
      {"ghcr.io/acme/infer:cu130", "13.0", "unknown", ""},
      {"ghcr.io/acme/infer:cu12.1", "12.1", "unknown", ""},
      {"ghcr.io/acme/infer:cuda11.7.1-runtime", "11.7", "unknown", ""},
      {"ghcr.io/acme/infer:cudnn9-v1", "unknown", "unknown", ""},
      {"ghcr.io/acme/infer:cuda12", "unknown", "unknown", ""},
      {"ghcr.io/acme/infer@sha256:" + std::string(64, 'b'), "unknown", "unknown", ""},
      {"not a reference", "unknown", "unknown", ""},
  };
  for (const InferenceCase& c : cases) {
    SCOPED_TRACE(c.image);
    const ContainerMetadata md = resolve_ok(workload(c.image, {}));
    EXPECT_EQ(cuda_of(md), c.cuda);
    if (c.cuda != "unknown") {
      EXPECT_EQ(md.cuda.source, Source::inference);
    }
    if (c.require == "unknown") {
      EXPECT_FALSE(md.require.value);
    } else {
      EXPECT_THAT(require_of(md), StartsWith(c.require));
      EXPECT_EQ(md.require.source, Source::inference);
    }
    if (c.min_cc.empty()) {
      EXPECT_FALSE(md.min_cc.value);
    } else {
      ASSERT_TRUE(md.min_cc.value);
      EXPECT_EQ(md.min_cc.value->str(), c.min_cc);
      EXPECT_EQ(md.min_cc.source, Source::inference);
    }
  }
}

TEST(Metadata, NgcRequirementOffersEachForwardCompatibleBranchPerDatacenterBrand) {
  const ContainerMetadata md = resolve_ok(workload("nvcr.io/nvidia/pytorch:24.01-py3", {}));
  const std::string req = require_of(md);
  EXPECT_THAT(req, HasSubstr(" brand=tesla,driver>=535.86,driver<536"));
  EXPECT_THAT(req, HasSubstr(" brand=tesla,driver>=470.57,driver<471"));
  EXPECT_THAT(req, HasSubstr(" brand=tesla,driver>=545.23,driver<546"));
}

TEST(Metadata, RegistryResultBeatsInference) {
  RegistryFacts registry;
  registry.add("nvidia/cuda:12.8.1-base-ubuntu24.04",
               std::make_shared<const ImageConfig>(
                   ImageConfig{{{"CUDA_VERSION", "12.8.1"}}, {}, "", nullptr}));
  const ContainerMetadata md =
      resolve_ok(workload("nvidia/cuda:12.8.1-base-ubuntu24.04", {}), {}, &registry);
  EXPECT_EQ(md.cuda.source, Source::registry);
  EXPECT_EQ(require_of(md), "cuda>=12.8");
}

// An attached scan (docs/scan.md): its files outrank what the image's
// variables say of its architectures, and give the CUDA runtime where the
// image states none; a person's annotation outranks both.
TEST(Metadata, AScanOutranksTheImagesArchList) {
  RegistryFacts registry;
  registry.add(kMetadataImage,
               scanned_config({{"CUDA_VERSION", "12.8.0"}, {"TORCH_CUDA_ARCH_LIST", "7.5;8.0"}},
                              scan_of({scanned_code(kTorchCudaLib, "8.0;9.0+PTX")}, "12.8.90",
                                      "2.7.0+cu128")));
  const ContainerMetadata md = resolve_ok(workload(kMetadataImage, {}), {}, &registry);
  EXPECT_EQ(sourced_text(md.archs), std::string("8.0;9.0+PTX|scan|8.0;9.0+PTX|") + kTorchCudaLib);
  EXPECT_EQ(cuda_of(md), "12.8");
  EXPECT_EQ(md.cuda.source, Source::registry);
  ASSERT_NE(md.scan, nullptr);
  EXPECT_EQ(md.scan_files.counted, std::vector<std::size_t>{0});
  ASSERT_EQ(md.scan_notes.size(), 1U);
  EXPECT_EQ(md.scan_notes[0], std::string("TORCH_CUDA_ARCH_LIST (registry) says 7.5;8.0; ") +
                                  kTorchCudaLib + " has kernels for 8.0, 9.0 and PTX 9.0");
}

TEST(Metadata, AScanGivesTheRuntimeWhereTheImageStatesNone) {
  RegistryFacts registry;
  registry.add(kMetadataImage,
               scanned_config({}, scan_of({scanned_code("/opt/app/libk.so", "8.0")}, "12.8.90")));
  const ContainerMetadata md = resolve_ok(workload(kMetadataImage, {}), {}, &registry);
  EXPECT_EQ(sourced_text(md.cuda),
            "12.8|scan|12.8.90|/usr/local/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/"
            "libcudart.so.12");
  EXPECT_TRUE(md.scan_notes.empty());
  EXPECT_EQ(require_of(md), "unknown");  // a runtime found is no NVIDIA_REQUIRE_CUDA
}

TEST(Metadata, AScanDisagreeingWithCudaVersionIsNoted) {
  RegistryFacts registry;
  registry.add(kMetadataImage,
               scanned_config({{"CUDA_VERSION", "12.4.1"}},
                              scan_of({scanned_code("/opt/app/libk.so", "8.0")}, "12.8.90")));
  const ContainerMetadata md = resolve_ok(workload(kMetadataImage, {}), {}, &registry);
  EXPECT_EQ(cuda_of(md), "12.4");
  ASSERT_EQ(md.scan_notes.size(), 1U);
  EXPECT_THAT(md.scan_notes[0], StartsWith("CUDA_VERSION (registry) says 12.4.1; the image ships "
                                           "the CUDA runtime 12.8.90 ("));
}

TEST(Metadata, AnAnnotationOutranksTheScan) {
  RegistryFacts registry;
  registry.add(kMetadataImage,
               scanned_config({}, scan_of({scanned_code("/opt/app/libk.so", "8.0")}, "12.8.90")));
  const ContainerMetadata md =
      resolve_ok(workload(kMetadataImage, {}, {{"cudagate.io/arch-list", "7.5"}}), {}, &registry);
  EXPECT_EQ(archs_of(md), "7.5");
  EXPECT_EQ(md.archs.source, Source::annotation);
  EXPECT_EQ(md.scan, nullptr);
  EXPECT_TRUE(md.scan_files.counted.empty());
}

TEST(Metadata, AScanWithoutCountedCodeLeavesTheImagesWord) {
  // Only NVIDIA's own libraries hold GPU code: they say what CUDA supports,
  // not what the image was built for.
  RegistryFacts registry;
  registry.add(
      kMetadataImage,
      scanned_config(
          {{"TORCH_CUDA_ARCH_LIST", "8.0"}},
          scan_of({scanned_code("/usr/local/cuda/lib64/libcublas.so.12", "7.5;8.0;9.0+PTX")})));
  const ContainerMetadata md = resolve_ok(workload(kMetadataImage, {}), {}, &registry);
  EXPECT_EQ(archs_of(md), "8.0");
  EXPECT_EQ(md.archs.source, Source::registry);
  EXPECT_EQ(md.scan, nullptr);
}

}  // namespace
}  // namespace cudagate

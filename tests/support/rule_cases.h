#pragma once
// What the rule tests build their cases from: a node group's GPU facts, a
// container's metadata, one container checked with the embedded matrix, and
// a table of cases with the outcome and the first finding each expects.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compat-db/compat_db.h"
#include "policy/config/policy.h"
#include "policy/rules/container_check.h"
#include "tests/support/embedded_compat_db.h"

namespace cudagate::test_support {

// Node facts as derive_gpu_facts gives them; "" leaves a fact unknown.
inline GpuFacts gpu_facts(const std::string& driver, const std::string& max_cuda,
                          const std::string& cc, const std::string& product,
                          std::optional<std::string> brand) {
  GpuFacts f;
  f.has_gpu = true;
  if (!driver.empty()) f.driver = *DriverVersion::parse(driver);
  if (!max_cuda.empty()) f.max_cuda = *CudaVersion::parse(max_cuda);
  if (!cc.empty()) f.cc = *ComputeCapability::parse(cc);
  f.product = product;
  f.brand = std::move(brand);
  return f;
}

inline GpuFacts t4_facts(const std::string& driver, const std::string& max_cuda) {
  return gpu_facts(driver, max_cuda, "7.5", "Tesla-T4", "unknown");
}

// Builds one container's metadata.
class Md {
 public:
  Md& cuda(const std::string& v, Source source = Source::env) {
    m_.cuda = Sourced<CudaVersion>{*CudaVersion::parse(v), source, v, "CUDA_VERSION"};
    return *this;
  }
  Md& require(const std::string& v, Source source = Source::env) {
    RequirementSet set;
    set.requirements.push_back(parse_requirement("NVIDIA_REQUIRE_CUDA", v));
    m_.require = Sourced<RequirementSet>{set, source, v, "NVIDIA_REQUIRE_CUDA"};
    return *this;
  }
  Md& disabled() {
    m_.require_disabled = true;
    m_.require.value.reset();
    m_.require.text = "NVIDIA_DISABLE_REQUIRE=true";
    m_.require.name = "NVIDIA_DISABLE_REQUIRE";
    return *this;
  }
  Md& native() {
    m_.archs.source = Source::env;
    m_.archs.name = "TORCH_CUDA_ARCH_LIST";
    m_.archs_unknown =
        "TORCH_CUDA_ARCH_LIST is \"native\": the image was built for the GPUs of the machine "
        "that built it, which the image does not record";
    return *this;
  }
  Md& archs(const std::string& v, const std::string& name = "TORCH_CUDA_ARCH_LIST") {
    auto set = name == "TORCH_CUDA_ARCH_LIST" ? parse_torch_arch_list(v, db())
                                              : parse_cmake_arch_list(v, db(), std::nullopt);
    EXPECT_TRUE(set) << set.error().str();
    m_.archs = Sourced<ArchSet>{*set, Source::env, v, name};
    return *this;
  }
  Md& min_cc(const std::string& v) {
    m_.min_cc = Sourced<ComputeCapability>{*ComputeCapability::parse(v), Source::annotation, v,
                                           "cudagate.io/min-compute-capability"};
    return *this;
  }
  operator const ContainerMetadata&() const { return m_; }  // NOLINT: builder

 private:
  ContainerMetadata m_;
};

inline RuleResult check_train(const ContainerMetadata& md, const GpuFacts& n,
                              const Policy& policy = {}) {
  return check_container("train", md, n, policy, db());
}

inline Policy mvc() {
  Policy p;
  p.minor_version_compatibility = true;
  return p;
}

inline Policy exact() {
  Policy p;
  p.arch_match = ArchMatch::exact;
  return p;
}

struct OutcomeCase {
  std::string name;
  ContainerMetadata md;
  GpuFacts node;
  Policy policy;
  Outcome outcome;
  std::string message;  // substring of the first finding, "" when none expected
};

inline void run_cases(const std::vector<OutcomeCase>& cases) {
  for (const OutcomeCase& c : cases) {
    SCOPED_TRACE(c.name);
    const RuleResult r = check_train(c.md, c.node, c.policy);
    EXPECT_EQ(r.outcome, c.outcome);
    if (c.message.empty()) {
      EXPECT_TRUE(r.findings.empty()) << r.findings.front().message;
    } else {
      ASSERT_FALSE(r.findings.empty());
      EXPECT_THAT(r.findings.front().message, ::testing::HasSubstr(c.message));
    }
  }
}

}  // namespace cudagate::test_support

// The CEL subset of DRA selectors: expressions it evaluates as CEL does on
// the captured H100 of tests/fixtures/dra/fleet.yaml, and expressions outside
// it, which are not read.
#include "policy/objects/dra_selector.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "policy/objects/node.h"
#include "tests/support/dra_fixture.h"

namespace cudagate {
namespace {

using test_support::dra;

DeviceKind h100_kind() {
  return dra().node("ip-10-0-171-111.ec2.internal").devices.front();
}

struct DeviceSelectorRow {
  const char* expression = nullptr;
  std::optional<bool> on_h100;  // nullopt: CEL stops with an error
};

TEST(DraSelector, EvaluatesAsCelDoes) {
  // Semantics of Kubernetes' CEL library for DRA (k8s.io/apiserver/pkg/cel/library
  // semver: compareTo gives -1, 0 or 1; isGreaterThan/isLessThan) and of CEL's
  // commutative && and || over errors.
  const DeviceSelectorRow rows[] = {
      {R"(device.driver == "gpu.nvidia.com")", true},
      {R"(device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu')",
       true},
      {R"(device.attributes["gpu.nvidia.com"].type == "mig")", false},
      {R"(device.attributes["gpu.nvidia.com"].productName != "NVIDIA H100 80GB HBM3")", false},
      {R"(device.attributes["gpu.nvidia.com"].cudaDriverVersion.compareTo(semver("12.4.0")) >= 0)",
       true},
      {R"(device.attributes["gpu.nvidia.com"].cudaDriverVersion.compareTo(semver("13.1.0")) >= 0)",
       false},
      {R"(device.attributes["gpu.nvidia.com"].cudaComputeCapability.compareTo(semver("9.0.0")) == 0)",
       true},
      {R"(device.attributes["gpu.nvidia.com"].cudaComputeCapability.isGreaterThan(semver("8.0.0")))",
       true},
      {R"(device.attributes["gpu.nvidia.com"].driverVersion.isLessThan(semver("570.0.0")))", false},
      {R"(device.attributes["gpu.nvidia.com"].driverVersion == semver("580.105.8"))", true},
      {R"(!(device.attributes["gpu.nvidia.com"].type == "gpu"))", false},
      {R"(device.attributes["gpu.nvidia.com"].profile == "1g.10gb")", std::nullopt},
      {R"(device.attributes["gpu.nvidia.com"].profile == "1g.10gb" || device.driver == "gpu.nvidia.com")",
       true},
      {R"(device.attributes["gpu.nvidia.com"].profile == "1g.10gb" && device.driver == "other")",
       false},
      {R"(device.attributes["gpu.nvidia.com"]["architecture"] == "Hopper")", true},
      {R"(device.attributes["gpu.nvidia.com"].brand == 1)", std::nullopt},
  };
  const DeviceKind kind = h100_kind();
  for (const DeviceSelectorRow& row : rows) {
    std::string why;
    auto selector = DraSelector::parse(row.expression, &why);
    ASSERT_TRUE(selector) << row.expression << ": " << why;
    EXPECT_EQ(selector->matches(kind), row.on_h100) << row.expression;
  }
}

TEST(DraSelector, OutsideTheSubsetIsNotRead) {
  for (const char* text : {
           R"(device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0)",
           R"("productName" in device.attributes["gpu.nvidia.com"])",
           R"(device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA"))",
           R"(device.attributes["gpu.nvidia.com"].type == "gpu" &&)",
           R"(device.attributes["gpu.nvidia.com"].type == "gp\u0075")",
       }) {
    std::string why;
    EXPECT_FALSE(DraSelector::parse(text, &why)) << text;
    EXPECT_FALSE(why.empty()) << text;
  }
}

}  // namespace
}  // namespace cudagate

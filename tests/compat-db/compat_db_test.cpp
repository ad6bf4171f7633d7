// The compatibility matrix's lookups, on the embedded data: drivers, CUDA releases, compiler
// targets, products by name and label, instance types, named architectures, images, and how
// far the matrix reaches; and the embedded tables' references, as the lookups resolve them.
// Loading is tested in compat_db_load_test.cpp.
#include "compat-db/compat_db.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/compat_db_files.h"

namespace cudagate {
namespace {

using test_support::capability_strs;
using test_support::product_names;
using ::testing::HasSubstr;
using ::testing::StartsWith;

const CompatDb& embedded() {
  static const CompatDb db = [] {
    auto loaded = load_compat_db(embedded_compat_db_files());
    if (!loaded) ADD_FAILURE() << loaded.error().str();
    return loaded ? *loaded : CompatDb{};
  }();
  return db;
}

DriverVersion driver(const char* text) {
  return *DriverVersion::parse(text);
}
CudaVersion cuda(const char* text) {
  return *CudaVersion::parse(text);
}

// --- The embedded matrix, through its lookups ----------------------------------

// The release table and the branch table come from different pages; each
// release's minimum driver must belong to the branch that reports its CUDA.
TEST(EmbeddedCompatDb, ReleaseDriversReportTheirOwnCuda) {
  for (const CudaRelease& release : embedded().cuda_releases) {
    const auto reported = embedded().max_cuda_for(release.min_driver);
    ASSERT_TRUE(reported) << release.version;
    EXPECT_EQ(*reported, release.cuda) << release.version << " needs " << release.min_driver.str();
  }
}

TEST(EmbeddedCompatDb, CloudAcceleratorsNameProducts) {
  for (const CloudAccelerator& accelerator : embedded().cloud_accelerators) {
    EXPECT_NE(embedded().product_by_name(accelerator.product), nullptr) << accelerator.value;
  }
}

// Every instance type and GPU-name label names products the matrix knows,
// as the nodes GPU Feature Discovery labels would name them.
TEST(EmbeddedCompatDb, InstanceTablesNameProducts) {
  const CompatDb& db = embedded();
  ASSERT_FALSE(db.instance_types.empty());
  ASSERT_FALSE(db.instance_gpu_labels.empty());
  for (const InstanceType& type : db.instance_types) {
    EXPECT_NE(db.product_by_label(type.product), nullptr) << type.name;
    EXPECT_GE(type.gpus, 1) << type.name;
    EXPECT_FALSE(type.source.empty()) << type.name;
    EXPECT_EQ(db.instance_type(type.name), &type) << type.name;
  }
  for (const InstanceGpuLabel& label : db.instance_gpu_labels) {
    EXPECT_FALSE(db.products_by_instance_label(label.label, label.value).empty()) << label.value;
    for (const std::string& product : label.products) {
      EXPECT_NE(db.product_by_label(product), nullptr) << label.value << " " << product;
    }
    EXPECT_FALSE(label.source.empty()) << label.value;
  }
}

struct MaxCudaRow {
  const char* driver;
  std::optional<const char*> cuda;
};

TEST(CompatDbLookup, MaxCudaForDriver) {
  const std::vector<MaxCudaRow> rows = {
      {"560.35.03", "12.6"},    {"550.54.15", "12.4"}, {"535.129.03", "12.2"},
      {"525.60.13", "12.0"},    {"515.43.04", "11.7"}, {"470.82.01", "11.4"},
      {"570.26", "12.8"},       {"580.95.05", "13.0"}, {"610.10", "13.3"},
      {"615.71.09", "13.4"},    {"620.70.06", "13.5"},  // R620 carries CUDA 13.5
      {"600.1.2", "13.2"},       // between R595 and R610: the nearest lower branch
      {"999.1", "13.5"},         // above the newest: the newest known (a floor)
      {"300.10", std::nullopt},  // below the oldest branch
  };
  EXPECT_TRUE(embedded().branch_beyond_known(driver("999.1")));
  EXPECT_TRUE(embedded().branch_beyond_known(driver("625.10.01")));
  EXPECT_FALSE(embedded().branch_beyond_known(driver("620.70.06")));
  EXPECT_FALSE(embedded().branch_beyond_known(driver("600.1.2")));
  for (const MaxCudaRow& row : rows) {
    const auto max = embedded().max_cuda_for(driver(row.driver));
    if (row.cuda) {
      ASSERT_TRUE(max) << row.driver;
      EXPECT_EQ(max->str(), *row.cuda) << row.driver;
    } else {
      EXPECT_FALSE(max) << row.driver;
    }
  }
}

struct MinDriverRow {
  const char* cuda;
  std::optional<const char*> driver;
};

TEST(CompatDbLookup, MinDriverForCuda) {
  const std::vector<MinDriverRow> rows = {
      {"12.4", "550.54.14"},    // GA, not Update 1's 550.54.15
      {"12.4.1", "550.54.14"},  // lookups are per minor
      {"12.8", "570.26"},      {"11.0", "450.51.05"},   {"13.2", "595.45.04"},
      {"9.0", "384.81"},       {"12.7", std::nullopt},   // no 12.7 toolkit
      {"13.3", "610.43.02"},   {"13.0.3", "580.65.06"},  // the 13.0 GA's, not Update 3's
      {"13.4", "615.0"},       {"13.5", "620.0"},        // from 13.4 the notes give only a branch
      {"13.6", std::nullopt},                            // newer than the matrix knows
  };
  for (const MinDriverRow& row : rows) {
    const auto min = embedded().min_driver_for(cuda(row.cuda));
    if (row.driver) {
      ASSERT_TRUE(min) << row.cuda;
      EXPECT_EQ(min->str(), *row.driver) << row.cuda;
    } else {
      EXPECT_FALSE(min) << row.cuda;
    }
  }
}

TEST(CompatDbLookup, MinorCompatFloor) {
  ASSERT_NE(embedded().minor_compat_for(11), nullptr);
  EXPECT_EQ(embedded().minor_compat_for(11)->min_driver.str(), "450.80.02");
  ASSERT_NE(embedded().minor_compat_for(12), nullptr);
  EXPECT_EQ(embedded().minor_compat_for(12)->min_driver.str(), "525.60.13");
  ASSERT_NE(embedded().minor_compat_for(13), nullptr);
  EXPECT_EQ(embedded().minor_compat_for(13)->min_driver.str(), "580.65.06");
  EXPECT_EQ(embedded().minor_compat_for(10), nullptr);
}

TEST(CompatDbLookup, TargetsForCuda) {
  const CudaTargets* t124 = embedded().targets_for(cuda("12.4"));
  ASSERT_NE(t124, nullptr);
  EXPECT_EQ(t124->since.str(), "12.0");
  EXPECT_EQ(capability_strs(t124->all),
            (std::vector<std::string>{"5.0", "5.2", "5.3", "6.0", "6.1", "6.2", "7.0", "7.2", "7.5",
                                      "8.0", "8.6", "8.7", "8.9", "9.0"}));
  EXPECT_EQ(capability_strs(t124->all_major),
            (std::vector<std::string>{"5.0", "6.0", "7.0", "8.0", "9.0"}));

  const CudaTargets* t129 = embedded().targets_for(cuda("12.9"));
  ASSERT_NE(t129, nullptr);
  EXPECT_EQ(t129->all.back().str(), "12.1");

  const CudaTargets* t130 = embedded().targets_for(cuda("13.0"));
  ASSERT_NE(t130, nullptr);
  EXPECT_EQ(t130->all.front().str(), "7.5");  // Maxwell to Volta dropped
  EXPECT_EQ(std::count(t130->all.begin(), t130->all.end(), ComputeCapability(10, 1)), 0);
  EXPECT_EQ(std::count(t130->all.begin(), t130->all.end(), ComputeCapability(11, 0)), 1);
  EXPECT_EQ(embedded().targets_for(cuda("13.3")), t130);  // 13.1 to 13.3 added no target
  // Rubin: sm_107, sm_107a and sm_107f from CUDA 13.4 (PTX ISA 9.4).
  const CudaTargets* t134 = embedded().targets_for(cuda("13.4"));
  ASSERT_NE(t134, nullptr);
  EXPECT_EQ(t134->since.str(), "13.4");
  for (const auto* list : {&t134->all, &t134->arch_specific, &t134->family_specific}) {
    EXPECT_EQ(std::count(list->begin(), list->end(), ComputeCapability(10, 7)), 1);
  }
  EXPECT_EQ(std::count(t130->all.begin(), t130->all.end(), ComputeCapability(8, 8)), 1);

  EXPECT_EQ(embedded().targets_for(cuda("11.3"))->since.str(), "11.1");
  EXPECT_EQ(embedded().targets_for(cuda("6.5")), nullptr);
}

struct ProductRow {
  const char* query;
  const char* name;  // nullptr: no product
  const char* cc;
};

void expect_product(const Product* found, const ProductRow& row) {
  if (row.name == nullptr) {
    EXPECT_EQ(found, nullptr) << row.query << " -> " << (found ? found->name : "");
    return;
  }
  ASSERT_NE(found, nullptr) << row.query;
  EXPECT_EQ(found->name, row.name) << row.query;
  EXPECT_EQ(found->cc.str(), row.cc) << row.query;
}

TEST(CompatDbLookup, ProductByName) {
  const std::vector<ProductRow> rows = {
      {"T4", "T4", "7.5"},
      {"tesla t4", "T4", "7.5"},
      {"A100", "A100", "8.0"},
      {"A10G", "A10G", "8.6"},
      {"a10g", "A10G", "8.6"},
      {"H100", "H100", "9.0"},
      {"L4", "L4", "8.9"},
      {"B200", "B200", "10.0"},
      {"V100", "V100", "7.0"},
      {"RTX PRO 6000", "RTX PRO 6000 Blackwell", "12.0"},
      {"Jetson Thor", "Jetson Thor", "11.0"},
      {"VR200", "VR200", "10.7"},  // Rubin
      {"RTX PRO 4000 Blackwell SFF", "RTX PRO 4000 Blackwell", "12.0"},
      {"RTX 4090", "RTX 4090", "8.9"},
      {"Tesla-T4", nullptr, ""},  // a GFD value, not a name
      {"T5", nullptr, ""},
      {"", nullptr, ""},
  };
  for (const ProductRow& row : rows) expect_product(embedded().product_by_name(row.query), row);
}

TEST(CompatDbLookup, ProductByGfdLabel) {
  const std::vector<ProductRow> rows = {
      {"Tesla-T4", "T4", "7.5"},
      {"Tesla-T4-SHARED", "T4", "7.5"},
      {"NVIDIA-A100-SXM4-80GB", "A100", "8.0"},
      {"NVIDIA-A100-80GB-PCIe", "A100", "8.0"},
      {"NVIDIA-A100-80GB-PCIe-MIG-1g.10gb", "A100", "8.0"},
      {"A100-SXM4-40GB-MIG-1g.5gb-SHARED", "A100", "8.0"},
      {"NVIDIA-A100-SXM4-40GB-MIG-3g.20gb", "A100", "8.0"},
      {"NVIDIA-H100-80GB-HBM3", "H100", "9.0"},
      {"NVIDIA-H100-PCIe", "H100", "9.0"},         // by prefix
      {"NVIDIA-H200-141GB-HBM3e", "H200", "9.0"},  // by prefix
      {"Tesla-V100-SXM2-32GB", "V100", "7.0"},
      {"NVIDIA-A10", "A10", "8.6"},  // not A100
      {"NVIDIA-A10G", "A10G", "8.6"},
      {"nvidia-l40s", "L40S", "8.9"},
      {"NVIDIA-GH200-480GB", "GH200", "9.0"},
      // The Server Edition is a datacenter product apart from the workstation ones.
      {"NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "RTX PRO 6000 Blackwell Server Edition",
       "12.0"},
      {"NVIDIA-RTX-PRO-6000-Blackwell-Workstation-Edition", "RTX PRO 6000 Blackwell", "12.0"},
      // GFD values seen on real clusters.
      {"NVIDIA-B200", "B200", "10.0"},
      {"NVIDIA-GB200", "GB200", "10.0"},
      {"NVIDIA-GB300", "GB300", "10.3"},
      {"NVIDIA-B300-SXM6-AC", "B300", "10.3"},
      {"NVIDIA-GB10", "GB10", "12.1"},
      {"NVIDIA-RTX-4000-Ada-Generation", "RTX 4000 Ada", "8.9"},
      // Pre-release boards name themselves generically: no product.
      {"NVIDIA-Graphics-Device", nullptr, ""},
      {"NVIDIA-GeForce-GTX-1080", nullptr, ""},
      {"NVIDIA-A1000", nullptr, ""},
      {"-MIG-1g.5gb", nullptr, ""},
      {"", nullptr, ""},
  };
  for (const ProductRow& row : rows) expect_product(embedded().product_by_gfd(row.query), row);
}

// NVIDIA's DRA driver publishes NVML's product name (productName), which GPU
// Feature Discovery labels with its words joined by '-' and characters
// outside [A-Za-z0-9-_. ] dropped (NVIDIA k8s-device-plugin
// internal/lm/resource.go, sanitise): the same GPU is found either way.
TEST(CompatDbLookup, ProductByLabelTakesNvmlNames) {
  const std::vector<ProductRow> rows = {
      {"NVIDIA H100 80GB HBM3", "H100", "9.0"},
      {"NVIDIA A100-SXM4-80GB", "A100", "8.0"},
      {"NVIDIA L4", "L4", "8.9"},
      {"Tesla T4", "T4", "7.5"},
      {"  NVIDIA   H100 80GB HBM3 ", "H100", "9.0"},
      {"NVIDIA RTX 4000 Ada Generation", "RTX 4000 Ada", "8.9"},
      {"NVIDIA-H100-80GB-HBM3", "H100", "9.0"},
      {"NVIDIA Graphics Device", nullptr, ""},
      {"NVIDIA GeForce GTX 1080", nullptr, ""},
      {"(H100)", nullptr, ""},
      {"", nullptr, ""},
  };
  for (const ProductRow& row : rows) expect_product(embedded().product_by_label(row.query), row);
}

TEST(CompatDbLookup, ProductByCloudLabel) {
  const std::string gke = "cloud.google.com/gke-accelerator";
  const std::vector<std::pair<std::string, ProductRow>> rows = {
      {gke, {"nvidia-tesla-t4", "T4", "7.5"}},
      {gke, {"nvidia-l4", "L4", "8.9"}},
      {gke, {"nvidia-tesla-a100", "A100", "8.0"}},
      {gke, {"nvidia-a100-80gb", "A100", "8.0"}},
      {gke, {"nvidia-h100-80gb", "H100", "9.0"}},
      {gke, {"nvidia-tesla-k80x", nullptr, ""}},
      {"k8s.amazonaws.com/accelerator", {"nvidia-l4", nullptr, ""}},
  };
  for (const auto& [label, row] : rows) {
    expect_product(embedded().product_by_cloud_label(label, row.query), row);
  }
}

TEST(CompatDbLookup, InstanceType) {
  struct Row {
    const char* name;
    const char* provider;  // nullptr: unknown instance type
    const char* product;   // the Product::name it resolves to
    int gpus;
  };
  const std::vector<Row> rows = {
      {"p4d.24xlarge", "aws", "A100", 8},
      {"p4de.24xlarge", "aws", "A100", 8},
      {"p3.2xlarge", "aws", "V100", 1},
      {"g4dn.xlarge", "aws", "T4", 1},
      {"g4dn.12xlarge", "aws", "T4", 4},
      {"g4dn.metal", "aws", "T4", 8},
      {"g5.48xlarge", "aws", "A10G", 8},
      {"g6e.12xlarge", "aws", "L40S", 4},
      {"p5.48xlarge", "aws", "H100", 8},
      {"p5en.48xlarge", "aws", "H200", 8},
      {"p6-b200.48xlarge", "aws", "B200", 8},
      {"a2-megagpu-16g", "gcp", "A100", 16},
      {"a3-ultragpu-8g", "gcp", "H200", 8},
      {"g2-standard-24", "gcp", "L4", 2},
      {"Standard_NC64as_T4_v3", "azure", "T4", 4},
      {"Standard_NC24ads_A100_v4", "azure", "A100", 1},
      {"Standard_ND96isr_H100_v5", "azure", "H100", 8},
      {"P4D.24XLARGE", nullptr, "", 0},  // names are exact
      {"standard_nc64as_t4_v3", nullptr, "", 0},
      {"m5.large", nullptr, "", 0},
      {"", nullptr, "", 0},
  };
  for (const Row& row : rows) {
    const InstanceType* type = embedded().instance_type(row.name);
    if (row.provider == nullptr) {
      EXPECT_EQ(type, nullptr) << row.name;
      continue;
    }
    ASSERT_NE(type, nullptr) << row.name;
    EXPECT_EQ(type->provider, row.provider) << row.name;
    EXPECT_EQ(type->gpus, row.gpus) << row.name;
    const Product* product = embedded().product_by_label(type->product);
    ASSERT_NE(product, nullptr) << row.name;
    EXPECT_EQ(product->name, row.product) << row.name;
  }
  // The memory size an instance type pins down is kept in its GFD value.
  EXPECT_EQ(embedded().instance_type("p4d.24xlarge")->product, "NVIDIA-A100-SXM4-40GB");
  EXPECT_EQ(embedded().instance_type("p4de.24xlarge")->product, "NVIDIA-A100-SXM4-80GB");
}

TEST(CompatDbLookup, ProductsByInstanceLabel) {
  const std::string aws = "karpenter.k8s.aws/instance-gpu-name";
  const std::string azure = "karpenter.azure.com/sku-gpu-name";
  using Names = std::vector<std::string>;
  struct Row {
    std::string label;
    const char* value;
    Names products;
  };
  const std::vector<Row> rows = {
      {aws, "t4", Names{"T4"}},
      {aws, "a10g", Names{"A10G"}},
      {aws, "a100", Names{"A100"}},  // 40GB and 80GB, one product of the matrix
      {aws, "v100", Names{"V100"}},
      {aws, "l4", Names{"L4"}},
      {aws, "l40s", Names{"L40S"}},
      {aws, "h100", Names{"H100"}},
      {aws, "h200", Names{"H200"}},
      {aws, "b200", Names{"B200"}},
      {azure, "T4", Names{"T4"}},
      {azure, "A100", Names{"A100"}},
      {azure, "H100", Names{"H100"}},
      {aws, "A100", Names{}},  // Kubernetes compares label values exactly
      {azure, "a100", Names{}},
      {aws, "t4g", Names{}},  // not a product of the matrix
      {"cloud.google.com/gke-accelerator", "nvidia-l4", Names{}},
      {aws, "", Names{}},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(product_names(embedded().products_by_instance_label(row.label, row.value)),
              row.products)
        << row.label << "=" << row.value;
  }
}

TEST(CompatDbLookup, NamedArchitecture) {
  struct Row {
    const char* name;
    std::optional<CudaVersion> cuda;
    const char* arch_list;  // nullptr: unknown name
    const char* source;     // where the expansion comes from
  };
  const std::vector<Row> rows = {
      {"Ampere", std::nullopt, "8.0;8.6+PTX", "cpp_extension.py _get_cuda_arch_flags"},
      {"Ampere+Tegra", std::nullopt, "8.7", "cpp_extension.py _get_cuda_arch_flags"},
      {"Kepler+Tesla", std::nullopt, "3.7", "cpp_extension.py _get_cuda_arch_flags"},
      // PyTorch compares names case-sensitively (str.replace).
      {"ampere", std::nullopt, nullptr, "cpp_extension.py: named_arches replaced as written"},
      {"Rubin", std::nullopt, nullptr, "not in cpp_extension.py"},
      // Thor's renumbering (pytorch PR #156176): 10.1 for CUDA 12, 11.0 for CUDA 13.
      {"Blackwell+Tegra", CudaVersion(12, 8), "10.1", "cpp_extension.py @0011ec5c"},
      {"Blackwell+Tegra", CudaVersion(12, 9), "10.1", "cpp_extension.py @0011ec5c"},
      {"Blackwell+Tegra", CudaVersion(13, 0), "11.0", "cpp_extension.py after 9c5601ec"},
      {"Blackwell+Tegra", std::nullopt, "11.0", "the newest meaning without a CUDA release"},
      {"Blackwell", CudaVersion(12, 8), "10.0;12.0+PTX", "cpp_extension.py @0011ec5c"},
      {"Blackwell", CudaVersion(13, 2), "10.0;10.3;12.0;12.1+PTX",
       "cpp_extension.py after 9c5601ec"},
      {"Hopper", CudaVersion(11, 8), "9.0+PTX", "one meaning for every release"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(std::string(row.name) + " / " + row.source);
    const NamedArchitecture* found = embedded().architecture(row.name, row.cuda);
    if (row.arch_list == nullptr) {
      EXPECT_EQ(found, nullptr);
    } else {
      ASSERT_NE(found, nullptr);
      EXPECT_EQ(found->arch_list, row.arch_list);
    }
  }
}

TEST(CompatDbLookup, TegraCapabilities) {
  // CUDA Programming Guide, Binary Compatibility: no cubin compatibility on
  // Tegra. Every Jetson product's capability is one; discrete ones are not.
  for (const Product& p : embedded().products) {
    const bool jetson = p.name.rfind("Jetson", 0) == 0;
    EXPECT_EQ(embedded().is_tegra(p.cc), jetson) << p.name;
  }
  EXPECT_TRUE(embedded().is_tegra(ComputeCapability(10, 1)));  // Thor before CUDA 13
  EXPECT_FALSE(embedded().is_tegra(ComputeCapability(8, 6)));
  EXPECT_FALSE(embedded().is_tegra(ComputeCapability(12, 1)));  // GB10 is not a Jetson
}

TEST(CompatDbLookup, SpecialTargetsPerRelease) {
  // Which "a" and "f" targets exist: sm_90a from CUDA 12.0
  // (select_compute_arch.cmake), f targets from CUDA 12.9 (NVIDIA's CUDA 12.9
  // family-specific blog), sm_101 renamed sm_110 in CUDA 13.0.
  EXPECT_TRUE(embedded().targets_for(cuda("11.8"))->arch_specific.empty());
  EXPECT_EQ(capability_strs(embedded().targets_for(cuda("12.4"))->arch_specific),
            (std::vector<std::string>{"9.0"}));
  EXPECT_TRUE(embedded().targets_for(cuda("12.8"))->family_specific.empty());
  const CudaTargets* t129 = embedded().targets_for(cuda("12.9"));
  EXPECT_EQ(std::count(t129->family_specific.begin(), t129->family_specific.end(),
                       ComputeCapability(10, 0)),
            1);
  EXPECT_EQ(std::count(t129->family_specific.begin(), t129->family_specific.end(),
                       ComputeCapability(9, 0)),
            0);
  const CudaTargets* t130 = embedded().targets_for(cuda("13.0"));
  EXPECT_EQ(
      std::count(t130->arch_specific.begin(), t130->arch_specific.end(), ComputeCapability(11, 0)),
      1);
  EXPECT_EQ(
      std::count(t130->arch_specific.begin(), t130->arch_specific.end(), ComputeCapability(10, 1)),
      0);
}

TEST(CompatDbLookup, CudaImageRequirement) {
  const CudaImage* i1281 = embedded().cuda_image("12.8.1");
  ASSERT_NE(i1281, nullptr);
  EXPECT_THAT(i1281->require_cuda,
              StartsWith("cuda>=12.8 brand=unknown,driver>=470,driver<471 "
                         "brand=grid,driver>=470,driver<471 brand=tesla,driver>=470,driver<471 "));
  EXPECT_THAT(i1281->require_cuda, HasSubstr(" brand=cloudgaming,driver>=470,driver<471 "
                                             "brand=unknown,driver>=535,driver<536 "));
  EXPECT_THAT(i1281->require_cuda, testing::EndsWith(" brand=cloudgaming,driver>=565,driver<566"));

  const CudaImage* i1241 = embedded().cuda_image("12.4.1");
  ASSERT_NE(i1241, nullptr);
  EXPECT_THAT(
      i1241->require_cuda,
      StartsWith("cuda>=12.4 brand=tesla,driver>=470,driver<471 "
                 "brand=unknown,driver>=470,driver<471 brand=nvidia,driver>=470,driver<471"));
  EXPECT_THAT(i1241->require_cuda, testing::EndsWith(" brand=titanrtx,driver>=535,driver<536"));

  EXPECT_EQ(embedded().cuda_image("12.6.2"), nullptr);  // not verified for Ubuntu
  EXPECT_EQ(embedded().cuda_image("12.8"), nullptr);    // looked up by CUDA_VERSION as set
}

TEST(CompatDbLookup, NgcRelease) {
  const NgcRelease* r2401 = embedded().ngc_release("24.01");
  ASSERT_NE(r2401, nullptr);
  EXPECT_EQ(r2401->cuda_version, "12.3.2");
  ASSERT_TRUE(r2401->min_driver);
  EXPECT_EQ(r2401->min_driver->branch(), 545);
  std::vector<std::string> fc;
  for (const auto& d : r2401->forward_compat) fc.push_back(d.str());
  EXPECT_EQ(fc, (std::vector<std::string>{"470.57", "525.85", "535.86", "545.23"}));
  ASSERT_TRUE(r2401->min_cc);
  EXPECT_EQ(r2401->min_cc->str(), "6.0");

  ASSERT_NE(embedded().ngc_release("25.01"), nullptr);
  EXPECT_EQ(embedded().ngc_release("25.01")->min_cc->str(), "7.5");
  ASSERT_NE(embedded().ngc_release("24.06"), nullptr);
  EXPECT_EQ(embedded().ngc_release("24.06")->cuda_version, "12.5.0");  // Triton's, not MXNet's
  ASSERT_NE(embedded().ngc_release("26.05"), nullptr);
  EXPECT_FALSE(embedded().ngc_release("26.05")->min_driver);
  EXPECT_EQ(embedded().ngc_release("23.02"), nullptr);  // not verified
  EXPECT_EQ(embedded().ngc_release("24.1"), nullptr);
}

TEST(CompatDbLookup, ImageRules) {
  const auto kind_of = [](std::string_view repository) -> std::string {
    for (const ImageRule& rule : embedded().image_rules) {
      if (std::find(rule.repositories.begin(), rule.repositories.end(), repository) !=
          rule.repositories.end()) {
        return rule.kind;
      }
    }
    return "";
  };
  EXPECT_EQ(kind_of("docker.io/nvidia/cuda"), "cuda-base");
  EXPECT_EQ(kind_of("nvcr.io/nvidia/cuda"), "cuda-base");
  EXPECT_EQ(kind_of("nvcr.io/nvidia/pytorch"), "ngc-release");
  EXPECT_EQ(kind_of("nvcr.io/nvidia/nemo"), "ngc-release");
  EXPECT_EQ(kind_of("docker.io/pytorch/pytorch"), "pytorch-tag");  // then cuda-tag
  EXPECT_EQ(kind_of("*"), "cuda-tag");
}

// What the matrix knows and how far it reaches: the answers that keep a
// gap in it from passing for a fact.
TEST(CompatDbLookup, CapabilityBeyondKnown) {
  const CompatDb& db = embedded();
  EXPECT_FALSE(db.capability_beyond_known(ComputeCapability(10, 7)));  // Rubin is known
  EXPECT_TRUE(db.capability_beyond_known(ComputeCapability(10, 9)));   // past the newest 10.x
  EXPECT_TRUE(db.capability_beyond_known(ComputeCapability(12, 5)));   // past the newest 12.x
  EXPECT_TRUE(db.capability_beyond_known(ComputeCapability(13, 0)));   // a major past every one
  EXPECT_FALSE(db.capability_beyond_known(ComputeCapability(7, 1)));   // between known ones
  EXPECT_FALSE(db.capability_beyond_known(ComputeCapability(4, 0)));   // no such generation
  ASSERT_TRUE(db.newest_capability());
  EXPECT_EQ(db.newest_capability()->str(), "12.1");
  ASSERT_TRUE(db.newest_cuda());
  EXPECT_EQ(db.newest_cuda()->str(), "13.5");
}

// NVIDIA's CUDA Toolkit, Driver, and Architecture Matrix: Kepler ends with
// R470; Maxwell, Pascal and Volta with R580; later architectures go on.
TEST(CompatDbLookup, LastDriverBranch) {
  const CompatDb& db = embedded();
  const std::vector<std::pair<ComputeCapability, int>> rows = {
      {ComputeCapability(3, 7), 470}, {ComputeCapability(5, 2), 580},
      {ComputeCapability(6, 0), 580}, {ComputeCapability(6, 1), 580},
      {ComputeCapability(7, 0), 580},
  };
  for (const auto& [cc, branch] : rows) {
    const LastDriverBranch* last = db.last_driver_branch(cc);
    ASSERT_NE(last, nullptr) << cc.str();
    EXPECT_EQ(last->last_branch, branch) << cc.str();
  }
  for (const ComputeCapability cc :
       {ComputeCapability(7, 5), ComputeCapability(9, 0), ComputeCapability(10, 7)}) {
    EXPECT_EQ(db.last_driver_branch(cc), nullptr) << cc.str();
  }
}

// PyTorch's own builds: the arch list a pytorch/pytorch tag was built with.
TEST(CompatDbLookup, TorchBuild) {
  const CompatDb& db = embedded();
  const TorchBuild* cu128 = db.torch_build(cuda("2.8"), cuda("12.8"));
  ASSERT_NE(cu128, nullptr);
  EXPECT_EQ(cu128->cuda_variant, "cu128");
  EXPECT_EQ(cu128->arch_list, "7.0;7.5;8.0;8.6;9.0;10.0;12.0");
  const TorchBuild* cu126 = db.torch_build(cuda("2.6"), cuda("12.6"));
  ASSERT_NE(cu126, nullptr);
  EXPECT_EQ(cu126->arch_list, "5.0;6.0;7.0;7.5;8.0;8.6;9.0");
  EXPECT_EQ(db.torch_build(cuda("2.5"), cuda("12.8")), nullptr);  // cu128 came with 2.7
  EXPECT_EQ(db.torch_build(cuda("2.8"), cuda("11.8")), nullptr);
}

TEST(CompatDbLookup, DescribesItselfWithRevisionAndDate) {
  const CompatDb& db = embedded();
  EXPECT_EQ(db.as_of, "2026-12-04");
  EXPECT_EQ(db.describe(), "the compatibility matrix (revision " + db.revision + ", 2026-12-04)");
  const auto newest = newest_entries(db);
  ASSERT_GE(newest.size(), 3u);
  EXPECT_EQ(newest[0],
            std::make_pair(std::string("CUDA release"), std::string("13.5 GA (13.5.0)")));
  EXPECT_EQ(newest[1],
            std::make_pair(std::string("driver branch"), std::string("620 (CUDA 13.5)")));
  EXPECT_EQ(newest[2], std::make_pair(std::string("compute capability"), std::string("12.1")));
}

}  // namespace
}  // namespace cudagate

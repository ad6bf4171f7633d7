// The compat-db checks across entries: repeated entries (unique keys, names and aliases
// ignoring case, capabilities whose support ends twice), contradictions (a newer branch with an
// older CUDA, overlapping ranges of one name or variant), and references to products and
// builds that no entry gives, across files too, refused naming the file, the entry and the
// field.
#include "compat-db/compat_db_checks.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compat-db/compat_db.h"
#include "tests/support/compat_db_files.h"

namespace cudagate {
namespace {

using compat_db_reader::check_instance_products;
using compat_db_reader::check_last_driver_branches;
using compat_db_reader::named_product;
using test_support::BadMatrixRow;
using test_support::instances_replaced;
using test_support::kValidMatrix;
using test_support::load_test_json;
using test_support::replaced;
using test_support::with_l4;

TEST(CompatDbChecks, RefusesRepeatsContradictionsAndDanglingReferences) {
  const std::vector<BadMatrixRow> rows = {
      {"dangling product", replaced("\"product\": \"T4\"", "\"product\": \"T5\""),
       "test.json: cloudAccelerators[0].product: no product is named \"T5\" (use a "
       "products[].name)"},
      {"alias clash",
       replaced("\"aliases\": [\"Tesla T4\"]", "\"aliases\": [\"Tesla T4\", \"t4\"]"),
       "test.json: products[0].aliases[1]: \"t4\" is already used by products[0].name (compared "
       "ignoring case)"},
      {"duplicate release", replaced("\"version\": \"12.4\"", "\"version\": \"12.4.1\""),
       "test.json: cudaReleases[1].version: repeats cudaReleases[0]; each entry must be unique"},
      {"duplicate branch", replaced("\"branch\": 535", "\"branch\": 550"),
       "test.json: driverBranches[1].branch: repeats driverBranches[0]; each entry must be unique"},
      {"branch reports an older CUDA", replaced("\"branch\": 535", "\"branch\": 555"),
       "test.json: driverBranches[1].cuda: branch 555 reports CUDA 12.2, older than branch 550's "
       "CUDA 12.4"},
      {"overlapping meanings", replaced("\"cudaSince\": \"12.0\"", "\"cudaSince\": \"11.8\""),
       "test.json: architectures[2].name: repeats architectures[1] for the same CUDA releases; "
       "entries of one name need cudaSince/cudaBefore ranges that do not overlap"},
      {"a name twice without ranges",
       replaced("\"name\": \"Hopper\", \"archList\": \"9.0\", \"cudaBefore\": \"12.0\"",
                "\"name\": \"Turing\", \"archList\": \"7.5\""),
       "test.json: architectures[1].name: repeats architectures[0] for the same CUDA releases; "
       "entries of one name need cudaSince/cudaBefore ranges that do not overlap"},
      {"a name spelt two ways",
       replaced("\"name\": \"Hopper\", \"archList\": \"9.0+PTX\"",
                "\"name\": \"HOPPER\", \"archList\": \"9.0+PTX\""),
       "test.json: architectures[2].name: \"HOPPER\" is spelt differently in architectures[1]; "
       "PyTorch compares names case-sensitively"},
      {"pytorch-tag without builds",
       replaced("\"kind\": \"cuda-tag\"", "\"kind\": \"pytorch-tag\""),
       "test.json: imageRules[0].kind: \"pytorch-tag\" reads the arch lists of torchBuilds, which "
       "has no entry"},
  };
  for (const BadMatrixRow& row : rows) {
    auto db = load_test_json(row.text);
    ASSERT_FALSE(db) << row.name;
    EXPECT_EQ(db.error().str(), row.error) << row.name;
  }
}

// The instance tables in a file of their own (kInstanceTables) name products
// of the other file, exactly.
TEST(CompatDbChecks, RefusesRepeatedInstanceRowsAndUnknownProducts) {
  const std::vector<BadMatrixRow> rows = {
      {"duplicate instance type",
       instances_replaced("\"instanceType\": \"g2-standard-96\"",
                          "\"instanceType\": \"g4dn.xlarge\""),
       "b.json: instanceTypes[1].instanceType: repeats instanceTypes[0]; each entry must be "
       "unique"},
      {"unknown product",
       instances_replaced("\"product\": \"Tesla-T4\", \"gpus\"",
                          "\"product\": \"Tesla-T5\", \"gpus\""),
       "b.json: instanceTypes[0].product: no product is named \"Tesla-T5\" (use a "
       "products[].name or one of its gfdNames, exactly)"},
      {"product in another spelling",
       instances_replaced("\"product\": \"L4\"", "\"product\": \"nvidia-l4\""),
       "b.json: instanceTypes[1].product: no product is named \"nvidia-l4\" (use a "
       "products[].name or one of its gfdNames, exactly)"},
      {"unknown product of a label",
       instances_replaced("\"NVIDIA-L4\", \"Tesla-T4\"]", "\"NVIDIA-L4\", \"Tesla-T5\"]"),
       "b.json: instanceGpuLabels[0].products[2]: no product is named \"Tesla-T5\" (use a "
       "products[].name or one of its gfdNames, exactly)"},
      {"duplicate label value", instances_replaced("\"value\": \"t4\"", "\"value\": \"any\""),
       "b.json: instanceGpuLabels[1].value: repeats instanceGpuLabels[0]; each entry must be "
       "unique"},
  };
  for (const BadMatrixRow& row : rows) {
    auto db = load_compat_db({{"a.json", with_l4()}, {"b.json", row.text}});
    ASSERT_FALSE(db) << row.name;
    EXPECT_EQ(db.error().str(), row.error) << row.name;
  }
}

TEST(CompatDbChecks, DanglingProductNamesTheFileOfTheReference) {
  const std::string text(kValidMatrix);
  const auto at = text.find(",\n\"cloudAccelerators\"");
  const auto end = text.find(",\n\"architectures\"");
  const std::string first = text.substr(0, at) + text.substr(end);
  std::string second = "{\"schemaVersion\": 1" + text.substr(at, end - at) + "}";
  second.replace(second.find("\"T4\""), 4, "\"t4\"");  // names are exact here
  auto db = load_compat_db({{"a.json", first}, {"b.json", second}});
  ASSERT_FALSE(db);
  EXPECT_EQ(db.error().str(),
            "b.json: cloudAccelerators[0].product: no product is named \"t4\" (use a "
            "products[].name)");
}

// One variant's builds cover each torch release once.
TEST(CompatDbChecks, TorchBuildsOfOneVariantDoNotOverlap) {
  const std::string overlapping =
      R"({"schemaVersion": 1, "torchBuilds": [)"
      R"({"cudaVariant": "cu124", "cuda": "12.4", "torchSince": "2.4", "archList": "8.0", "source": "s"},)"
      R"({"cudaVariant": "cu124", "cuda": "12.4", "torchSince": "2.5", "archList": "9.0", "source": "s"}]})";
  auto bad =
      load_compat_db({CompatDbFile{"a.json", kValidMatrix}, CompatDbFile{"b.json", overlapping}});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().str(),
            "b.json: torchBuilds[1].torchSince: repeats torchBuilds[0] for the same torch releases "
            "of cu124; entries need torchSince/torchBefore ranges that do not overlap");
}

// The first repeat, named at the later entry with the earlier one's place;
// keys compare as given.
TEST(CompatDbChecks, UniqueNamesTheFirstRepeat) {
  const std::vector<std::string> values = {"a", "b", "A", "b", "a"};
  const auto same = [](const std::string& v) { return v; };
  const auto error = compat_db_reader::unique(values, "things", "name", same);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->str(), "things[3].name: repeats things[1]; each entry must be unique");
  EXPECT_FALSE(
      compat_db_reader::unique(std::vector<std::string>{"a", "A", "b"}, "things", "name", same));
  EXPECT_FALSE(compat_db_reader::unique(std::vector<std::string>{}, "things", "name", same));
}

TEST(CompatDbChecks, ACapabilitysSupportEndsOnce) {
  const auto entry = [](int branch, std::vector<ComputeCapability> ccs) {
    return LastDriverBranch{"family", std::move(ccs), branch, "s"};
  };
  EXPECT_FALSE(
      check_last_driver_branches({entry(470, {ComputeCapability(3, 5), ComputeCapability(3, 7)}),
                                  entry(580, {ComputeCapability(5, 0), ComputeCapability(7, 0)})}));
  const auto error =
      check_last_driver_branches({entry(470, {ComputeCapability(3, 5), ComputeCapability(3, 7)}),
                                  entry(580, {ComputeCapability(5, 0), ComputeCapability(3, 7)})});
  ASSERT_TRUE(error);
  EXPECT_EQ(error->str(),
            "lastDriverBranches[1].computeCapabilities[1]: 3.7 is already in "
            "lastDriverBranches[0]; each capability's support ends once");
  const auto within_one =
      check_last_driver_branches({entry(580, {ComputeCapability(6, 0), ComputeCapability(6, 0)})});
  ASSERT_TRUE(within_one);
  EXPECT_EQ(within_one->where, "lastDriverBranches[0].computeCapabilities[1]");
}

// A products[].name before any product's gfdNames, each spelt exactly: the
// rule the check and products_by_instance_label() share.
TEST(CompatDbChecks, NamedProductByNameThenGfdName) {
  std::vector<Product> products(2);
  products[0].name = "A100";
  products[0].gfd_names = {"NVIDIA-A100-SXM4-80GB", "H100"};
  products[1].name = "H100";
  products[1].gfd_names = {"NVIDIA-H100-80GB-HBM3"};
  EXPECT_EQ(named_product(products, "A100"), &products[0]);
  EXPECT_EQ(named_product(products, "NVIDIA-A100-SXM4-80GB"), &products[0]);
  EXPECT_EQ(named_product(products, "H100"), &products[1]);  // a name wins over a GFD name
  EXPECT_EQ(named_product(products, "NVIDIA-H100-80GB-HBM3"), &products[1]);
  EXPECT_EQ(named_product(products, "a100"), nullptr);
  EXPECT_EQ(named_product(products, "NVIDIA-A100"), nullptr);  // no prefixes
  EXPECT_EQ(named_product(products, ""), nullptr);
  EXPECT_EQ(named_product({}, "A100"), nullptr);
}

// The check names the file that gave the section with the bad reference.
TEST(CompatDbChecks, InstanceProductsNameTheirFile) {
  CompatDb db;
  db.products.resize(1);
  db.products[0].name = "T4";
  db.products[0].gfd_names = {"Tesla-T4"};
  db.instance_types.push_back(InstanceType{"aws", "g4dn.xlarge", "Tesla-T4", 1, "s"});
  db.instance_gpu_labels.push_back(InstanceGpuLabel{"example.com/gpu", "t4", {"T4", "T5"}, "s"});
  const std::map<std::string, std::string, std::less<>> files = {
      {"instanceTypes", "types.json"}, {"instanceGpuLabels", "labels.json"}};
  const auto error = check_instance_products(db, files);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->str(),
            "labels.json: instanceGpuLabels[0].products[1]: no product is named \"T5\" (use a "
            "products[].name or one of its gfdNames, exactly)");
  db.instance_gpu_labels[0].products = {"T4", "Tesla-T4"};
  EXPECT_FALSE(check_instance_products(db, files));
  db.instance_types[0].product = "tesla-t4";
  const auto type_error = check_instance_products(db, files);
  ASSERT_TRUE(type_error);
  EXPECT_EQ(type_error->where, "types.json: instanceTypes[0].product");
}

}  // namespace
}  // namespace cudagate

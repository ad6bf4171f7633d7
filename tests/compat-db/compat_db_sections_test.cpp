// The sections of a compat-db file: the table of sections (names, order, which are required),
// what read() appends, and each section's own field errors, refused naming the file, the entry
// and the field: types and forms of fields, unknown and missing ones, the rules of one entry
// (subsets, ascending lists, ranges, spellings). The checks that compare entries are tested in
// compat_db_checks_test.cpp.
#include "compat-db/compat_db_sections.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "compat-db/compat_db.h"
#include "tests/support/compat_db_files.h"

namespace cudagate {
namespace {

using compat_db_reader::find_section;
using compat_db_reader::Section;
using compat_db_reader::section_names;
using compat_db_reader::sections;
using test_support::BadMatrixRow;
using test_support::instances_replaced;
using test_support::kValidMatrix;
using test_support::load_test_json;
using test_support::replaced;
using test_support::with_l4;

// Every section once, in the order the loader's error about an unknown
// section lists them; lastDriverBranches, torchBuilds and the instance
// tables may be left out of a matrix (compat_db.h).
TEST(CompatDbSections, TableOfEverySection) {
  std::vector<std::string_view> names;
  std::vector<std::string_view> optional;
  for (const Section& section : sections()) {
    names.push_back(section.name);
    if (!section.required) optional.push_back(section.name);
    EXPECT_EQ(find_section(section.name), &section) << section.name;
  }
  EXPECT_EQ(names, (std::vector<std::string_view>{
                       "cudaReleases", "minorVersionCompat", "driverBranches", "cudaTargets",
                       "lastDriverBranches", "products", "cloudAccelerators", "architectures",
                       "tegraCapabilities", "cudaImages", "ngcReleases", "imageRules",
                       "torchBuilds", "instanceTypes", "instanceGpuLabels"}));
  EXPECT_EQ(optional, (std::vector<std::string_view>{"lastDriverBranches", "torchBuilds",
                                                     "instanceTypes", "instanceGpuLabels"}));
  EXPECT_EQ(section_names(),
            "cudaReleases, minorVersionCompat, driverBranches, cudaTargets, lastDriverBranches, "
            "products, cloudAccelerators, architectures, tegraCapabilities, cudaImages, "
            "ngcReleases, imageRules, torchBuilds, instanceTypes, instanceGpuLabels");
  // Names are exact: the loader refuses a section it would not read.
  EXPECT_EQ(find_section("CudaReleases"), nullptr);
  EXPECT_EQ(find_section("cudaRelease"), nullptr);
  EXPECT_EQ(find_section("asOf"), nullptr);
  EXPECT_EQ(find_section(""), nullptr);
}

// read() appends the entries in file order (sorting is the loader's), and
// its errors name the place inside the file, which the loader prefixes.
TEST(CompatDbSections, ReadAppendsInFileOrderAndNamesThePlaceInTheFile) {
  const Section* branches = find_section("driverBranches");
  ASSERT_NE(branches, nullptr);
  CompatDb db;
  db.driver_branches.push_back(DriverBranch{470, CudaVersion(11, 4), "", "", "earlier"});
  const auto given = nlohmann::json::parse(
      R"([{"branch": 550, "cuda": "12.4", "source": "a"}, )"
      R"({"branch": 535, "cuda": "12.2", "designation": "LTSB", "endOfLife": "2026-06", "source": "b"}])");
  EXPECT_FALSE(branches->read(given, db));
  ASSERT_EQ(db.driver_branches.size(), 3U);
  EXPECT_EQ(db.driver_branches[0].source, "earlier");
  EXPECT_EQ(db.driver_branches[1].branch, 550);
  EXPECT_EQ(db.driver_branches[1].cuda, CudaVersion(12, 4));
  EXPECT_EQ(db.driver_branches[1].designation, "");
  EXPECT_EQ(db.driver_branches[2].branch, 535);
  EXPECT_EQ(db.driver_branches[2].designation, "LTSB");
  EXPECT_EQ(db.driver_branches[2].end_of_life, "2026-06");
  EXPECT_EQ(db.driver_branches[2].source, "b");

  CompatDb other;
  const auto bad = nlohmann::json::parse(R"([{"branch": 550, "cuda": "12", "source": "a"}])");
  const auto error = branches->read(bad, other);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->str(),
            "driverBranches[0].cuda: expected a CUDA version with a minor part like 12.4 or "
            "12.4.1, got \"12\"");
}

TEST(CompatDbSections, RefusesBadFieldsNamingThePlace) {
  const std::vector<BadMatrixRow> rows = {
      {"entry not an object", replaced("\"architectures\": [{", "\"architectures\": [7, {"),
       "test.json: architectures[0]: expected an object, got a number"},
      {"unknown field",
       replaced("\"label\": \"12.4 GA\"", "\"label\": \"12.4 GA\", \"lable\": \"x\""),
       "test.json: cudaReleases[1].lable: unknown field (this entry has: version, label, "
       "minDriver, source)"},
      {"missing field", replaced("\"label\": \"12.4 GA\", ", ""),
       "test.json: cudaReleases[1].label: required field is missing"},
      {"bad driver version", replaced("\"minDriver\": \"550.54.14\"", "\"minDriver\": \"x\""),
       "test.json: cudaReleases[1].minDriver: expected a driver version like 535.129.03 or a "
       "branch like 535, got \"x\""},
      {"driver version of the wrong type",
       replaced("\"minDriver\": \"550.54.14\"", "\"minDriver\": 550"),
       "test.json: cudaReleases[1].minDriver: expected a driver version like 535.129.03 or a "
       "branch like 535, got a number"},
      {"bad CUDA version", replaced("\"cuda\": \"12.4\"", "\"cuda\": \"12.x\""),
       "test.json: driverBranches[0].cuda: expected a CUDA version like 12.4 or 12.4.1, got "
       "\"12.x\""},
      {"CUDA version without minor", replaced("\"version\": \"12.4\"", "\"version\": \"12\""),
       "test.json: cudaReleases[1].version: expected a CUDA version with a minor part like 12.4 "
       "or 12.4.1, got \"12\""},
      {"bad compute capability",
       replaced("\"computeCapability\": \"7.5\"", "\"computeCapability\": \"sm_75\""),
       "test.json: products[0].computeCapability: expected a compute capability like 8.0 or 9.0, "
       "got \"sm_75\""},
      {"bad capability in a list", replaced("\"all\": [\"8.0\", \"9.0\"]", "\"all\": [\"8.0\", 9]"),
       "test.json: cudaTargets[0].all[1]: expected a compute capability like 8.0 or 9.0, got a "
       "number"},
      {"number as string", replaced("\"cudaMajor\": 12", "\"cudaMajor\": \"12\""),
       "test.json: minorVersionCompat[0].cudaMajor: expected a whole number, got the string "
       "\"12\""},
      {"negative number", replaced("\"cudaMajor\": 12", "\"cudaMajor\": -1"),
       "test.json: minorVersionCompat[0].cudaMajor: expected a whole number from 1 to 99999, got "
       "-1"},
      {"fractional number", replaced("\"branch\": 550", "\"branch\": 550.5"),
       "test.json: driverBranches[0].branch: expected a whole number, got a number"},
      {"boolean as string", replaced("\"datacenter\": true", "\"datacenter\": \"yes\""),
       "test.json: products[0].datacenter: expected true or false, got the string \"yes\""},
      {"empty string", replaced("\"family\": \"turing\"", "\"family\": \"\""),
       "test.json: products[0].family: expected a non-empty string, got the string \"\""},
      {"list of the wrong type",
       replaced("\"aliases\": [\"Tesla T4\"]", "\"aliases\": \"Tesla T4\""),
       "test.json: products[0].aliases: expected an array, got the string \"Tesla T4\""},
      {"empty required list", replaced("\"repositories\": [\"*\"]", "\"repositories\": []"),
       "test.json: imageRules[0].repositories: expected a non-empty array, got an empty one"},
      {"designation", replaced("\"designation\": \"LTSB\"", "\"designation\": \"LTS\""),
       "test.json: driverBranches[1].designation: expected one of LTSB, PB, NFB, developer (or "
       "leave it out), got \"LTS\""},
      {"end of life", replaced("\"designation\": \"LTSB\"", "\"endOfLife\": \"June 2026\""),
       "test.json: driverBranches[1].endOfLife: expected a month like 2026-06, got \"June "
       "2026\""},
      {"all-major outside all",
       replaced("\"allMajor\": [\"8.0\", \"9.0\"]", "\"allMajor\": [\"7.0\"]"),
       "test.json: cudaTargets[0].allMajor[0]: 7.0 is not in \"all\"; all-major is a subset of "
       "all"},
      {"capabilities out of order",
       replaced("\"all\": [\"8.0\", \"9.0\"]", "\"all\": [\"9.0\", \"8.0\"]"),
       "test.json: cudaTargets[0].all[1]: expected capabilities in ascending order without "
       "repeats, got 8.0 after 9.0"},
      {"brand case", replaced("\"brand\": \"unknown\"", "\"brand\": \"Tesla\""),
       "test.json: products[0].brand: expected the brand in lower case as NVIDIA_REQUIRE_* "
       "compares it, got \"Tesla\""},
      {"arch list", replaced("\"archList\": \"7.5+PTX\"", "\"archList\": \"7.5+ptx\""),
       "test.json: architectures[0].archList: expected entries like 8.0, 9.0a or 8.6+PTX joined "
       "by ';', got \"7.5+ptx\""},
      {"arch list entry", replaced("\"archList\": \"7.5+PTX\"", "\"archList\": \"7.5;;8.0\""),
       "test.json: architectures[0].archList: expected entries like 8.0, 9.0a or 8.6+PTX joined "
       "by ';', got \"7.5;;8.0\""},
      {"requirement of another image",
       replaced("\"requireCuda\": \"cuda>=12.4", "\"requireCuda\": \"cuda>=12.3"),
       "test.json: cudaImages[0].requireCuda: expected the requirement to start with "
       "\"cuda>=12.4\" for CUDA 12.4.1, got \"cuda>=12.3\""},
      {"release name", replaced("\"release\": \"24.01\"", "\"release\": \"24.13\""),
       "test.json: ngcReleases[0].release: expected a release like 24.01 (YY.MM), got \"24.13\""},
      {"release driver", replaced("\"minDriver\": \"545\"", "\"minDriver\": \"545.x\""),
       "test.json: ngcReleases[0].minDriver: expected a driver version like 535.129.03 or a "
       "branch like 535, got \"545.x\""},
      {"forward-compatible driver",
       replaced("\"forwardCompat\": [\"470.57\"]", "\"forwardCompat\": [\"470\"]"),
       "test.json: ngcReleases[0].forwardCompat[0]: expected a driver version like 535.129.03 or "
       "570.26, got \"470\""},
      {"a target outside all",
       replaced("\"archSpecific\": [\"9.0\"]", "\"archSpecific\": [\"8.0\", \"8.6\"]"),
       "test.json: cudaTargets[0].archSpecific[1]: 8.6 is not in \"all\"; an "
       "architecture-specific target is a subset of all"},
      {"f targets out of order",
       replaced("\"archSpecific\": [\"9.0\"]", "\"familySpecific\": [\"9.0\", \"8.0\"]"),
       "test.json: cudaTargets[0].familySpecific[1]: expected capabilities in ascending order "
       "without repeats, got 8.0 after 9.0"},
      {"empty CUDA range",
       replaced("\"cudaBefore\": \"12.0\"", "\"cudaSince\": \"12.0\", \"cudaBefore\": \"12.0\""),
       "test.json: architectures[1].cudaBefore: expected a CUDA release after cudaSince 12.0, got "
       "12.0"},
      {"tegra capability",
       replaced("\"computeCapability\": \"8.7\"", "\"computeCapability\": \"orin\""),
       "test.json: tegraCapabilities[0].computeCapability: expected a compute capability like 8.0 "
       "or 9.0, got \"orin\""},
      {"tegra devices", replaced("\"devices\": \"Jetson AGX Orin\", ", ""),
       "test.json: tegraCapabilities[0].devices: required field is missing"},
      {"rule kind", replaced("\"kind\": \"cuda-tag\"", "\"kind\": \"cuda-tags\""),
       "test.json: imageRules[0].kind: expected one of cuda-base, ngc-release, cuda-tag, "
       "pytorch-tag, got \"cuda-tags\""},
  };
  for (const BadMatrixRow& row : rows) {
    auto db = load_test_json(row.text);
    ASSERT_FALSE(db) << row.name;
    EXPECT_EQ(db.error().str(), row.error) << row.name;
  }
}

TEST(CompatDbSections, RefusesASectionThatIsNotAList) {
  auto db =
      load_test_json(replaced("\"architectures\": [{\"name\": \"Turing\", \"archList\": "
                              "\"7.5+PTX\", \"source\": \"s\"}, ",
                              "\"architectures\": {\"Turing\": \"7.5+PTX\"}, \"unused\": ["));
  ASSERT_FALSE(db);
  EXPECT_EQ(db.error().str(),
            "test.json: architectures: expected an array of entries, got an object");
}

TEST(CompatDbSections, EscapesControlBytesInMessages) {
  auto db = load_test_json(replaced("\"minDriver\": \"550.54.14\"", "\"minDriver\": \"5\\u0001\""));
  ASSERT_FALSE(db);
  EXPECT_EQ(db.error().str(),
            "test.json: cudaReleases[1].minDriver: expected a driver version like 535.129.03 or a "
            "branch like 535, got \"5\\x01\"");
}

// The instance tables in a file of their own (kInstanceTables) beside a
// matrix that has their products.
TEST(CompatDbSections, RefusesBadInstanceRowsNamingThePlace) {
  const std::vector<BadMatrixRow> rows = {
      {"missing field", instances_replaced("\"gpus\": 1, ", ""),
       "b.json: instanceTypes[0].gpus: required field is missing"},
      {"missing instance type", instances_replaced("\"instanceType\": \"g4dn.xlarge\", ", ""),
       "b.json: instanceTypes[0].instanceType: required field is missing"},
      {"no GPU", instances_replaced("\"gpus\": 1", "\"gpus\": 0"),
       "b.json: instanceTypes[0].gpus: expected a whole number from 1 to 99999, got 0"},
      {"provider", instances_replaced("\"provider\": \"aws\"", "\"provider\": \"AWS\""),
       "b.json: instanceTypes[0].provider: expected one of aws, gcp, azure, got \"AWS\""},
      {"unknown field", instances_replaced("\"gpus\": 1,", "\"gpus\": 1, \"gpu\": 1,"),
       "b.json: instanceTypes[0].gpu: unknown field (this entry has: provider, instanceType, "
       "product, gpus, source)"},
      {"label without product",
       instances_replaced("\"product\": \"Tesla-T4\", \"source\"", "\"source\""),
       "b.json: instanceGpuLabels[1].product: required field is missing (or give products, a "
       "non-empty list of names)"},
      {"label with both",
       instances_replaced("\"product\": \"Tesla-T4\", \"source\"",
                          "\"product\": \"Tesla-T4\", \"products\": [\"L4\"], \"source\""),
       "b.json: instanceGpuLabels[1].products: give product (one name) or products (a list), "
       "not both"},
      {"empty products", instances_replaced("[\"T4\", \"NVIDIA-L4\", \"Tesla-T4\"]", "[]"),
       "b.json: instanceGpuLabels[0].product: required field is missing (or give products, a "
       "non-empty list of names)"},
  };
  for (const BadMatrixRow& row : rows) {
    auto db = load_compat_db({{"a.json", with_l4()}, {"b.json", row.text}});
    ASSERT_FALSE(db) << row.name;
    EXPECT_EQ(db.error().str(), row.error) << row.name;
  }
}

// A build's variant names its CUDA release.
TEST(CompatDbSections, TorchBuildVariantNamesItsCuda) {
  const std::string wrong_variant =
      R"({"schemaVersion": 1, "torchBuilds": [)"
      R"({"cudaVariant": "cu128", "cuda": "12.4", "torchSince": "2.4", "archList": "8.0", "source": "s"}]})";
  auto mismatch =
      load_compat_db({CompatDbFile{"a.json", kValidMatrix}, CompatDbFile{"b.json", wrong_variant}});
  ASSERT_FALSE(mismatch);
  EXPECT_EQ(mismatch.error().str(),
            "b.json: torchBuilds[0].cudaVariant: expected \"cu124\" for CUDA 12.4, got \"cu128\"");
}

}  // namespace
}  // namespace cudagate

// The matrix written back as JSON: the embedded matrix round-trips, keeps the input files'
// shape, and an edited copy is validated like any other file.
#include "compat-db/compat_db_json.h"

#include <gtest/gtest.h>

#include <string>

namespace cudagate {
namespace {

Expected<CompatDb> load_one(const std::string& name, const std::string& text) {
  return load_compat_db({CompatDbFile{name, text}});
}

TEST(CompatDbJson, RoundTripsTheEmbeddedMatrix) {
  auto embedded = load_compat_db(embedded_compat_db_files());
  ASSERT_TRUE(embedded) << embedded.error().str();
  const std::string first = compat_db_to_json(*embedded).dump();
  auto again = load_one("x.json", first);
  ASSERT_TRUE(again) << again.error().str();
  EXPECT_EQ(compat_db_to_json(*again).dump(), first);
  EXPECT_EQ(again->products.size(), embedded->products.size());
  EXPECT_EQ(again->tegra.size(), embedded->tegra.size());
  ASSERT_EQ(again->architectures.size(), embedded->architectures.size());
  for (std::size_t i = 0; i < again->architectures.size(); ++i) {
    EXPECT_EQ(again->architectures[i].cuda_since, embedded->architectures[i].cuda_since);
    EXPECT_EQ(again->architectures[i].cuda_before, embedded->architectures[i].cuda_before);
  }
  ASSERT_EQ(again->cuda_targets.size(), embedded->cuda_targets.size());
  for (std::size_t i = 0; i < again->cuda_targets.size(); ++i) {
    EXPECT_EQ(again->cuda_targets[i].arch_specific, embedded->cuda_targets[i].arch_specific);
    EXPECT_EQ(again->cuda_targets[i].family_specific, embedded->cuda_targets[i].family_specific);
  }
  EXPECT_EQ(again->ngc_releases.size(), embedded->ngc_releases.size());
  EXPECT_EQ(again->instance_types.size(), embedded->instance_types.size());
  EXPECT_EQ(again->instance_gpu_labels.size(), embedded->instance_gpu_labels.size());
}

TEST(CompatDbJson, KeepsTheInputShape) {
  auto db = load_compat_db(embedded_compat_db_files());
  ASSERT_TRUE(db) << db.error().str();
  const auto json = compat_db_to_json(*db);
  EXPECT_EQ(json.begin().key(), "schemaVersion");
  EXPECT_EQ(json["schemaVersion"], 1);
  for (const char* section :
       {"cudaReleases", "minorVersionCompat", "driverBranches", "cudaTargets", "products",
        "cloudAccelerators", "architectures", "tegraCapabilities", "cudaImages", "ngcReleases",
        "imageRules", "lastDriverBranches", "torchBuilds", "instanceTypes", "instanceGpuLabels"}) {
    ASSERT_TRUE(json.contains(section)) << section;
    EXPECT_FALSE(json[section].empty()) << section;
  }
  EXPECT_EQ(json["asOf"], db->as_of);
  EXPECT_EQ(json.size(), 17u);
}

TEST(CompatDbJson, AnEditedCopyIsValidatedLikeAnyFile) {
  auto db = load_compat_db(embedded_compat_db_files());
  ASSERT_TRUE(db) << db.error().str();
  auto json = compat_db_to_json(*db);
  json["products"][1]["computeCapability"] = "eight";
  auto broken = load_one("broken.json", json.dump());
  ASSERT_FALSE(broken);
  const std::string error = broken.error().str();
  EXPECT_NE(error.find("broken.json"), std::string::npos) << error;
  EXPECT_NE(error.find("products[1]"), std::string::npos) << error;
  EXPECT_NE(error.find("computeCapability"), std::string::npos) << error;
}

}  // namespace
}  // namespace cudagate

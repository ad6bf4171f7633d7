// Loading the compatibility matrix: the embedded files load with every section, sorted; a
// small matrix loads, merged from several files, with a revision that follows the content and
// the newest date any file gives; and what is wrong with a file as a whole (its JSON, its
// schema version, a section unknown, missing or given twice) is refused naming the file and
// the place. A section's own fields are tested in compat_db_sections_test.cpp, the checks
// across entries in compat_db_checks_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "compat-db/compat_db.h"
#include "tests/support/compat_db_files.h"
#include "tests/support/embedded_compat_db.h"

namespace cudagate {
namespace {

using test_support::BadMatrixRow;
using test_support::capability_strs;
using test_support::kInstanceTables;
using test_support::kValidMatrix;
using test_support::load_test_json;
using test_support::product_names;
using test_support::replaced;
using test_support::with_l4;

// --- The embedded matrix ----------------------------------------------------

TEST(EmbeddedCompatDb, LoadsWithEverySectionFilled) {
  auto loaded = load_compat_db(embedded_compat_db_files());
  ASSERT_TRUE(loaded) << loaded.error().str();
  EXPECT_FALSE(loaded->cuda_releases.empty());
  EXPECT_FALSE(loaded->minor_version_compat.empty());
  EXPECT_FALSE(loaded->driver_branches.empty());
  EXPECT_FALSE(loaded->cuda_targets.empty());
  EXPECT_FALSE(loaded->products.empty());
  EXPECT_FALSE(loaded->cloud_accelerators.empty());
  EXPECT_FALSE(loaded->architectures.empty());
  EXPECT_FALSE(loaded->tegra.empty());
  EXPECT_FALSE(loaded->cuda_images.empty());
  EXPECT_FALSE(loaded->ngc_releases.empty());
  EXPECT_FALSE(loaded->image_rules.empty());
  EXPECT_EQ(loaded->revision.size(), 16U);
  EXPECT_EQ(loaded->revision.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(EmbeddedCompatDb, EveryEntryNamesItsSource) {
  const CompatDb& db = test_support::db();
  const auto sourced = [](const auto& entries) {
    return std::all_of(entries.begin(), entries.end(),
                       [](const auto& e) { return !e.source.empty(); });
  };
  EXPECT_TRUE(sourced(db.cuda_releases));
  EXPECT_TRUE(sourced(db.minor_version_compat));
  EXPECT_TRUE(sourced(db.driver_branches));
  EXPECT_TRUE(sourced(db.cuda_targets));
  EXPECT_TRUE(sourced(db.products));
  EXPECT_TRUE(sourced(db.cloud_accelerators));
  EXPECT_TRUE(sourced(db.architectures));
  EXPECT_TRUE(sourced(db.tegra));
  EXPECT_TRUE(sourced(db.cuda_images));
  EXPECT_TRUE(sourced(db.ngc_releases));
  EXPECT_TRUE(sourced(db.image_rules));
}

TEST(EmbeddedCompatDb, SortedAsDocumented) {
  const CompatDb& db = test_support::db();
  EXPECT_TRUE(std::is_sorted(db.cuda_releases.begin(), db.cuda_releases.end(),
                             [](const CudaRelease& a, const CudaRelease& b) {
                               return a.cuda < b.cuda ||
                                      (a.cuda == b.cuda && a.cuda.update() < b.cuda.update());
                             }));
  EXPECT_TRUE(std::is_sorted(
      db.driver_branches.begin(), db.driver_branches.end(),
      [](const DriverBranch& a, const DriverBranch& b) { return a.branch < b.branch; }));
  EXPECT_TRUE(
      std::is_sorted(db.cuda_targets.begin(), db.cuda_targets.end(),
                     [](const CudaTargets& a, const CudaTargets& b) { return a.since < b.since; }));
}

// --- A small matrix, in one file or several ---------------------------------

TEST(LoadCompatDb, SmallMatrixLoadsSorted) {
  auto db = load_test_json(std::string(kValidMatrix));
  ASSERT_TRUE(db) << db.error().str();
  ASSERT_EQ(db->cuda_releases.size(), 2U);
  EXPECT_EQ(db->cuda_releases[0].version, "12.4");  // GA before its update
  EXPECT_EQ(db->cuda_releases[0].label, "12.4 GA");
  EXPECT_EQ(db->cuda_releases[1].cuda.str(), "12.4");
  ASSERT_EQ(db->driver_branches.size(), 2U);
  EXPECT_EQ(db->driver_branches[0].branch, 535);
  EXPECT_EQ(db->driver_branches[0].designation, "LTSB");
  EXPECT_EQ(db->driver_branches[1].designation, "");
  EXPECT_EQ(db->products[0].gfd_prefixes.size(), 0U);
  EXPECT_TRUE(db->products[0].datacenter);
  EXPECT_EQ(db->ngc_releases[0].min_driver->str(), "545.0");  // a bare branch
  EXPECT_EQ(db->min_driver_for(CudaVersion(12, 4))->str(), "550.54.14");
  EXPECT_EQ(capability_strs(db->cuda_targets[0].arch_specific), (std::vector<std::string>{"9.0"}));
  EXPECT_TRUE(db->cuda_targets[0].family_specific.empty());
  EXPECT_EQ(db->architecture("Hopper", CudaVersion(11, 8))->arch_list, "9.0");
  EXPECT_EQ(db->architecture("Hopper", CudaVersion(12, 4))->arch_list, "9.0+PTX");
  EXPECT_EQ(db->architecture("Hopper")->arch_list, "9.0+PTX");
  EXPECT_TRUE(db->is_tegra(ComputeCapability(8, 7)));
}

TEST(LoadCompatDb, RevisionFollowsContent) {
  auto a = load_test_json(std::string(kValidMatrix));
  auto b = load_test_json(std::string(kValidMatrix));
  auto c = load_test_json(replaced("\"source\": \"s\"}]}", "\"source\": \"t\"}]}"));
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->revision, b->revision);
  EXPECT_NE(a->revision, c->revision);
}

TEST(LoadCompatDb, SectionsMergeAcrossFiles) {
  const std::string text(kValidMatrix);
  // Move imageRules into a second file.
  const auto at = text.find(",\n\"imageRules\"");
  const std::string first = text.substr(0, at) + "}";
  const std::string second = "{\"schemaVersion\": 1" + text.substr(at);
  auto db = load_compat_db({{"a.json", first}, {"b.json", second}});
  ASSERT_TRUE(db) << db.error().str();
  EXPECT_EQ(db->image_rules.size(), 1U);
}

TEST(LoadCompatDb, RefusesBadInputNamingThePlace) {
  const std::vector<BadMatrixRow> rows = {
      {"json syntax", replaced("\"cudaMajor\": 12,", "\"cudaMajor\": 12,,"),
       "test.json:3:41: invalid JSON: syntax error while parsing object key - unexpected ','; "
       "expected string literal"},
      {"json cut short", std::string(kValidMatrix.substr(0, 30)),
       "test.json:2:10: invalid JSON: syntax error while parsing object key - invalid string: "
       "missing closing quote; last read: '\"cudaRele'; expected string literal"},
      {"not an object", "[1, 2]",
       "test.json: expected a JSON object {\"schemaVersion\": 1, <sections>}, got an array"},
      {"duplicate key",
       replaced("\"label\": \"12.4 GA\"", "\"label\": \"12.4 GA\", \"label\": \"x\""),
       "test.json: the key \"label\" appears twice in one object; each key may appear once"},
      {"too deep", std::string(40, '[') + std::string(40, ']'),
       "test.json:1:33: nested deeper than 32 levels"},
      {"schema version missing", replaced("\"schemaVersion\": 1,", ""),
       "test.json: schemaVersion: required field is missing"},
      {"schema version", replaced("\"schemaVersion\": 1", "\"schemaVersion\": 2"),
       "test.json: schemaVersion: expected schema version 1, got 2"},
      {"schema version type", replaced("\"schemaVersion\": 1", "\"schemaVersion\": \"1\""),
       "test.json: schemaVersion: expected schema version 1, got the string \"1\""},
      {"missing section",
       replaced(",\n\"imageRules\": [{\"repositories\": [\"*\"], \"kind\": "
                "\"cuda-tag\", \"source\": \"s\"}]",
                ""),
       "test.json: missing section \"imageRules\"; every compat-db section must be given by one "
       "of the files"},
      {"unknown section", replaced("\"imageRules\"", "\"imageRule\""),
       "test.json: imageRule: unknown section (expected asOf or one of: cudaReleases, "
       "minorVersionCompat, driverBranches, cudaTargets, lastDriverBranches, products, "
       "cloudAccelerators, architectures, tegraCapabilities, cudaImages, ngcReleases, "
       "imageRules, torchBuilds, instanceTypes, instanceGpuLabels)"},
      {"date", replaced("\"schemaVersion\": 1", "\"schemaVersion\": 1, \"asOf\": \"2026-13-01\""),
       "test.json: asOf: expected the date the data was checked, like 2026-12-04, got the string "
       "\"2026-13-01\""},
  };
  for (const BadMatrixRow& row : rows) {
    auto db = load_test_json(row.text);
    ASSERT_FALSE(db) << row.name;
    EXPECT_EQ(db.error().str(), row.error) << row.name;
  }
}

TEST(LoadCompatDb, RefusesASectionGivenTwice) {
  auto db = load_compat_db({{"a.json", std::string(kValidMatrix)},
                            {"b.json", "{\"schemaVersion\": 1, \"products\": []}"}});
  ASSERT_FALSE(db);
  EXPECT_EQ(db.error().str(),
            "b.json: products: section already given in a.json; a section may appear in one file "
            "only");
}

TEST(LoadCompatDb, RefusesNoFiles) {
  auto db = load_compat_db({});
  ASSERT_FALSE(db);
  EXPECT_EQ(db.error().str(), "no compat-db files given");
}

TEST(LoadCompatDb, NamesEveryFileWhenASectionIsMissing) {
  auto db =
      load_compat_db({{"a.json", "{\"schemaVersion\": 1}"}, {"b.json", "{\"schemaVersion\": 1}"}});
  ASSERT_FALSE(db);
  EXPECT_EQ(db.error().str(),
            "a.json, b.json: missing section \"cudaReleases\"; every compat-db section must be "
            "given by one of the files");
}

TEST(LoadCompatDb, InstanceTablesLoadAndLookUp) {
  auto db = load_compat_db({{"a.json", with_l4()}, {"b.json", std::string(kInstanceTables)}});
  ASSERT_TRUE(db) << db.error().str();
  ASSERT_EQ(db->instance_types.size(), 2U);
  ASSERT_NE(db->instance_type("g2-standard-96"), nullptr);
  EXPECT_EQ(db->instance_type("g2-standard-96")->gpus, 8);
  EXPECT_EQ(db->instance_type("g2-standard-96")->provider, "gcp");
  EXPECT_EQ(db->instance_type("G4DN.XLARGE"), nullptr);
  // Every product a value may name, each once, in the entry's order.
  EXPECT_EQ(product_names(db->products_by_instance_label("example.com/gpu", "any")),
            (std::vector<std::string>{"T4", "L4"}));
  EXPECT_EQ(product_names(db->products_by_instance_label("example.com/gpu", "t4")),
            (std::vector<std::string>{"T4"}));
  EXPECT_TRUE(db->products_by_instance_label("example.com/gpu", "T4").empty());
  EXPECT_TRUE(db->products_by_instance_label("example.com/other", "t4").empty());

  // Without the sections the matrix loads with empty tables.
  auto without = load_compat_db({{"a.json", with_l4()}});
  ASSERT_TRUE(without) << without.error().str();
  EXPECT_TRUE(without->instance_types.empty());
  EXPECT_EQ(without->instance_type("g4dn.xlarge"), nullptr);
  EXPECT_TRUE(without->products_by_instance_label("example.com/gpu", "t4").empty());
}

// lastDriverBranches and torchBuilds may be left out of a matrix; asOf is
// the newest date any file gives.
TEST(LoadCompatDb, OptionalSectionsAndDate) {
  auto without = load_test_json(std::string(kValidMatrix));
  ASSERT_TRUE(without) << without.error().str();
  EXPECT_TRUE(without->last_driver_branches.empty());
  EXPECT_TRUE(without->torch_builds.empty());
  EXPECT_EQ(without->as_of, "");
  EXPECT_EQ(without->describe(),
            "the compatibility matrix (revision " + without->revision + ", undated)");

  const std::string extra =
      R"({"schemaVersion": 1, "asOf": "2026-11-30", "lastDriverBranches": [{"family": "volta", )"
      R"("computeCapabilities": ["7.0"], "lastBranch": 580, "source": "s"}], "torchBuilds": [)"
      R"({"cudaVariant": "cu124", "cuda": "12.4", "torchSince": "2.4", "torchBefore": "2.6", )"
      R"("archList": "8.0;9.0", "source": "s"}]})";
  const std::string dated =
      replaced("\"schemaVersion\": 1", "\"schemaVersion\": 1, \"asOf\": \"2026-12-01\"");
  auto with = load_compat_db({CompatDbFile{"a.json", dated}, CompatDbFile{"b.json", extra}});
  ASSERT_TRUE(with) << with.error().str();
  EXPECT_EQ(with->as_of, "2026-12-01");
  ASSERT_NE(with->last_driver_branch(ComputeCapability(7, 0)), nullptr);
  EXPECT_EQ(with->last_driver_branch(ComputeCapability(7, 0))->last_branch, 580);
  ASSERT_NE(with->torch_build(CudaVersion(2, 5), CudaVersion(12, 4)), nullptr);
  EXPECT_EQ(with->torch_build(CudaVersion(2, 6), CudaVersion(12, 4)), nullptr);
}

}  // namespace
}  // namespace cudagate

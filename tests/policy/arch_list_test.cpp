// Arch lists: the PyTorch and CMake forms accepted or refused naming the entry, named
// generations expanded through the matrix, and whether the code runs on a given GPU.
#include "policy/arch_list.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "compat-db/compat_db.h"

namespace cudagate {
namespace {

std::vector<ComputeCapability> ccs(std::initializer_list<const char*> texts) {
  std::vector<ComputeCapability> out;
  for (const char* t : texts) out.push_back(*ComputeCapability::parse(t));
  return out;
}

// A matrix with just what the arch parsers read, written here so that these
// tests do not move when the shipped data does.
CompatDb test_db() {
  CompatDb db;
  db.architectures = {
      {"Kepler+Tesla", "3.7", "test"},   {"Kepler", "3.5+PTX", "test"},
      {"Turing", "7.5+PTX", "test"},     {"Ampere+Tegra", "8.7", "test"},
      {"Ampere", "8.0;8.6+PTX", "test"}, {"Ada", "8.9+PTX", "test"},
      {"Hopper", "9.0+PTX", "test"},     {"Blackwell", "10.0;12.0+PTX", "test"},
      {"Broken", "8.0;8.x", "test"},     {"Hollow", " ; ", "test"},
  };
  db.cuda_targets = {
      {CudaVersion(11, 8),
       ccs({"3.5", "3.7", "5.0", "5.2", "5.3", "6.0", "6.1", "6.2", "7.0", "7.2", "7.5", "8.0",
            "8.6", "8.7", "8.9", "9.0"}),
       ccs({"3.5", "5.0", "6.0", "7.0", "8.0", "9.0"}), "test"},
      {CudaVersion(12, 0),
       ccs({"5.0", "5.2", "5.3", "6.0", "6.1", "6.2", "7.0", "7.2", "7.5", "8.0", "8.6", "8.7",
            "8.9", "9.0"}),
       ccs({"5.0", "6.0", "7.0", "8.0", "9.0"}), "test"},
      {CudaVersion(12, 8),
       ccs({"5.0", "5.2", "5.3", "6.0", "6.1", "6.2", "7.0", "7.2", "7.5", "8.0", "8.6", "8.7",
            "8.9", "9.0", "10.0", "10.1", "12.0"}),
       ccs({"5.0", "6.0", "7.0", "8.0", "9.0", "10.0", "12.0"}), "test"},
      {CudaVersion(12, 9), {}, {}, "test"},
  };
  return db;
}

const std::string kTorchExpected = "expected X.Y, X.Y+PTX, X.Ya or a name such as Ampere";
const std::string kCmakeExpected =
    "expected a number such as 80 or 90a, optionally with -real or -virtual, or all or all-major";

TEST(ParseTorchArchList, AcceptsPyTorchForms) {
  struct Row {
    std::string text;
    std::string canonical;
  };
  const std::vector<Row> rows = {
      {"8.0", "8.0"},
      {"7.5;8.0;8.6;9.0", "7.5;8.0;8.6;9.0"},
      // vllm/vllm-openai:v0.23.0
      {"7.5 8.0 8.6 8.9 9.0 10.0 12.0+PTX", "7.5;8.0;8.6;8.9;9.0;10.0;12.0+PTX"},
      // lmcache/vllm-openai
      {"10.0+PTX 12.0+PTX", "10.0+PTX;12.0+PTX"},
      {"9.0 8.0 7.5", "7.5;8.0;9.0"},
      {";;8.0;; 9.0  ;", "8.0;9.0"},
      {"8.0\n", "8.0"},
      {"8.0;\t8.6", "8.0;8.6"},
      {"Ampere", "8.0;8.6+PTX"},
      {"ampere", "8.0;8.6+PTX"},
      {"AMPERE", "8.0;8.6+PTX"},
      {"Kepler+Tesla", "3.7"},
      {"kepler+tesla;Kepler", "3.5+PTX;3.7"},
      {"Ampere+Tegra", "8.7"},
      {"Ampere;Hopper", "8.0;8.6+PTX;9.0+PTX"},
      {"Ampere 8.6", "8.0;8.6+PTX"},
      {"Turing Blackwell", "7.5+PTX;10.0;12.0+PTX"},
      {"9.0a", "9.0a"},
      {"9.0a+PTX", "9.0a+PTX"},
      {"9.0;9.0a", "9.0;9.0a"},
      {"9.0a;9.0", "9.0;9.0a"},
      {"10.0f", "10.0f"},
      {"10.0a;10.0f;10.0", "10.0;10.0a;10.0f"},
      {"12.1a+PTX", "12.1a+PTX"},
      {"8.0 8.0+PTX", "8.0+PTX"},
      {"8.0 8.0", "8.0"},
      {"8.0(PTX)", "8.0(PTX)"},
      {"8.0(PTX) 8.0", "8.0+PTX"},
      {"9.0a(PTX)", "9.0a(PTX)"},
      {"8.0+ptx", "8.0+PTX"},
      {"100.0", "100.0"},
  };
  const CompatDb db = test_db();
  for (const Row& row : rows) {
    SCOPED_TRACE(row.text);
    auto set = parse_torch_arch_list(row.text, db);
    ASSERT_TRUE(set) << set.error().str();
    EXPECT_EQ(set->str(), row.canonical);
    auto again = parse_torch_arch_list(set->str(), db);
    ASSERT_TRUE(again) << again.error().str();
    EXPECT_EQ(*again, *set);
  }
}

TEST(ParseTorchArchList, KeepsSassAndPtxFlagsPerTarget) {
  auto set = parse_torch_arch_list("9.0a 8.0(PTX) 8.6+PTX 7.5", test_db());
  ASSERT_TRUE(set) << set.error().str();
  const std::vector<ArchTarget> want = {
      {ComputeCapability(7, 5), ArchVariant::portable, true, false},
      {ComputeCapability(8, 0), ArchVariant::portable, false, true},
      {ComputeCapability(8, 6), ArchVariant::portable, true, true},
      {ComputeCapability(9, 0), ArchVariant::arch_specific, true, false},
  };
  EXPECT_EQ(set->targets(), want);
  EXPECT_EQ(set->oldest(), ComputeCapability(7, 5));
}

TEST(ParseTorchArchList, RejectsMalformedEntriesNamingThem) {
  struct Row {
    std::string text;
    std::string message;
  };
  const auto unknown = [](const std::string& entry) {
    return "unknown CUDA arch \"" + entry + "\" in TORCH_CUDA_ARCH_LIST: " + kTorchExpected;
  };
  const std::string empty =
      "empty TORCH_CUDA_ARCH_LIST: " + kTorchExpected + ", separated by ';' or spaces";
  const std::vector<Row> rows = {
      {"", empty},
      {" ; ;\t", empty},
      {"8.x", unknown("8.x")},
      {"7.5;8.x;9.0", unknown("8.x")},
      {"8", unknown("8")},
      {"80", unknown("80")},
      {"sm_80", unknown("sm_80")},
      {"8.0+PTX+PTX", unknown("8.0+PTX+PTX")},
      {"8.10", unknown("8.10")},
      {"08.0", unknown("08.0")},
      {"1000.0", unknown("1000.0")},
      {"8.0b", unknown("8.0b")},
      {"8.0af", unknown("8.0af")},
      {"8.0+PTXa", unknown("8.0+PTXa")},
      {"+PTX", unknown("+PTX")},
      {"8.0,8.6", unknown("8.0,8.6")},
      {".0", unknown(".0")},
      {"Amper", unknown("Amper")},
      {"Ampere+PTX", unknown("Ampere+PTX")},
      {"Kepler+", unknown("Kepler+")},
      {"8.0 Volta", unknown("Volta")},
      {"8.0\x01", unknown("8.0\\x01")},
      {"Broken",
       "named CUDA arch \"Broken\" expands to \"8.0;8.x\" in compat-db, whose entry \"8.x\" is "
       "not X.Y, X.Y+PTX or X.Ya"},
      {"Hollow", "named CUDA arch \"Hollow\" has an empty arch list in compat-db"},
  };
  const CompatDb db = test_db();
  for (const Row& row : rows) {
    SCOPED_TRACE(row.text);
    auto set = parse_torch_arch_list(row.text, db);
    ASSERT_FALSE(set) << set->str();
    EXPECT_EQ(set.error().message, row.message);
  }
}

TEST(ParseTorchArchList, NamesNeedTheMatrix) {
  auto set = parse_torch_arch_list("Ampere", CompatDb{});
  ASSERT_FALSE(set);
  EXPECT_EQ(set.error().message,
            "unknown CUDA arch \"Ampere\" in TORCH_CUDA_ARCH_LIST: " + kTorchExpected);
}

TEST(ParseCmakeArchList, AcceptsCmakeForms) {
  struct Row {
    std::string text;
    std::optional<CudaVersion> cuda;
    std::string canonical;
  };
  const std::vector<Row> rows = {
      {"80", std::nullopt, "8.0+PTX"},
      {"80-real", std::nullopt, "8.0"},
      {"80-virtual", std::nullopt, "8.0(PTX)"},
      {"90a", std::nullopt, "9.0a+PTX"},
      {"90a-real", std::nullopt, "9.0a"},
      {"100f-virtual", std::nullopt, "10.0f(PTX)"},
      {"100", std::nullopt, "10.0+PTX"},
      {"121-real", std::nullopt, "12.1"},
      {"75;80-real;86-real", std::nullopt, "7.5+PTX;8.0;8.6"},
      {"70 75-real", std::nullopt, "7.0+PTX;7.5"},
      {";80-real;;", std::nullopt, "8.0"},
      {"80-real;80-virtual", std::nullopt, "8.0+PTX"},
      {"80;80-real", std::nullopt, "8.0+PTX"},
      {"1000-real", std::nullopt, "100.0"},
      {"10", std::nullopt, "1.0+PTX"},
      {"all", CudaVersion(12, 4), "5.0;5.2;5.3;6.0;6.1;6.2;7.0;7.2;7.5;8.0;8.6;8.7;8.9;9.0+PTX"},
      {"all-major", CudaVersion(12, 4), "5.0;6.0;7.0;8.0;9.0+PTX"},
      {"all-major", CudaVersion(12, 0), "5.0;6.0;7.0;8.0;9.0+PTX"},
      {"all-major", CudaVersion(11, 8), "3.5;5.0;6.0;7.0;8.0;9.0+PTX"},
      {"all", CudaVersion(12, 8),
       "5.0;5.2;5.3;6.0;6.1;6.2;7.0;7.2;7.5;8.0;8.6;8.7;8.9;9.0;10.0;10.1;12.0+PTX"},
      {"all-major", CudaVersion(12, 8), "5.0;6.0;7.0;8.0;9.0;10.0;12.0+PTX"},
      {"all-major;90a-real", CudaVersion(12, 4), "5.0;6.0;7.0;8.0;9.0+PTX;9.0a"},
  };
  const CompatDb db = test_db();
  for (const Row& row : rows) {
    SCOPED_TRACE(row.text);
    auto set = parse_cmake_arch_list(row.text, db, row.cuda);
    ASSERT_TRUE(set) << set.error().str();
    EXPECT_EQ(set->str(), row.canonical);
    auto again = parse_torch_arch_list(set->str(), db);
    ASSERT_TRUE(again) << again.error().str();
    EXPECT_EQ(*again, *set);
  }
}

TEST(ParseCmakeArchList, RejectsWhatNamesNoImageCode) {
  struct Row {
    std::string text;
    std::optional<CudaVersion> cuda;
    std::string message;
  };
  const auto unknown = [](const std::string& entry) {
    return "unknown CUDA architecture \"" + entry + "\" in CUDA_ARCHITECTURES: " + kCmakeExpected;
  };
  const std::string native =
      "\"native\" in CUDA_ARCHITECTURES names the GPUs of the host that built the image, which "
      "the image does not record: declare the architectures with the cudagate.io/arch-list "
      "annotation instead";
  const std::string empty = "empty CUDA_ARCHITECTURES: " + kCmakeExpected + ", separated by ';'";
  const std::vector<Row> rows = {
      {"", std::nullopt, empty},
      {" ;; ", std::nullopt, empty},
      {"native", CudaVersion(12, 4), native},
      {"80;native", CudaVersion(12, 4), native},
      {"OFF", std::nullopt,
       "CUDA_ARCHITECTURES is \"OFF\", which builds no GPU code: " + kCmakeExpected},
      {"off", std::nullopt,
       "CUDA_ARCHITECTURES is \"off\", which builds no GPU code: " + kCmakeExpected},
      {"all", std::nullopt,
       "\"all\" in CUDA_ARCHITECTURES depends on the CUDA release the image was built with, "
       "which is unknown: declare the CUDA version (cudagate.io/cuda-version) or the "
       "architectures (cudagate.io/arch-list)"},
      {"all-major", std::nullopt,
       "\"all-major\" in CUDA_ARCHITECTURES depends on the CUDA release the image was built "
       "with, which is unknown: declare the CUDA version (cudagate.io/cuda-version) or the "
       "architectures (cudagate.io/arch-list)"},
      {"all", CudaVersion(11, 0),
       "\"all\" in CUDA_ARCHITECTURES: compat-db does not know what CUDA 11.0 can compile for; "
       "declare the architectures (cudagate.io/arch-list)"},
      {"all", CudaVersion(12, 9),
       "\"all\" in CUDA_ARCHITECTURES: compat-db does not know what CUDA 12.9 can compile for; "
       "declare the architectures (cudagate.io/arch-list)"},
      {"ALL", CudaVersion(12, 4), unknown("ALL")},
      {"8", std::nullopt, unknown("8")},
      {"08", std::nullopt, unknown("08")},
      {"12345", std::nullopt, unknown("12345")},
      {"8.0", std::nullopt, unknown("8.0")},
      {"sm_80", std::nullopt, unknown("sm_80")},
      {"compute_80", std::nullopt, unknown("compute_80")},
      {"80-REAL", std::nullopt, unknown("80-REAL")},
      {"80-realx", std::nullopt, unknown("80-realx")},
      {"80-real-real", std::nullopt, unknown("80-real-real")},
      {"80-real-virtual", std::nullopt, unknown("80-real-virtual")},
      {"90af", std::nullopt, unknown("90af")},
      {"-real", std::nullopt, unknown("-real")},
      {"80,86", std::nullopt, unknown("80,86")},
      {"Ampere", std::nullopt, unknown("Ampere")},
  };
  const CompatDb db = test_db();
  for (const Row& row : rows) {
    SCOPED_TRACE(row.text);
    auto set = parse_cmake_arch_list(row.text, db, row.cuda);
    ASSERT_FALSE(set) << set->str();
    EXPECT_EQ(set.error().message, row.message);
  }
}

TEST(ArchSet, RunsOnFollowsBinaryCompatibilityRules) {
  struct Row {
    std::string list;
    std::string cc;
    bool cuda_rules;
    bool exact;
  };
  const std::vector<Row> rows = {
      // Seed scenarios: an A100-only build does not run on a T4; a broad list
      // runs on T4, A100, A10G and H100.
      {"8.0", "7.5", false, false},
      {"7.5;8.0;8.6;9.0", "7.5", true, true},
      {"7.5;8.0;8.6;9.0", "8.0", true, true},
      {"7.5;8.0;8.6;9.0", "8.6", true, true},
      {"7.5;8.0;8.6;9.0", "9.0", true, true},
      {"7.5;8.0;8.6;9.0", "10.0", false, false},
      {"7.5;8.0;8.6;9.0", "8.9", true, false},
      // SASS runs on later minors of its major only.
      {"8.0", "8.6", true, false},
      {"8.0", "8.9", true, false},
      {"8.6", "8.0", false, false},
      {"8.0", "9.0", false, false},
      {"10.0", "12.0", false, false},
      {"12.0", "12.1", true, false},
      // PTX is JIT-compiled for any newer capability, exact or not.
      {"8.0+PTX", "9.0", true, true},
      {"8.0+PTX", "12.1", true, true},
      {"8.0+PTX", "7.5", false, false},
      {"8.0(PTX)", "8.0", true, true},
      {"8.0(PTX)", "8.6", true, true},
      {"8.0(PTX)", "7.5", false, false},
      {"12.0+PTX", "12.1", true, true},
      // Architecture-specific code runs on exactly its capability.
      {"9.0a", "9.0", true, true},
      {"9.0a", "10.0", false, false},
      {"9.0a+PTX", "10.0", false, false},
      {"9.0a(PTX)", "9.0", true, true},
      {"9.0a(PTX)", "9.1", false, false},
      {"10.0a", "10.3", false, false},
      // Family code runs on the family members at or above it.
      {"10.0f", "10.0", true, true},
      {"10.0f", "10.3", true, false},
      {"10.0f", "11.0", false, false},
      {"10.0f", "12.0", false, false},
      {"10.3f", "10.0", false, false},
      {"10.0f(PTX)", "10.3", true, true},
      {"10.0f(PTX)", "12.0", false, false},
      {"10.0f+PTX", "9.0", false, false},
  };
  const CompatDb db = test_db();
  for (const Row& row : rows) {
    SCOPED_TRACE(row.list + " on " + row.cc);
    auto set = parse_torch_arch_list(row.list, db);
    ASSERT_TRUE(set) << set.error().str();
    const ComputeCapability cc = *ComputeCapability::parse(row.cc);
    EXPECT_EQ(set->runs_on(cc, ArchMatch::cuda), row.cuda_rules);
    EXPECT_EQ(set->runs_on(cc, ArchMatch::exact), row.exact);
  }
}

TEST(ArchSet, ConstructorSortsMergesAndDropsEmptyTargets) {
  const ArchSet set({
      {ComputeCapability(9, 0), ArchVariant::arch_specific, true, false},
      {ComputeCapability(8, 0), ArchVariant::portable, false, true},
      {ComputeCapability(9, 0), ArchVariant::portable, true, false},
      {ComputeCapability(8, 0), ArchVariant::portable, true, false},
      {ComputeCapability(7, 0), ArchVariant::portable, false, false},
  });
  EXPECT_EQ(set.str(), "8.0+PTX;9.0;9.0a");
  EXPECT_EQ(set.targets().size(), 3U);
  EXPECT_EQ(set.oldest(), ComputeCapability(8, 0));
  EXPECT_FALSE(set.runs_on(ComputeCapability(7, 0), ArchMatch::cuda));
}

TEST(ArchSet, EmptySetRunsNowhere) {
  const ArchSet set;
  EXPECT_TRUE(set.empty());
  EXPECT_EQ(set.str(), "");
  EXPECT_EQ(set.oldest(), std::nullopt);
  EXPECT_FALSE(set.runs_on(ComputeCapability(8, 0), ArchMatch::cuda));
  EXPECT_TRUE(ArchSet(std::vector<ArchTarget>{
                          {ComputeCapability(8, 0), ArchVariant::portable, false, false}})
                  .empty());
}

// The contract with the shipped matrix: every named generation and every
// release's "all"/"all-major" must expand through these parsers.
TEST(ArchListWithShippedMatrix, EveryNamedGenerationAndReleaseExpands) {
  auto db = load_compat_db(embedded_compat_db_files());
  ASSERT_TRUE(db) << db.error().str();
  EXPECT_FALSE(db->architectures.empty());
  for (const NamedArchitecture& a : db->architectures) {
    SCOPED_TRACE(a.name);
    auto set = parse_torch_arch_list(a.name, *db);
    ASSERT_TRUE(set) << set.error().str();
    EXPECT_EQ(*set, *parse_torch_arch_list(a.arch_list, *db));
  }
  for (const CudaTargets& t : db->cuda_targets) {
    SCOPED_TRACE(t.since.str());
    for (const char* special : {"all", "all-major"}) {
      auto set = parse_cmake_arch_list(special, *db, t.since);
      ASSERT_TRUE(set) << set.error().str();
      EXPECT_TRUE(set->targets().back().ptx);
    }
  }
}

}  // namespace
}  // namespace cudagate

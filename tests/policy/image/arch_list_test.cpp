// Arch lists: the PyTorch and CMake forms accepted or refused naming the entry, named
// generations expanded through the matrix, and whether the code runs on a given GPU.
#include "policy/image/arch_list.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compat-db/compat_db.h"
#include "tests/support/embedded_compat_db.h"

namespace cudagate {
namespace {

// Where an expectation comes from, for the rows below.
constexpr const char* kCppExtension = "torch/utils/cpp_extension.py _get_cuda_arch_flags";
constexpr const char* kSelectComputeArch =
    "cmake/Modules_CUDA_fix/upstream/FindCUDA/select_compute_arch.cmake "
    "CUDA_SELECT_NVCC_ARCH_FLAGS";
constexpr const char* kGuideBinary = "CUDA Programming Guide, Binary Compatibility";
constexpr const char* kCmakeDoc = "CMake CUDA_ARCHITECTURES";
constexpr const char* kNvccTargets = "compat-db cudaTargets (nvcc targets per release)";
constexpr const char* kCudagate = "cudagate's own spelling (ArchSet::str)";

std::vector<ComputeCapability> ccs(std::initializer_list<const char*> texts) {
  std::vector<ComputeCapability> out;
  for (const char* t : texts) out.push_back(*ComputeCapability::parse(t));
  return out;
}

// A matrix with just what the arch parsers read, written here so that these
// tests do not move when the shipped data does. Names in PyTorch's order
// (combined names first); Blackwell's two meanings as in compat-db.
CompatDb arch_names_db() {
  CompatDb db;
  db.architectures = {
      {"Kepler+Tesla", "3.7", "test"},
      {"Kepler", "3.5+PTX", "test"},
      {"Maxwell+Tegra", "5.3", "test"},
      {"Volta+Tegra", "7.2", "test"},
      {"Volta", "7.0+PTX", "test"},
      {"Turing", "7.5+PTX", "test"},
      {"Ampere+Tegra", "8.7", "test"},
      {"Ampere", "8.0;8.6+PTX", "test"},
      {"Ada", "8.9+PTX", "test"},
      {"Hopper", "9.0+PTX", "test"},
      {"Blackwell+Tegra", "10.1", "test", std::nullopt, CudaVersion(13, 0)},
      {"Blackwell+Tegra", "11.0", "test", CudaVersion(13, 0), std::nullopt},
      {"Blackwell", "10.0;12.0+PTX", "test", std::nullopt, CudaVersion(13, 0)},
      {"Blackwell", "10.0;10.3;12.0;12.1+PTX", "test", CudaVersion(13, 0), std::nullopt},
      {"Broken", "8.0;8.x", "test"},
      {"Hollow", " ; ", "test"},
  };
  db.cuda_targets = {
      {CudaVersion(11, 8),
       ccs({"3.5", "3.7", "5.0", "5.2", "5.3", "6.0", "6.1", "6.2", "7.0", "7.2", "7.5", "8.0",
            "8.6", "8.7", "8.9", "9.0"}),
       ccs({"3.5", "5.0", "6.0", "7.0", "8.0", "9.0"}), "test"},
      {CudaVersion(12, 0),
       ccs({"5.0", "5.2", "5.3", "6.0", "6.1", "6.2", "7.0", "7.2", "7.5", "8.0", "8.6", "8.7",
            "8.9", "9.0"}),
       ccs({"5.0", "6.0", "7.0", "8.0", "9.0"}), "test", ccs({"9.0"})},
      {CudaVersion(12, 8),
       ccs({"5.0", "5.2", "5.3", "6.0", "6.1", "6.2", "7.0", "7.2", "7.5", "8.0", "8.6", "8.7",
            "8.9", "9.0", "10.0", "10.1", "12.0"}),
       ccs({"5.0", "6.0", "7.0", "8.0", "9.0", "10.0", "12.0"}), "test",
       ccs({"9.0", "10.0", "10.1", "12.0"})},
      {CudaVersion(13, 0),
       ccs({"7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "10.3", "11.0", "12.0", "12.1"}),
       ccs({"8.0", "9.0", "10.0", "12.0"}), "test",
       ccs({"9.0", "10.0", "10.3", "11.0", "12.0", "12.1"}),
       ccs({"10.0", "10.3", "11.0", "12.0", "12.1"})},
      {CudaVersion(13, 5), {}, {}, "test"},
  };
  for (const char* cc : {"5.3", "6.2", "7.2", "8.7", "10.1", "11.0"}) {
    db.tegra.push_back({*ComputeCapability::parse(cc), "test", "test"});
  }
  return db;
}

const std::string kTorchExpected = "expected X.Y, X.Y+PTX, X.Ya or a name such as Ampere";
const std::string kCmakeExpected =
    "expected a number such as 80 or 90a, optionally with -real or -virtual, or all or all-major";

// --- TORCH_CUDA_ARCH_LIST ---------------------------------------------------

struct TorchAccept {
  std::string text;
  std::optional<CudaVersion> cuda;  // the image's CUDA release
  std::string canonical;            // ArchSet::str() of the cpp_extension reading
  const char* source;
};

const std::vector<TorchAccept>& torch_accepts() {
  static const std::vector<TorchAccept> rows = {
      {"8.0", std::nullopt, "8.0", kCppExtension},
      {"7.5;8.0;8.6;9.0", std::nullopt, "7.5;8.0;8.6;9.0", kCppExtension},
      // vllm/vllm-openai:v0.23.0; spaces become ';' in cpp_extension.
      {"7.5 8.0 8.6 8.9 9.0 10.0 12.0+PTX", std::nullopt, "7.5;8.0;8.6;8.9;9.0;10.0;12.0+PTX",
       kCppExtension},
      // lmcache/vllm-openai
      {"10.0+PTX 12.0+PTX", std::nullopt, "10.0+PTX;12.0+PTX", kCppExtension},
      {"9.0 8.0 7.5", std::nullopt, "7.5;8.0;9.0", kCppExtension},
      {"8.0;8.6", std::nullopt, "8.0;8.6", kCppExtension},
      {"Ampere", std::nullopt, "8.0;8.6+PTX", kCppExtension},
      {"Kepler+Tesla", std::nullopt, "3.7", kCppExtension},
      {"Kepler+Tesla;Kepler", std::nullopt, "3.5+PTX;3.7", kCppExtension},
      {"Ampere+Tegra", std::nullopt, "8.7", kCppExtension},
      {"Ampere;Hopper", std::nullopt, "8.0;8.6+PTX;9.0+PTX", kCppExtension},
      {"Ampere 8.6", std::nullopt, "8.0;8.6+PTX", kCppExtension},
      {"8.0;Ampere", std::nullopt, "8.0;8.6+PTX", kCppExtension},
      // A combined name replaced first leaves "+PTX" on its expansion.
      {"Kepler+Tesla+PTX", std::nullopt, "3.7+PTX", kCppExtension},
      {"Maxwell+Tegra+PTX", std::nullopt, "5.3+PTX", kCppExtension},
      {"Volta+Tegra+PTX", std::nullopt, "7.2+PTX", kCppExtension},
      {"Ampere+Tegra+PTX", std::nullopt, "8.7+PTX", kCppExtension},
      {"Blackwell+Tegra+PTX", CudaVersion(12, 8), "10.1+PTX", kCppExtension},
      {"Blackwell+Tegra+PTX", CudaVersion(13, 0), "11.0+PTX", kCppExtension},
      // Thor's renumbering: cpp_extension @0011ec5c for CUDA 12, after
      // pytorch PR #156176 for CUDA 13; the newest without a release.
      {"Blackwell+Tegra", CudaVersion(12, 9), "10.1", kCppExtension},
      {"Blackwell+Tegra", CudaVersion(13, 0), "11.0", kCppExtension},
      {"Blackwell+Tegra", std::nullopt, "11.0", kCppExtension},
      {"Blackwell", CudaVersion(12, 8), "10.0;12.0+PTX", kCppExtension},
      {"Blackwell", CudaVersion(13, 2), "10.0;10.3;12.0;12.1+PTX", kCppExtension},
      {"Turing Blackwell", CudaVersion(12, 8), "7.5+PTX;10.0;12.0+PTX", kCppExtension},
      {"9.0a", std::nullopt, "9.0a", kCppExtension},
      {"9.0a+PTX", std::nullopt, "9.0a+PTX", kCppExtension},
      {"9.0;9.0a", std::nullopt, "9.0;9.0a", kCppExtension},
      {"9.0a;9.0", std::nullopt, "9.0;9.0a", kCppExtension},
      {"12.1a+PTX", std::nullopt, "12.1a+PTX", kCppExtension},
      // f targets exist from CUDA 12.9 (nvcc); cpp_extension's own list lags.
      {"10.0f", std::nullopt, "10.0f", kNvccTargets},
      {"10.0a;10.0f;10.0", std::nullopt, "10.0;10.0a;10.0f", kNvccTargets},
      {"8.0 8.0+PTX", std::nullopt, "8.0+PTX", kCppExtension},
      {"8.0 8.0", std::nullopt, "8.0", kCppExtension},
      {"8.0(PTX)", std::nullopt, "8.0(PTX)", kCudagate},
      {"8.0(PTX) 8.0", std::nullopt, "8.0+PTX", kCudagate},
      {"9.0a(PTX)", std::nullopt, "9.0a(PTX)", kCudagate},
  };
  return rows;
}

TEST(ParseTorchArchList, AcceptsWhatCppExtensionAccepts) {
  const CompatDb db = arch_names_db();
  for (const TorchAccept& row : torch_accepts()) {
    SCOPED_TRACE(row.text + " (" + row.source + ")");
    auto set = parse_torch_arch_list(row.text, db, row.cuda);
    ASSERT_TRUE(set) << set.error().str();
    EXPECT_EQ(set->str(), row.canonical);
    auto again = parse_torch_arch_list(set->str(), db, row.cuda);
    ASSERT_TRUE(again) << again.error().str();
    EXPECT_EQ(*again, *set);
  }
}

TEST(ParseTorchArchList, KeepsSassAndPtxFlagsPerTarget) {
  auto set = parse_torch_arch_list("9.0a 8.0(PTX) 8.6+PTX 7.5", arch_names_db());
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

struct CmakeReading {
  std::string text;
  std::string canonical;  // under ArchListReading::cmake
};

// select_compute_arch.cmake: a name sets arch_bin, and arch_ptx counts only
// when "+PTX" follows it (add_ptx).
const std::vector<CmakeReading>& cmake_readings() {
  static const std::vector<CmakeReading> rows = {
      {"Ampere", "8.0;8.6"},
      {"Kepler", "3.5"},
      {"Hopper", "9.0"},
      {"Turing;7.5+PTX", "7.5+PTX"},
      {"Kepler+Tesla+PTX", "3.7+PTX"},
      {"Ampere+Tegra+PTX", "8.7+PTX"},
      {"Ampere;8.6+PTX", "8.0;8.6+PTX"},
      {"8.0+PTX", "8.0+PTX"},
      {"7.5 8.0 8.6 8.9 9.0 10.0 12.0+PTX", "7.5;8.0;8.6;8.9;9.0;10.0;12.0+PTX"},
  };
  return rows;
}

TEST(ParseTorchArchList, TheCmakeReadingGivesNamesNoPtxOfTheirOwn) {
  const CompatDb db = arch_names_db();
  for (const CmakeReading& row : cmake_readings()) {
    SCOPED_TRACE(row.text + std::string(" (") + kSelectComputeArch + ")");
    auto set = parse_torch_arch_list(row.text, db, std::nullopt, ArchListReading::cmake);
    ASSERT_TRUE(set) << set.error().str();
    EXPECT_EQ(set->str(), row.canonical);
  }
}

TEST(ParseTorchArchList, TheCmakeReadingIsNeverLooser) {
  // Under either reading the same lists parse, and wherever the CMake
  // reading's code runs the cpp_extension reading's does too.
  const CompatDb db = arch_names_db();
  for (const TorchAccept& row : torch_accepts()) {
    SCOPED_TRACE(row.text);
    auto loose = parse_torch_arch_list(row.text, db, row.cuda, ArchListReading::cpp_extension);
    auto strict = parse_torch_arch_list(row.text, db, row.cuda, ArchListReading::cmake);
    ASSERT_TRUE(loose && strict);
    for (int major = 3; major <= 13; ++major) {
      for (int minor = 0; minor <= 9; ++minor) {
        const ComputeCapability cc(major, minor);
        if (strict->runs_on(cc, ArchMatch::cuda, db)) {
          EXPECT_TRUE(loose->runs_on(cc, ArchMatch::cuda, db)) << cc.str();
        }
      }
    }
  }
}

struct TorchRefuse {
  std::string text;
  std::string message;
  const char* source;
};

std::string unknown_arch(const std::string& entry, const std::string& why) {
  return "unknown CUDA arch \"" + entry + "\" in TORCH_CUDA_ARCH_LIST: " + why;
}

const std::vector<TorchRefuse>& torch_refusals() {
  const std::string empty =
      "empty TORCH_CUDA_ARCH_LIST: " + kTorchExpected + ", separated by ';' or spaces";
  const std::string case_hint = "PyTorch reads names and \"+PTX\" case-sensitively; write ";
  const std::string a_targets =
      "architecture-specific (a) targets exist for 9.0, 10.0, 10.1, 10.3, 11.0, 12.0, 12.1";
  const std::string f_targets =
      "family-specific (f) targets exist for 10.0, 10.3, 11.0, 12.0, 12.1";
  static const std::vector<TorchRefuse> rows = {
      {"", empty, kCppExtension},
      {" ; ;", empty, kCppExtension},
      // valid_arch_strings and named_arches are compared case-sensitively.
      {"ampere", unknown_arch("ampere", case_hint + "\"Ampere\""), kCppExtension},
      {"AMPERE", unknown_arch("AMPERE", case_hint + "\"Ampere\""), kCppExtension},
      {"kepler+tesla", unknown_arch("kepler+tesla", case_hint + "\"Kepler+Tesla\""), kCppExtension},
      {"ampere+tegra+ptx", unknown_arch("ampere+tegra+ptx", case_hint + "\"Ampere+Tegra+PTX\""),
       kCppExtension},
      {"8.0+ptx", unknown_arch("8.0+ptx", case_hint + "\"8.0+PTX\""), kCppExtension},
      {"9.0A", unknown_arch("9.0A", case_hint + "\"9.0a\""), kCppExtension},
      // Only ' ' becomes ';': other whitespace stays inside an entry.
      {"8.0\n8.6",
       "TORCH_CUDA_ARCH_LIST \"8.0\\x0a8.6\" contains \"\\x0a\", which PyTorch does not read as a "
       "separator (only ';' and spaces are): write \"8.0;8.6\"",
       kCppExtension},
      {"8.0\n",
       "TORCH_CUDA_ARCH_LIST \"8.0\\x0a\" contains \"\\x0a\", which PyTorch does not read as a "
       "separator (only ';' and spaces are): write \"8.0\"",
       kCppExtension},
      {"8.0;\t8.6",
       "TORCH_CUDA_ARCH_LIST \"8.0;\\x098.6\" contains \"\\x09\", which PyTorch does not read as "
       "a separator (only ';' and spaces are): write \"8.0;8.6\"",
       kCppExtension},
      // split(';') keeps empty strings, which are no valid arch.
      {";;8.0;; 9.0  ;",
       "TORCH_CUDA_ARCH_LIST \";;8.0;; 9.0  ;\" has an empty entry, which PyTorch refuses (a "
       "leading, trailing or doubled ';' or space): write \"8.0;9.0\"",
       kCppExtension},
      {"8.0 ",
       "TORCH_CUDA_ARCH_LIST \"8.0 \" has an empty entry, which PyTorch refuses (a leading, "
       "trailing or doubled ';' or space): write \"8.0\"",
       kCppExtension},
      // Targets no CUDA release builds.
      {"8.0a", unknown_arch("8.0a", "no CUDA release builds sm_80a; " + a_targets), kNvccTargets},
      {"8.0f", unknown_arch("8.0f", "no CUDA release builds sm_80f; " + f_targets), kNvccTargets},
      {"9.0f", unknown_arch("9.0f", "no CUDA release builds sm_90f; " + f_targets), kNvccTargets},
      {"7.1",
       unknown_arch("7.1",
                    "no CUDA release builds for compute capability 7.1; the 7.x targets are 7.0, "
                    "7.2, 7.5"),
       kNvccTargets},
      {"8.8",
       unknown_arch("8.8",
                    "no CUDA release builds for compute capability 8.8; the 8.x targets are 8.0, "
                    "8.6, 8.7, 8.9"),
       kNvccTargets},
      {"99.9+PTX",
       unknown_arch("99.9+PTX",
                    "no CUDA release builds for compute capability 99.9; known targets run from "
                    "3.5 to 12.1"),
       kNvccTargets},
      {"100.0",
       unknown_arch("100.0",
                    "no CUDA release builds for compute capability 100.0; known targets run from "
                    "3.5 to 12.1"),
       kNvccTargets},
      // A name that carries PTX already: "Ampere+PTX" reads "8.0;8.6+PTX+PTX".
      {"Ampere+PTX",
       "\"Ampere+PTX\" in TORCH_CUDA_ARCH_LIST reads as \"8.0;8.6+PTX+PTX\" in PyTorch, whose "
       "\"8.6+PTX+PTX\" is no CUDA arch: \"Ampere\" already carries PTX for its newest member; "
       "write \"Ampere\", or its members with PTX, \"8.0+PTX;8.6+PTX\"",
       kCppExtension},
      {"Turing+PTX",
       "\"Turing+PTX\" in TORCH_CUDA_ARCH_LIST reads as \"7.5+PTX+PTX\" in PyTorch, whose "
       "\"7.5+PTX+PTX\" is no CUDA arch: \"Turing\" already carries PTX for its newest member; "
       "write \"Turing\", or its members with PTX, \"7.5+PTX\"",
       kCppExtension},
      {"Kepler+",
       "\"Kepler+\" in TORCH_CUDA_ARCH_LIST reads as \"3.5+PTX+\" in PyTorch, whose \"3.5+PTX+\" "
       "is no CUDA arch",
       kCppExtension},
      {"8.x", unknown_arch("8.x", kTorchExpected), kCppExtension},
      {"7.5;8.x;9.0", unknown_arch("8.x", kTorchExpected), kCppExtension},
      {"8", unknown_arch("8", kTorchExpected), kCppExtension},
      {"80", unknown_arch("80", kTorchExpected), kCppExtension},
      {"sm_80", unknown_arch("sm_80", kTorchExpected), kCppExtension},
      {"8.0+PTX+PTX", unknown_arch("8.0+PTX+PTX", kTorchExpected), kCppExtension},
      {"8.10", unknown_arch("8.10", kTorchExpected), kCppExtension},
      {"08.0", unknown_arch("08.0", kTorchExpected), kCppExtension},
      {"8.0b", unknown_arch("8.0b", kTorchExpected), kCppExtension},
      {"8.0af", unknown_arch("8.0af", kTorchExpected), kCppExtension},
      {"8.0+PTXa", unknown_arch("8.0+PTXa", kTorchExpected), kCppExtension},
      {"+PTX", unknown_arch("+PTX", kTorchExpected), kCppExtension},
      {"8.0,8.6", unknown_arch("8.0,8.6", kTorchExpected), kCppExtension},
      {".0", unknown_arch(".0", kTorchExpected), kCppExtension},
      {"Amper", unknown_arch("Amper", kTorchExpected), kCppExtension},
      {"8.0 Pascal", unknown_arch("Pascal", kTorchExpected), "not a name of this matrix"},
      {"8.0\x01", unknown_arch("8.0\\x01", kTorchExpected), kCppExtension},
      {"native",
       "TORCH_CUDA_ARCH_LIST \"native\" builds for the GPUs of the machine that ran the build, "
       "which the image does not record: name the architectures, such as \"8.0;9.0\"",
       kCppExtension},
      {"Broken",
       "named CUDA arch \"Broken\" expands to \"8.0;8.x\" in compat-db, whose entry \"8.x\" is "
       "not X.Y, X.Y+PTX or X.Ya",
       "a matrix error"},
      {"Hollow", "named CUDA arch \"Hollow\" has an empty arch list in compat-db",
       "a matrix error"},
  };
  return rows;
}

TEST(ParseTorchArchList, RefusesWhatPyTorchRefusesWithTheSpellingItAccepts) {
  const CompatDb db = arch_names_db();
  for (const TorchRefuse& row : torch_refusals()) {
    SCOPED_TRACE(row.text + " (" + row.source + ")");
    auto set = parse_torch_arch_list(row.text, db);
    ASSERT_FALSE(set) << set->str();
    EXPECT_EQ(set.error().message, row.message);
    // The same lists fail under the stricter reading.
    EXPECT_FALSE(parse_torch_arch_list(row.text, db, std::nullopt, ArchListReading::cmake));
  }
}

TEST(ParseTorchArchList, NamesNeedTheMatrix) {
  auto set = parse_torch_arch_list("Ampere", CompatDb{});
  ASSERT_FALSE(set);
  EXPECT_EQ(set.error().message,
            "unknown CUDA arch \"Ampere\" in TORCH_CUDA_ARCH_LIST: " + kTorchExpected);
}

TEST(ArchListIsNative, OnlyTheWholeValueForPyTorchAnyEntryForCmake) {
  // cpp_extension: `if not _arch_list or _arch_list == "native"`;
  // CMake: the special value "native" (3.24+).
  EXPECT_TRUE(torch_arch_list_is_native("native"));
  EXPECT_FALSE(torch_arch_list_is_native(" native"));
  EXPECT_FALSE(torch_arch_list_is_native("native;8.0"));
  EXPECT_FALSE(torch_arch_list_is_native("Native"));
  EXPECT_TRUE(cmake_arch_list_is_native("native"));
  EXPECT_TRUE(cmake_arch_list_is_native("80;native"));
  EXPECT_FALSE(cmake_arch_list_is_native("80-real"));
}

// --- CMake CUDA_ARCHITECTURES -----------------------------------------------

TEST(ParseCmakeArchList, AcceptsCmakeForms) {
  // CMake CUDA_ARCHITECTURES (-real, -virtual) and
  // CMakeCUDAArchitecturesAll.cmake for "all"/"all-major".
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
      {"all", CudaVersion(12, 4), "5.0;5.2;5.3;6.0;6.1;6.2;7.0;7.2;7.5;8.0;8.6;8.7;8.9;9.0+PTX"},
      {"all-major", CudaVersion(12, 4), "5.0;6.0;7.0;8.0;9.0+PTX"},
      {"all-major", CudaVersion(12, 0), "5.0;6.0;7.0;8.0;9.0+PTX"},
      {"all-major", CudaVersion(11, 8), "3.5;5.0;6.0;7.0;8.0;9.0+PTX"},
      {"all", CudaVersion(12, 8),
       "5.0;5.2;5.3;6.0;6.1;6.2;7.0;7.2;7.5;8.0;8.6;8.7;8.9;9.0;10.0;10.1;12.0+PTX"},
      {"all-major", CudaVersion(12, 8), "5.0;6.0;7.0;8.0;9.0;10.0;12.0+PTX"},
      {"all-major;90a-real", CudaVersion(12, 4), "5.0;6.0;7.0;8.0;9.0+PTX;9.0a"},
  };
  const CompatDb db = arch_names_db();
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
    const char* source;
  };
  const auto unknown = [](const std::string& entry) {
    return "unknown CUDA architecture \"" + entry + "\" in CUDA_ARCHITECTURES: " + kCmakeExpected;
  };
  const auto missing = [](const std::string& entry, const std::string& why) {
    return "unknown CUDA architecture \"" + entry + "\" in CUDA_ARCHITECTURES: " + why;
  };
  const std::string native =
      "\"native\" in CUDA_ARCHITECTURES names the GPUs of the host that built the image, which "
      "the image does not record: declare the architectures with the cudagate.io/arch-list "
      "annotation instead";
  const std::string empty = "empty CUDA_ARCHITECTURES: " + kCmakeExpected + ", separated by ';'";
  const std::vector<Row> rows = {
      {"", std::nullopt, empty, kCmakeDoc},
      {" ;; ", std::nullopt, empty, kCmakeDoc},
      {"native", CudaVersion(12, 4), native, kCmakeDoc},
      {"80;native", CudaVersion(12, 4), native, kCmakeDoc},
      {"OFF", std::nullopt,
       "CUDA_ARCHITECTURES is \"OFF\", which builds no GPU code: " + kCmakeExpected, kCmakeDoc},
      {"off", std::nullopt,
       "CUDA_ARCHITECTURES is \"off\", which builds no GPU code: " + kCmakeExpected, kCmakeDoc},
      {"all", std::nullopt,
       "\"all\" in CUDA_ARCHITECTURES depends on the CUDA release the image was built with, "
       "which is unknown: declare the CUDA version (cudagate.io/cuda-version) or the "
       "architectures (cudagate.io/arch-list)",
       kCmakeDoc},
      {"all-major", std::nullopt,
       "\"all-major\" in CUDA_ARCHITECTURES depends on the CUDA release the image was built "
       "with, which is unknown: declare the CUDA version (cudagate.io/cuda-version) or the "
       "architectures (cudagate.io/arch-list)",
       kCmakeDoc},
      {"all", CudaVersion(11, 0),
       "\"all\" in CUDA_ARCHITECTURES: compat-db does not know what CUDA 11.0 can compile for; "
       "declare the architectures (cudagate.io/arch-list)",
       kCmakeDoc},
      {"all", CudaVersion(13, 5),
       "\"all\" in CUDA_ARCHITECTURES: compat-db does not know what CUDA 13.5 can compile for; "
       "declare the architectures (cudagate.io/arch-list)",
       kCmakeDoc},
      {"80a", std::nullopt,
       missing("80a",
               "no CUDA release builds sm_80a; architecture-specific (a) targets exist for 9.0, "
               "10.0, 10.1, 10.3, 11.0, 12.0, 12.1"),
       kNvccTargets},
      {"90f-real", std::nullopt,
       missing("90f-real",
               "no CUDA release builds sm_90f; family-specific (f) targets exist for 10.0, "
               "10.3, 11.0, 12.0, 12.1"),
       kNvccTargets},
      {"1000-real", std::nullopt,
       missing("1000-real",
               "no CUDA release builds for compute capability 100.0; known targets run from "
               "3.5 to 12.1"),
       kNvccTargets},
      {"10", std::nullopt,
       missing("10",
               "no CUDA release builds for compute capability 1.0; known targets run from 3.5 "
               "to 12.1"),
       kNvccTargets},
      {"ALL", CudaVersion(12, 4), unknown("ALL"), kCmakeDoc},
      {"8", std::nullopt, unknown("8"), kCmakeDoc},
      {"08", std::nullopt, unknown("08"), kCmakeDoc},
      {"12345", std::nullopt, unknown("12345"), kCmakeDoc},
      {"8.0", std::nullopt, unknown("8.0"), kCmakeDoc},
      {"sm_80", std::nullopt, unknown("sm_80"), kCmakeDoc},
      {"compute_80", std::nullopt, unknown("compute_80"), kCmakeDoc},
      {"80-REAL", std::nullopt, unknown("80-REAL"), kCmakeDoc},
      {"80-realx", std::nullopt, unknown("80-realx"), kCmakeDoc},
      {"80-real-real", std::nullopt, unknown("80-real-real"), kCmakeDoc},
      {"80-real-virtual", std::nullopt, unknown("80-real-virtual"), kCmakeDoc},
      {"90af", std::nullopt, unknown("90af"), kCmakeDoc},
      {"-real", std::nullopt, unknown("-real"), kCmakeDoc},
      {"80,86", std::nullopt, unknown("80,86"), kCmakeDoc},
      {"Ampere", std::nullopt, unknown("Ampere"), kCmakeDoc},
  };
  const CompatDb db = arch_names_db();
  for (const Row& row : rows) {
    SCOPED_TRACE(row.text + " (" + row.source + ")");
    auto set = parse_cmake_arch_list(row.text, db, row.cuda);
    ASSERT_FALSE(set) << set->str();
    EXPECT_EQ(set.error().message, row.message);
  }
}

// --- Which code runs where ----------------------------------------------------

struct RunsOn {
  std::string list;
  std::string cc;
  bool cuda_rules;
  bool exact;
  const char* source;
};

const std::vector<RunsOn>& runs_on_rows() {
  static const std::vector<RunsOn> rows = {
      // An A100-only build does not run on a T4; a broad list runs on T4,
      // A100, A10G and H100.
      {"8.0", "7.5", false, false, kGuideBinary},
      {"7.5;8.0;8.6;9.0", "7.5", true, true, kGuideBinary},
      {"7.5;8.0;8.6;9.0", "8.0", true, true, kGuideBinary},
      {"7.5;8.0;8.6;9.0", "8.6", true, true, kGuideBinary},
      {"7.5;8.0;8.6;9.0", "9.0", true, true, kGuideBinary},
      {"7.5;8.0;8.6;9.0", "10.0", false, false, kGuideBinary},
      {"7.5;8.0;8.6;9.0", "8.9", true, false, kGuideBinary},
      // SASS runs on later minors of its major only.
      {"8.0", "8.6", true, false, kGuideBinary},
      {"8.0", "8.9", true, false, kGuideBinary},
      {"8.6", "8.0", false, false, kGuideBinary},
      {"8.0", "9.0", false, false, kGuideBinary},
      {"10.0", "12.0", false, false, kGuideBinary},
      {"12.0", "12.1", true, false, kGuideBinary},
      // PTX is JIT-compiled for any newer capability, exact or not.
      {"8.0+PTX", "9.0", true, true, kGuideBinary},
      {"8.0+PTX", "12.1", true, true, kGuideBinary},
      {"8.0+PTX", "7.5", false, false, kGuideBinary},
      {"8.0(PTX)", "8.0", true, true, kGuideBinary},
      {"8.0(PTX)", "8.6", true, true, kGuideBinary},
      {"8.0(PTX)", "7.5", false, false, kGuideBinary},
      {"12.0+PTX", "12.1", true, true, kGuideBinary},
      // Architecture-specific code runs on exactly its capability.
      {"9.0a", "9.0", true, true, "nvcc: sm_90a"},
      {"9.0a", "10.0", false, false, "nvcc: sm_90a"},
      {"9.0a+PTX", "10.0", false, false, "nvcc: compute_90a"},
      {"9.0a(PTX)", "9.0", true, true, "nvcc: compute_90a"},
      {"10.0a", "10.3", false, false, "nvcc: sm_100a"},
      // Family code runs on the family members at or above it.
      {"10.0f", "10.0", true, true, "NVIDIA CUDA 12.9 family-specific blog"},
      {"10.0f", "10.3", true, false, "NVIDIA CUDA 12.9 family-specific blog"},
      {"10.0f", "11.0", false, false, "NVIDIA CUDA 12.9 family-specific blog"},
      {"10.0f", "12.0", false, false, "NVIDIA CUDA 12.9 family-specific blog"},
      {"10.3f", "10.0", false, false, "NVIDIA CUDA 12.9 family-specific blog"},
      {"10.0f(PTX)", "10.3", true, true, "NVIDIA CUDA 12.9 family-specific blog"},
      {"10.0f(PTX)", "12.0", false, false, "NVIDIA CUDA 12.9 family-specific blog"},
      {"10.0f+PTX", "9.0", false, false, "NVIDIA CUDA 12.9 family-specific blog"},
      // Tegra: no cubin compatibility on Tegra, nor between Tegra and desktop.
      {"8.6", "8.7", false, false, kGuideBinary},  // an A10-class cubin on an Orin
      {"8.7", "8.9", false, false, kGuideBinary},  // an Orin cubin on an L4
      {"8.7", "8.7", true, true, kGuideBinary},
      {"8.0;8.6", "8.7", false, false, kGuideBinary},
      {"8.6+PTX", "8.7", true, true, kGuideBinary},  // PTX still JIT-compiles
      {"7.0", "7.2", false, false, kGuideBinary},    // a V100 cubin on a Xavier
      {"7.2", "7.5", false, false, kGuideBinary},
      {"5.0;5.2", "5.3", false, false, kGuideBinary},
      {"5.3", "5.3", true, true, kGuideBinary},
      {"6.0", "6.2", false, false, kGuideBinary},
      {"10.0", "10.1", false, false, kGuideBinary},
      {"10.1", "10.3", false, false, kGuideBinary},
      {"10.0f", "10.1", false, false, kGuideBinary},
      {"11.0", "11.0", true, true, kGuideBinary},
  };
  return rows;
}

TEST(ArchSet, RunsOnFollowsBinaryCompatibilityRules) {
  const CompatDb db = arch_names_db();
  for (const RunsOn& row : runs_on_rows()) {
    SCOPED_TRACE(row.list + " on " + row.cc + " (" + row.source + ")");
    auto set = parse_torch_arch_list(row.list, db);
    ASSERT_TRUE(set) << set.error().str();
    const ComputeCapability cc = *ComputeCapability::parse(row.cc);
    EXPECT_EQ(set->runs_on(cc, ArchMatch::cuda, db), row.cuda_rules);
    EXPECT_EQ(set->runs_on(cc, ArchMatch::exact, db), row.exact);
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
  EXPECT_FALSE(set.runs_on(ComputeCapability(7, 0), ArchMatch::cuda, arch_names_db()));
}

TEST(ArchSet, EmptySetRunsNowhere) {
  const ArchSet set;
  EXPECT_TRUE(set.empty());
  EXPECT_EQ(set.str(), "");
  EXPECT_EQ(set.oldest(), std::nullopt);
  EXPECT_FALSE(set.runs_on(ComputeCapability(8, 0), ArchMatch::cuda, arch_names_db()));
  EXPECT_TRUE(ArchSet(std::vector<ArchTarget>{
                          {ComputeCapability(8, 0), ArchVariant::portable, false, false}})
                  .empty());
}

TEST(TargetsNotBuiltBy, NamesWhatTheReleaseCannotBuild) {
  // compat-db cudaTargets: all, archSpecific, familySpecific per release.
  struct Row {
    std::string list;
    CudaVersion cuda;
    std::string missing;  // the targets, joined by ';'
  };
  const std::vector<Row> rows = {
      {"3.7;8.0", CudaVersion(12, 9), "3.7"},  // Kepler left with CUDA 12.0
      {"11.0", CudaVersion(12, 8), "11.0"},    // sm_110 only from CUDA 13.0
      {"11.0", CudaVersion(13, 0), ""},
      {"10.1", CudaVersion(13, 0), "10.1"},  // renamed sm_110
      {"9.0a", CudaVersion(11, 8), "9.0a"},  // sm_90a from CUDA 12.0
      {"9.0a", CudaVersion(12, 4), ""},
      {"10.0f", CudaVersion(12, 8), "10.0f"},  // f targets from CUDA 12.9
      {"10.0f+PTX", CudaVersion(13, 1), ""},
      {"7.0;7.5;8.0", CudaVersion(13, 0), "7.0"},
      {"8.0", CudaVersion(13, 5), ""},  // what 13.5 builds is not known
      {"8.0", CudaVersion(6, 5), ""},   // older than every entry
  };
  const CompatDb db = arch_names_db();
  for (const Row& row : rows) {
    SCOPED_TRACE(row.list + " with CUDA " + row.cuda.str());
    auto set = parse_torch_arch_list(row.list, db);
    ASSERT_TRUE(set) << set.error().str();
    std::string missing;
    for (const ArchTarget& t : targets_not_built_by(*set, row.cuda, db)) {
      if (!missing.empty()) missing += ';';
      missing += target_str(t);
    }
    EXPECT_EQ(missing, row.missing);
  }
}

// The contract with the shipped matrix: every named generation, in each of
// its meanings, and every release's "all"/"all-major" must expand through
// these parsers.
TEST(ArchListWithShippedMatrix, EveryNamedGenerationAndReleaseExpands) {
  const CompatDb& db = test_support::db();
  EXPECT_FALSE(db.architectures.empty());
  for (const NamedArchitecture& a : db.architectures) {
    SCOPED_TRACE(a.name);
    const std::optional<CudaVersion> cuda =
        a.cuda_since ? a.cuda_since
                     : (a.cuda_before
                            ? std::optional<CudaVersion>(CudaVersion(a.cuda_before->major() - 1, 0))
                            : std::nullopt);
    auto set = parse_torch_arch_list(a.name, db, cuda);
    ASSERT_TRUE(set) << set.error().str();
    EXPECT_EQ(*set, *parse_torch_arch_list(a.arch_list, db, cuda));
  }
  for (const CudaTargets& t : db.cuda_targets) {
    SCOPED_TRACE(t.since.str());
    for (const char* special : {"all", "all-major"}) {
      auto set = parse_cmake_arch_list(special, db, t.since);
      ASSERT_TRUE(set) << set.error().str();
      EXPECT_TRUE(set->targets().back().ptx);
      EXPECT_TRUE(targets_not_built_by(*set, t.since, db).empty());
    }
  }
}

// --- Against PyTorch's own parser ---------------------------------------------

// The -gencode flags cpp_extension would emit for `set`.
std::set<std::string> gencode_flags(const ArchSet& set) {
  std::set<std::string> out;
  for (const ArchTarget& t : set.targets()) {
    std::string code = std::to_string(t.cc.major()) + std::to_string(t.cc.minor());
    if (t.variant == ArchVariant::arch_specific) code += 'a';
    if (t.variant == ArchVariant::family) code += 'f';
    if (t.sass) out.insert("-gencode=arch=compute_" + code + ",code=sm_" + code);
    if (t.ptx) out.insert("-gencode=arch=compute_" + code + ",code=compute_" + code);
  }
  return out;
}

// Runs tests/policy/image/torch_arch_flags.py over `lists` with the first Python
// that imports torch; nullopt when none does (the script exits 77).
std::optional<nlohmann::json> run_pytorch(const std::vector<std::string>& lists) {
  const std::string dir = ::testing::TempDir();
  const std::string input = dir + "/cudagate_arch_lists.json";
  const std::string output = dir + "/cudagate_arch_flags.json";
  { std::ofstream(input) << nlohmann::json(lists).dump(); }
  for (const char* python : {"python3", "/usr/bin/python3"}) {
    const std::string command = std::string(python) + " '" + CUDAGATE_SOURCE_DIR +
                                "/tests/policy/image/torch_arch_flags.py' '" + input + "' '" +
                                output + "' 2>/dev/null";
    const int status = std::system(command.c_str());
    if (status == 0) {
      std::ifstream in(output);
      return nlohmann::json::parse(in);
    }
  }
  return std::nullopt;
}

TEST(ArchListAgainstPyTorch, GencodeFlagsAgreeWithCppExtension) {
  // Every TORCH_CUDA_ARCH_LIST of the tests above, through PyTorch's
  // _get_cuda_arch_flags (Debian's python3-torch where installed) and
  // through cudagate with the shipped matrix.
  std::vector<std::string> lists;
  for (const TorchAccept& row : torch_accepts()) lists.push_back(row.text);
  for (const CmakeReading& row : cmake_readings()) lists.push_back(row.text);
  for (const TorchRefuse& row : torch_refusals()) lists.push_back(row.text);
  for (const RunsOn& row : runs_on_rows()) lists.push_back(row.list);
  // "" and "native" ask cpp_extension for the GPUs it sees, which says
  // nothing about parsing.
  std::erase_if(lists, [](const std::string& l) { return l.empty() || l == "native"; });

  const std::optional<nlohmann::json> torch = run_pytorch(lists);
  if (!torch) GTEST_SKIP() << "no Python here imports torch (Debian: python3-torch)";
  const auto& results = (*torch)["results"];
  ASSERT_EQ(results.size(), lists.size());
  const std::set<std::string> named = (*torch)["named"].get<std::set<std::string>>();
  const std::set<std::string> supported = (*torch)["supported"].get<std::set<std::string>>();
  ASSERT_FALSE(named.empty()) << "the script read no named_arches";
  ASSERT_FALSE(supported.empty()) << "the script read no supported_arches";
  const CompatDb& db = test_support::db();

  // A list this PyTorch cannot know: a name or a target it predates, or
  // cudagate's "(PTX)" spelling.
  const auto newer = [&](const std::string& list, const ArchSet& set) {
    if (list.find("(PTX)") != std::string::npos) return true;
    for (const NamedArchitecture& a : db.architectures) {
      if (!named.count(a.name) && list.find(a.name) != std::string::npos) return true;
    }
    for (const ArchTarget& t : set.targets()) {
      std::string entry = t.cc.str();
      if (t.variant == ArchVariant::arch_specific) entry += 'a';
      if (t.variant == ArchVariant::family) entry += 'f';
      if (!supported.count(entry)) return true;
    }
    return false;
  };
  int both_accept = 0;
  int both_refuse = 0;
  for (std::size_t i = 0; i < lists.size(); ++i) {
    const std::string& list = lists[i];
    SCOPED_TRACE("\"" + list + "\" with torch " + (*torch)["torch"].get<std::string>());
    const auto& result = results[i];
    auto ours = parse_torch_arch_list(list, db);
    if (result.contains("flags")) {
      ASSERT_TRUE(ours) << "PyTorch accepts it: " << ours.error().str();
      EXPECT_EQ(gencode_flags(*ours), result["flags"].get<std::set<std::string>>());
      ++both_accept;
    } else if (ours) {
      EXPECT_TRUE(newer(list, *ours))
          << "cudagate reads " << ours->str() << "; PyTorch: " << result["error"];
    } else {
      ++both_refuse;
    }
  }
  EXPECT_GT(both_accept, 10);
  EXPECT_GT(both_refuse, 10);
}

}  // namespace
}  // namespace cudagate

// One file's GPU code: what scan/ reads from files nvcc compiles here, for
// many gencode sets, compared file by file with NVIDIA's cuobjdump listing;
// and files built byte by byte that are not ELF, malformed or over a limit,
// each reported and none fatal.
#include "scan/gpu_code.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tests/scan/scan_bytes.h"

namespace cudagate::scan {
namespace {

namespace fs = std::filesystem;
using testing::as_bytes;
using testing::ByteVector;

std::vector<std::string> code_strings(const std::vector<GpuArch>& archs) {
  std::vector<std::string> out;
  for (const GpuArch& arch : archs) out.push_back(arch.str());
  return out;
}

std::vector<std::string> code_errors(const GpuCode& code) {
  std::vector<std::string> out;
  for (const Error& e : code.errors) out.push_back(e.str());
  return out;
}

ByteVector read_file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return testing::text_bytes(text);
}

// --- files compiled by nvcc, compared with cuobjdump ----------------------

// Where scripts/install-deps.sh --cuda-tools puts NVIDIA's wheels; the
// environment variable CUDAGATE_CUDA_TOOLS names another folder.
fs::path cuda_tools_dir() {
  if (const char* dir = std::getenv("CUDAGATE_CUDA_TOOLS"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  return fs::path(CUDAGATE_SOURCE_DIR) / "build" / "cuda-tools";
}

// Under CI=true (.ci/run) a tool the test needs is installed, so its
// absence fails the test instead of skipping it.
bool ci() {
  const char* value = std::getenv("CI");
  return value != nullptr && std::string_view(value) == "true";
}

fs::path cuda_tool(const std::string& name) {
  return cuda_tools_dir() / "nvidia" / "cu13" / "bin" / name;
}

enum class Output { kSharedLibrary, kExecutable, kObject, kCubin };

struct NvccCase {
  std::string name;
  Output output;
  std::string flags;  // gencode and fatbin options
  std::vector<std::string> sass;
  std::vector<std::string> ptx;
};

constexpr const char* kKernelSource = R"(
__global__ void scale(float* x, float a) { x[threadIdx.x] *= a; }
void launch_scale(float* x) { scale<<<1, 32>>>(x, 2.0f); }
)";
constexpr const char* kMainSource = R"(
void launch_scale(float* x);
int main() { launch_scale(nullptr); return 0; }
)";

class NvccOracle : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(cuda_tool("nvcc")) || !fs::exists(cuda_tool("cuobjdump"))) {
      // CI installs them (scripts/test.sh): there a missing tool is a failure.
      if (ci()) GTEST_FAIL() << "nvcc and cuobjdump not found under " << cuda_tools_dir();
      GTEST_SKIP() << "nvcc and cuobjdump not found under " << cuda_tools_dir()
                   << ": run scripts/install-deps.sh --cuda-tools";
    }
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("cudagate-scan-" + std::string(info->name()) + "-" +
                                        std::to_string(reinterpret_cast<std::uintptr_t>(this)));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "kernel.cu") << kKernelSource;
    std::ofstream(dir_ / "main.cu") << kMainSource;
  }
  void TearDown() override {
    if (!dir_.empty() && !HasFailure()) fs::remove_all(dir_);
  }

  // Runs `command` with its output in `log`; true when it exits 0.
  bool run(const std::string& command, const fs::path& log) const {
    const std::string line = command + " > \"" + log.string() + "\" 2>&1";
    return std::system(line.c_str()) == 0;
  }

  std::string text_of(const fs::path& path) const {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

  fs::path compile(const NvccCase& c, int index) {
    const std::string name = "case" + std::to_string(index);
    fs::path out = dir_ / name;
    std::string what;
    switch (c.output) {
      case Output::kSharedLibrary:
        out += ".so";
        what = "-shared -Xcompiler -fPIC \"" + (dir_ / "kernel.cu").string() + "\"";
        break;
      case Output::kExecutable:
        what = "\"" + (dir_ / "kernel.cu").string() + "\" \"" + (dir_ / "main.cu").string() + "\"";
        break;
      case Output::kObject:
        out += ".o";
        what = "-c \"" + (dir_ / "kernel.cu").string() + "\"";
        break;
      case Output::kCubin:
        out += ".cubin";
        what = "-cubin \"" + (dir_ / "kernel.cu").string() + "\"";
        break;
    }
    const fs::path log = dir_ / (name + ".nvcc.log");
    const std::string command = "\"" + cuda_tool("nvcc").string() + "\" -ccbin g++ " + c.flags +
                                " " + what + " -o \"" + out.string() + "\"";
    EXPECT_TRUE(run(command, log)) << command << "\n" << text_of(log);
    return out;
  }

  // cuobjdump --list-elf --list-ptx of `file`, as architectures written
  // "9.0a": its lines are "ELF file    1: case0.1.sm_90a.cubin" and
  // "PTX file    1: case0.1.sm_100f.ptx".
  std::pair<std::set<std::string>, std::set<std::string>> cuobjdump_listing(const fs::path& file) {
    const fs::path listing = file.string() + ".cuobjdump";
    // It exits non-zero where a file holds no ELF or no PTX; its listing says.
    run("\"" + cuda_tool("cuobjdump").string() + "\" --list-elf --list-ptx \"" + file.string() +
            "\" 2>/dev/null",
        listing);
    std::set<std::string> sass;
    std::set<std::string> ptx;
    static const std::regex kLine(R"(^(ELF|PTX) file +\d+: .*\.sm_(\d+)([af]?)\.(cubin|ptx)$)");
    std::ifstream in(listing);
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (!std::regex_match(line, m, kLine)) continue;
      const GpuArch arch = GpuArch::from_sm(static_cast<unsigned>(std::stoul(m[2].str())));
      (m[1] == "ELF" ? sass : ptx).insert(arch.capability.str() + m[3].str());
    }
    return {sass, ptx};
  }

  void check(const std::vector<NvccCase>& cases) {
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const NvccCase& c = cases[i];
      SCOPED_TRACE(c.name + ": nvcc " + c.flags);
      const fs::path file = compile(c, static_cast<int>(i));
      if (::testing::Test::HasFailure()) return;
      const ByteVector bytes = read_file_bytes(file);
      const GpuCode code = read_gpu_code(as_bytes(bytes));
      EXPECT_TRUE(code.is_elf);
      EXPECT_EQ(code_errors(code), std::vector<std::string>{});
      EXPECT_EQ(code_strings(code.sass), c.sass);
      EXPECT_EQ(code_strings(code.ptx), c.ptx);

      // cuobjdump lists a family cubin (sm_100f) without its `f`, which only
      // the fatbin entry's header records; its PTX keeps the `f`.
      const auto [oracle_sass, oracle_ptx] = cuobjdump_listing(file);
      std::set<std::string> ours_sass;
      for (GpuArch arch : code.sass) {
        if (arch.variant == ArchVariant::kFamilySpecific) arch.variant = ArchVariant::kPlain;
        ours_sass.insert(arch.str());
      }
      const std::vector<std::string> ptx = code_strings(code.ptx);
      EXPECT_EQ(ours_sass, oracle_sass) << "cuobjdump's SASS";
      EXPECT_EQ(std::set<std::string>(ptx.begin(), ptx.end()), oracle_ptx) << "cuobjdump's PTX";
    }
  }

  fs::path dir_;
};

TEST_F(NvccOracle, SharedLibraries) {
  check({
      {"one real architecture",
       Output::kSharedLibrary,
       "-gencode arch=compute_75,code=sm_75",
       {"7.5"},
       {}},
      {"real and virtual",
       Output::kSharedLibrary,
       "-gencode arch=compute_80,code=[sm_80,compute_80]",
       {"8.0"},
       {"8.0"}},
      {"-arch=sm_86 (SASS and PTX)", Output::kSharedLibrary, "-arch=sm_86", {"8.6"}, {"8.6"}},
      {"PTX only", Output::kSharedLibrary, "-gencode arch=compute_89,code=compute_89", {}, {"8.9"}},
      {"Blackwell families and 12.0",
       Output::kSharedLibrary,
       "-gencode arch=compute_120,code=sm_120 -gencode arch=compute_121f,code=sm_121f "
       "-gencode arch=compute_103f,code=sm_103f -gencode arch=compute_110f,code=sm_110f",
       {"10.3f", "11.0f", "12.0", "12.1f"},
       {}},
  });
}

TEST_F(NvccOracle, ExecutablesAndObjects) {
  check({
      {"executable, 8.9 and 9.0a",
       Output::kExecutable,
       "-gencode arch=compute_89,code=sm_89 -gencode arch=compute_90a,code=sm_90a",
       {"8.9", "9.0a"},
       {}},
      {"object, 9.0a real and virtual",
       Output::kObject,
       "-gencode arch=compute_90a,code=[sm_90a,compute_90a]",
       {"9.0a"},
       {"9.0a"}},
      {"object, 10.0a and 10.0f",
       Output::kObject,
       "-gencode arch=compute_100a,code=sm_100a "
       "-gencode arch=compute_100f,code=[sm_100f,compute_100f]",
       {"10.0a", "10.0f"},
       {"10.0f"}},
      {"relocatable object (__nv_relfatbin, compressed cubins)",
       Output::kObject,
       "-rdc=true -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90a,code=sm_90a "
       "-gencode arch=compute_100f,code=[sm_100f,compute_100f]",
       {"8.0", "9.0a", "10.0f"},
       {"10.0f"}},
      {"executable linked with -rdc=true: only the loaded fatbin",
       Output::kExecutable,
       "-rdc=true -gencode arch=compute_80,code=sm_80 -gencode arch=compute_86,code=compute_86",
       {"8.0"},
       {}},
      {"PTX-only object", Output::kObject, "-gencode arch=compute_86,code=compute_86", {}, {"8.6"}},
      {"cubin, 9.0a", Output::kCubin, "-arch=sm_90a", {"9.0a"}, {}},
      // A cubin does not record `f`: cuobjdump lists it as sm_100, and so do we.
      {"cubin, 10.0f", Output::kCubin, "-arch=sm_100f", {"10.0"}, {}},
  });
}

TEST_F(NvccOracle, CompressedFatbins) {
  const std::string gencode =
      "-gencode arch=compute_75,code=sm_75 -gencode arch=compute_90,code=sm_90 "
      "-gencode arch=compute_90a,code=[sm_90a,compute_90a] "
      "-gencode arch=compute_100f,code=sm_100f -gencode arch=compute_120,code=sm_120 ";
  const std::vector<std::string> sass = {"7.5", "9.0", "9.0a", "10.0f", "12.0"};
  check({
      {"zstd, every entry",
       Output::kSharedLibrary,
       gencode + "-Xfatbin -compress-all",
       sass,
       {"9.0a"}},
      {"LZ4, every entry",
       Output::kSharedLibrary,
       gencode + "-Xfatbin -compress-all --compress-mode=speed",
       sass,
       {"9.0a"}},
      {"--compress-mode=size", Output::kObject, gencode + "--compress-mode=size", sass, {"9.0a"}},
      {"--compress-mode=balance",
       Output::kObject,
       gencode + "--compress-mode=balance",
       sass,
       {"9.0a"}},
      {"--compress-mode=none", Output::kObject, gencode + "--compress-mode=none", sass, {"9.0a"}},
      {"concatenated entries, zstd", Output::kSharedLibrary, gencode + "--concat", sass, {"9.0a"}},
      {"concatenated entries, LZ4",
       Output::kObject,
       gencode + "--concat --compress-mode=speed",
       sass,
       {"9.0a"}},
  });
}

// --- files built byte by byte ----------------------------------------------

// Libraries nvcc did not make here: bitsandbytes' wheel, one library per
// CUDA release it is built for (scripts/install-deps.sh --cuda-tools unpacks
// it). cuobjdump 13.4 stops with "Invalid ELF" partway through one of them
// (the CUDA 12.1 build); there scan/ must list at least what cuobjdump
// listed before it stopped, and read the file without an error.
TEST_F(NvccOracle, ThirdPartyLibraries) {
  const fs::path dir = fs::path(CUDAGATE_SOURCE_DIR) / "build" / "gpu-wheels" / "bitsandbytes" /
                       "unpacked" / "bitsandbytes";
  if (!fs::exists(dir)) {
    if (ci()) GTEST_FAIL() << dir << " not found";
    GTEST_SKIP() << dir << " not found: run scripts/install-deps.sh --cuda-tools";
  }
  int compared = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("libbitsandbytes_cuda") || !name.ends_with(".so")) continue;
    SCOPED_TRACE(name);
    const ByteVector bytes = read_file_bytes(entry.path());
    const GpuCode code = read_gpu_code(as_bytes(bytes));
    EXPECT_EQ(code_errors(code), std::vector<std::string>{});
    EXPECT_FALSE(code.sass.empty());
    const auto [oracle_sass, oracle_ptx] = cuobjdump_listing(entry.path());
    std::set<std::string> ours_sass;
    for (GpuArch arch : code.sass) {
      if (arch.variant == ArchVariant::kFamilySpecific) arch.variant = ArchVariant::kPlain;
      ours_sass.insert(arch.str());
    }
    const std::vector<std::string> ptx = code_strings(code.ptx);
    const std::set<std::string> ours_ptx(ptx.begin(), ptx.end());
    if (text_of(entry.path().string() + ".cuobjdump").find("Invalid ELF") != std::string::npos) {
      for (const std::string& arch : oracle_sass) EXPECT_TRUE(ours_sass.contains(arch)) << arch;
      continue;
    }
    EXPECT_EQ(ours_sass, oracle_sass) << "cuobjdump's SASS";
    EXPECT_EQ(ours_ptx, oracle_ptx) << "cuobjdump's PTX";
    ++compared;
  }
  EXPECT_GE(compared, 5);
}

TEST(GpuCode, ReadsFatbinSectionsOfAnElfFile) {
  using testing::entry_bytes;
  using testing::fatbin_bytes;
  ByteVector section = fatbin_bytes({
      entry_bytes({.sm = 90, .flags = 0x100011, .payload = testing::cubin_bytes(90, 1)}),
      entry_bytes({.sm = 80, .flags = 0x11, .payload = testing::cubin_bytes(80)}),
  });
  const ByteVector second = fatbin_bytes({
      entry_bytes({.sm = 80, .flags = 0x11, .payload = testing::cubin_bytes(80)}),
      entry_bytes({.kind = 1, .sm = 80, .flags = 0x8011, .payload = testing::zstd_payload()}),
  });
  section.insert(section.end(), second.begin(), second.end());
  const ByteVector file = testing::elf_bytes(testing::ElfSpec{
      .sections = {{".text", ByteVector(16)},
                   {".nv_fatbin", section},
                   {"__nv_relfatbin", fatbin_bytes({entry_bytes(
                                          {.sm = 86, .payload = testing::cubin_bytes(86)})})}}});
  const GpuCode code = read_gpu_code(as_bytes(file));
  EXPECT_TRUE(code.is_elf);
  EXPECT_EQ(code_errors(code), std::vector<std::string>{});
  EXPECT_EQ(code_strings(code.sass), (std::vector<std::string>{"8.0", "9.0a"}));
  EXPECT_EQ(code_strings(code.ptx), std::vector<std::string>{"8.0"});
}

TEST(GpuCode, ReadsACubinFile) {
  const ByteVector cubin = testing::cubin_bytes(121, 1);
  const GpuCode code = read_gpu_code(as_bytes(cubin));
  EXPECT_TRUE(code.is_elf);
  EXPECT_EQ(code_errors(code), std::vector<std::string>{});
  EXPECT_EQ(code_strings(code.sass), std::vector<std::string>{"12.1a"});
  EXPECT_TRUE(code.ptx.empty());
}

TEST(GpuCode, ReportsEachBadFileWithoutStopping) {
  using testing::elf_bytes;
  using testing::ElfSpec;
  const ByteVector fatbin = testing::fatbin_bytes(
      {testing::entry_bytes({.sm = 80, .flags = 0x11, .payload = testing::cubin_bytes(80)})});
  ByteVector truncated_entry = fatbin;
  testing::set_le(truncated_entry, 16 + 8, 1U << 20, 8);
  ByteVector offset_beyond = elf_bytes(ElfSpec{.sections = {{".nv_fatbin", fatbin}}});
  const std::size_t shoff =
      static_cast<std::size_t>(*read_le<std::uint64_t>(as_bytes(offset_beyond), 40));
  testing::set_le(offset_beyond, shoff + 64 + 24, 1ULL << 40, 8);
  ByteVector elf32 = elf_bytes(ElfSpec{.sections = {{".nv_fatbin", fatbin}}});
  elf32[4] = std::byte{1};
  ByteVector cubin_without_sm = elf_bytes(ElfSpec{.machine = 190, .abi_version = 8});

  struct Row {
    std::string name;
    ByteVector bytes;
    bool is_elf;
    std::vector<std::string> errors;
  };
  const std::vector<Row> rows = {
      {"not ELF", testing::text_bytes("PK\x03\x04 a zip file"), false, {}},
      {"empty file", {}, false, {}},
      {"only the magic",
       testing::text_bytes("\x7f"
                           "ELF"),
       true,
       {"ELF header: truncated: 4 bytes, the 64-bit header needs 64"}},
      {"32-bit ELF", elf32, true, {"ELF header: a 32-bit ELF file: only 64-bit files are read"}},
      {"host ELF without GPU code",
       elf_bytes(ElfSpec{.sections = {{".text", ByteVector(8)}}}),
       true,
       {}},
      {"zero-size fatbin section",
       elf_bytes(ElfSpec{.sections = {{".nv_fatbin", {}}}}),
       true,
       {".nv_fatbin+0x0: empty section: no fatbin in it"}},
      {"fatbin section beyond the file",
       offset_beyond,
       true,
       {".nv_fatbin: " + std::to_string(fatbin.size()) +
        " bytes at 0x10000000000 run past the "
        "file's " +
        std::to_string(offset_beyond.size()) + " bytes"}},
      {"entry beyond its section",
       elf_bytes(ElfSpec{.sections = {{".nv_fatbin", truncated_entry}}}),
       true,
       {".nv_fatbin+0x10: entry of 64+1048576 bytes runs past the fatbin's end (" +
        std::to_string(fatbin.size() - 16) + " bytes left)"}},
      {"cubin without an SM",
       cubin_without_sm,
       true,
       {"ELF header: e_flags 0x0 name no SM architecture"}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const GpuCode code = read_gpu_code(as_bytes(row.bytes));
    EXPECT_EQ(code.is_elf, row.is_elf);
    EXPECT_TRUE(code.sass.empty());
    EXPECT_TRUE(code.ptx.empty());
    EXPECT_EQ(code_errors(code), row.errors);
  }
}

TEST(GpuCode, RefusesASectionOverTheLimitAndReadsTheNext) {
  const ByteVector small = testing::fatbin_bytes(
      {testing::entry_bytes({.sm = 75, .flags = 0x11, .payload = testing::cubin_bytes(75)})});
  ByteVector large = small;
  large.resize(large.size() + 4096, std::byte{0});
  const ByteVector file = testing::elf_bytes(
      testing::ElfSpec{.sections = {{".nv_fatbin", large}, {".nv_fatbin", small}}});
  const GpuCode code = read_gpu_code(as_bytes(file), ScanLimits{.max_section_bytes = 2048});
  EXPECT_EQ(code_strings(code.sass), std::vector<std::string>{"7.5"});
  EXPECT_EQ(code_errors(code),
            std::vector<std::string>{".nv_fatbin+0x0: " + std::to_string(large.size()) +
                                     " bytes, more than the limit of 2048: not read"});
}

TEST(GpuCode, CountsTheEntryLimitOverTheWholeFile) {
  const ByteVector fatbin = testing::fatbin_bytes(
      {testing::entry_bytes({.sm = 75, .flags = 0x11, .payload = testing::cubin_bytes(75)}),
       testing::entry_bytes({.sm = 80, .flags = 0x11, .payload = testing::cubin_bytes(80)})});
  const ByteVector file = testing::elf_bytes(
      testing::ElfSpec{.sections = {{".nv_fatbin", fatbin}, {".nv_fatbin", fatbin}}});
  const GpuCode code = read_gpu_code(as_bytes(file), ScanLimits{.max_entries = 3});
  EXPECT_EQ(code_strings(code.sass), (std::vector<std::string>{"7.5", "8.0"}));
  ASSERT_EQ(code.errors.size(), 1U);
  EXPECT_NE(code.errors[0].str().find("more than the limit of 3 fatbin entries"), std::string::npos)
      << code.errors[0].str();
}

TEST(GpuCode, ReadsThisTestProgramAsHostCodeOnly) {
  // A real ELF executable from the host compiler, sections and all.
  const ByteVector self = read_file_bytes("/proc/self/exe");
  const GpuCode code = read_gpu_code(as_bytes(self));
  EXPECT_TRUE(code.is_elf);
  EXPECT_TRUE(code.sass.empty());
  EXPECT_TRUE(code.ptx.empty());
  EXPECT_EQ(code_errors(code), std::vector<std::string>{});
}

}  // namespace
}  // namespace cudagate::scan

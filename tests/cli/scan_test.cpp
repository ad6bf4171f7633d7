// `cudagate scan`: the contract's JSON and the text of a root file system's
// scan, exit status 0 with problems reported, and status 2 with one line
// naming the store when it cannot be read or no single image is named.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "tests/scan/scan_bytes.h"
#include "tests/support/cli_run.h"

namespace cudagate {
namespace {

using test_support::CliTempDir;
using test_support::run_cli;

std::string scan_library(unsigned sass, unsigned ptx) {
  using namespace scan::testing;
  ElfSpec spec;
  spec.machine = 62;
  spec.sections.push_back(
      {".nv_fatbin",
       fatbin_bytes(
           {entry_bytes({.kind = 2, .sm = sass, .payload = cubin_bytes(sass)}),
            entry_bytes({.kind = 1, .sm = ptx, .payload = text_bytes(".version 9.0\n")})})});
  const ByteVector bytes = elf_bytes(spec);
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

class ScanCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_.path("rootfs");
    std::filesystem::create_directories(root_ + "/usr/lib/python3/site-packages/torch/lib");
    std::filesystem::create_directories(root_ + "/usr/local/cuda/compat");
    dir_.write("rootfs/usr/lib/python3/site-packages/torch/lib/libtorch_cuda.so",
               scan_library(80, 90));
    dir_.write("rootfs/usr/lib/python3/site-packages/torch/version.py",
               "__version__ = '2.6.0+cu124'\ncuda: Optional[str] = '12.4'\n");
    dir_.write("rootfs/usr/local/cuda/compat/libcuda.so.550.54.15", "compat");
    dir_.write("rootfs/usr/local/cuda/libcudart.so.12.4.127", "runtime");
  }
  CliTempDir dir_;
  std::string root_;
};

TEST_F(ScanCommand, JsonAsTheContractWritesIt) {
  const auto run = run_cli(add_scan_command, {"scan", "--rootfs", root_, "-o", "json"});
  ASSERT_EQ(run.status, 0) << run.err;
  const auto out = nlohmann::json::parse(run.out);
  std::vector<std::string> keys;
  for (const auto& [key, value] : out.items()) keys.push_back(key);
  // nlohmann's items() iterates an object sorted; the order printed is the
  // contract's, checked below on the text.
  EXPECT_EQ(keys, (std::vector<std::string>{"cudaCompat", "cudaCompatFile", "cudaRuntime",
                                            "cudaRuntimes", "digest", "files", "framework",
                                            "platform", "problems", "source", "stats"}));
  EXPECT_EQ(out["source"], (nlohmann::json{{"kind", "rootfs"}, {"location", root_}}));
  EXPECT_TRUE(out["digest"].is_null());
  EXPECT_TRUE(out["platform"].is_null());
  EXPECT_EQ(out["cudaRuntime"], "12.4.127");
  EXPECT_EQ(out["cudaCompat"], "550.54.15");
  EXPECT_EQ(out["framework"]["version"], "2.6.0+cu124");
  EXPECT_EQ(out["framework"]["cuda"], "12.4");
  EXPECT_EQ(out["files"],
            nlohmann::json::parse(
                R"([{"path": "/usr/lib/python3/site-packages/torch/lib/libtorch_cuda.so",
                                       "sass": ["8.0"], "ptx": ["9.0"]}])"));
  EXPECT_EQ(out["problems"], nlohmann::json::array());
  EXPECT_EQ(out["stats"]["elfFiles"], 1);
  EXPECT_LT(run.out.find("\"source\""), run.out.find("\"digest\""));
  EXPECT_LT(run.out.find("\"cudaRuntime\""), run.out.find("\"files\""));
}

TEST_F(ScanCommand, TextForATerminal) {
  const auto run = run_cli(add_scan_command, {"scan", "--rootfs", root_});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "image:         rootfs " + root_ +
                         "\n"
                         "CUDA runtime:  12.4.127 (/usr/local/cuda/libcudart.so.12.4.127)\n"
                         "compat driver: 550.54.15 (/usr/local/cuda/compat/libcuda.so.550.54.15)\n"
                         "framework:     pytorch 2.6.0+cu124 (CUDA 12.4)\n"
                         "GPU code:      1 file of 1 ELF files read\n"
                         "  /usr/lib/python3/site-packages/torch/lib/libtorch_cuda.so\n"
                         "    SASS 8.0  PTX 9.0\n");
}

TEST_F(ScanCommand, ErrorsNameTheStore) {
  struct Row {
    std::vector<std::string> args;
    std::string err;
  };
  const std::string missing = dir_.path("no-layout");
  const Row rows[] = {
      {{"scan"},
       "cudagate: error: cudagate scan: name one image: REGISTRY/REPO[:TAG|@DIGEST], "
       "--oci-layout DIR[:REF], --docker-archive FILE or --rootfs DIR\n"},
      {{"scan", "registry.example.com/ml/app:v1", "--rootfs", root_},
       "cudagate: error: cudagate scan: name one image: REGISTRY/REPO[:TAG|@DIGEST], "
       "--oci-layout DIR[:REF], --docker-archive FILE or --rootfs DIR\n"},
      {{"scan", "--rootfs", root_, "--docker-archive", "x.tar"},
       "cudagate: error: cudagate scan: name one image: REGISTRY/REPO[:TAG|@DIGEST], "
       "--oci-layout DIR[:REF], --docker-archive FILE or --rootfs DIR\n"},
      {{"scan", "--rootfs", dir_.path("nothing")},
       "cudagate: error: " + dir_.path("nothing") + ": is not a directory\n"},
      {{"scan", "--oci-layout", missing + ":v1"},
       "cudagate: error: " + missing + "/oci-layout: cannot read: No such file or directory\n"},
      {{"scan", "--rootfs", root_, "-o", "yaml"},
       "cudagate: error: --output: yaml not in {text,json}\n"},
  };
  for (const Row& row : rows) {
    const auto run = run_cli(add_scan_command, row.args);
    EXPECT_EQ(run.status, 2) << row.args.back();
    EXPECT_EQ(run.err, row.err) << row.args.back();
    EXPECT_EQ(run.out, "");
  }
}

}  // namespace
}  // namespace cudagate

// An image scan's report: the contract's JSON (docs/contract.md section 9),
// field by field and in its order, nulls where the store or the image says
// nothing, and the text, with names that hold control bytes escaped.
#include "report/scan_report.h"

#include <gtest/gtest.h>

#include <string>

namespace cudagate {
namespace {

scan::ImageScan full_scan() {
  scan::ImageScan s;
  const std::string site = "usr/lib/python3.12/site-packages/";
  s.files.push_back(
      {site + "torch/lib/libtorch_cuda.so",
       {scan::GpuArch::from_sm(80), scan::GpuArch::from_sm(90, scan::ArchVariant::kArchSpecific)},
       {scan::GpuArch::from_sm(90)}});
  s.cuda_runtimes = {{"12.4.127", "usr/local/cuda/lib64/libcudart.so.12.4.127"},
                     {"12.6.77", site + "nvidia_cuda_runtime_cu12-12.6.77.dist-info/METADATA"}};
  s.cuda_runtime = s.cuda_runtimes[1];
  s.cuda_compat = scan::FileVersion{"550.54.15", "usr/local/cuda/compat/libcuda.so.550.54.15"};
  s.framework = scan::Framework{"pytorch", "2.5.1+cu126", "12.6", site + "torch/version.py"};
  s.problems.push_back(Error{"layer 2 sha256:ab", "gzip: the stream ends early"});
  s.layers = 3;
  s.bytes_in = 100;
  s.bytes_unpacked = 400;
  s.elf_files = 7;
  return s;
}

TEST(ScanReport, JsonAsTheContractSaysInItsOrder) {
  const ScanOrigin origin{"oci-layout", "/images/pt:v1", "sha256:0123", "linux/amd64"};
  const auto out = scan_json(origin, full_scan());
  EXPECT_EQ(
      out.dump(),
      R"({"source":{"kind":"oci-layout","location":"/images/pt:v1"},)"
      R"("digest":"sha256:0123","platform":"linux/amd64",)"
      R"("cudaRuntime":"12.6.77","cudaCompat":"550.54.15",)"
      R"("framework":{"name":"pytorch","version":"2.5.1+cu126","cuda":"12.6",)"
      R"("path":"/usr/lib/python3.12/site-packages/torch/version.py"},)"
      R"("files":[{"path":"/usr/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so",)"
      R"("sass":["8.0","9.0a"],"ptx":["9.0"]}],)"
      R"("cudaRuntimes":[{"version":"12.4.127","path":"/usr/local/cuda/lib64/libcudart.so.12.4.127"},)"
      R"({"version":"12.6.77","path":"/usr/lib/python3.12/site-packages/nvidia_cuda_runtime_cu12-12.6.77.dist-info/METADATA"}],)"
      R"("cudaCompatFile":{"version":"550.54.15","path":"/usr/local/cuda/compat/libcuda.so.550.54.15"},)"
      R"("problems":["layer 2 sha256:ab: gzip: the stream ends early"],)"
      R"("stats":{"layers":3,"bytesRead":100,"bytesUnpacked":400,"elfFiles":7}})");
}

TEST(ScanReport, NullsWhereNothingIsKnown) {
  scan::ImageScan empty;
  empty.framework = scan::Framework{"pytorch", "2.5.1+cpu", "", "torch/version.py"};
  const auto out = scan_json({"rootfs", "/r", "", ""}, empty);
  for (const char* key : {"digest", "platform", "cudaRuntime", "cudaCompat", "cudaCompatFile"}) {
    EXPECT_TRUE(out[key].is_null()) << key;
  }
  EXPECT_TRUE(out["framework"]["cuda"].is_null());
  EXPECT_EQ(out["files"].dump(), "[]");
  EXPECT_EQ(out["problems"].dump(), "[]");
}

TEST(ScanReport, TextForATerminal) {
  const ScanOrigin origin{"oci-layout", "/images/pt:v1", "sha256:0123", "linux/amd64"};
  EXPECT_EQ(scan_text(origin, full_scan()),
            "image:         oci-layout /images/pt:v1\n"
            "digest:        sha256:0123\n"
            "platform:      linux/amd64\n"
            "CUDA runtime:  12.6.77 (/usr/lib/python3.12/site-packages/"
            "nvidia_cuda_runtime_cu12-12.6.77.dist-info/METADATA)\n"
            "compat driver: 550.54.15 (/usr/local/cuda/compat/libcuda.so.550.54.15)\n"
            "framework:     pytorch 2.5.1+cu126 (CUDA 12.6)\n"
            "GPU code:      1 file of 7 ELF files read\n"
            "  /usr/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so\n"
            "    SASS 8.0 9.0a  PTX 9.0\n"
            "problems:\n"
            "  layer 2 sha256:ab: gzip: the stream ends early\n");
  scan::ImageScan odd;
  odd.files.push_back({"opt/lib\x1b[31m.so", {}, {scan::GpuArch::from_sm(75)}});
  const std::string text = scan_text({"rootfs", "/r", "", ""}, odd);
  EXPECT_NE(text.find("  /opt/lib\\x1b[31m.so\n    SASS -  PTX 7.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("CUDA runtime:  none found\n"), std::string::npos);
}

TEST(ScanReport, FactsAreTheContractKeysOfTheScanJson) {
  const ScanOrigin origin{"registry", "r.io/pt:v1", "sha256:0123", "linux/amd64"};
  const auto facts = scan_facts_json(origin, full_scan());
  EXPECT_EQ(facts.dump(),
            R"({"digest":"sha256:0123","platform":"linux/amd64",)"
            R"("cudaRuntime":"12.6.77","cudaCompat":"550.54.15",)"
            R"("framework":{"name":"pytorch","version":"2.5.1+cu126","cuda":"12.6",)"
            R"("path":"/usr/lib/python3.12/site-packages/torch/version.py"},)"
            R"("files":[{"path":"/usr/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so",)"
            R"("sass":["8.0","9.0a"],"ptx":["9.0"]}]})");
  const auto full = scan_json(origin, full_scan());
  for (const auto& [key, value] : facts.items()) EXPECT_EQ(value, full.at(key)) << key;
}

TEST(ScanReport, FactsWithNothingKnown) {
  EXPECT_EQ(scan_facts_json(ScanOrigin{"rootfs", "/r", "", ""}, scan::ImageScan{}).dump(),
            R"({"digest":null,"platform":null,"cudaRuntime":null,"cudaCompat":null,)"
            R"("framework":null,"files":[]})");
}

}  // namespace
}  // namespace cudagate

// An image's layers, made by tar and compressed with gzip and zstd as image
// builders do, read into its facts: the GPU code of its ELF files as later
// layers leave them (deleted, replaced, hard-linked), the CUDA runtime (the
// toolkit's libcudart and NVIDIA's runtime wheel), the cuda-compat driver and
// PyTorch's version.py; and what a broken layer or an oversized file is.
#include "scan/image_scan.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "tests/scan/scan_bytes.h"
#include "tests/support/layer_tools.h"

namespace cudagate::scan {
namespace {

using testing::ByteVector;
using testing::cubin_bytes;
using testing::elf_bytes;
using testing::ElfSpec;
using testing::entry_bytes;
using testing::fatbin_bytes;
using testing::text_bytes;

std::string text_of(const ByteVector& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// A host shared library whose .nv_fatbin holds SASS for `sass` and PTX for
// `ptx` (SM numbers as nvcc writes them: 80, 90).
std::string library_with(const std::vector<unsigned>& sass, const std::vector<unsigned>& ptx) {
  std::vector<ByteVector> entries;
  for (const unsigned sm : sass)
    entries.push_back(entry_bytes({.kind = 2, .sm = sm, .payload = cubin_bytes(sm)}));
  for (const unsigned sm : ptx) {
    entries.push_back(entry_bytes({.kind = 1, .sm = sm, .payload = text_bytes(".version 8.0\n")}));
  }
  ElfSpec spec;
  spec.machine = 62;
  spec.sections.push_back({".nv_fatbin", fatbin_bytes(entries)});
  return text_of(elf_bytes(spec));
}

std::vector<std::string> arch_texts(const std::vector<GpuArch>& archs) {
  std::vector<std::string> out;
  for (const GpuArch& a : archs) out.push_back(a.str());
  return out;
}

ImageScan scan_layers(const test_support::LayerWorkdir& work, const std::vector<std::string>& blobs,
                      ImageScanLimits limits = {}) {
  ImageScanner scanner(limits);
  int n = 0;
  for (const std::string& blob : blobs) {
    const auto bytes = work.read(blob);
    scanner.begin_layer("layer " + std::to_string(++n));
    for (const auto piece : test_support::pieces_of(bytes, 1000)) scanner.feed(piece);
    scanner.end_layer();
  }
  return scanner.finish();
}

constexpr const char* kSite = "usr/lib/python3.12/site-packages/";

class ImageScanLayers : public ::testing::Test {
 protected:
  void SetUp() override {
    ElfSpec plain;
    plain.machine = 62;
    // Layer 1: the CUDA toolkit's runtime and compat driver, two libraries.
    work_.write("l1/usr/local/cuda-12.4/lib64/libcudart.so.12.4.127", text_of(elf_bytes(plain)));
    work_.write("l1/usr/local/cuda-12.4/compat/libcuda.so.550.54.15", "not read");
    work_.write("l1/opt/app/libold.so", library_with({70}, {}));
    work_.write("l1/opt/app/libkernels.so", library_with({75}, {75}));
    work_.run("tar -C l1 -czf l1.tar.gz .");
    // Layer 2: pip's PyTorch with NVIDIA's runtime wheel; one library
    // deleted and one replaced by a file with no GPU code.
    const std::string site = std::string("l2/") + kSite;
    work_.write(site + "torch/version.py",
                "from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda']\n"
                "__version__ = '2.5.1+cu126'\ndebug = False\ncuda: Optional[str] = '12.6'\n"
                "git_version = 'a8d6afb511a69687bbb2b7e88a3cf67917e1697e'\n");
    work_.write(site + "torch/lib/libtorch_cuda.so", library_with({80, 90}, {90}));
    work_.write(site + "nvidia_cuda_runtime_cu12-12.6.77.dist-info/METADATA", "Name: x\n");
    work_.write(site + "nvidia/cuda_runtime/lib/libcudart.so.12", text_of(elf_bytes(plain)));
    work_.write("l2/opt/app/.wh.libold.so", "");
    work_.write("l2/opt/app/libkernels.so", "a text file now\n");
    work_.run("tar -C l2 -cf - . | zstd -q -c > l2.tar.zst");
    // Layer 3 (uncompressed): an extension and a hard link to it.
    work_.write("l3/opt/ext/libext.so", library_with({86}, {}));
    work_.run("ln l3/opt/ext/libext.so l3/opt/ext/libext-link.so && tar -C l3 -cf l3.tar .");
  }
  test_support::LayerWorkdir work_;
};

TEST_F(ImageScanLayers, FactsAsTheLayersLeaveThem) {
  const ImageScan scan = scan_layers(work_, {"l1.tar.gz", "l2.tar.zst", "l3.tar"});
  for (const Error& e : scan.problems) ADD_FAILURE() << e.str();
  ASSERT_EQ(scan.files.size(), 3U);
  EXPECT_EQ(scan.files[0].path, "opt/ext/libext-link.so");
  EXPECT_EQ(arch_texts(scan.files[0].sass), std::vector<std::string>{"8.6"});
  EXPECT_EQ(scan.files[1].path, "opt/ext/libext.so");
  EXPECT_EQ(scan.files[2].path, std::string(kSite) + "torch/lib/libtorch_cuda.so");
  EXPECT_EQ(arch_texts(scan.files[2].sass), (std::vector<std::string>{"8.0", "9.0"}));
  EXPECT_EQ(arch_texts(scan.files[2].ptx), std::vector<std::string>{"9.0"});
  // libold.so deleted, libkernels.so replaced: neither is reported.
  ASSERT_EQ(scan.cuda_runtimes.size(), 2U);
  ASSERT_TRUE(scan.cuda_runtime);
  // The framework's own runtime, not the newest or the toolkit's.
  EXPECT_EQ(scan.cuda_runtime->version, "12.6.77");
  EXPECT_EQ(scan.cuda_runtime->path,
            std::string(kSite) + "nvidia_cuda_runtime_cu12-12.6.77.dist-info/METADATA");
  ASSERT_TRUE(scan.cuda_compat);
  EXPECT_EQ(scan.cuda_compat->version, "550.54.15");
  ASSERT_TRUE(scan.framework);
  EXPECT_EQ(scan.framework->version, "2.5.1+cu126");
  EXPECT_EQ(scan.framework->cuda, "12.6");
  EXPECT_EQ(scan.layers, 3U);
  EXPECT_GT(scan.bytes_unpacked, scan.bytes_in);
}

TEST_F(ImageScanLayers, WithoutTheFrameworkTheNewestRuntimeCounts) {
  const ImageScan scan = scan_layers(work_, {"l1.tar.gz", "l3.tar"});
  ASSERT_TRUE(scan.cuda_runtime);
  EXPECT_EQ(scan.cuda_runtime->version, "12.4.127");
  EXPECT_FALSE(scan.framework);
  ASSERT_EQ(scan.files.size(), 4U);  // libkernels, libold, libext and its link
  EXPECT_EQ(scan.files[0].path, "opt/app/libkernels.so");
  EXPECT_EQ(arch_texts(scan.files[0].ptx), std::vector<std::string>{"7.5"});
}

TEST_F(ImageScanLayers, ABrokenLayerIsAProblemAndTheRestIsRead) {
  auto zst = work_.read("l2.tar.zst");
  zst.resize(zst.size() / 2);
  work_.write("cut.tar.zst", text_of(ByteVector(zst.begin(), zst.end())));
  const ImageScan scan = scan_layers(work_, {"l1.tar.gz", "cut.tar.zst", "l3.tar"});
  ASSERT_FALSE(scan.problems.empty());
  EXPECT_TRUE(scan.problems[0].str().starts_with("layer 2: ")) << scan.problems[0].str();
  // Layer 3 is read whatever became of layer 2.
  bool ext = false;
  for (const ScannedFile& f : scan.files) ext = ext || f.path == "opt/ext/libext.so";
  EXPECT_TRUE(ext);
}

TEST_F(ImageScanLayers, AnElfFileOverTheLimitIsNamedAndNotRead) {
  ImageScanLimits limits;
  limits.max_file_bytes = 200;
  const ImageScan scan = scan_layers(work_, {"l3.tar"}, limits);
  ASSERT_FALSE(scan.problems.empty());
  EXPECT_TRUE(scan.problems[0].str().starts_with("layer 1: \"opt/ext/libext"))
      << scan.problems[0].str();
  EXPECT_NE(scan.problems[0].str().find("over the limit of 200; not read"), std::string::npos);
  EXPECT_TRUE(scan.files.empty());
}

TEST(ImageScan, ARootFilesystemFileByFile) {
  ImageScanner scanner;
  scanner.begin_layer("rootfs /tmp/x");
  const std::string lib = library_with({120}, {120});
  const std::string path = "opt/lib/libflash_attn.so";
  const auto bytes = std::span(reinterpret_cast<const std::byte*>(lib.data()), lib.size());
  EXPECT_TRUE(needs_content(path, bytes.first(4)));
  scanner.add_file(path, bytes);
  EXPECT_FALSE(needs_content("usr/lib/libcudart.so.13.0.48", bytes.first(0)));
  scanner.add_file("usr/lib/libcudart.so.13.0.48", std::nullopt);
  scanner.add_problem(Error{"etc/shadow", "cannot read: Permission denied"});
  scanner.end_layer();
  const ImageScan scan = scanner.finish();
  ASSERT_EQ(scan.files.size(), 1U);
  EXPECT_EQ(arch_texts(scan.files[0].sass), std::vector<std::string>{"12.0"});
  ASSERT_TRUE(scan.cuda_runtime);
  EXPECT_EQ(scan.cuda_runtime->version, "13.0.48");
  ASSERT_EQ(scan.problems.size(), 1U);
  EXPECT_EQ(scan.problems[0].str(), "rootfs /tmp/x: etc/shadow: cannot read: Permission denied");
}

TEST(ImageScan, NamesThatStateVersions) {
  const std::pair<std::string, std::optional<std::string>> runtimes[] = {
      {"usr/local/cuda-12.4/lib64/libcudart.so.12.4.127", "12.4.127"},
      {"usr/lib/x86_64-linux-gnu/libcudart.so.11.8.89", "11.8.89"},
      {"usr/local/cuda/lib64/libcudart.so.12.4", "12.4"},
      {"usr/local/cuda/lib64/libcudart.so.12", std::nullopt},  // the major alone
      {"usr/local/cuda/lib64/libcudart.so", std::nullopt},
      {"usr/local/cuda/lib64/libcudart_static.a", std::nullopt},
      {"x/site-packages/nvidia_cuda_runtime_cu12-12.6.77.dist-info/METADATA", "12.6.77"},
      {"x/site-packages/nvidia_cuda_runtime-13.0.96.dist-info/METADATA", "13.0.96"},
      {"x/site-packages/nvidia_cuda_runtime_cu12-12.6.77.dist-info/RECORD", std::nullopt},
      {"x/site-packages/nvidia_cuda_nvrtc_cu12-12.6.77.dist-info/METADATA", std::nullopt},
  };
  for (const auto& [path, want] : runtimes) EXPECT_EQ(cuda_runtime_of(path), want) << path;
  EXPECT_EQ(compat_driver_of("usr/local/cuda-12.4/compat/libcuda.so.550.54.15"), "550.54.15");
  EXPECT_EQ(compat_driver_of("usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"), std::nullopt);
  EXPECT_EQ(compat_driver_of("usr/local/cuda/compat/libcuda.so.1"), std::nullopt);
  EXPECT_EQ(compat_driver_of("compat/libcuda.so.580.65.06"), "580.65.06");
}

TEST(ImageScan, TorchVersionFiles) {
  const auto cpu =
      torch_of("torch/version.py", "__version__ = '2.5.1+cpu'\ncuda: Optional[str] = None\n");
  ASSERT_TRUE(cpu);
  EXPECT_EQ(cpu->version, "2.5.1+cpu");
  EXPECT_EQ(cpu->cuda, "");
  const auto old =
      torch_of("torch/version.py", "__version__ = \"1.13.1+cu117\"\ncuda = \"11.7\"\n");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->cuda, "11.7");
  EXPECT_FALSE(torch_of("torch/version.py", "cuda = '12.4'\n"));  // no version: no framework
  // cuda_version or cudaX is not the cuda line.
  const auto other = torch_of("torch/version.py", "__version__ = '2.0'\ncuda_x = '9.9'\n");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->cuda, "");
}

}  // namespace
}  // namespace cudagate::scan

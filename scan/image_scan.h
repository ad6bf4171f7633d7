#pragma once
// What an image's files say of its CUDA code, read layer by layer without
// running or extracting it: each layer's bytes stream through decompression
// (decompressor.h) and the tar reader (tar_reader.h); each ELF file is read
// for the GPU code its fatbins hold (gpu_code.h); names and a few small
// files say which CUDA runtime, forward-compatibility driver and framework
// the image ships; later layers replace and delete what earlier ones hold
// (layered_files.h), so a library a layer deletes is not reported.
//
// Facts read, each from the files that carry it:
// - GPU code: every ELF file (shared libraries, executables, Python
//   extension modules) with SASS or PTX, as cuobjdump lists it;
// - the CUDA runtime: `libcudart.so.X.Y[.Z]` (the toolkit's and the
//   nvidia/cuda images'), or the dist-info folder of NVIDIA's runtime wheel
//   (`nvidia_cuda_runtime_cu12-12.4.127.dist-info`, whose
//   `nvidia/cuda_runtime/lib/libcudart.so.12` names the major only);
// - the forward-compatibility driver: `libcuda.so.<driver>` in a `compat`
//   folder (the cuda-compat package: /usr/local/cuda-X.Y/compat);
// - the framework: PyTorch's `torch/version.py` (__version__, cuda).
//
// An ELF file is held whole while it is read (up to max_file_bytes); the
// rest is streamed through and forgotten. A file that cannot be read is a
// problem naming the layer and the file, and the scan goes on; a layer that
// cannot be read (its compression or tar broken, a limit passed) is a
// problem too, and what it held up to that point is kept.
//
// One ImageScanner scans one image, from one thread at a time.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "scan/byte_reader.h"
#include "scan/gpu_arch.h"
#include "scan/scan_limits.h"
#include "scan/tar_reader.h"
#include "types/expected.h"

namespace cudagate::scan {

struct ImageScanLimits {
  ScanLimits code;  // per ELF file
  TarLimits tar;    // per layer
  // An ELF file larger than this is a problem, not read (PyTorch's
  // libtorch_cuda.so is about 1.5 GiB).
  std::uint64_t max_file_bytes = std::uint64_t{4} << 30;
  // Uncompressed bytes of one layer.
  std::uint64_t max_layer_bytes = std::uint64_t{64} << 30;
};

// One file with GPU code, as the image's layers leave it.
struct ScannedFile {
  std::string path;           // as in the image, without a leading "/"
  std::vector<GpuArch> sass;  // sorted, unique
  std::vector<GpuArch> ptx;   // sorted, unique
  friend bool operator==(const ScannedFile&, const ScannedFile&) = default;
};

// A version the image's files state, and the file that states it.
struct FileVersion {
  std::string version;
  std::string path;
  friend bool operator==(const FileVersion&, const FileVersion&) = default;
};

struct Framework {
  std::string name;     // "pytorch"
  std::string version;  // "2.5.1+cu124"
  std::string cuda;     // "12.4"; "" for a build without CUDA
  std::string path;     // "usr/local/lib/python3.12/site-packages/torch/version.py"
  friend bool operator==(const Framework&, const Framework&) = default;
};

struct ImageScan {
  // Every CUDA runtime the image ships, by path; `cuda_runtime` the one that
  // counts: the framework's own (in its site-packages) where there is one,
  // else the newest.
  std::vector<FileVersion> cuda_runtimes;
  std::optional<FileVersion> cuda_runtime;
  std::optional<FileVersion> cuda_compat;  // the forward-compatibility driver
  std::optional<Framework> framework;
  std::vector<ScannedFile> files;  // ELF files with GPU code, by path
  std::vector<Error> problems;     // in the order met
  std::uint64_t layers = 0;
  std::uint64_t bytes_in = 0;        // layer bytes as stored (compressed)
  std::uint64_t bytes_unpacked = 0;  // tar bytes read
  std::uint64_t elf_files = 0;       // ELF files read (with GPU code or not)
};

class ImageScanner {
 public:
  explicit ImageScanner(ImageScanLimits limits = {});
  ~ImageScanner();
  ImageScanner(const ImageScanner&) = delete;
  ImageScanner& operator=(const ImageScanner&) = delete;

  // The next layer, bottom first; `name` names it in problems ("layer 2
  // sha256:ab12..."). Its compression is sniffed from its first bytes.
  void begin_layer(std::string name);
  // The layer's next bytes, as stored. After a problem that ends the layer,
  // the rest of its bytes are ignored.
  void feed(Bytes chunk);
  // The layer has ended; it is applied over the layers before it.
  void end_layer();

  // A file tree instead of layers (a root filesystem), as one layer
  // between begin_layer and end_layer: each regular file by name, with its
  // content where needs_content() says so (an ELF file, torch/version.py),
  // else without (its name may still state a fact).
  void add_file(const std::string& path, std::optional<Bytes> content);
  // A problem met while reading the tree ("cannot read: Permission denied").
  void add_problem(Error problem);

  // The facts of every layer ended.
  [[nodiscard]] ImageScan finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Whether a file whose name is `path` and whose first bytes are `head` (4
// are enough) must be read whole: an ELF file, or PyTorch's version.py.
[[nodiscard]] bool needs_content(const std::string& path, Bytes head);

// "12.4.127" from "libcudart.so.12.4.127" (two or three parts), or from a
// runtime wheel's dist-info folder in `path`; nullopt for other names.
[[nodiscard]] std::optional<std::string> cuda_runtime_of(const std::string& path);
// "550.54.15" from ".../compat/libcuda.so.550.54.15"; nullopt otherwise.
[[nodiscard]] std::optional<std::string> compat_driver_of(const std::string& path);
// PyTorch's version and CUDA from the text of torch/version.py.
[[nodiscard]] std::optional<Framework> torch_of(const std::string& path, std::string_view text);

}  // namespace cudagate::scan

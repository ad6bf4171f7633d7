// Which files of a scan count for a decision, and how their code is said.
#include "policy/rules/scanned_files.h"

#include <algorithm>
#include <array>

namespace cudagate {
namespace {

std::string_view base_name(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string target_text(const ArchTarget& t) {
  std::string text = t.cc.str();
  if (t.variant == ArchVariant::arch_specific) text += 'a';
  if (t.variant == ArchVariant::family) text += 'f';
  return text;
}

// "8.0, 9.0, 10.0"
std::string listed(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

}  // namespace

bool nvidia_library(std::string_view path) {
  // NVIDIA's pip wheels (nvidia-cublas-cu12, nvidia-cudnn-cu12, ...) all
  // install under site-packages/nvidia/.
  for (const std::string_view folder : {"/site-packages/nvidia/", "/dist-packages/nvidia/"}) {
    if (path.find(folder) != std::string_view::npos) return true;
  }
  // The toolkit's folders: /usr/local/cuda/, /usr/local/cuda-12.4/.
  if (path.starts_with("/usr/local/cuda/") || path.starts_with("/usr/local/cuda-")) return true;
  // The libraries of NVIDIA's packages elsewhere (Debian's, conda's).
  static constexpr std::array<std::string_view, 22> kPrefixes = {
      "libcublas",   "libcudnn",   "libnccl",      "libcufft",      "libcurand", "libcusolver",
      "libcusparse", "libnvrtc",   "libnvJitLink", "libnvjitlink",  "libcupti",  "libnpp",
      "libnvjpeg",   "libcudart",  "libcufile",    "libcutensor",   "libnvblas", "libnvToolsExt",
      "libcuda.so",  "libnvidia-", "libcudss",     "libcuobjclient"};
  const std::string_view name = base_name(path);
  return std::any_of(kPrefixes.begin(), kPrefixes.end(),
                     [&](std::string_view prefix) { return name.starts_with(prefix); });
}

CountedFiles counted_files(const ScanFacts& scan, const ScanSettings& settings) {
  CountedFiles out;
  const auto split = [&](auto counts) {
    for (std::size_t i = 0; i < scan.files.size(); ++i) {
      (counts(scan.files[i].path) ? out.counted : out.others).push_back(i);
    }
  };
  if (!settings.counted_files.empty()) {
    out.why = "scan.countedFiles";
    split([&](const std::string& path) {
      return std::any_of(settings.counted_files.begin(), settings.counted_files.end(),
                         [&](const std::string& glob) { return glob_match(glob, path); });
    });
    return out;
  }
  if (!scan.framework.empty() && !scan.framework_path.empty()) {
    const auto slash = scan.framework_path.rfind('/');
    const std::string package = scan.framework_path.substr(0, slash + 1);
    split([&](const std::string& path) { return path.starts_with(package); });
    if (!out.counted.empty()) {
      out.why = "the " + std::string(scan.framework == "pytorch" ? "PyTorch" : scan.framework) +
                " package";
      return out;
    }
    out = CountedFiles{};
  }
  out.why = "every CUDA library that is not NVIDIA's";
  split([](const std::string& path) { return !nvidia_library(path); });
  return out;
}

std::string kernels_text(const ArchSet& archs) {
  std::vector<std::string> sass;
  std::vector<std::string> ptx;
  for (const ArchTarget& t : archs.targets()) {
    if (t.sass) sass.push_back(target_text(t));
    if (t.ptx) ptx.push_back(target_text(t));
  }
  if (sass.empty()) return ptx.empty() ? "has no GPU code" : "has only PTX " + listed(ptx);
  std::string out = "has kernels for " + listed(sass);
  if (!ptx.empty()) out += " and PTX " + listed(ptx);
  return out;
}

}  // namespace cudagate

// Feeds arbitrary text to both arch-list parsers. The first byte picks the
// parser (and, for CMake, the CUDA release "all" expands for); the rest is the
// list. Whatever parses must print canonically and parse back to itself, and
// runs_on must agree with its own rules for every target.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "compat-db/compat_db.h"
#include "policy/image/arch_list.h"

namespace {

using cudagate::ArchMatch;
using cudagate::ArchSet;
using cudagate::CompatDb;
using cudagate::ComputeCapability;
using cudagate::CudaVersion;

std::vector<ComputeCapability> ccs(std::initializer_list<std::pair<int, int>> list) {
  std::vector<ComputeCapability> out;
  for (auto [major, minor] : list) out.emplace_back(major, minor);
  return out;
}

const CompatDb& fuzz_db() {
  static const CompatDb db = [] {
    CompatDb d;
    d.architectures = {
        {"Kepler+Tesla", "3.7", "fuzz"},
        {"Kepler", "3.5+PTX", "fuzz"},
        {"Ampere+Tegra", "8.7", "fuzz"},
        {"Ampere", "8.0;8.6+PTX", "fuzz"},
        {"Hopper", "9.0+PTX", "fuzz"},
        {"Blackwell", "10.0;12.0+PTX", "fuzz", std::nullopt, CudaVersion(13, 0)},
        {"Blackwell", "10.0;10.3;12.0+PTX", "fuzz", CudaVersion(13, 0), std::nullopt},
        {"Broken", "8.x", "fuzz"},
    };
    d.cuda_targets = {
        {CudaVersion(11, 8), ccs({{3, 5}, {5, 0}, {7, 5}, {8, 0}, {8, 6}, {8, 7}, {9, 0}}),
         ccs({{3, 5}, {5, 0}, {8, 0}, {9, 0}}), "fuzz"},
        {CudaVersion(12, 8), ccs({{5, 0}, {7, 5}, {8, 0}, {8, 7}, {9, 0}, {10, 0}, {12, 0}}),
         ccs({{5, 0}, {8, 0}, {9, 0}, {10, 0}, {12, 0}}), "fuzz", ccs({{9, 0}, {10, 0}})},
        {CudaVersion(13, 0), ccs({{7, 5}, {8, 0}, {9, 0}, {10, 0}, {10, 3}, {12, 0}}),
         ccs({{8, 0}, {9, 0}, {10, 0}, {12, 0}}), "fuzz", ccs({{9, 0}, {10, 0}, {10, 3}}),
         ccs({{10, 0}, {10, 3}, {12, 0}})},
    };
    d.tegra = {{ComputeCapability(8, 7), "fuzz", "fuzz"}};
    return d;
  }();
  return db;
}

void check(const ArchSet& set) {
  if (set.empty()) __builtin_trap();  // parsers never return an empty set
  auto again = cudagate::parse_torch_arch_list(set.str(), fuzz_db());
  if (!again || !(*again == set)) __builtin_trap();
  if (set.oldest() != set.targets().front().cc) __builtin_trap();
  for (const auto& t : set.targets()) {
    if (!t.sass && !t.ptx) __builtin_trap();
    // Code built for exactly the device's capability always runs there,
    // except PTX-only code, which needs no exact match either.
    if (!set.runs_on(t.cc, ArchMatch::exact, fuzz_db()) ||
        !set.runs_on(t.cc, ArchMatch::cuda, fuzz_db())) {
      __builtin_trap();
    }
  }
  // Exact matching never admits more than CUDA's rules.
  for (int major = 1; major <= 13; ++major) {
    for (int minor = 0; minor <= 9; ++minor) {
      const ComputeCapability cc(major, minor);
      if (set.runs_on(cc, ArchMatch::exact, fuzz_db()) &&
          !set.runs_on(cc, ArchMatch::cuda, fuzz_db())) {
        __builtin_trap();
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t mode = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (mode % 4 == 0) {
    // Both readings accept the same lists; the CMake one never finds more PTX.
    const std::optional<CudaVersion> cuda =
        mode & 4 ? std::optional<CudaVersion>(CudaVersion(12, 8)) : std::nullopt;
    auto loose = cudagate::parse_torch_arch_list(text, fuzz_db(), cuda);
    auto strict =
        cudagate::parse_torch_arch_list(text, fuzz_db(), cuda, cudagate::ArchListReading::cmake);
    if (loose.has_value() != strict.has_value()) __builtin_trap();
    if (loose) {
      check(*loose);
      check(*strict);
      for (const auto& t : strict->targets()) {
        if (t.ptx && !loose->runs_on(t.cc, ArchMatch::cuda, fuzz_db())) __builtin_trap();
      }
    }
    return 0;
  }
  std::optional<CudaVersion> cuda;
  if (mode % 4 == 2) cuda = CudaVersion(12, 8);
  if (mode % 4 == 3) cuda = CudaVersion(11, mode % 10);
  if (auto set = cudagate::parse_cmake_arch_list(text, fuzz_db(), cuda)) check(*set);
  return 0;
}

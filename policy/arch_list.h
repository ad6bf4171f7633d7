#pragma once
// The GPU architectures an image was compiled for, and whether its code can
// run on a device of a given compute capability.
//
// Two text forms are understood:
//  - PyTorch's TORCH_CUDA_ARCH_LIST: entries separated by ';' or spaces,
//    "X.Y" (SASS for sm_XY), "X.Y+PTX" (SASS and PTX), "X.Ya" / "X.Yf"
//    (architecture- or family-specific SASS), and named generations such as
//    "Ampere" expanded through compat-db.
//  - CMake's CUDA_ARCHITECTURES / CUDAARCHS: "80" (SASS and PTX), "80-real"
//    (SASS), "80-virtual" (PTX), "90a", "100f", and the special values "all"
//    and "all-major" expanded for the image's CUDA release through compat-db.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "types/expected.h"
#include "types/version.h"

namespace cudagate {

struct CompatDb;

enum class ArchVariant : unsigned char {
  portable,       // sm_XY: runs on X.Z for every Z >= Y
  arch_specific,  // sm_XYa: runs on exactly X.Y
  family,         // sm_XYf: runs on every member of the X family at or above X.Y
};

struct ArchTarget {
  ComputeCapability cc;
  ArchVariant variant = ArchVariant::portable;
  bool sass = false;  // machine code for this target
  bool ptx = false;   // PTX the driver can JIT for any device >= cc

  friend bool operator==(const ArchTarget&, const ArchTarget&) = default;
};

// How strictly SASS must match (policy archMatch).
enum class ArchMatch : unsigned char {
  cuda,   // CUDA's binary-compatibility rules
  exact,  // only SASS built for exactly the device's capability (PTX still counts)
};

class ArchSet {
 public:
  ArchSet() = default;
  // Sorts by capability then variant, merges the SASS/PTX flags of equal
  // capability+variant pairs and drops targets with neither.
  explicit ArchSet(std::vector<ArchTarget> targets);

  [[nodiscard]] const std::vector<ArchTarget>& targets() const { return targets_; }
  [[nodiscard]] bool empty() const { return targets_.empty(); }

  // True when some target's code can execute on a device of capability `cc`.
  // SASS for X.Y runs on X.Z with Z >= Y (same major), an "a" target's SASS
  // only on exactly X.Y; PTX for X.Y is JIT-compiled on any cc >= X.Y, an "a"
  // target's PTX only on X.Y; an "f" target's SASS and PTX run on X.Z with
  // Z >= Y. With ArchMatch::exact only SASS for exactly `cc` counts, while
  // PTX still counts as above.
  [[nodiscard]] bool runs_on(ComputeCapability cc, ArchMatch match) const;

  // The lowest capability that has SASS or PTX; nullopt when empty.
  [[nodiscard]] std::optional<ComputeCapability> oldest() const;

  // Canonical PyTorch-style text, sorted by capability then variant and
  // joined by ';': "7.5;8.0;9.0+PTX;9.0a". SASS alone prints "X.Y", SASS and
  // PTX "X.Y+PTX", and PTX alone (CMake's "80-virtual", compute_80) "X.Y(PTX)",
  // a spelling PyTorch lacks but parse_torch_arch_list accepts, so that
  // parse_torch_arch_list(s.str()) == s for every non-empty set. Suffixes are
  // kept: "9.0a", "10.0f+PTX".
  [[nodiscard]] std::string str() const;

  friend bool operator==(const ArchSet&, const ArchSet&) = default;

 private:
  std::vector<ArchTarget> targets_;
};

// Parses TORCH_CUDA_ARCH_LIST. Entries are separated by ';' or whitespace;
// empty entries are skipped. Numeric entries are X.Y, X.Ya or X.Yf (major of
// one to three digits, minor of one), each optionally followed by "+PTX" or
// by "(PTX)" (PTX only, see ArchSet::str); "+PTX" is matched ignoring case.
// Any other entry must equal the name of one of db.architectures (ignoring
// case) and is replaced by that generation's arch_list. An unknown name, an
// empty list or a malformed entry is an error naming the entry.
Expected<ArchSet> parse_torch_arch_list(std::string_view text, const CompatDb& db);

// Parses CMake CUDA_ARCHITECTURES. Entries are separated by ';' or
// whitespace. A number of two to four digits names X.Y by its last digit
// (80 -> 8.0, 121 -> 12.1) and may carry "a" or "f"; alone it means SASS and
// PTX, with "-real" SASS only, with "-virtual" PTX only. "all" and
// "all-major" need `cuda` (the image's CUDA release) to know what the
// compiler could target (db.targets_for): SASS for each listed capability
// and PTX for the highest, as CMake emits them; without `cuda`, or for a
// release compat-db does not cover, they are an error, as is "native" (it
// names the build host's GPUs) and "OFF" (no GPU code at all).
Expected<ArchSet> parse_cmake_arch_list(std::string_view text, const CompatDb& db,
                                        std::optional<CudaVersion> cuda);

}  // namespace cudagate

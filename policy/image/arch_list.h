#pragma once
// The GPU architectures an image was compiled for, and whether its code can
// run on a device of a given compute capability.
//
// Two text forms are understood:
//  - PyTorch's TORCH_CUDA_ARCH_LIST, read as torch.utils.cpp_extension's
//    _get_cuda_arch_flags reads it: entries separated by ';' or spaces,
//    "X.Y" (SASS for sm_XY), "X.Y+PTX" (SASS and PTX), "X.Ya" / "X.Yf"
//    (architecture- or family-specific SASS), and named generations such as
//    "Ampere" replaced by their expansion in compat-db.
//  - CMake's CUDA_ARCHITECTURES / CUDAARCHS: "80" (SASS and PTX), "80-real"
//    (SASS), "80-virtual" (PTX), "90a", "100f", and the special values "all"
//    and "all-major" expanded for the image's CUDA release through compat-db.
// Targets must exist: some CUDA release in compat-db's cudaTargets builds
// the capability, and its "a" or "f" target where the entry has one.

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

// How a named generation in TORCH_CUDA_ARCH_LIST expands (policy
// archListReading). PyTorch has two readers: torch.utils.cpp_extension, which
// builds extensions (setup.py CUDAExtension, JIT loads), gives a name PTX
// for its newest member ("Ampere" = 8.0;8.6+PTX); PyTorch's CMake build
// (select_compute_arch.cmake) gives PTX only when "+PTX" follows the name.
// The second reading is the stricter: it never finds more PTX.
enum class ArchListReading : unsigned char {
  cpp_extension,
  cmake,
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
  // Z >= Y. Where the target or the device is a Tegra capability
  // (db.is_tegra), SASS runs only on exactly the capability it was built
  // for: the CUDA Programming Guide gives Tegra no cubin compatibility, and
  // none between Tegra and desktop GPUs. With ArchMatch::exact only SASS for
  // exactly `cc` counts, while PTX still counts as above.
  [[nodiscard]] bool runs_on(ComputeCapability cc, ArchMatch match, const CompatDb& db) const;

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

// Parses TORCH_CUDA_ARCH_LIST as cpp_extension does: ' ' and ';' separate
// entries (no other whitespace does, and an empty entry is refused); each
// name of db.architectures, in order and case-sensitively, is replaced by its
// expansion for the image's CUDA release `cuda` (the newest meaning without
// one), so that "Kepler+Tesla+PTX" reads as "3.7+PTX" and "Ampere+PTX" as
// the refused "8.0;8.6+PTX+PTX"; every resulting entry must be X.Y, X.Ya or
// X.Yf of an existing target, optionally followed by "+PTX" (case-sensitive)
// or by "(PTX)" (PTX only, see ArchSet::str). Under ArchListReading::cmake a
// name's expansion brings no PTX of its own (only a "+PTX" written after the
// name does); what parses is the same under both readings. Errors name the
// entry and, where PyTorch accepts a spelling close to it, suggest that one:
// "ampere" -> "Ampere", "8.0+ptx" -> "8.0+PTX". "native" (cpp_extension
// builds for the GPUs it sees) is an error here: see
// torch_arch_list_is_native.
Expected<ArchSet> parse_torch_arch_list(std::string_view text, const CompatDb& db,
                                        std::optional<CudaVersion> cuda = std::nullopt,
                                        ArchListReading reading = ArchListReading::cpp_extension);

// Parses CMake CUDA_ARCHITECTURES. Entries are separated by ';' or
// whitespace. A number of two to four digits names X.Y by its last digit
// (80 -> 8.0, 121 -> 12.1) and may carry "a" or "f"; alone it means SASS and
// PTX, with "-real" SASS only, with "-virtual" PTX only; the target must
// exist, as above. "all" and "all-major" need `cuda` (the image's CUDA
// release) to know what the compiler could target (db.targets_for): SASS
// for each listed capability and PTX for the highest, as CMake emits them;
// without `cuda`, or for a release compat-db does not cover, they are an
// error, as is "native" (see cmake_arch_list_is_native) and "OFF" (no GPU
// code at all).
Expected<ArchSet> parse_cmake_arch_list(std::string_view text, const CompatDb& db,
                                        std::optional<CudaVersion> cuda);

// Whether a list (TORCH_CUDA_ARCH_LIST when `torch`, else CUDA_ARCHITECTURES)
// names a compute capability newer than the matrix knows
// (CompatDb::capability_beyond_known): the first such entry, or "". Such a list
// is no error of the image's: the matrix is behind, and what the image can
// run on is unknown.
[[nodiscard]] std::string arch_list_beyond_matrix(std::string_view text, bool torch,
                                                  const CompatDb& db);

// Whether a list names the GPUs of the machine that built the image instead
// of architectures: TORCH_CUDA_ARCH_LIST exactly "native" (cpp_extension
// then builds for the GPUs it sees), or a CUDA_ARCHITECTURES list with the
// entry "native". What such an image carries is unknown, not an error.
[[nodiscard]] bool torch_arch_list_is_native(std::string_view text);
[[nodiscard]] bool cmake_arch_list_is_native(std::string_view text);

// The targets of `set` that CUDA release `cuda` cannot build
// (db.targets_for(cuda): a capability outside `all`, an "a" or "f" target
// outside its list). An image built with that release cannot carry them.
// Empty when compat-db does not know what the release builds.
[[nodiscard]] std::vector<ArchTarget> targets_not_built_by(const ArchSet& set, CudaVersion cuda,
                                                           const CompatDb& db);

// "9.0a", "8.0+PTX": one target as ArchSet::str() prints it.
[[nodiscard]] std::string target_str(const ArchTarget& target);

}  // namespace cudagate

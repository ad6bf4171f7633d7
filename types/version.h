#pragma once
// Version value types: CUDA release, NVIDIA driver, GPU compute capability.
//
// Each parses its own text form, keeps the comparison rules inside, and
// prints back a canonical form. No version number is hard-coded here: facts
// about versions (which driver runs which CUDA) live in compat-db.

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "types/expected.h"

namespace cudagate {

// A CUDA runtime release as major.minor. "12.4.1" parses to 12.4 and keeps
// the update in update() for display; comparisons use major.minor only,
// because compatibility rules are stated per minor release.
class CudaVersion {
 public:
  constexpr CudaVersion() = default;
  constexpr CudaVersion(int major, int minor) : major_(major), minor_(minor) {}

  // Accepts "12", "12.4", "12.4.1" (digits only, each part < 1000).
  static Expected<CudaVersion> parse(std::string_view text);

  [[nodiscard]] int major() const { return major_; }
  [[nodiscard]] int minor() const { return minor_; }
  [[nodiscard]] int update() const { return update_; }  // -1 when not given
  [[nodiscard]] std::string str() const;                // "12.4"

  friend constexpr bool operator==(const CudaVersion& a, const CudaVersion& b) {
    return a.major_ == b.major_ && a.minor_ == b.minor_;
  }
  friend constexpr std::strong_ordering operator<=>(const CudaVersion& a, const CudaVersion& b) {
    if (auto c = a.major_ <=> b.major_; c != 0) return c;
    return a.minor_ <=> b.minor_;
  }

 private:
  int major_ = 0;
  int minor_ = 0;
  int update_ = -1;
};

// An NVIDIA driver version: "535.129.03" or "570.26" (two or three numeric
// parts). Parts compare numerically; a missing third part compares as 0.
// str() returns the text as given, so "535.129.03" keeps its leading zero.
class DriverVersion {
 public:
  DriverVersion() = default;
  static Expected<DriverVersion> parse(std::string_view text);

  [[nodiscard]] int branch() const { return parts_[0]; }  // 535
  [[nodiscard]] int part(int i) const { return parts_[i]; }
  [[nodiscard]] int part_count() const { return count_; }
  [[nodiscard]] const std::string& str() const { return text_; }

  friend bool operator==(const DriverVersion& a, const DriverVersion& b) {
    return a.parts_[0] == b.parts_[0] && a.parts_[1] == b.parts_[1] && a.parts_[2] == b.parts_[2];
  }
  friend std::strong_ordering operator<=>(const DriverVersion& a, const DriverVersion& b) {
    for (int i = 0; i < 3; ++i) {
      if (auto c = a.parts_[i] <=> b.parts_[i]; c != 0) return c;
    }
    return std::strong_ordering::equal;
  }

 private:
  int parts_[3] = {0, 0, 0};
  int count_ = 0;
  std::string text_;
};

// A GPU compute capability X.Y (sm_XY). Ordered by major then minor.
class ComputeCapability {
 public:
  constexpr ComputeCapability() = default;
  constexpr ComputeCapability(int major, int minor) : major_(major), minor_(minor) {}

  // Accepts "8.0", "8.6", "10.3", "12.1"; also a bare major "9" as 9.0.
  static Expected<ComputeCapability> parse(std::string_view text);

  [[nodiscard]] int major() const { return major_; }
  [[nodiscard]] int minor() const { return minor_; }
  [[nodiscard]] std::string str() const;  // "8.0"

  friend constexpr bool operator==(const ComputeCapability&, const ComputeCapability&) = default;
  friend constexpr auto operator<=>(const ComputeCapability&, const ComputeCapability&) = default;

 private:
  int major_ = 0;
  int minor_ = 0;
};

}  // namespace cudagate

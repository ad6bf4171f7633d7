#pragma once
// GpuArch: the architecture one piece of GPU code is built for, as an arch
// list writes it: "8.0", "9.0a" (architecture-specific: runs on that compute
// capability only), "10.0f" (family-specific: runs on the devices of that
// family). A compute capability from types/version.h plus the suffix.
//
// kUnknown stands for a suffix that could not be read without decompressing
// the code (scan/fatbin.h says when); it prints as "9.0?" so that it is never
// mistaken for the plain architecture.

#include <compare>
#include <string>

#include "types/version.h"

namespace cudagate::scan {

enum class ArchVariant {
  kPlain,           // sm_80, compute_80
  kArchSpecific,    // sm_90a, compute_90a
  kFamilySpecific,  // sm_100f, compute_100f
  kUnknown,         // the suffix could not be read (see scan/fatbin.h)
};

struct GpuArch {
  ComputeCapability capability;
  ArchVariant variant = ArchVariant::kPlain;

  // The architecture number as nvcc and the ELF and fatbin headers write it:
  // 75 -> 7.5, 90 -> 9.0, 100 -> 10.0, 121 -> 12.1.
  [[nodiscard]] static GpuArch from_sm(unsigned sm, ArchVariant variant = ArchVariant::kPlain) {
    return GpuArch{ComputeCapability(static_cast<int>(sm / 10), static_cast<int>(sm % 10)),
                   variant};
  }

  [[nodiscard]] std::string str() const {
    std::string text = capability.str();
    switch (variant) {
      case ArchVariant::kPlain:
        break;
      case ArchVariant::kArchSpecific:
        text += 'a';
        break;
      case ArchVariant::kFamilySpecific:
        text += 'f';
        break;
      case ArchVariant::kUnknown:
        text += '?';
        break;
    }
    return text;
  }

  friend bool operator==(const GpuArch&, const GpuArch&) = default;
  friend auto operator<=>(const GpuArch&, const GpuArch&) = default;
};

}  // namespace cudagate::scan

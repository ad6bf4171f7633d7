#pragma once
// `cudagate scan`'s report of one image: its JSON form (docs/contract.md,
// "scan") and its text form for a terminal. Paths are shown as in the image,
// from its root ("/usr/lib/..."); architectures as an arch list writes them
// ("8.0", "9.0a", "10.0f").

#include <nlohmann/json.hpp>
#include <string>

#include "scan/image_scan.h"

namespace cudagate {

// Where the scan read the image, as the report names it.
struct ScanOrigin {
  std::string source;    // "oci-layout", "docker-archive", "rootfs", "registry"
  std::string location;  // the path given (":REF" for a layout), or the reference
  std::string digest;    // "" when the store has none: null in JSON
  std::string platform;  // "" when unknown: null in JSON
};

[[nodiscard]] nlohmann::ordered_json scan_json(const ScanOrigin& origin,
                                               const scan::ImageScan& scan);
// The facts decisions read from a scan attached to its image (contract §9,
// the artifact's io.cudagate.scan.facts annotation): exactly digest,
// platform, cudaRuntime, cudaCompat, framework and files, each as
// scan_json() writes it. Printed with dump() (no whitespace).
[[nodiscard]] nlohmann::ordered_json scan_facts_json(const ScanOrigin& origin,
                                                     const scan::ImageScan& scan);
[[nodiscard]] std::string scan_text(const ScanOrigin& origin, const scan::ImageScan& scan);

}  // namespace cudagate

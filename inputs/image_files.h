#pragma once
// Scanning an image stored on this machine (`cudagate scan`): its layers
// read from their files in order, a chunk at a time, into a
// scan::ImageScanner, never extracted and never held whole.
//
// Three stores, as the tools that write images leave them:
// - an OCI image layout (image-spec image-layout.md: `oci-layout`,
//   `index.json`, `blobs/<algorithm>/<hex>`), as `skopeo copy ... oci:DIR:REF`,
//   buildah and `docker buildx --output type=oci` write it: the manifest is
//   the one whose `org.opencontainers.image.ref.name` annotation is REF, or
//   the only one; an image index in it is resolved to the manifest for the
//   platform asked for;
// - a `docker save` / `podman save` / `skopeo copy ... docker-archive:FILE`
//   archive: its `manifest.json` names the config and the layers (files of
//   the archive, read in place by their offsets; symbolic links between
//   layer folders followed);
// - a root file system directory: every regular file under it (symbolic
//   links not followed), as one layer.
//
// Errors (the returned Error) are about the store: a file missing, JSON
// that is not what the format says, no manifest for the platform; each
// names the file and the field. Problems inside layers and files are the
// scan's own (ImageScan::problems), and the scan goes on.

#include <string>

#include "scan/image_scan.h"
#include "types/expected.h"

namespace cudagate {

// What was scanned, for the scan's report.
struct ScannedImage {
  std::string source;    // "oci-layout", "docker-archive", "rootfs"
  std::string location;  // the path given, with ":REF" for a layout
  std::string digest;    // the manifest's digest ("sha256:..."); "" when the store has none
  std::string platform;  // "linux/amd64" from the image's config; "" when unknown
  scan::ImageScan scan;
};

// `platform` is "os/arch" or "os/arch/variant"; it chooses in an image
// index (and must match a docker archive's config when not empty).
// `reference` empty: the layout's only manifest.
[[nodiscard]] Expected<ScannedImage> scan_oci_layout(const std::string& dir,
                                                     const std::string& reference,
                                                     const std::string& platform,
                                                     const scan::ImageScanLimits& limits = {});
[[nodiscard]] Expected<ScannedImage> scan_docker_archive(const std::string& file,
                                                         const std::string& platform,
                                                         const scan::ImageScanLimits& limits = {});
[[nodiscard]] Expected<ScannedImage> scan_rootfs(const std::string& dir,
                                                 const scan::ImageScanLimits& limits = {});

}  // namespace cudagate

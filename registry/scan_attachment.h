#pragma once
// A scan of an image's files (`cudagate scan`, docs/scan.md) attached to
// the image in its registry, as an OCI 1.1 artifact whose subject is the
// image manifest:
//
//   artifact manifest  artifactType kScanArtifactType, config the OCI empty
//                      descriptor (registry/artifact_manifest.h), one layer
//                      of kScanArtifactType (the whole scan JSON, contract
//                      §9), subject the image manifest, annotations
//                      kCreatedAnnotation (RFC 3339) and
//                      kScanFactsAnnotation: the facts decisions need, as
//                      compact JSON:
//     {"digest": "sha256:...", "platform": "linux/amd64",
//      "cudaRuntime": "12.6.77" | null, "cudaCompat": "550.54.14" | null,
//      "framework": {"name", "version", "cuda": string | null, "path"} | null,
//      "files": [{"path": "/usr/lib/x.so", "sass": ["8.0", "9.0a"],
//                 "ptx": ["9.0"]}]}
//
// Found through the referrers of the image manifest's digest: the referrers
// API (referrers_target) and, where a registry answers it 404, the
// referrers tag schema (referrers_tag_target). Both answer an OCI image
// index whose descriptors carry each referrer's artifactType and
// annotations, so one request finds the facts without fetching the
// artifact manifest or its blob.
//
// Pure functions of their arguments: no I/O, safe from any thread.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "policy/image/scan_facts.h"
#include "types/expected.h"

namespace cudagate {

// The artifact's type, and its layer's media type.
inline constexpr std::string_view kScanArtifactType = "application/vnd.cudagate.scan.v1+json";
// The facts a decision reads, as the artifact manifest's annotation.
inline constexpr std::string_view kScanFactsAnnotation = "io.cudagate.scan.facts";
// When the scan was made (RFC 3339): the newest scan of a manifest counts.
inline constexpr std::string_view kCreatedAnnotation = "org.opencontainers.image.created";

// Bounds on what a registry's referrers answer may hold.
inline constexpr std::size_t kMaxReferrersBytes = 4 * 1024 * 1024;
inline constexpr std::size_t kMaxScannedFiles = 100000;

// The referrers API's target for `digest` in `repository`, filtered to
// scans: "/v2/<repo>/referrers/<digest>?artifactType=application%2Fvnd...".
[[nodiscard]] std::string referrers_target(std::string_view repository, std::string_view digest);
// The referrers tag schema's manifest for `digest`:
// "/v2/<repo>/manifests/sha256-<hex>".
[[nodiscard]] std::string referrers_tag_target(std::string_view repository,
                                               std::string_view digest);

// The scan of `subject_digest` among the referrers an index lists (the
// body of either answer above, at most kMaxReferrersBytes). Of the
// descriptors with artifactType kScanArtifactType and a kScanFactsAnnotation
// (registries may ignore the API's filter: others are passed over), newest
// first by kCreatedAnnotation (one without it counts as oldest; of equal
// times the one listed last counts as newer), the first whose facts name
// `subject_digest` is read.
//
// nullopt when there is none. An error when the index is not one, or when
// a descriptor read on the way has a created time or facts that cannot be
// read (bad JSON, a field of the wrong type, an architecture that is not
// "X.Y" with an optional "a", "f" or "?" suffix, more than
// kMaxScannedFiles files); its place names the descriptor's digest and the
// field: `referrer sha256:...: annotation io.cudagate.scan.facts:
// files[3].sass[1]`.
//
// Read into ScanFacts: "null" strings as empty (cuda_runtime and
// cuda_compat as nullopt); a file's sass and ptx merged into one ArchSet
// (an architecture in both lists is one target with both), "9.0?" (a
// suffix the scan could not read) as the portable 9.0; files sorted by
// path, each path as written ("/usr/lib/x.so"). The facts carry no runtime
// path: cuda_runtime_path stays empty.
[[nodiscard]] Expected<std::optional<ScanFacts>> read_referrers(std::string_view index_body,
                                                                std::string_view subject_digest);

// Reads one facts annotation, as read_referrers does; errors name the
// field within the facts ("files[3].sass[1]").
[[nodiscard]] Expected<ScanFacts> parse_scan_facts(std::string_view text);

}  // namespace cudagate

#pragma once
// What the registry returns for an image, read as a container runtime reads
// it (OCI image spec, Docker image manifest v2 schema 2):
//
//   manifests   an index (OCI image index, Docker manifest list) names one
//               manifest per platform; an image manifest names the config
//   config      the image config, whose Env and Labels hold CUDA_VERSION,
//               NVIDIA_REQUIRE_*, TORCH_CUDA_ARCH_LIST, com.nvidia.cuda.*
//
// Pure functions of the bytes: no I/O. Every parse error says what was
// expected and where (a JSON pointer into the document).

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "policy/rules/metadata.h"
#include "types/expected.h"

namespace cudagate {

// The media types a lookup accepts, in the Accept header's order.
inline constexpr std::string_view kOciIndex = "application/vnd.oci.image.index.v1+json";
inline constexpr std::string_view kDockerManifestList =
    "application/vnd.docker.distribution.manifest.list.v2+json";
inline constexpr std::string_view kOciManifest = "application/vnd.oci.image.manifest.v1+json";
inline constexpr std::string_view kDockerManifest =
    "application/vnd.docker.distribution.manifest.v2+json";
// The Accept header of a manifest request: the four types above.
[[nodiscard]] const std::string& manifest_accept();

// A platform as the index and kubernetes.io/{os,arch} name it:
// "linux/amd64", "linux/arm64/v8".
struct Platform {
  std::string os = "linux";
  std::string architecture = "amd64";
  std::string variant;

  // "os/arch[/variant]"; the error names what is missing.
  static Expected<Platform> parse(std::string_view text);
  [[nodiscard]] std::string str() const;
};

struct IndexEntry {
  std::string digest;
  std::string media_type;
  Platform platform;
};

struct Manifest {
  enum class Kind : unsigned char { index, image };
  Kind kind = Kind::image;
  std::vector<IndexEntry> entries;  // index
  std::string config_digest;        // image
  std::size_t config_size = 0;      // image
};

// Reads a manifest. The kind comes from its mediaType, else from the
// response's Content-Type, else from its shape (manifests or config).
// Schema 1 manifests (which carry no config) are errors saying so.
[[nodiscard]] Expected<Manifest> parse_manifest(std::string_view body,
                                                std::string_view content_type);

// The entry of an index for `platform`, as containerd's platform matcher
// chooses it: same os and architecture; a variant given must match, and
// without one "arm64" takes "v8" or no variant, "arm" takes "v7"; the first
// such entry wins. nullptr when the index has none (attestation manifests,
// platform "unknown/unknown", never match).
[[nodiscard]] const IndexEntry* select_platform(const Manifest& index, const Platform& platform);
// The platforms an index offers, for an error: "linux/amd64, linux/arm64"
// (attestation manifests left out); "" for none.
[[nodiscard]] std::string platforms_offered(const Manifest& index);

// Reads an image config's config.Env ("KEY=value") and config.Labels.
// `digest` is recorded in the result.
[[nodiscard]] Expected<ImageConfig> parse_image_config(std::string_view body,
                                                       std::string_view digest);

// Whether `digest` ("sha256:<64 hex>") is the digest of `content`; digests
// of other algorithms are unsupported and do not match.
[[nodiscard]] bool digest_matches(std::string_view digest, std::string_view content);
// "sha256:<hex>" of `content`.
[[nodiscard]] std::string sha256_digest(std::string_view content);
// Whether `text` is a digest this client can verify: sha256:<64 lower hex>.
[[nodiscard]] bool is_sha256_digest(std::string_view text);

}  // namespace cudagate

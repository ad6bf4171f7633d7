#pragma once
// The documents of an OCI artifact attached to an image manifest (OCI
// image-spec 1.1 manifest.md "Guidelines for Artifact Usage",
// distribution-spec 1.1 "Pushing Manifests with Subject"):
//
//   the artifact's manifest  an image manifest with artifactType, the empty
//                            config ({} as application/vnd.oci.empty.v1+json),
//                            one layer holding the artifact's content, the
//                            subject (the image manifest it is about) and
//                            annotations
//   the referrers tag        for a registry without the referrers API: an
//                            image index tagged sha256-<hex of the subject's
//                            digest> listing every referrer's descriptor
//                            (mediaType, digest, size, artifactType,
//                            annotations)
//
// Pure functions of their input.

#include <map>
#include <string>
#include <string_view>

#include "registry/descriptor.h"
#include "types/expected.h"

namespace cudagate {

// The OCI empty descriptor (image-spec manifest.md), the config of an
// artifact that has none.
inline constexpr std::string_view kOciEmptyMediaType = "application/vnd.oci.empty.v1+json";
inline constexpr std::string_view kOciEmptyContent = "{}";
inline constexpr std::string_view kOciEmptyDigest =
    "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";

struct ArtifactContent {
  std::string artifact_type;
  std::string layer_media_type;
  std::string layer;  // the content itself
  std::map<std::string, std::string> annotations;
};

struct ArtifactManifest {
  std::string body;  // the manifest's bytes, as pushed
  // The manifest as a referrers list names it: mediaType, digest, size,
  // artifactType and the manifest's annotations.
  Descriptor descriptor;
};

// The manifest of `content` about `subject` (mediaType, digest, size).
[[nodiscard]] ArtifactManifest artifact_manifest(const ArtifactContent& content,
                                                 const Descriptor& subject);

// The referrers tag schema's tag of a subject: "sha256:<hex>" -> "sha256-<hex>".
[[nodiscard]] std::string referrers_tag(std::string_view subject_digest);

// The referrers index with `referrer` listed: `existing` (the index the
// tag holds; "" when there is none yet) with the descriptor appended, or
// left as it is when it already lists that digest. Another document at the
// tag is an error naming the field.
[[nodiscard]] Expected<std::string> referrers_index_with(std::string_view existing,
                                                         const Descriptor& referrer);

}  // namespace cudagate

#pragma once
// An OCI artifact pushed to a registry as a referrer of an image manifest
// (`cudagate scan --attach REF`; the documents are
// registry/artifact_manifest.h's):
//
//   the subject   REF's manifest, resolved for the platform when REF names
//                 an index (the platform's image manifest, never the index)
//   blobs         the empty config {} and the artifact's content:
//                 HEAD /v2/<repo>/blobs/<digest> (200: there already), else
//                 POST /v2/<repo>/blobs/uploads/ and PUT <Location>?digest=
//                 with the whole blob (a monolithic upload)
//   manifest      PUT /v2/<repo>/manifests/<its digest>
//   referrers     when the PUT's answer carries OCI-Subject and
//                 GET /v2/<repo>/referrers/<subject digest> answers, the
//                 registry lists the referrer itself; else the referrers
//                 tag sha256-<hex> is read (404: a new empty index), the
//                 artifact's descriptor appended and the index PUT back
//
// Tokens are asked for repository:<repo>:pull,push; the registry's origin
// is used, never a mirror. Synchronous, on an io_context of its own.
// Errors name the registry, the repository and the call that failed.

#include <functional>
#include <string>
#include <string_view>

#include "policy/config/policy.h"
#include "registry/artifact_manifest.h"
#include "registry/descriptor.h"
#include "types/expected.h"

namespace cudagate {

struct AttachedArtifact {
  Descriptor subject;   // the image manifest: mediaType, digest, size
  Descriptor artifact;  // the artifact's manifest as referrers list it
  // The tag whose index was updated ("sha256-<hex>"); "" when the
  // registry's referrers API lists the artifact.
  std::string referrers_tag;
};

// Builds the artifact once the subject is known; an Error stops the push
// before anything is written.
using ArtifactBuilder = std::function<Expected<ArtifactContent>(const Descriptor& subject)>;

// `platform` "os/arch[/variant]" ("" = linux/amd64).
[[nodiscard]] Expected<AttachedArtifact> attach_artifact(const RegistrySettings& settings,
                                                         std::string_view reference,
                                                         std::string_view platform,
                                                         const ArtifactBuilder& build);

}  // namespace cudagate

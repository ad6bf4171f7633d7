#pragma once
// An image pulled from its registry for a scan (`cudagate scan
// REGISTRY/REPO[:TAG|@DIGEST]`): the manifest the reference names,
// resolved for a platform when it is an index; the config, for the
// platform it states; then every layer, bottom first, streamed blob by
// blob to a LayerVisitor in chunks, never held whole (a layer can be many
// GiB), each checked against its digest as it streams.
//
// Endpoints, TLS trust and credentials are the policy's registry settings
// (registry/registry_endpoints.h, registry_access()): the mirror first,
// the origin when the mirror cannot give the manifest; blobs come from the
// endpoint that gave it. Authorization and redirects as
// registry/registry_session.h makes them.
//
// Synchronous: runs an io_context of its own until the pull ends, for the
// command line. Errors (the returned Error) end the pull: a reference that
// is not one, a manifest or config that cannot be had, a layer whose
// transfer breaks (the error names the layer); a layer whose content does
// not match its digest is not an error but a problem handed to
// LayerVisitor::end_layer, naming the layer, and the pull goes on.

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "policy/config/policy.h"
#include "registry/descriptor.h"
#include "types/expected.h"

namespace cudagate {

// Told of each layer as it streams, from the thread that called pull_image.
class LayerVisitor {
 public:
  virtual ~LayerVisitor() = default;
  // The next layer, bottom first; `name` names it in problems: "layer 2
  // sha256:ab12...".
  virtual void begin_layer(const std::string& name, const Descriptor& layer) = 0;
  // The layer's next bytes, as stored (compressed or not); false stops
  // the pull (a budget spent, a shutdown): pull_image then returns an Error
  // naming the layer, "stopped by its reader".
  virtual bool layer_bytes(std::span<const std::byte> chunk) = 0;
  // The layer has ended; `problem` when its content was not what its
  // digest says. After an Error of pull_image, no end_layer comes for the
  // layer that broke.
  virtual void end_layer(std::optional<Error> problem) = 0;
};

struct PulledImage {
  std::string reference;  // as given
  Descriptor manifest;    // the image manifest: mediaType, digest, size
  std::string platform;   // "os/arch[/variant]" from the config; "" when it states none
  std::size_t layers = 0;
};

// `platform` "os/arch[/variant]" chooses in an index ("" = linux/amd64).
[[nodiscard]] Expected<PulledImage> pull_image(const RegistrySettings& settings,
                                               std::string_view reference,
                                               std::string_view platform, LayerVisitor& visitor);

}  // namespace cudagate

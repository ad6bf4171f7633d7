#pragma once
// What an image manifest names for a pull (OCI image manifest, Docker
// manifest v2 schema 2): its config and its layers, bottom first; and the
// platform its config states.
//
// Pure functions of the bytes. Errors name the field as a JSON pointer
// into the document ("manifest/layers/2/digest").

#include <string>
#include <string_view>
#include <vector>

#include "registry/descriptor.h"
#include "types/expected.h"

namespace cudagate {

struct ImageLayers {
  Descriptor config;
  std::vector<Descriptor> layers;  // bottom first
};

// The config and layers of an image manifest (not an index: see
// registry/manifest.h parse_manifest). Every digest must be sha256.
[[nodiscard]] Expected<ImageLayers> parse_image_layers(std::string_view manifest);

// "os/arch[/variant]" of an image config's os, architecture and variant;
// "" when the config is not JSON or names no os and architecture.
[[nodiscard]] std::string platform_of_config(std::string_view config);

}  // namespace cudagate

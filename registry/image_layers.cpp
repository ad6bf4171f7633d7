// An image manifest's config and layer descriptors, and a config's
// platform, read with nlohmann.
#include "registry/image_layers.h"

#include <nlohmann/json.hpp>

#include "registry/manifest.h"
#include "types/json_depth.h"
#include "types/quote.h"

namespace cudagate {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxLayersDepth = 64;

std::string string_at(const json& object, const char* key) {
  if (!object.is_object()) return {};
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Expected<Descriptor> descriptor_at(const json& value, const std::string& where) {
  if (!value.is_object()) return Error{where, "expected a descriptor object"};
  Descriptor out;
  out.media_type = string_at(value, "mediaType");
  out.digest = string_at(value, "digest");
  if (!is_sha256_digest(out.digest)) {
    return Error{where + "/digest", "expected sha256:<64 hex digits>, got " + quote(out.digest)};
  }
  const auto size = value.find("size");
  if (size == value.end() || !size->is_number_unsigned()) {
    return Error{where + "/size", "expected a size in bytes"};
  }
  out.size = size->get<std::uint64_t>();
  return out;
}

}  // namespace

Expected<ImageLayers> parse_image_layers(std::string_view manifest) {
  if (const auto at = json_too_deep_at(manifest, kMaxLayersDepth); at != std::string_view::npos) {
    return Error{"manifest", "nested more than " + std::to_string(kMaxLayersDepth) +
                                 " levels at byte " + std::to_string(at)};
  }
  const json doc = json::parse(manifest, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return Error{"manifest", "expected a JSON object"};
  ImageLayers out;
  const auto config = doc.find("config");
  if (config == doc.end()) return Error{"manifest/config", "expected the config descriptor"};
  auto config_descriptor = descriptor_at(*config, "manifest/config");
  if (!config_descriptor) return config_descriptor.error();
  out.config = std::move(*config_descriptor);
  const auto layers = doc.find("layers");
  if (layers == doc.end() || !layers->is_array()) {
    return Error{"manifest/layers", "expected the list of layer descriptors"};
  }
  for (std::size_t i = 0; i < layers->size(); ++i) {
    auto layer = descriptor_at((*layers)[i], "manifest/layers/" + std::to_string(i));
    if (!layer) return layer.error();
    out.layers.push_back(std::move(*layer));
  }
  return out;
}

std::string platform_of_config(std::string_view config) {
  if (json_too_deep_at(config, kMaxLayersDepth) != std::string_view::npos) return {};
  const json doc = json::parse(config, nullptr, /*allow_exceptions=*/false);
  const std::string os = string_at(doc, "os");
  const std::string architecture = string_at(doc, "architecture");
  if (os.empty() || architecture.empty()) return {};
  std::string out = os + "/" + architecture;
  if (const std::string variant = string_at(doc, "variant"); !variant.empty()) out += "/" + variant;
  return out;
}

}  // namespace cudagate

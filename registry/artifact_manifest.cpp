// An artifact's manifest and the referrers index, written with nlohmann's
// ordered JSON so that the bytes (and so the digests) follow the fields'
// order here.
#include "registry/artifact_manifest.h"

#include <nlohmann/json.hpp>

#include "registry/manifest.h"
#include "types/json_depth.h"

namespace cudagate {
namespace {

using nlohmann::ordered_json;

ordered_json descriptor_json(const Descriptor& d) {
  ordered_json out = {{"mediaType", d.media_type}, {"digest", d.digest}, {"size", d.size}};
  if (!d.artifact_type.empty()) out["artifactType"] = d.artifact_type;
  if (!d.annotations.empty()) out["annotations"] = d.annotations;
  return out;
}

}  // namespace

ArtifactManifest artifact_manifest(const ArtifactContent& content, const Descriptor& subject) {
  const ordered_json manifest = {
      {"schemaVersion", 2},
      {"mediaType", kOciManifest},
      {"artifactType", content.artifact_type},
      {"config",
       {{"mediaType", kOciEmptyMediaType},
        {"digest", kOciEmptyDigest},
        {"size", kOciEmptyContent.size()}}},
      {"layers", ordered_json::array({descriptor_json(Descriptor{content.layer_media_type,
                                                                 sha256_digest(content.layer),
                                                                 content.layer.size(),
                                                                 "",
                                                                 {}})})},
      {"subject",
       descriptor_json(Descriptor{subject.media_type, subject.digest, subject.size, "", {}})},
      {"annotations", content.annotations},
  };
  ArtifactManifest out;
  out.body = manifest.dump();
  out.descriptor = Descriptor{std::string(kOciManifest), sha256_digest(out.body), out.body.size(),
                              content.artifact_type, content.annotations};
  return out;
}

std::string referrers_tag(std::string_view subject_digest) {
  std::string out(subject_digest);
  if (const auto colon = out.find(':'); colon != std::string::npos) out[colon] = '-';
  return out;
}

Expected<std::string> referrers_index_with(std::string_view existing, const Descriptor& referrer) {
  ordered_json index = {
      {"schemaVersion", 2}, {"mediaType", kOciIndex}, {"manifests", ordered_json::array()}};
  if (!existing.empty()) {
    if (json_too_deep_at(existing, 64) != std::string_view::npos) {
      return Error{"referrers index", "nested too deeply"};
    }
    index = ordered_json::parse(existing, nullptr, /*allow_exceptions=*/false);
    if (!index.is_object()) return Error{"referrers index", "expected a JSON object"};
    const auto media_type = index.find("mediaType");
    if (media_type != index.end() &&
        (!media_type->is_string() || media_type->get<std::string>() != kOciIndex)) {
      return Error{"referrers index/mediaType", "expected " + std::string(kOciIndex)};
    }
    const auto manifests = index.find("manifests");
    if (manifests == index.end() || !manifests->is_array()) {
      return Error{"referrers index/manifests", "expected the list of referrers"};
    }
  }
  ordered_json& manifests = index["manifests"];
  for (const ordered_json& entry : manifests) {
    if (!entry.is_object()) continue;
    const auto digest = entry.find("digest");
    if (digest != entry.end() && digest->is_string() &&
        digest->get<std::string>() == referrer.digest) {
      return index.dump();
    }
  }
  manifests.push_back(descriptor_json(referrer));
  return index.dump();
}

}  // namespace cudagate

// Manifests, indexes and image configs read from their JSON, and sha256
// digests checked with OpenSSL.
#include "registry/manifest.h"

#include <nlohmann/json.hpp>
#include <span>

#include "registry/blob_digest.h"
#include "types/json_depth.h"
#include "types/quote.h"

namespace cudagate {
namespace {

using nlohmann::json;

// Manifests and configs nest a few levels; anything deeper is not one.
constexpr std::size_t kMaxDepth = 64;

Expected<json> parse_json(std::string_view body, std::string_view what) {
  if (const auto at = json_too_deep_at(body, kMaxDepth); at != std::string_view::npos) {
    return Error{std::string(what), "nested more than " + std::to_string(kMaxDepth) +
                                        " levels at byte " + std::to_string(at)};
  }
  json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Error{std::string(what), "not valid JSON"};
  if (!doc.is_object()) return Error{std::string(what), "expected a JSON object"};
  return doc;
}

const std::string* string_member(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return nullptr;
  return it->get_ptr<const std::string*>();
}

Expected<std::string> required_digest(const json& object, const std::string& where) {
  const std::string* digest = string_member(object, "digest");
  if (digest == nullptr) return Error{where + "/digest", "expected a digest string"};
  if (!is_sha256_digest(*digest)) {
    return Error{where + "/digest", "expected sha256:<64 hex digits>, got " + quote(*digest)};
  }
  return *digest;
}

}  // namespace

const std::string& manifest_accept() {
  static const std::string accept = std::string(kOciIndex) + ", " +
                                    std::string(kDockerManifestList) + ", " +
                                    std::string(kOciManifest) + ", " + std::string(kDockerManifest);
  return accept;
}

Expected<Platform> Platform::parse(std::string_view text) {
  Platform p;
  const auto slash = text.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == text.size()) {
    return Error{"",
                 "expected a platform os/arch[/variant] such as linux/amd64, got " + quote(text)};
  }
  p.os = std::string(text.substr(0, slash));
  std::string_view rest = text.substr(slash + 1);
  const auto second = rest.find('/');
  p.architecture = std::string(rest.substr(0, second));
  if (second != std::string_view::npos) {
    p.variant = std::string(rest.substr(second + 1));
    if (p.variant.empty() || p.variant.find('/') != std::string::npos || p.architecture.empty()) {
      return Error{"",
                   "expected a platform os/arch[/variant] such as linux/amd64, got " + quote(text)};
    }
  }
  return p;
}

std::string Platform::str() const {
  std::string out = os + "/" + architecture;
  if (!variant.empty()) out += "/" + variant;
  return out;
}

Expected<Manifest> parse_manifest(std::string_view body, std::string_view content_type) {
  auto doc = parse_json(body, "manifest");
  if (!doc) return doc.error();
  const json& m = *doc;
  std::string_view media_type;
  if (const std::string* declared = string_member(m, "mediaType")) {
    media_type = *declared;
  } else {
    media_type = content_type.substr(0, content_type.find(';'));
    while (!media_type.empty() && media_type.back() == ' ') media_type.remove_suffix(1);
  }
  if (const auto version = m.find("schemaVersion");
      version != m.end() && version->is_number_integer() && version->get<int>() == 1) {
    return Error{"manifest", "schema 1 manifests carry no image config and are not supported"};
  }
  const bool is_index = media_type == kOciIndex || media_type == kDockerManifestList ||
                        (media_type != kOciManifest && media_type != kDockerManifest &&
                         m.contains("manifests") && !m.contains("config"));
  Manifest out;
  if (is_index) {
    out.kind = Manifest::Kind::index;
    const auto list = m.find("manifests");
    if (list == m.end() || !list->is_array()) {
      return Error{"manifest/manifests", "expected the array of an index's manifests"};
    }
    for (std::size_t i = 0; i < list->size(); ++i) {
      const json& entry = (*list)[i];
      const std::string where = "manifest/manifests/" + std::to_string(i);
      if (!entry.is_object()) return Error{where, "expected an object"};
      auto digest = required_digest(entry, where);
      if (!digest) return digest.error();
      IndexEntry e;
      e.digest = std::move(*digest);
      if (const std::string* type = string_member(entry, "mediaType")) e.media_type = *type;
      // An entry without a platform applies to none (OCI image index: the
      // property is optional, and runtimes then do not select it).
      e.platform.os.clear();
      e.platform.architecture.clear();
      if (const auto p = entry.find("platform"); p != entry.end() && p->is_object()) {
        if (const std::string* os = string_member(*p, "os")) e.platform.os = *os;
        if (const std::string* arch = string_member(*p, "architecture")) {
          e.platform.architecture = *arch;
        }
        if (const std::string* variant = string_member(*p, "variant"))
          e.platform.variant = *variant;
      }
      out.entries.push_back(std::move(e));
    }
    return out;
  }
  if (!media_type.empty() && media_type != kOciManifest && media_type != kDockerManifest) {
    return Error{"manifest/mediaType", "unsupported manifest type " + quote(media_type)};
  }
  const auto config = m.find("config");
  if (config == m.end() || !config->is_object()) {
    return Error{"manifest/config", "expected the image manifest's config descriptor"};
  }
  auto digest = required_digest(*config, "manifest/config");
  if (!digest) return digest.error();
  out.config_digest = std::move(*digest);
  if (const auto size = config->find("size"); size != config->end() && size->is_number_unsigned()) {
    out.config_size = size->get<std::size_t>();
  }
  return out;
}

namespace {

// containerd's normalisation of an architecture's variant.
std::string_view default_variant(std::string_view architecture) {
  if (architecture == "arm64") return "v8";
  if (architecture == "arm") return "v7";
  return "";
}

}  // namespace

const IndexEntry* select_platform(const Manifest& index, const Platform& platform) {
  const std::string_view wanted_variant =
      platform.variant.empty() ? default_variant(platform.architecture) : platform.variant;
  for (const IndexEntry& entry : index.entries) {
    if (entry.platform.os != platform.os || entry.platform.architecture != platform.architecture) {
      continue;
    }
    const std::string_view variant = entry.platform.variant.empty()
                                         ? default_variant(entry.platform.architecture)
                                         : std::string_view(entry.platform.variant);
    if (variant == wanted_variant) return &entry;
  }
  return nullptr;
}

Expected<ImageConfig> parse_image_config(std::string_view body, std::string_view digest) {
  auto doc = parse_json(body, "config");
  if (!doc) return doc.error();
  ImageConfig out;
  out.digest = std::string(digest);
  const auto config = doc->find("config");
  if (config == doc->end() || config->is_null()) return out;
  if (!config->is_object()) return Error{"config/config", "expected an object"};
  if (const auto env = config->find("Env"); env != config->end() && !env->is_null()) {
    if (!env->is_array()) return Error{"config/config/Env", "expected an array of strings"};
    for (std::size_t i = 0; i < env->size(); ++i) {
      const json& item = (*env)[i];
      if (!item.is_string()) {
        return Error{"config/config/Env/" + std::to_string(i), "expected a KEY=value string"};
      }
      const auto& text = item.get_ref<const std::string&>();
      const auto eq = text.find('=');
      // A variable without '=' is how a runtime passes one through from the
      // host; it sets nothing the image declares.
      if (eq == std::string::npos) continue;
      out.env.emplace_back(text.substr(0, eq), text.substr(eq + 1));
    }
  }
  if (const auto labels = config->find("Labels"); labels != config->end() && !labels->is_null()) {
    if (!labels->is_object()) return Error{"config/config/Labels", "expected an object"};
    for (const auto& [key, value] : labels->items()) {
      if (!value.is_string()) {
        return Error{"config/config/Labels/" + key, "expected a string"};
      }
      out.labels.emplace_back(key, value.get<std::string>());
    }
  }
  return out;
}

bool is_sha256_digest(std::string_view text) {
  constexpr std::string_view prefix = "sha256:";
  if (text.size() != prefix.size() + 64 || text.substr(0, prefix.size()) != prefix) return false;
  for (const char c : text.substr(prefix.size())) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string sha256_digest(std::string_view content) {
  BlobDigest digest;
  digest.update(std::as_bytes(std::span(content.data(), content.size())));
  return digest.finish();
}

std::string platforms_offered(const Manifest& index) {
  std::string offered;
  for (const IndexEntry& e : index.entries) {
    if (e.platform.os.empty() || e.platform.os == "unknown") continue;
    offered += offered.empty() ? "" : ", ";
    offered += e.platform.str();
  }
  return offered;
}

bool digest_matches(std::string_view digest, std::string_view content) {
  return is_sha256_digest(digest) && sha256_digest(content) == digest;
}

}  // namespace cudagate

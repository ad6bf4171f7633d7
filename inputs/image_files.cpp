// Image stores on disk read for a scan: JSON with nlohmann, layers streamed
// from their files in chunks.
#include "inputs/image_files.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <system_error>
#include <utility>
#include <vector>

#include "inputs/input_files.h"
#include "scan/tar_reader.h"
#include "types/field_path.h"
#include "types/quote.h"

namespace cudagate {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr std::size_t kLayerChunkBytes = 1 << 20;
constexpr std::string_view kDefaultPlatform = "linux/amd64";
// A docker archive's manifest.json names a few images; far more is no such file.
constexpr std::uint64_t kMaxArchiveManifestBytes = std::uint64_t{16} << 20;
constexpr std::string_view kRefAnnotation = "org.opencontainers.image.ref.name";

// The JSON of a file; an Error naming it when unreadable or not JSON.
Expected<json> read_json(const std::string& path, const std::string& shown) {
  auto text = read_input(path);
  if (!text) return Error{shown, text.error().message};
  json value = json::parse(*text, nullptr, false);
  if (value.is_discarded()) return Error{shown, "is not JSON"};
  return value;
}

// Streams `size` bytes of `path` from `offset` into the scanner as one
// layer named `name`.
std::optional<Error> scan_layer_file(const std::string& path, std::uint64_t offset,
                                     std::optional<std::uint64_t> size, const std::string& name,
                                     scan::ImageScanner& scanner) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path, "cannot read"};
  in.seekg(static_cast<std::streamoff>(offset));
  scanner.begin_layer(name);
  std::vector<char> buffer(kLayerChunkBytes);
  std::uint64_t left = size.value_or(UINT64_MAX);
  while (left > 0 && in) {
    in.read(buffer.data(),
            static_cast<std::streamsize>(std::min<std::uint64_t>(kLayerChunkBytes, left)));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got == 0) break;
    left -= got;
    scanner.feed(std::span(reinterpret_cast<const std::byte*>(buffer.data()), got));
  }
  scanner.end_layer();
  if (size && left > 0) return Error{path, "ends before the layer does"};
  return std::nullopt;
}

// "sha256:<64 hex>" (or sha512) as a blob path under a layout; nullopt for
// anything else, so that no digest names a file outside blobs/.
std::optional<std::string> blob_path(const std::string& dir, const std::string& digest) {
  const std::size_t colon = digest.find(':');
  if (colon == std::string::npos) return std::nullopt;
  const std::string algorithm = digest.substr(0, colon);
  const std::string hex = digest.substr(colon + 1);
  const std::size_t want = algorithm == "sha256" ? 64 : algorithm == "sha512" ? 128 : 0;
  if (want == 0 || hex.size() != want) return std::nullopt;
  for (const char c : hex) {
    if ((c < '0' || c > '9') && (c < 'a' || c > 'f')) return std::nullopt;
  }
  return dir + "/blobs/" + algorithm + "/" + hex;
}

// The member `key` of `object` when both are objects; an empty object
// otherwise, so that a store whose JSON has the wrong shape reads as missing
// fields (named in the errors that follow), never as a thrown type error.
const json& object_at(const json& object, std::string_view key) {
  static const json kEmpty = json::object();
  if (!object.is_object()) return kEmpty;
  const auto it = object.find(key);
  return it != object.end() && it->is_object() ? *it : kEmpty;
}

std::string string_at(const json& object, std::string_view key) {
  if (!object.is_object()) return {};
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// "linux/amd64" or "linux/arm64/v8" of a platform object (an index entry's
// or an image config's).
std::string platform_of(const json& object) {
  std::string out = string_at(object, "os") + "/" + string_at(object, "architecture");
  if (const std::string variant = string_at(object, "variant"); !variant.empty()) {
    out += "/" + variant;
  }
  return out == "/" ? std::string() : out;
}

// Whether `have` ("linux/arm64/v8") is what `want` asks ("linux/arm64"
// takes any variant).
bool platform_matches(const std::string& have, std::string_view want) {
  return have == want ||
         (have.starts_with(want) && have.size() > want.size() && have[want.size()] == '/');
}

bool is_index(const std::string& media_type) {
  return media_type == "application/vnd.oci.image.index.v1+json" ||
         media_type == "application/vnd.docker.distribution.manifest.list.v2+json";
}

// The manifest entry of a layout's index.json for `reference`.
Expected<json> pick_reference(const json& index, const std::string& shown,
                              const std::string& reference) {
  const auto manifests = index.find("manifests");
  if (manifests == index.end() || !manifests->is_array() || manifests->empty()) {
    return Error{place(shown, 0, "manifests"), "expected a non-empty list"};
  }
  std::vector<std::string> refs;
  for (const json& entry : *manifests) {
    const std::string ref = string_at(object_at(entry, "annotations"), kRefAnnotation);
    if (!reference.empty() && ref == reference) return entry;
    if (!ref.empty()) refs.push_back(quote(ref));
  }
  if (reference.empty() && manifests->size() == 1) return manifests->front();
  std::string known;
  for (const std::string& ref : refs) known += (known.empty() ? "" : ", ") + ref;
  if (reference.empty()) {
    return Error{shown, "holds " + std::to_string(manifests->size()) +
                            " manifests; name one as DIR:REF (references: " + known + ")"};
  }
  return Error{shown, "has no manifest named " + quote(reference) +
                          (known.empty() ? "" : " (references: " + known + ")")};
}

// The manifest (not an index) that `descriptor` leads to for `platform`.
Expected<std::pair<json, std::string>> resolve_manifest(const std::string& dir, json descriptor,
                                                        const std::string& platform) {
  for (int depth = 0; depth < 4; ++depth) {
    const std::string digest = string_at(descriptor, "digest");
    const auto path = blob_path(dir, digest);
    if (!path) return Error{dir, "a manifest digest that is not one: " + quote(digest)};
    auto manifest = read_json(*path, "blob " + digest);
    if (!manifest) return manifest.error();
    std::string media_type = string_at(descriptor, "mediaType");
    if (media_type.empty()) media_type = string_at(*manifest, "mediaType");
    if (!is_index(media_type) && !manifest->contains("manifests")) {
      return std::pair{std::move(*manifest), digest};
    }
    const auto list = manifest->find("manifests");  // end() for a non-object
    if (list == manifest->end() || !list->is_array()) {
      return Error{place("blob " + digest, 0, "manifests"), "expected a list"};
    }
    const std::string want = platform.empty() ? std::string(kDefaultPlatform) : platform;
    std::optional<json> chosen;
    std::vector<std::string> offered;
    for (const json& entry : *list) {
      const std::string have = platform_of(object_at(entry, "platform"));
      if (platform_matches(have, want)) {
        chosen = entry;
        break;
      }
      if (!have.empty() && have != "unknown/unknown") offered.push_back(have);
    }
    if (!chosen) {
      std::string known;
      for (const std::string& p : offered) known += (known.empty() ? "" : ", ") + p;
      std::string message = "the image index has no manifest for ";
      message += want;
      message += " (it has ";
      message += known;
      message += ")";
      return Error{"blob " + digest, std::move(message)};
    }
    descriptor = std::move(*chosen);
  }
  return Error{dir, "image indexes nested too deep"};
}

// The layers of an image manifest, each scanned from its blob.
std::optional<Error> scan_manifest_layers(const std::string& dir, const json& manifest,
                                          const std::string& digest, scan::ImageScanner& scanner) {
  const auto layers = manifest.find("layers");
  if (layers == manifest.end() || !layers->is_array()) {
    return Error{place("blob " + digest, 0, "layers"), "expected a list"};
  }
  for (std::size_t i = 0; i < layers->size(); ++i) {
    const std::string layer_digest = string_at((*layers)[i], "digest");
    const auto path = blob_path(dir, layer_digest);
    if (!path) {
      return Error{place("blob " + digest, 0, field_path(index_path("layers", i), "digest")),
                   "not a digest: " + quote(layer_digest)};
    }
    const std::string name = "layer " + std::to_string(i + 1) + " " + layer_digest;
    if (auto error = scan_layer_file(*path, 0, std::nullopt, name, scanner)) return error;
  }
  return std::nullopt;
}

// A docker archive's members: where each file's content lies, and the
// content of manifest.json.
struct ArchiveIndex : scan::TarVisitor {
  struct Member {
    std::uint64_t offset = 0;
    std::uint64_t size = 0;
    std::string symlink;  // the member it points to, resolved; "" for a file
  };
  std::map<std::string, Member> members;
  std::string manifest;
  std::uint64_t manifest_size = 0;  // as its tar header says; 0 when there is none
  std::string current;

  bool on_entry(const scan::TarEntry& entry) override {
    if (entry.type == scan::TarEntry::Type::file) {
      members[entry.path] = Member{entry.content_offset, entry.size, {}};
      current = entry.path;
      if (entry.path != "manifest.json") return false;
      manifest_size = entry.size;
      return entry.size <= kMaxArchiveManifestBytes;
    }
    if (entry.type == scan::TarEntry::Type::symlink ||
        entry.type == scan::TarEntry::Type::hardlink) {
      std::string target = entry.link;
      if (entry.type == scan::TarEntry::Type::symlink) {
        const std::size_t slash = entry.path.rfind('/');
        const std::string folder = slash == std::string::npos ? "" : entry.path.substr(0, slash);
        target = scan::normalise_member_name(folder.empty() ? target : folder + "/" + target)
                     .value_or("");
      }
      members[entry.path] = Member{0, 0, target};
    }
    return false;
  }
  void on_content(std::span<const std::byte> piece) override {
    manifest.append(reinterpret_cast<const char*>(piece.data()), piece.size());
  }
  void on_entry_end() override {}
  void on_problem(const Error&) override {}

  const Member* find(std::string path) const {
    for (int hops = 0; hops < 8; ++hops) {
      const auto it = members.find(path);
      if (it == members.end()) return nullptr;
      if (it->second.symlink.empty()) return &it->second;
      path = it->second.symlink;
    }
    return nullptr;
  }
};

}  // namespace

Expected<ScannedImage> scan_oci_layout(const std::string& dir, const std::string& reference,
                                       const std::string& platform,
                                       const scan::ImageScanLimits& limits) {
  ScannedImage out;
  out.source = "oci-layout";
  out.location = reference.empty() ? dir : dir + ":" + reference;
  auto layout = read_json(dir + "/oci-layout", dir + "/oci-layout");
  if (!layout) return layout.error();
  if (string_at(*layout, "imageLayoutVersion").empty()) {
    return Error{dir + "/oci-layout: imageLayoutVersion", "is required"};
  }
  auto index = read_json(dir + "/index.json", dir + "/index.json");
  if (!index) return index.error();
  auto descriptor = pick_reference(*index, dir + "/index.json", reference);
  if (!descriptor) return descriptor.error();
  auto manifest = resolve_manifest(dir, std::move(*descriptor), platform);
  if (!manifest) return manifest.error();
  out.digest = manifest->second;
  const std::string config_digest = string_at(object_at(manifest->first, "config"), "digest");
  if (const auto config_path = blob_path(dir, config_digest)) {
    if (auto config = read_json(*config_path, "blob " + config_digest)) {
      out.platform = platform_of(*config);
    }
  }
  scan::ImageScanner scanner(limits);
  if (auto error = scan_manifest_layers(dir, manifest->first, out.digest, scanner)) return *error;
  out.scan = scanner.finish();
  return out;
}

Expected<ScannedImage> scan_docker_archive(const std::string& file, const std::string& platform,
                                           const scan::ImageScanLimits& limits) {
  ScannedImage out;
  out.source = "docker-archive";
  out.location = file;
  ArchiveIndex archive;
  {
    std::ifstream in(file, std::ios::binary);
    if (!in) return Error{display_name(file), "cannot read"};
    scan::TarReader tar(archive);
    std::vector<char> buffer(kLayerChunkBytes);
    while (in) {
      in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      const auto got = static_cast<std::size_t>(in.gcount());
      if (got == 0) break;
      if (auto error =
              tar.feed(std::span(reinterpret_cast<const std::byte*>(buffer.data()), got))) {
        return error->within(file);
      }
    }
    if (auto error = tar.finish()) return error->within(file);
  }
  if (archive.manifest_size > kMaxArchiveManifestBytes) {
    return Error{file + ": manifest.json", "is " + std::to_string(archive.manifest_size) +
                                               " bytes, over the limit of " +
                                               std::to_string(kMaxArchiveManifestBytes)};
  }
  if (archive.manifest.empty()) return Error{file, "has no manifest.json; not a docker archive"};
  const json manifest = json::parse(archive.manifest, nullptr, false);
  const std::string shown = file + ": manifest.json";
  if (manifest.is_discarded() || !manifest.is_array() || manifest.empty() ||
      !manifest[0].is_object()) {
    return Error{shown, "expected a list of images"};
  }
  const json& image = manifest[0];
  // The config: platform, and its digest as the image's ID.
  const std::string config_name = string_at(image, "Config");
  if (const auto* config = archive.find(config_name)) {
    std::ifstream in(file, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(config->offset));
    std::string text(static_cast<std::size_t>(std::min<std::uint64_t>(config->size, 1 << 24)),
                     '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    const json config_json = json::parse(text, nullptr, false);
    if (!config_json.is_discarded()) out.platform = platform_of(config_json);
  }
  if (!platform.empty() && !out.platform.empty() && !platform_matches(out.platform, platform)) {
    return Error{shown, "the image is for " + out.platform + ", not " + platform};
  }
  const auto layers = image.find("Layers");
  if (layers == image.end() || !layers->is_array()) {
    return Error{place(shown, 0, "[0].Layers"), "expected a list"};
  }
  scan::ImageScanner scanner(limits);
  for (std::size_t i = 0; i < layers->size(); ++i) {
    const std::string name = (*layers)[i].is_string() ? (*layers)[i].get<std::string>() : "";
    const auto* member = archive.find(name);
    if (member == nullptr) {
      return Error{place(shown, 0, index_path("[0].Layers", i)),
                   "names no file of the archive: " + quote(name)};
    }
    const std::string layer = "layer " + std::to_string(i + 1) + " " + name;
    if (auto error = scan_layer_file(file, member->offset, member->size, layer, scanner)) {
      return *error;
    }
  }
  out.scan = scanner.finish();
  return out;
}

Expected<ScannedImage> scan_rootfs(const std::string& dir, const scan::ImageScanLimits& limits) {
  ScannedImage out;
  out.source = "rootfs";
  out.location = dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Error{dir, "is not a directory"};
  scan::ImageScanner scanner(limits);
  scanner.begin_layer("rootfs " + dir);
  std::vector<std::pair<std::string, fs::path>> files;
  for (auto it =
           fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->is_symlink(ec)) continue;
    files.emplace_back(fs::relative(it->path(), dir, ec).generic_string(), it->path());
  }
  if (ec) scanner.add_problem(Error{"", "cannot list every file: " + ec.message()});
  std::sort(files.begin(), files.end());
  std::vector<char> content;
  for (const auto& [relative, path] : files) {
    std::ifstream in(path, std::ios::binary);
    std::array<char, 4> head{};
    in.read(head.data(), head.size());
    if (!in && in.gcount() == 0 && fs::file_size(path, ec) > 0) {
      scanner.add_problem(Error{relative, "cannot read"});
      continue;
    }
    const auto head_bytes = std::span(reinterpret_cast<const std::byte*>(head.data()),
                                      static_cast<std::size_t>(in.gcount()));
    if (!scan::needs_content(relative, head_bytes)) {
      scanner.add_file(relative, std::nullopt);
      continue;
    }
    const std::uint64_t size = fs::file_size(path, ec);
    if (ec || size > limits.max_file_bytes) {
      scanner.add_problem(
          Error{relative, "an ELF file of " + std::to_string(size) + " bytes, over the limit of " +
                              std::to_string(limits.max_file_bytes) + "; not read"});
      continue;
    }
    content.resize(static_cast<std::size_t>(size));
    in.clear();
    in.seekg(0);
    in.read(content.data(), static_cast<std::streamsize>(size));
    scanner.add_file(relative, std::span(reinterpret_cast<const std::byte*>(content.data()),
                                         static_cast<std::size_t>(in.gcount())));
  }
  scanner.end_layer();
  out.scan = scanner.finish();
  return out;
}

}  // namespace cudagate

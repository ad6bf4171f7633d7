// Parsing the policy file (YAML or JSON) with errors naming the file, the line and the field,
// and the glob matching and catalog lookup that policy entries use.
#include "policy/config/policy.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "compat-db/compat_db.h"
#include "policy/image/image_ref.h"
#include "policy/image/requirement.h"
#include "types/duration.h"
#include "types/field_path.h"
#include "types/quote.h"
#include "types/version.h"

namespace cudagate {
namespace {

constexpr std::string_view kApiVersion = "cudagate.io/v1alpha1";
constexpr std::string_view kKind = "Policy";
// Reads one policy document. Each reader method returns an error naming the
// file, the line and the field path; the first error ends the parse.
class PolicyReader {
 public:
  PolicyReader(std::string_view source, const CompatDb& db) : source_(source), db_(db) {}

  Expected<Policy> read(const YAML::Node& root) {
    Policy policy;
    if (!root || root.IsNull()) return policy;
    if (!root.IsMap()) {
      return fail(root, "", "expected a Policy mapping (apiVersion, kind, mode, ...)");
    }
    const auto fields = {"apiVersion",
                         "kind",
                         "mode",
                         "mutate",
                         "partial",
                         "unknownImage",
                         "unknownNode",
                         "noCandidates",
                         "onError",
                         "minorVersionCompatibility",
                         "archMatch",
                         "archListReading",
                         "toolkitMode",
                         "allowPodOptOut",
                         "excludeNamespaces",
                         "gpuResources",
                         "draDeviceClasses",
                         "images",
                         "nodePools",
                         "registry",
                         "scan"};
    std::optional<Error> err = for_each_field(
        root, "", fields,
        [&](const std::string& key, const YAML::Node& value,
            const std::string& path) -> std::optional<Error> {
          if (key == "apiVersion") return expect_constant(value, path, kApiVersion);
          if (key == "kind") return expect_constant(value, path, kKind);
          if (key == "mode") {
            return read_enum<Mode>(
                value, path,
                {{"enforce", Mode::enforce}, {"warn", Mode::warn}, {"dryrun", Mode::dryrun}},
                policy.mode);
          }
          if (key == "mutate") return read_bool(value, path, policy.mutate);
          if (key == "partial") {
            return read_enum<PartialAction>(
                value, path, {{"deny", PartialAction::deny}, {"warn", PartialAction::warn}},
                policy.partial);
          }
          if (key == "unknownImage") return read_action(value, path, policy.unknown_image);
          if (key == "unknownNode") return read_action(value, path, policy.unknown_node);
          if (key == "noCandidates") return read_action(value, path, policy.no_candidates);
          if (key == "onError") {
            // "warn" has no meaning for an evaluation that produced no findings.
            return read_enum<Action>(
                value, path, {{"allow", Action::allow}, {"deny", Action::deny}}, policy.on_error);
          }
          if (key == "minorVersionCompatibility") {
            return read_bool(value, path, policy.minor_version_compatibility);
          }
          if (key == "archMatch") {
            return read_enum<ArchMatch>(value, path,
                                        {{"cuda", ArchMatch::cuda}, {"exact", ArchMatch::exact}},
                                        policy.arch_match);
          }
          if (key == "archListReading") {
            return read_enum<ArchListReading>(value, path,
                                              {{"cpp-extension", ArchListReading::cpp_extension},
                                               {"cmake", ArchListReading::cmake}},
                                              policy.arch_list_reading);
          }
          if (key == "toolkitMode") {
            return read_enum<ToolkitMode>(
                value, path, {{"legacy", ToolkitMode::legacy}, {"cdi", ToolkitMode::cdi}},
                policy.toolkit_mode);
          }
          if (key == "allowPodOptOut") return read_bool(value, path, policy.allow_pod_opt_out);
          if (key == "excludeNamespaces") {
            return read_string_list(value, path, policy.exclude_namespaces);
          }
          if (key == "gpuResources") return read_string_list(value, path, policy.gpu_resources);
          if (key == "draDeviceClasses") {
            return read_string_list(value, path, policy.dra_device_classes);
          }
          if (key == "images") return read_images(value, path, policy.images);
          if (key == "nodePools") return read_node_pools(value, path, policy.node_pools);
          if (key == "registry") return read_registry(value, path, policy.registry);
          if (key == "scan") return read_scan(value, path, policy);
          return std::nullopt;
        });
    if (err) return *err;
    return policy;
  }

  Error fail(const YAML::Node& node, const std::string& path, std::string message) const {
    return Error{place(node, path), std::move(message)};
  }

  Error fail_at_line(int line, const std::string& path, std::string message) const {
    return Error{cudagate::place(source_, line, path), std::move(message)};
  }

 private:
  using FieldFn = std::function<std::optional<Error>(const std::string&, const YAML::Node&,
                                                     const std::string&)>;

  std::string place(const YAML::Node& node, const std::string& path) const {
    return fail_at_line(line_of(node), path, "").where;
  }

  // 1-based line of a node; values that are null have no mark of their own,
  // so they report the line of the last key read.
  int line_of(const YAML::Node& node) const {
    if (node) {
      const int line = node.Mark().line;
      if (line >= 0) return line + 1;
    }
    return last_line_;
  }

  // Calls `fn` for each field of `map`, rejecting unknown and repeated keys.
  std::optional<Error> for_each_field(const YAML::Node& map, const std::string& path,
                                      std::initializer_list<const char*> known, const FieldFn& fn) {
    std::set<std::string> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
      // yaml-cpp's iterator yields temporaries: hold copies (handles).
      const auto entry = *it;
      const YAML::Node key_node = entry.first;
      last_line_ = line_of(key_node);
      if (!key_node.IsScalar()) return fail(key_node, path, "expected a field name");
      const std::string& key = key_node.Scalar();
      const std::string field = field_path(path, key);
      if (std::find_if(known.begin(), known.end(), [&](const char* k) { return key == k; }) ==
          known.end()) {
        std::string expected;
        for (const char* k : known) {
          if (!expected.empty()) expected += ", ";
          expected += k;
        }
        return fail(key_node, field, "unknown field (expected one of " + expected + ")");
      }
      if (!seen.insert(key).second) return fail(key_node, field, "field given twice");
      const YAML::Node value = entry.second;
      if (!value || value.IsNull()) continue;  // null: keep the default
      if (auto err = fn(key, value, field)) return err;
    }
    return std::nullopt;
  }

  std::optional<Error> read_scalar(const YAML::Node& node, const std::string& path,
                                   std::string& out) const {
    if (!node.IsScalar()) return fail(node, path, "expected a string");
    out = node.Scalar();
    return std::nullopt;
  }

  std::optional<Error> expect_constant(const YAML::Node& node, const std::string& path,
                                       std::string_view expected) const {
    std::string text;
    if (auto err = read_scalar(node, path, text)) return err;
    if (text != expected) {
      return fail(node, path, "expected " + quote(expected) + ", got " + quote(text));
    }
    return std::nullopt;
  }

  template <class T>
  std::optional<Error> read_enum(const YAML::Node& node, const std::string& path,
                                 std::initializer_list<std::pair<std::string_view, T>> choices,
                                 T& out) const {
    std::string names;
    for (const auto& [name, value] : choices) {
      if (!names.empty()) names += ", ";
      names += name;
    }
    if (!node.IsScalar()) return fail(node, path, "expected one of " + names);
    const std::string& text = node.Scalar();
    for (const auto& [name, value] : choices) {
      if (text == name) {
        out = value;
        return std::nullopt;
      }
    }
    return fail(node, path, "expected one of " + names + ", got " + quote(text));
  }

  std::optional<Error> read_action(const YAML::Node& node, const std::string& path,
                                   Action& out) const {
    return read_enum<Action>(
        node, path, {{"allow", Action::allow}, {"warn", Action::warn}, {"deny", Action::deny}},
        out);
  }

  // YAML 1.2 core-schema booleans, unquoted. A quoted "true" is a string, and
  // yes/no/on/off are YAML 1.1 spellings Kubernetes does not read as booleans.
  std::optional<Error> read_bool(const YAML::Node& node, const std::string& path, bool& out) const {
    if (node.IsScalar() && node.Tag() != "!") {
      const std::string& text = node.Scalar();
      if (text == "true" || text == "True" || text == "TRUE") {
        out = true;
        return std::nullopt;
      }
      if (text == "false" || text == "False" || text == "FALSE") {
        out = false;
        return std::nullopt;
      }
    }
    if (node.IsScalar()) {
      return fail(node, path, "expected true or false, got " + quote(node.Scalar()));
    }
    return fail(node, path, "expected true or false");
  }

  std::optional<Error> read_string_list(const YAML::Node& node, const std::string& path,
                                        std::vector<std::string>& out) const {
    if (!node.IsSequence()) return fail(node, path, "expected a list of strings");
    std::vector<std::string> items;
    std::size_t index = 0;
    for (const YAML::Node& item : node) {
      const std::string item_path = index_path(path, index++);
      std::string text;
      if (!item || item.IsNull() || !item.IsScalar()) {
        return fail(item, item_path, "expected a non-empty string");
      }
      text = item.Scalar();
      if (text.empty()) return fail(item, item_path, "expected a non-empty string");
      items.push_back(std::move(text));
    }
    out = std::move(items);
    return std::nullopt;
  }

  std::optional<Error> read_duration(const YAML::Node& node, const std::string& path,
                                     std::chrono::milliseconds& out) const {
    std::string text;
    if (!node.IsScalar()) return fail(node, path, "expected a duration like 2s, 500ms, 10m or 1h");
    text = node.Scalar();
    const auto parsed = parse_duration(text);
    if (!parsed) {
      return fail(node, path, "expected a duration like 2s, 500ms, 10m or 1h, got " + quote(text));
    }
    out = *parsed;
    return std::nullopt;
  }

  std::optional<Error> read_images(const YAML::Node& node, const std::string& path,
                                   std::vector<CatalogEntry>& out) {
    if (!node.IsSequence()) {
      return fail(node, path, "expected a list of catalog entries (match, cudaVersion, ...)");
    }
    std::vector<CatalogEntry> entries;
    std::size_t index = 0;
    for (const YAML::Node& item : node) {
      const std::string item_path = index_path(path, index++);
      if (!item.IsMap()) {
        return fail(item, item_path,
                    "expected a catalog entry with match and cudaVersion, archList or requireCuda");
      }
      const int entry_line = line_of(item);
      CatalogEntry entry;
      bool has_match = false;
      auto err = for_each_field(
          item, item_path, {"match", "cudaVersion", "archList", "requireCuda"},
          [&](const std::string& key, const YAML::Node& value,
              const std::string& field) -> std::optional<Error> {
            std::string text;
            if (auto e = read_scalar(value, field, text)) return e;
            if (key == "match") {
              if (text.empty()) return fail(value, field, "expected a non-empty image pattern");
              entry.match = text;
              has_match = true;
            } else if (key == "cudaVersion") {
              if (auto v = CudaVersion::parse(text); !v) {
                return fail(value, field, v.error().str());
              }
              entry.cuda_version = text;
            } else if (key == "archList") {
              if (auto v = parse_torch_arch_list(text, db_); !v) {
                return fail(value, field, v.error().str());
              }
              entry.arch_list = text;
            } else if (key == "requireCuda") {
              // A node meets an invalid term only where evaluation reaches
              // it; the person writing the catalog is told of any.
              const Requirement v = parse_requirement("NVIDIA_REQUIRE_CUDA", text);
              if (const RequireTerm* invalid = v.first_invalid()) {
                return fail(value, field, "NVIDIA_REQUIRE_CUDA: " + invalid->error);
              }
              if (v.alternatives.empty()) {
                return fail(value, field, "expected an NVIDIA_REQUIRE_CUDA value like cuda>=12.4");
              }
              entry.require_cuda = text;
            }
            return std::nullopt;
          });
      if (err) return err;
      if (!has_match) {
        return fail_at_line(entry_line, item_path + ".match",
                            "missing: each catalog entry needs an image pattern");
      }
      if (!entry.cuda_version && !entry.arch_list && !entry.require_cuda) {
        return fail_at_line(entry_line, item_path,
                            "declares nothing: expected at least one of cudaVersion, archList, "
                            "requireCuda");
      }
      entries.push_back(std::move(entry));
    }
    out = std::move(entries);
    return std::nullopt;
  }

  // nodePools: node groups the cluster's autoscaler launches nodes of, as
  // policy/objects/node_pool.h's NodePool (source policy).
  std::optional<Error> read_node_pools(const YAML::Node& node, const std::string& path,
                                       std::vector<NodePool>& out) {
    if (!node.IsSequence()) {
      return fail(node, path, "expected a list of node pools (name, labels, gpuProduct, ...)");
    }
    std::vector<NodePool> pools;
    std::size_t index = 0;
    for (const YAML::Node& item : node) {
      const std::string item_path = index_path(path, index++);
      if (!item.IsMap()) return fail(item, item_path, "expected a node pool with name and labels");
      const int entry_line = line_of(item);
      NodePool pool;
      pool.source = NodePool::Source::policy;
      pool.where = fail_at_line(entry_line, item_path, "").where;
      auto err = for_each_field(
          item, item_path,
          {"name", "labels", "taints", "gpuProduct", "gpus", "gpuResource", "driverVersion"},
          [&](const std::string& key, const YAML::Node& value,
              const std::string& field) -> std::optional<Error> {
            if (key == "labels") return read_labels(value, field, pool.labels);
            if (key == "taints") return read_taints(value, field, pool.taints);
            if (key == "gpus") {
              const std::string text = value.IsScalar() ? value.Scalar() : "";
              const bool digits = !text.empty() && text.size() <= 4 &&
                                  std::all_of(text.begin(), text.end(),
                                              [](char c) { return c >= '0' && c <= '9'; });
              pool.gpus = digits ? std::stoll(text) : 0;
              if (pool.gpus < 1) {
                return fail(value, field, "expected the number of GPUs of each node, 1 or more");
              }
              return std::nullopt;
            }
            std::string text;
            if (auto e = read_scalar(value, field, text)) return e;
            if (key == "name") {
              if (text.empty()) return fail(value, field, "expected the pool's name");
              pool.name = text;
            } else if (key == "gpuProduct") {
              pool.product = text;
            } else if (key == "gpuResource") {
              if (text.empty()) return fail(value, field, "expected an extended resource name");
              pool.gpu_resource = text;
            } else if (key == "driverVersion") {
              if (!DriverVersion::parse(text)) {
                return fail(value, field,
                            "expected a driver version such as 570.86.15, got " + quote(text));
              }
              pool.driver = text;
            }
            return std::nullopt;
          });
      if (err) return err;
      if (pool.name.empty()) {
        return fail_at_line(entry_line, item_path + ".name",
                            "missing: each node pool needs a name");
      }
      if (pool.labels.empty()) {
        return fail_at_line(entry_line, item_path + ".labels",
                            "missing: the labels every node of the pool carries, by which a pin "
                            "selects it (cloud.google.com/gke-nodepool: " +
                                pool.name + ")");
      }
      for (const NodePool& other : pools) {
        if (other.name == pool.name) {
          return fail_at_line(entry_line, item_path + ".name",
                              "node pool " + quote(pool.name) + " is declared twice");
        }
      }
      pools.push_back(std::move(pool));
    }
    out = std::move(pools);
    return std::nullopt;
  }

  std::optional<Error> read_labels(const YAML::Node& node, const std::string& path,
                                   KeyValues& out) {
    if (!node.IsMap()) return fail(node, path, "expected a mapping of label keys to values");
    KeyValues labels;
    for (auto it = node.begin(); it != node.end(); ++it) {
      const auto entry = *it;
      const YAML::Node key = entry.first;
      const YAML::Node value = entry.second;
      last_line_ = line_of(key);
      if (!key.IsScalar() || key.Scalar().empty()) return fail(key, path, "expected a label key");
      if (!value || !value.IsScalar()) {
        return fail(value, field_path(path, key.Scalar()), "expected a label value");
      }
      labels.emplace_back(key.Scalar(), value.Scalar());
    }
    std::sort(labels.begin(), labels.end());
    out = std::move(labels);
    return std::nullopt;
  }

  std::optional<Error> read_taints(const YAML::Node& node, const std::string& path,
                                   std::vector<Taint>& out) {
    if (!node.IsSequence()) return fail(node, path, "expected a list of taints (key, effect)");
    std::size_t index = 0;
    for (const YAML::Node& item : node) {
      const std::string item_path = index_path(path, index++);
      if (!item.IsMap()) return fail(item, item_path, "expected a taint with key and effect");
      Taint taint;
      auto err = for_each_field(
          item, item_path, {"key", "value", "effect"},
          [&](const std::string& key, const YAML::Node& value,
              const std::string& field) -> std::optional<Error> {
            std::string text;
            if (auto e = read_scalar(value, field, text)) return e;
            if (key == "key") taint.key = text;
            if (key == "value") taint.value = text;
            if (key == "effect") {
              if (text != "NoSchedule" && text != "PreferNoSchedule" && text != "NoExecute") {
                return fail(value, field,
                            "expected NoSchedule, PreferNoSchedule or "
                            "NoExecute, got " +
                                quote(text));
              }
              taint.effect = text;
            }
            return std::nullopt;
          });
      if (err) return err;
      if (taint.key.empty() || taint.effect.empty()) {
        return fail(item, item_path, "expected a taint with key and effect");
      }
      out.push_back(std::move(taint));
    }
    return std::nullopt;
  }

  // A byte count: digits with an optional binary suffix ("16Gi", "512Mi",
  // "1Ti", "4096"), positive and below 2^62.
  std::optional<Error> read_bytes(const YAML::Node& node, const std::string& path,
                                  std::uint64_t& out) {
    std::string text;
    if (auto e = read_scalar(node, path, text)) return e;
    std::size_t digits = 0;
    while (digits < text.size() && digits < 15 && text[digits] >= '0' && text[digits] <= '9') {
      ++digits;
    }
    const std::string suffix = text.substr(digits);
    int shift = -1;
    for (const auto& [name, bits] :
         {std::pair<const char*, int>{"", 0}, {"Ki", 10}, {"Mi", 20}, {"Gi", 30}, {"Ti", 40}}) {
      if (suffix == name) shift = bits;
    }
    const std::uint64_t value = digits == 0 ? 0 : std::stoull(text.substr(0, digits));
    if (shift < 0 || value == 0 || value > (std::uint64_t{1} << (62 - shift))) {
      return fail(node, path,
                  "expected a positive size in bytes like 16Gi, 512Mi or 4096, got " + quote(text));
    }
    out = value << shift;
    return std::nullopt;
  }

  // scan: {attached, countedFiles, background, maxImageBytes,
  // maxBytesPerHour}; attached is the registry's lookup of attached scans.
  std::optional<Error> read_scan(const YAML::Node& node, const std::string& path, Policy& out) {
    if (!node.IsMap()) return fail(node, path, "expected a mapping (attached, countedFiles, ...)");
    return for_each_field(
        node, path, {"attached", "countedFiles", "background", "maxImageBytes", "maxBytesPerHour"},
        [&](const std::string& key, const YAML::Node& value,
            const std::string& field) -> std::optional<Error> {
          if (key == "attached") return read_bool(value, field, out.registry.scan_attached);
          if (key == "background") return read_bool(value, field, out.scan.background);
          if (key == "maxImageBytes") return read_bytes(value, field, out.scan.max_image_bytes);
          if (key == "maxBytesPerHour") {
            return read_bytes(value, field, out.scan.max_bytes_per_hour);
          }
          if (key == "countedFiles") {
            if (auto e = read_string_list(value, field, out.scan.counted_files)) return e;
            for (std::size_t i = 0; i < out.scan.counted_files.size(); ++i) {
              if (!out.scan.counted_files[i].starts_with('/')) {
                return fail(value[i], index_path(field, i),
                            "expected a glob over a path from the image's root, starting with "
                            "\"/\", got " +
                                quote(out.scan.counted_files[i]));
              }
            }
          }
          return std::nullopt;
        });
  }

  std::optional<Error> read_registry(const YAML::Node& node, const std::string& path,
                                     RegistrySettings& out) {
    if (!node.IsMap()) return fail(node, path, "expected a mapping (enabled, timeout, ...)");
    return for_each_field(
        node, path,
        {"enabled", "timeout", "cacheTTL", "maxCacheEntries", "platform", "credentials", "insecure",
         "caFile", "mirrors"},
        [&](const std::string& key, const YAML::Node& value,
            const std::string& field) -> std::optional<Error> {
          if (key == "enabled") return read_bool(value, field, out.enabled);
          if (key == "timeout") {
            std::chrono::milliseconds d{};
            if (auto e = read_duration(value, field, d)) return e;
            if (d.count() <= 0) {
              return fail(value, field,
                          "expected a positive duration, got " + quote(value.Scalar()));
            }
            out.timeout = d;
            return std::nullopt;
          }
          if (key == "cacheTTL") {
            std::chrono::milliseconds d{};
            if (auto e = read_duration(value, field, d)) return e;
            if (d.count() % 1000 != 0) {
              return fail(value, field,
                          "expected whole seconds like 30s or 10m, got " + quote(value.Scalar()));
            }
            out.cache_ttl = std::chrono::duration_cast<std::chrono::seconds>(d);
            return std::nullopt;
          }
          if (key == "maxCacheEntries") {
            const std::string text = value.IsScalar() ? value.Scalar() : "";
            const bool digits =
                !text.empty() && text.size() <= 9 && value.Tag() != "!" &&
                std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
            const std::size_t n = digits ? std::stoul(text) : 0;
            if (n == 0) {
              return fail(value, field,
                          "expected a positive integer below 1000000000" +
                              (value.IsScalar() ? ", got " + quote(text) : std::string()));
            }
            out.max_cache_entries = n;
            return std::nullopt;
          }
          if (key == "platform") {
            std::string text;
            if (auto e = read_scalar(value, field, text)) return e;
            const auto slash = text.find('/');
            if (slash == std::string::npos || slash == 0 || slash + 1 == text.size() ||
                std::count(text.begin(), text.end(), '/') > 2) {
              return fail(value, field,
                          "expected os/arch[/variant] like linux/amd64, got " + quote(text));
            }
            out.platform = text;
            return std::nullopt;
          }
          if (key == "credentials") return read_scalar(value, field, out.credentials);
          if (key == "caFile") return read_scalar(value, field, out.ca_file);
          if (key == "insecure") return read_string_list(value, field, out.insecure);
          if (key == "mirrors") return read_mirrors(value, field, out.mirrors);
          return std::nullopt;
        });
  }

  std::optional<Error> read_mirrors(const YAML::Node& node, const std::string& path,
                                    std::map<std::string, std::string>& out) {
    if (!node.IsMap()) {
      return fail(node, path,
                  "expected a mapping of registry to mirror (docker.io: mirror.example.com)");
    }
    std::map<std::string, std::string> mirrors;
    for (auto it = node.begin(); it != node.end(); ++it) {
      const auto entry = *it;
      const YAML::Node key = entry.first;
      const YAML::Node value = entry.second;
      last_line_ = line_of(key);
      if (!key.IsScalar() || key.Scalar().empty()) {
        return fail(key, path, "expected a registry host name");
      }
      const std::string& host = key.Scalar();
      const std::string field = field_path(path, host);
      if (!value || !value.IsScalar() || value.Scalar().empty()) {
        return fail(value, field, "expected a mirror host name");
      }
      if (!mirrors.emplace(host, value.Scalar()).second) {
        return fail(key, field, "registry given twice");
      }
    }
    out = std::move(mirrors);
    return std::nullopt;
  }

  std::string_view source_;
  const CompatDb& db_;
  int last_line_ = 0;
};

// Walks the documents of a YAML stream with yaml-cpp's event parser,
// without building nodes. yaml-cpp 0.7 never consumes a stray flow token
// (a ',' where a document's node should start) and then yields the same
// empty document forever, so YAML::LoadAll on ",a: b" never returns. A
// document starting where the previous one started is that loop.
class DocumentScan : public YAML::EventHandler {
 public:
  struct Result {
    int with_content = 0;  // documents that are not empty
    int second_line = 0;   // 1-based line of the second non-empty document
    int stuck_line = -1;   // >= 1 when the parser stopped making progress
  };

  static Result run(const std::string& text) {
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentScan scan;
    Result result;
    std::optional<int> previous_start;
    while (parser.HandleNextDocument(scan)) {
      if (previous_start && *previous_start == scan.start_.pos) {
        result.stuck_line = scan.start_.line + 1;
        return result;
      }
      previous_start = scan.start_.pos;
      if (scan.content_ && ++result.with_content == 2) {
        result.second_line = scan.start_.line + 1;
        return result;
      }
    }
    return result;
  }

  void OnDocumentStart(const YAML::Mark& mark) override {
    start_ = mark;
    content_ = false;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { content_ = true; }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {
    content_ = true;
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    content_ = true;
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    content_ = true;
  }
  void OnMapEnd() override {}

 private:
  YAML::Mark start_;
  bool content_ = false;
};

}  // namespace

bool glob_match(std::string_view pattern, std::string_view text) {
  std::size_t p = 0;
  std::size_t t = 0;
  std::size_t star = std::string_view::npos;
  std::size_t resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = t;
    } else if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      // Let the last '*' swallow one more character and retry from there.
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

const CatalogEntry* Policy::catalog_entry(std::string_view reference) const {
  if (images.empty()) return nullptr;
  std::vector<std::string> forms;
  forms.emplace_back(reference);
  if (auto ref = ImageRef::parse(reference)) {
    forms.push_back(ref->str());
    if (!ref->digest.empty() && !ref->tag.empty()) forms.push_back(ref->name() + ":" + ref->tag);
    forms.push_back(ref->name());
  }
  for (const CatalogEntry& entry : images) {
    for (const std::string& form : forms) {
      if (glob_match(entry.match, form)) return &entry;
    }
  }
  return nullptr;
}

Expected<Policy> parse_policy(std::string_view text, std::string_view source, const CompatDb& db) {
  PolicyReader reader(source, db);
  try {
    const std::string owned(text);
    const DocumentScan::Result scan = DocumentScan::run(owned);
    if (scan.stuck_line >= 0) {
      return reader.fail_at_line(scan.stuck_line, "",
                                 "invalid YAML: unexpected ',' or flow indicator where a value "
                                 "should start");
    }
    if (scan.with_content > 1) {
      return reader.fail_at_line(scan.second_line, "",
                                 "expected one policy document, found more than one");
    }
    // Safe now: the scan saw the stream end. A trailing "---" or a
    // comment-only document is empty, not a second policy.
    for (const YAML::Node& document : YAML::LoadAll(owned)) {
      if (document && !document.IsNull()) return reader.read(document);
    }
    return Policy{};
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's own message for its depth limit is "bad file".
    return reader.fail_at_line(e.mark.line >= 0 ? e.mark.line + 1 : 0, "",
                               "invalid YAML: nesting too deep");
  } catch (const YAML::Exception& e) {
    // yaml-cpp's messages are lower-case phrases ("end of map not found").
    return reader.fail_at_line(e.mark.line >= 0 ? e.mark.line + 1 : 0, "",
                               "invalid YAML: " + e.msg);
  } catch (const std::exception& e) {
    return reader.fail_at_line(0, "", std::string("cannot read the policy: ") + e.what());
  }
}

std::string_view to_string(Mode mode) {
  switch (mode) {
    case Mode::enforce:
      return "enforce";
    case Mode::warn:
      return "warn";
    case Mode::dryrun:
      return "dryrun";
  }
  return "enforce";
}

std::optional<Mode> parse_mode(std::string_view text) {
  if (text == "enforce") return Mode::enforce;
  if (text == "warn") return Mode::warn;
  if (text == "dryrun") return Mode::dryrun;
  return std::nullopt;
}

}  // namespace cudagate

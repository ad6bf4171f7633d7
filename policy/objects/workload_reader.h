#pragma once
// The one mapping from a Kubernetes object to workload facts (pod.h),
// written over policy/objects/json_view.h so that nlohmann::json (files, YAML, the
// CLI) and the webhook's fast parser share every field rule and every error
// message. pod.cpp instantiates it for nlohmann::json (workload_from_json);
// the admission layer for its parser.
//
// Field paths are built only when an error names one, so that reading a
// valid pod allocates nothing but the facts themselves.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/objects/json_view.h"
#include "policy/objects/pod.h"
#include "types/expected.h"
#include "types/quote.h"

namespace cudagate {

// How much of a workload to keep. Every field is checked either way, so the
// errors are the same; a caller that reads only some environment variables
// (the admission path: those metadata resolution reads) keeps only those.
struct WorkloadReadOptions {
  // Keep the container env entries whose name this accepts; null keeps all.
  bool (*keep_env)(std::string_view name) = nullptr;
  // The kind of an object that names none: an AdmissionReview's
  // request.kind, which the API server's own decoding would have used.
  // Empty: `kind` is required.
  std::string_view default_kind;
};

namespace workload_reader {

// A JSON field path as a chain of stack frames: "spec" -> "containers" -> [1].
// Rendered only for an error, with document.h's field_path/index_path rules.
class Path {
 public:
  // The root: `base` is the rendered path of the object ("" at the top).
  explicit Path(std::string_view base) : base_(base) {}
  Path(const Path& parent, std::string_view key) : parent_(&parent), key_(key) {}
  Path(const Path& parent, std::size_t index) : parent_(&parent), index_(index), is_index_(true) {}

  [[nodiscard]] Path field(std::string_view key) const { return Path(*this, key); }
  [[nodiscard]] Path at(std::size_t index) const { return Path(*this, index); }

  [[nodiscard]] std::string str() const {
    std::string out;
    render(out);
    return out;
  }

 private:
  void render(std::string& out) const {
    if (parent_ == nullptr) {
      out.append(base_);
      return;
    }
    parent_->render(out);
    if (is_index_) {
      out += '[';
      out += std::to_string(index_);
      out += ']';
    } else {
      if (!out.empty()) out += '.';
      out.append(key_);
    }
  }

  const Path* parent_ = nullptr;
  std::string_view base_;
  std::string_view key_;
  std::size_t index_ = 0;
  bool is_index_ = false;
};
template <JsonView V>
Error type_mismatch(const Path& path, std::string_view expected, const V& got) {
  return Error{path.str(), view_type_error(expected, got)};
}

// The member `key` (found as `v`) when of the wanted kind; an absent view
// when missing or null; an error naming the member otherwise. The *_member
// forms look the member up in `object` first.
template <JsonView V>
Expected<V> object_value(const V& v, std::string_view key, const Path& path) {
  if (!v.valid() || v.is_null()) return V();
  if (!v.is_object()) return type_mismatch(path.field(key), "an object", v);
  return v;
}
template <JsonView V>
Expected<V> object_member(const V& object, std::string_view key, const Path& path) {
  return object_value(object.find(key), key, path);
}
template <JsonView V>
Expected<V> array_value(const V& v, std::string_view key, const Path& path) {
  if (!v.valid() || v.is_null()) return V();
  if (!v.is_array()) return type_mismatch(path.field(key), "a list", v);
  return v;
}
// A string member: "" when missing or null (or "is required").
template <JsonView V>
Expected<std::string_view> string_value(const V& v, std::string_view key, const Path& path,
                                        bool required) {
  if (!v.valid() || v.is_null()) {
    if (required) return Error{path.field(key).str(), "is required"};
    return std::string_view();
  }
  if (!v.is_string()) return type_mismatch(path.field(key), "a string", v);
  return v.string();
}
template <JsonView V>
Expected<std::string_view> string_member(const V& object, std::string_view key, const Path& path,
                                         bool required) {
  return string_value(object.find(key), key, path, required);
}

// An object of strings (`key` of `value`), as (key, value) pairs in key
// order, each key once; a value of another type is an error naming it, unless
// `may_leave_out(key)`, when the entry is left out.
template <JsonView V, class MayLeaveOut>
Expected<std::vector<std::pair<std::string, std::string>>> string_map_of(
    const V& value, std::string_view key, const Path& path, MayLeaveOut&& may_leave_out) {
  auto field = object_value(value, key, path);
  if (!field) return field.error();
  std::vector<std::pair<std::string, std::string>> out;
  if (!field->valid()) return out;
  const Path map_path = path.field(key);
  std::optional<Error> error;
  field->for_each_member([&](std::string_view k, const V& v) {
    if (error) return;
    if (!v.is_string()) {
      if (!may_leave_out(k)) error = type_mismatch(map_path.field(k), "a string", v);
      return;
    }
    out.emplace_back(std::string(k), std::string(v.string()));
  });
  if (error) return *error;
  return out;
}

template <JsonView V>
Expected<std::vector<std::pair<std::string, std::string>>> string_map(const V& value,
                                                                      std::string_view key,
                                                                      const Path& path) {
  return string_map_of(value, key, path, [](std::string_view) { return false; });
}

// Annotations (`key` of `value`): a value of another type is left out unless
// its key is one of cudagate's ("cudagate.io/..."), the only ones a decision
// reads. What else is in metadata.annotations is the API server's to
// validate, not ours.
template <JsonView V>
Expected<std::vector<std::pair<std::string, std::string>>> annotation_map(const V& value,
                                                                          std::string_view key,
                                                                          const Path& path) {
  return string_map_of(value, key, path,
                       [](std::string_view k) { return !k.starts_with("cudagate.io/"); });
}

template <JsonView V>
Expected<std::vector<std::string>> string_list(const V& value, std::string_view key,
                                               const Path& path) {
  auto field = array_value(value, key, path);
  if (!field) return field.error();
  std::vector<std::string> out;
  if (!field->valid()) return out;
  const Path list_path = path.field(key);
  std::optional<Error> error;
  out.reserve(field->size());
  field->for_each_element([&](std::size_t i, const V& v) {
    if (error) return;
    if (!v.is_string()) {
      error = type_mismatch(list_path.at(i), "a string", v);
      return;
    }
    out.emplace_back(v.string());
  });
  if (error) return *error;
  return out;
}

// The list `key` (found as `value`), every element of which must be an
// object: checked for all elements before any is read, so that the first
// error is the same whatever reads the elements. An absent view when
// missing or null.
template <JsonView V>
Expected<V> object_list(const V& value, std::string_view key, const Path& path) {
  auto field = array_value(value, key, path);
  if (!field) return field.error();
  if (!field->valid()) return V();
  const Path list_path = path.field(key);
  std::optional<Error> error;
  field->for_each_element([&](std::size_t i, const V& v) {
    if (!error && !v.is_object()) error = type_mismatch(list_path.at(i), "an object", v);
  });
  if (error) return *error;
  return *field;
}

// The members `keys` of `object`, found in one pass where the parser can.
template <JsonView V, std::size_t N>
std::array<V, N> members(const V& object, const std::array<std::string_view, N>& keys) {
  std::array<V, N> out;
  object.find_each(keys, out);
  return out;
}

// Calls read(index, element) for each element of an object_list result
// until one fails; returns that error.
template <JsonView V, class F>
std::optional<Error> read_each(const V& list, F&& read) {
  std::optional<Error> error;
  if (!list.valid()) return error;
  list.for_each_element([&](std::size_t i, const V& v) {
    if (!error) error = read(i, v);
  });
  return error;
}

template <JsonView V>
Expected<std::int64_t> count_quantity(const V& value) {
  if (value.is_string()) return parse_count_text(value.string());
  if (value.is_number_unsigned()) {
    const std::uint64_t v = value.as_unsigned();
    if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return Error{"", "quantity " + view_dump_number(value) + " is too large"};
    }
    return static_cast<std::int64_t>(v);
  }
  if (value.is_number_integer()) {
    const std::int64_t v = value.as_integer();
    if (v < 0) return Error{"", "must not be negative, got " + std::to_string(v)};
    return v;
  }
  if (value.is_number_float()) {
    const double v = value.as_float();
    if (!std::isfinite(v) || v != std::floor(v)) {
      return Error{"", "expected an integer, got " + view_dump_number(value)};
    }
    if (v < 0) return Error{"", "must not be negative, got " + view_dump_number(value)};
    if (v >= 9.2e18) return Error{"", "quantity " + view_dump_number(value) + " is too large"};
    return static_cast<std::int64_t>(v);
  }
  return Error{"", view_type_error("an integer", value)};
}

template <JsonView V>
std::optional<Error> read_env(const V& env, const Path& path, std::vector<EnvVar>& out,
                              const WorkloadReadOptions& options) {
  auto items = object_list(env, "env", path);
  if (!items) return items.error();
  const Path env_path = path.field("env");
  if (items->valid() && options.keep_env == nullptr) out.reserve(items->size());
  static constexpr std::array<std::string_view, 3> kKeys = {"name", "value", "valueFrom"};
  return read_each(*items, [&](std::size_t i, const V& item) -> std::optional<Error> {
    const Path item_path = env_path.at(i);
    const auto [name_v, value_v, from] = members(item, kKeys);
    auto name = string_value(name_v, "name", item_path, true);
    if (!name) return name.error();
    const bool keep = options.keep_env == nullptr || options.keep_env(*name);
    std::optional<std::string_view> value;
    if (!from.valid() || from.is_null()) {
      // An entry without value is the empty string for the runtime.
      auto text = string_value(value_v, "value", item_path, false);
      if (!text) return text.error();
      value = *text;
    } else if (!from.is_object()) {
      return type_mismatch(item_path.field("valueFrom"), "an object", from);
    }
    if (keep) {
      out.push_back(EnvVar{std::string(*name), value
                                                   ? std::optional<std::string>(std::string(*value))
                                                   : std::optional<std::string>()});
    }
    return std::nullopt;
  });
}

// resources.claims: {name, request} objects.
template <JsonView V>
std::optional<Error> read_container_claims(const V& value, const Path& path,
                                           std::vector<ContainerClaim>& out) {
  auto items = object_list(value, "claims", path);
  if (!items) return items.error();
  const Path list_path = path.field("claims");
  return read_each(*items, [&](std::size_t i, const V& item) -> std::optional<Error> {
    static constexpr std::array<std::string_view, 2> kKeys = {"name", "request"};
    const auto [name_v, request_v] = members(item, kKeys);
    const Path at = list_path.at(i);
    auto name = string_value(name_v, "name", at, true);
    if (!name) return name.error();
    auto request = string_value(request_v, "request", at, false);
    if (!request) return request.error();
    out.push_back(ContainerClaim{std::string(*name), std::string(*request)});
    return std::nullopt;
  });
}

// spec.resourceClaims: {name, resourceClaimName | resourceClaimTemplateName}.
template <JsonView V>
Expected<std::vector<PodClaim>> read_pod_claims(const V& value, const Path& path) {
  std::vector<PodClaim> out;
  auto items = object_list(value, "resourceClaims", path);
  if (!items) return items.error();
  const Path list_path = path.field("resourceClaims");
  auto error = read_each(*items, [&](std::size_t i, const V& item) -> std::optional<Error> {
    static constexpr std::array<std::string_view, 3> kKeys = {"name", "resourceClaimName",
                                                              "resourceClaimTemplateName"};
    const auto [name_v, claim_v, template_v] = members(item, kKeys);
    const Path at = list_path.at(i);
    auto name = string_value(name_v, "name", at, true);
    if (!name) return name.error();
    auto claim = string_value(claim_v, "resourceClaimName", at, false);
    if (!claim) return claim.error();
    auto from_template = string_value(template_v, "resourceClaimTemplateName", at, false);
    if (!from_template) return from_template.error();
    out.push_back(PodClaim{std::string(*name), std::string(*claim), std::string(*from_template)});
    return std::nullopt;
  });
  if (error) return *error;
  return out;
}

template <JsonView V>
std::optional<Error> read_resources(const V& value, const Path& path,
                                    std::vector<std::pair<std::string, std::int64_t>>& out,
                                    std::vector<ContainerClaim>& claims) {
  auto resources = object_value(value, "resources", path);
  if (!resources) return resources.error();
  if (!resources->valid()) return std::nullopt;
  const Path res_path = path.field("resources");
  static constexpr std::array<std::string_view, 3> kKeys = {"requests", "limits", "claims"};
  const auto found = members(*resources, kKeys);
  if (auto e = read_container_claims(found[2], res_path, claims)) return e;
  // Requests first, so that limits (what the device plugin allocates) win.
  for (std::size_t k = 0; k < 2; ++k) {
    const std::string_view section = kKeys[k];
    auto entries = object_value(found[k], section, res_path);
    if (!entries) return entries.error();
    if (!entries->valid()) continue;
    const Path section_path = res_path.field(section);
    std::optional<Error> error;
    entries->for_each_member([&](std::string_view name, const V& quantity) {
      if (error || !is_extended_resource(name)) return;
      auto count = count_quantity(quantity);
      if (!count) {
        error = count.error().within(section_path.field(name).str());
        return;
      }
      const auto it = std::find_if(out.begin(), out.end(),
                                   [&](const auto& entry) { return entry.first == name; });
      if (it != out.end()) {
        it->second = *count;
      } else {
        out.emplace_back(std::string(name), *count);
      }
    });
    if (error) return error;
  }
  std::sort(out.begin(), out.end());
  return std::nullopt;
}

template <JsonView V>
Expected<ContainerSpec> read_container(const V& item, const Path& path, bool init,
                                       const WorkloadReadOptions& options) {
  ContainerSpec c;
  c.init = init;
  static constexpr std::array<std::string_view, 4> kKeys = {"name", "image", "env", "resources"};
  const auto [name_v, image_v, env_v, resources_v] = members(item, kKeys);
  auto name = string_value(name_v, "name", path, true);
  if (!name) return name.error();
  c.name = std::string(*name);
  // Pod templates may leave the image to be filled in later; pods may not,
  // but the API server checks that, not cudagate.
  auto image = string_value(image_v, "image", path, false);
  if (!image) return image.error();
  c.image = std::string(*image);
  if (auto e = read_env(env_v, path, c.env, options)) return *e;
  if (auto e = read_resources(resources_v, path, c.resources, c.claims)) return *e;
  return c;
}

template <JsonView V>
Expected<std::vector<NodeSelectorRequirement>> read_requirements(const V& term,
                                                                 std::string_view key,
                                                                 const Path& path) {
  auto items = object_list(term.find(key), key, path);
  if (!items) return items.error();
  std::vector<NodeSelectorRequirement> out;
  const Path list_path = path.field(key);
  static constexpr std::array<std::string_view, 3> kKeys = {"key", "operator", "values"};
  auto error = read_each(*items, [&](std::size_t i, const V& item) -> std::optional<Error> {
    const Path item_path = list_path.at(i);
    const auto [key_v, op_v, values_v] = members(item, kKeys);
    // Operators and values are checked where the term is matched, as the
    // scheduler does: a bad term matches no node rather than failing the pod.
    auto k = string_value(key_v, "key", item_path, false);
    if (!k) return k.error();
    auto op = string_value(op_v, "operator", item_path, false);
    if (!op) return op.error();
    auto values = string_list(values_v, "values", item_path);
    if (!values) return values.error();
    out.push_back(NodeSelectorRequirement{std::string(*k), std::string(*op), std::move(*values)});
    return std::nullopt;
  });
  if (error) return *error;
  return out;
}

template <JsonView V>
Expected<std::optional<std::vector<NodeSelectorTerm>>> read_required_terms(const V& value,
                                                                           const Path& path) {
  std::optional<std::vector<NodeSelectorTerm>> none;
  auto affinity = object_value(value, "affinity", path);
  if (!affinity) return affinity.error();
  if (!affinity->valid()) return none;
  const Path affinity_path = path.field("affinity");
  auto node_affinity = object_member(*affinity, "nodeAffinity", affinity_path);
  if (!node_affinity) return node_affinity.error();
  if (!node_affinity->valid()) return none;
  const Path node_path = affinity_path.field("nodeAffinity");
  constexpr std::string_view kRequired = "requiredDuringSchedulingIgnoredDuringExecution";
  auto required = object_member(*node_affinity, kRequired, node_path);
  if (!required) return required.error();
  if (!required->valid()) return none;
  const Path required_path = node_path.field(kRequired);
  // A required node selector without terms selects no node.
  auto terms = object_list(required->find("nodeSelectorTerms"), "nodeSelectorTerms", required_path);
  if (!terms) return terms.error();
  std::vector<NodeSelectorTerm> out;
  const Path terms_path = required_path.field("nodeSelectorTerms");
  auto error = read_each(*terms, [&](std::size_t i, const V& item) -> std::optional<Error> {
    const Path term_path = terms_path.at(i);
    NodeSelectorTerm term;
    auto expressions = read_requirements(item, "matchExpressions", term_path);
    if (!expressions) return expressions.error();
    term.match_expressions = std::move(*expressions);
    auto fields = read_requirements(item, "matchFields", term_path);
    if (!fields) return fields.error();
    term.match_fields = std::move(*fields);
    out.push_back(std::move(term));
    return std::nullopt;
  });
  if (error) return *error;
  return std::optional<std::vector<NodeSelectorTerm>>(std::move(out));
}

template <JsonView V>
Expected<std::vector<Toleration>> read_tolerations(const V& value, const Path& path) {
  auto items = object_list(value, "tolerations", path);
  if (!items) return items.error();
  std::vector<Toleration> out;
  const Path list_path = path.field("tolerations");
  if (items->valid()) out.reserve(items->size());
  static constexpr std::array<std::string_view, 4> kKeys = {"key", "operator", "value", "effect"};
  auto error = read_each(*items, [&](std::size_t i, const V& item) -> std::optional<Error> {
    const Path item_path = list_path.at(i);
    const auto found = members(item, kKeys);
    Toleration t;
    std::string* targets[] = {&t.key, &t.op, &t.value, &t.effect};
    for (std::size_t k = 0; k < kKeys.size(); ++k) {
      auto v = string_value(found[k], kKeys[k], item_path, false);
      if (!v) return v.error();
      *targets[k] = std::string(*v);
    }
    out.push_back(std::move(t));
    return std::nullopt;
  });
  if (error) return *error;
  return out;
}

template <JsonView V>
Expected<PodSpec> read_pod_spec(const V& spec, const Path& path,
                                const WorkloadReadOptions& options) {
  if (!spec.is_object()) return type_mismatch(path, "an object", spec);
  static constexpr std::array<std::string_view, 7> kKeys = {
      "nodeName",       "nodeSelector", "affinity",      "tolerations",
      "initContainers", "containers",   "resourceClaims"};
  const auto found = members(spec, kKeys);
  PodSpec out;
  auto node_name = string_value(found[0], "nodeName", path, false);
  if (!node_name) return node_name.error();
  out.node_name = std::string(*node_name);
  auto selector = string_map(found[1], "nodeSelector", path);
  if (!selector) return selector.error();
  out.node_selector = std::move(*selector);
  auto terms = read_required_terms(found[2], path);
  if (!terms) return terms.error();
  out.required_terms = std::move(*terms);
  auto tolerations = read_tolerations(found[3], path);
  if (!tolerations) return tolerations.error();
  out.tolerations = std::move(*tolerations);
  auto claims = read_pod_claims(found[6], path);
  if (!claims) return claims.error();
  out.resource_claims = std::move(*claims);

  for (std::size_t k = 4; k < 6; ++k) {
    const std::string_view key = kKeys[k];
    const bool init = k == 4;
    auto items = object_list(found[k], key, path);
    if (!items) return items.error();
    const Path list_path = path.field(key);
    auto error = read_each(*items, [&](std::size_t i, const V& item) -> std::optional<Error> {
      auto c = read_container(item, list_path.at(i), init, options);
      if (!c) return c.error();
      out.containers.push_back(std::move(*c));
      return std::nullopt;
    });
    if (error) return *error;
    if (!init && (!items->valid() || items->size() == 0)) {
      return Error{list_path.str(), "a pod needs at least one container"};
    }
  }
  return out;
}

// What the DaemonSet controller adds to every daemon pod
// (AddOrUpdateDaemonPodTolerations), so that daemons run on cordoned nodes
// and nodes under pressure.
template <JsonView V>
void add_daemon_tolerations(const V& spec, std::vector<Toleration>& tolerations) {
  std::vector<Toleration> added = {
      {"node.kubernetes.io/not-ready", "Exists", "", "NoExecute"},
      {"node.kubernetes.io/unreachable", "Exists", "", "NoExecute"},
      {"node.kubernetes.io/disk-pressure", "Exists", "", "NoSchedule"},
      {"node.kubernetes.io/memory-pressure", "Exists", "", "NoSchedule"},
      {"node.kubernetes.io/pid-pressure", "Exists", "", "NoSchedule"},
      {"node.kubernetes.io/unschedulable", "Exists", "", "NoSchedule"},
  };
  const V host_network = spec.find("hostNetwork");
  if (host_network.valid() && host_network.is_boolean() && host_network.boolean()) {
    added.push_back({"node.kubernetes.io/network-unavailable", "Exists", "", "NoSchedule"});
  }
  for (auto& t : added) {
    const bool present =
        std::any_of(tolerations.begin(), tolerations.end(), [&](const Toleration& o) {
          return o.key == t.key && o.op == t.op && o.value == t.value && o.effect == t.effect;
        });
    if (!present) tolerations.push_back(std::move(t));
  }
}

struct KindLayout {
  std::string_view kind;
  std::string_view pointer;  // JSON pointer of the pod spec
};

inline constexpr std::array<KindLayout, 7> kLayouts = {{
    {"Pod", "/spec"},
    {"Deployment", "/spec/template/spec"},
    {"ReplicaSet", "/spec/template/spec"},
    {"StatefulSet", "/spec/template/spec"},
    {"DaemonSet", "/spec/template/spec"},
    {"Job", "/spec/template/spec"},
    {"CronJob", "/spec/jobTemplate/spec/template/spec"},
}};

// Walks the pointer's steps, each an object that must be present. `path`
// receives the dotted path of the result ("spec.template.spec").
template <JsonView V>
Expected<V> descend(const V& object, std::string_view pointer, std::string& path) {
  V at = object;
  std::size_t pos = 1;
  while (pos <= pointer.size()) {
    const std::size_t slash = pointer.find('/', pos);
    const std::string_view step =
        pointer.substr(pos, slash == std::string_view::npos ? std::string_view::npos : slash - pos);
    auto next = object_member(at, step, Path(path));
    if (!next) return next.error();
    if (!path.empty()) path += '.';
    path += step;
    if (!next->valid()) return Error{path, "is required"};
    at = *next;
    if (slash == std::string_view::npos) break;
    pos = slash + 1;
  }
  return at;
}

template <JsonView V>
Expected<std::vector<std::pair<std::string, std::string>>> annotations_of(const V& object,
                                                                          const Path& path) {
  auto metadata = object_member(object, "metadata", path);
  if (!metadata) return metadata.error();
  if (!metadata->valid()) return std::vector<std::pair<std::string, std::string>>{};
  return annotation_map(metadata->find("annotations"), "annotations", path.field("metadata"));
}

template <JsonView V>
Expected<Workload> read_workload(const V& object, std::string_view where,
                                 const WorkloadReadOptions& options) {
  const std::string outer(where);
  auto fail = [&](const Error& e) { return e.within(outer); };
  if (!object.is_object()) return fail(Error{"", view_type_error("an object", object)});
  const Path root("");

  Workload w;
  static constexpr std::array<std::string_view, 3> kKeys = {"apiVersion", "kind", "metadata"};
  const auto [api_version_v, kind_v, metadata_v] = members(object, kKeys);
  auto api_version = string_value(api_version_v, "apiVersion", root, false);
  if (!api_version) return fail(api_version.error());
  w.resource.api_version = std::string(*api_version);
  auto kind = string_value(kind_v, "kind", root, options.default_kind.empty());
  if (!kind) return fail(kind.error());
  w.resource.kind = std::string(kind->empty() ? options.default_kind : *kind);
  const auto layout = std::find_if(kLayouts.begin(), kLayouts.end(),
                                   [&](const KindLayout& l) { return l.kind == w.resource.kind; });
  if (layout == kLayouts.end()) {
    return fail(Error{"kind",
                      "expected a Pod, Deployment, ReplicaSet, StatefulSet, DaemonSet, Job or "
                      "CronJob, got " +
                          quote(w.resource.kind)});
  }
  w.spec_pointer = std::string(layout->pointer);

  auto metadata = object_value(metadata_v, "metadata", root);
  if (!metadata) return fail(metadata.error());
  V own_annotations;
  if (metadata->valid()) {
    const Path meta_path = root.field("metadata");
    static constexpr std::array<std::string_view, 4> kMetaKeys = {"name", "generateName",
                                                                  "namespace", "annotations"};
    const auto [name_v, generate_v, ns_v, annotations_v] = members(*metadata, kMetaKeys);
    own_annotations = annotations_v;
    auto name = string_value(name_v, "name", meta_path, false);
    if (!name) return fail(name.error());
    w.resource.name = std::string(*name);
    if (w.resource.name.empty()) {
      // Pods of controllers are created with generateName; it is the best
      // name there is until the API server completes it.
      auto generate = string_value(generate_v, "generateName", meta_path, false);
      if (!generate) return fail(generate.error());
      w.resource.name = std::string(*generate);
    }
    auto ns = string_value(ns_v, "namespace", meta_path, false);
    if (!ns) return fail(ns.error());
    w.resource.namespace_ = std::string(*ns);
  }

  std::string spec_path;
  auto spec = descend(object, layout->pointer, spec_path);
  if (!spec) return fail(spec.error());

  auto own = annotation_map(own_annotations, "annotations", root.field("metadata"));
  if (!own) return fail(own.error());
  w.annotations = std::move(*own);
  if (layout->pointer != "/spec") {
    // The pod template: the object holding the spec, one level up. Its
    // annotations win over the object's own.
    std::string template_path;
    const std::string_view template_pointer = layout->pointer.substr(0, layout->pointer.rfind('/'));
    auto tmpl = descend(object, template_pointer, template_path);
    if (!tmpl) return fail(tmpl.error());
    auto template_annotations = annotations_of(*tmpl, Path(template_path));
    if (!template_annotations) return fail(template_annotations.error());
    if (!template_annotations->empty()) {
      auto& all = w.annotations;
      const std::size_t own_count = all.size();
      for (auto& entry : *template_annotations) {
        const auto it = std::lower_bound(
            all.begin(), all.begin() + static_cast<std::ptrdiff_t>(own_count), entry.first,
            [](const auto& e, const std::string& k) { return e.first < k; });
        if (it != all.begin() + static_cast<std::ptrdiff_t>(own_count) &&
            it->first == entry.first) {
          it->second = std::move(entry.second);
        } else {
          all.push_back(std::move(entry));
        }
      }
      std::sort(all.begin(), all.end());
    }
  }

  auto pod_spec = read_pod_spec(*spec, Path(spec_path), options);
  if (!pod_spec) return fail(pod_spec.error());
  w.spec = std::move(*pod_spec);
  if (w.resource.kind == "DaemonSet") add_daemon_tolerations(*spec, w.spec.tolerations);
  return w;
}

// Whether `object` (of `kind`, or of its own kind when that is empty) asks
// for a GPU anywhere a pod's containers can: a resource in some container's
// or init container's limits or requests that `is_gpu` accepts. It reads
// only those fields and is never an error: whatever else in the object is
// absent or of another type counts as not asking. For objects that
// read_workload() refuses, to tell a GPU workload's malformed input (ours
// to report) from anything else's (the API server's).
template <JsonView V, class IsGpu>
[[nodiscard]] bool asks_for_gpu(const V& object, std::string_view kind, IsGpu&& is_gpu) {
  if (!object.is_object()) return false;
  if (const V own = object.find("kind"); own.valid() && own.is_string()) kind = own.string();
  const auto layout = std::find_if(kLayouts.begin(), kLayouts.end(),
                                   [&](const KindLayout& l) { return l.kind == kind; });
  if (layout == kLayouts.end()) return false;
  V spec = object;
  for (std::string_view rest = layout->pointer.substr(1); spec.valid() && spec.is_object();) {
    const std::size_t slash = rest.find('/');
    spec = spec.find(rest.substr(0, slash));
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  if (!spec.valid() || !spec.is_object()) return false;
  bool found = false;
  for (const std::string_view list :
       {std::string_view("initContainers"), std::string_view("containers")}) {
    const V containers = spec.find(list);
    if (!containers.valid() || !containers.is_array()) continue;
    containers.for_each_element([&](std::size_t, const V& container) {
      if (found || !container.is_object()) return;
      const V resources = container.find("resources");
      if (!resources.valid() || !resources.is_object()) return;
      for (const std::string_view side :
           {std::string_view("limits"), std::string_view("requests")}) {
        const V quantities = resources.find(side);
        if (!quantities.valid() || !quantities.is_object()) continue;
        quantities.for_each_member(
            [&](std::string_view name, const V&) { found = found || is_gpu(name); });
      }
    });
  }
  return found;
}

}  // namespace workload_reader

// The workload read from `object` through any JSON view; workload_from_json
// is this over nlohmann::json.
template <JsonView V>
Expected<Workload> workload_from_view(const V& object, std::string_view where,
                                      const WorkloadReadOptions& options = {}) {
  return workload_reader::read_workload(object, where, options);
}

}  // namespace cudagate

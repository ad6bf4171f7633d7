#include "policy/pod.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "policy/document.h"

namespace cudagate {
namespace {

using nlohmann::json;

using StringPairs = std::vector<std::pair<std::string, std::string>>;

std::string quote_text(std::string_view text) {
  std::string out = "\"";
  out.append(text.substr(0, 64));
  if (text.size() > 64) out += "...";
  out += '"';
  return out;
}

// --- Quantities ---

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

Error not_a_count(std::string_view text) {
  return Error{"", "expected an integer, got " + quote_text(text)};
}

// Multiplies `value` by base^exp, reporting overflow.
bool scale(std::uint64_t& value, std::uint64_t base, int exp) {
  for (int i = 0; i < exp; ++i) {
    if (__builtin_mul_overflow(value, base, &value)) return false;
  }
  return true;
}

// The Kubernetes quantity grammar: sign, digits, optional fraction, then a
// binary suffix (Ki..Ei), a decimal suffix (n u m k M G T P E) or an
// exponent (e3). The value must be a non-negative whole number.
Expected<std::int64_t> parse_count_text(std::string_view text) {
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  std::size_t i = 0;
  std::string digits;
  while (i < s.size() && is_digit(s[i])) digits += s[i++];
  int exp10 = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && is_digit(s[i])) {
      digits += s[i++];
      --exp10;
    }
  }
  if (digits.empty()) return not_a_count(text);
  const std::string_view suffix = s.substr(i);
  int exp2 = 0;
  static constexpr std::array<std::pair<std::string_view, int>, 6> kBinary = {
      {{"Ki", 10}, {"Mi", 20}, {"Gi", 30}, {"Ti", 40}, {"Pi", 50}, {"Ei", 60}}};
  static constexpr std::array<std::pair<std::string_view, int>, 9> kDecimal = {{{"n", -9},
                                                                                {"u", -6},
                                                                                {"m", -3},
                                                                                {"", 0},
                                                                                {"k", 3},
                                                                                {"M", 6},
                                                                                {"G", 9},
                                                                                {"T", 12},
                                                                                {"P", 15}}};
  bool known = false;
  for (const auto& [name, e] : kBinary) {
    if (suffix == name) {
      exp2 = e;
      known = true;
    }
  }
  for (const auto& [name, e] : kDecimal) {
    if (suffix == name) {
      exp10 += e;
      known = true;
    }
  }
  if (suffix == "E") {
    exp10 += 18;
    known = true;
  }
  if (!known && (suffix[0] == 'e' || suffix[0] == 'E')) {
    std::string_view e = suffix.substr(1);
    bool e_negative = false;
    if (!e.empty() && (e[0] == '+' || e[0] == '-')) {
      e_negative = e[0] == '-';
      e.remove_prefix(1);
    }
    if (e.empty() || e.size() > 3 || !std::all_of(e.begin(), e.end(), is_digit)) {
      return not_a_count(text);
    }
    const int value = std::stoi(std::string(e));
    exp10 += e_negative ? -value : value;
    known = true;
  }
  if (!known) return not_a_count(text);

  // Strip leading zeros, then move trailing zeros into the exponent.
  const auto first = digits.find_first_not_of('0');
  if (first == std::string::npos) return std::int64_t{0};
  digits.erase(0, first);
  while (digits.size() > 1 && digits.back() == '0') {
    digits.pop_back();
    ++exp10;
  }
  if (digits.size() > 19) return Error{"", "quantity " + quote_text(text) + " is too large"};
  std::uint64_t value = std::stoull(digits);
  if (exp10 < 0) {
    // A whole number only if 10^-exp10 divides value * 2^exp2.
    for (int k = 0; k < -exp10; ++k) {
      if (value % 5 != 0) return not_a_count(text);
      value /= 5;
      if (exp2 > 0) {
        --exp2;
      } else if (value % 2 == 0) {
        value /= 2;
      } else {
        return not_a_count(text);
      }
    }
    exp10 = 0;
  }
  if (negative) return Error{"", "must not be negative, got " + quote_text(text)};
  if (!scale(value, 10, exp10) || !scale(value, 2, exp2) ||
      value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return Error{"", "quantity " + quote_text(text) + " is too large"};
  }
  return static_cast<std::int64_t>(value);
}

// --- Field readers: each returns the value or an error naming its path. ---

Expected<StringPairs> string_map(const json& object, std::string_view key, std::string_view path) {
  auto field = object_field(object, key, path);
  if (!field) return field.error();
  StringPairs out;
  if (*field == nullptr) return out;
  const std::string map_path = field_path(path, key);
  for (const auto& [k, v] : (*field)->items()) {
    if (!v.is_string()) return Error{field_path(map_path, k), type_error("a string", v)};
    out.emplace_back(k, v.get<std::string>());
  }
  return out;  // sorted: nlohmann objects keep their keys in order
}

Expected<std::vector<std::string>> string_list(const json& object, std::string_view key,
                                               std::string_view path) {
  auto field = array_field(object, key, path);
  if (!field) return field.error();
  std::vector<std::string> out;
  if (*field == nullptr) return out;
  const std::string list_path = field_path(path, key);
  for (std::size_t i = 0; i < (*field)->size(); ++i) {
    const json& v = (**field)[i];
    if (!v.is_string()) return Error{index_path(list_path, i), type_error("a string", v)};
    out.push_back(v.get<std::string>());
  }
  return out;
}

// Each element of the list `key` as an object, or an error.
Expected<std::vector<const json*>> object_list(const json& object, std::string_view key,
                                               std::string_view path) {
  auto field = array_field(object, key, path);
  if (!field) return field.error();
  std::vector<const json*> out;
  if (*field == nullptr) return out;
  const std::string list_path = field_path(path, key);
  for (std::size_t i = 0; i < (*field)->size(); ++i) {
    const json& v = (**field)[i];
    if (!v.is_object()) return Error{index_path(list_path, i), type_error("an object", v)};
    out.push_back(&v);
  }
  return out;
}

Expected<std::vector<EnvVar>> parse_env(const json& container, std::string_view path) {
  auto items = object_list(container, "env", path);
  if (!items) return items.error();
  std::vector<EnvVar> out;
  const std::string env_path = field_path(path, "env");
  for (std::size_t i = 0; i < items->size(); ++i) {
    const json& item = *(*items)[i];
    const std::string item_path = index_path(env_path, i);
    auto name = string_field(item, "name", item_path, true);
    if (!name) return name.error();
    EnvVar var{std::move(*name), std::nullopt};
    const auto from = item.find("valueFrom");
    if (from == item.end() || from->is_null()) {
      // An entry without value is the empty string for the runtime.
      auto value = string_field(item, "value", item_path, false);
      if (!value) return value.error();
      var.value = std::move(*value);
    } else if (!from->is_object()) {
      return Error{field_path(item_path, "valueFrom"), type_error("an object", *from)};
    }
    out.push_back(std::move(var));
  }
  return out;
}

Expected<std::vector<std::pair<std::string, std::int64_t>>> parse_resources(const json& container,
                                                                            std::string_view path) {
  auto resources = object_field(container, "resources", path);
  if (!resources) return resources.error();
  std::map<std::string, std::int64_t> amounts;
  if (*resources != nullptr) {
    const std::string res_path = field_path(path, "resources");
    // Requests first, so that limits (what the device plugin allocates) win.
    for (const char* section : {"requests", "limits"}) {
      auto entries = object_field(**resources, section, res_path);
      if (!entries) return entries.error();
      if (*entries == nullptr) continue;
      const std::string section_path = field_path(res_path, section);
      for (const auto& [name, quantity] : (*entries)->items()) {
        if (!is_extended_resource(name)) continue;
        auto count = parse_count_quantity(quantity);
        if (!count) return count.error().within(field_path(section_path, name));
        amounts[name] = *count;
      }
    }
  }
  return std::vector<std::pair<std::string, std::int64_t>>(amounts.begin(), amounts.end());
}

Expected<ContainerSpec> parse_container(const json& item, std::string_view path, bool init) {
  ContainerSpec c;
  c.init = init;
  auto name = string_field(item, "name", path, true);
  if (!name) return name.error();
  c.name = std::move(*name);
  // Pod templates may leave the image to be filled in later; pods may not,
  // but the API server checks that, not cudagate.
  auto image = string_field(item, "image", path, false);
  if (!image) return image.error();
  c.image = std::move(*image);
  auto env = parse_env(item, path);
  if (!env) return env.error();
  c.env = std::move(*env);
  auto resources = parse_resources(item, path);
  if (!resources) return resources.error();
  c.resources = std::move(*resources);
  return c;
}

Expected<std::vector<NodeSelectorRequirement>> parse_requirements(const json& term,
                                                                  std::string_view key,
                                                                  std::string_view path) {
  auto items = object_list(term, key, path);
  if (!items) return items.error();
  std::vector<NodeSelectorRequirement> out;
  const std::string list_path = field_path(path, key);
  for (std::size_t i = 0; i < items->size(); ++i) {
    const json& item = *(*items)[i];
    const std::string item_path = index_path(list_path, i);
    // Operators and values are checked where the term is matched, as the
    // scheduler does: a bad term matches no node rather than failing the pod.
    auto k = string_field(item, "key", item_path, false);
    if (!k) return k.error();
    auto op = string_field(item, "operator", item_path, false);
    if (!op) return op.error();
    auto values = string_list(item, "values", item_path);
    if (!values) return values.error();
    out.push_back(NodeSelectorRequirement{std::move(*k), std::move(*op), std::move(*values)});
  }
  return out;
}

Expected<std::optional<std::vector<NodeSelectorTerm>>> parse_required_terms(const json& spec,
                                                                            std::string_view path) {
  std::optional<std::vector<NodeSelectorTerm>> none;
  auto affinity = object_field(spec, "affinity", path);
  if (!affinity) return affinity.error();
  if (*affinity == nullptr) return none;
  const std::string affinity_path = field_path(path, "affinity");
  auto node_affinity = object_field(**affinity, "nodeAffinity", affinity_path);
  if (!node_affinity) return node_affinity.error();
  if (*node_affinity == nullptr) return none;
  const std::string node_path = field_path(affinity_path, "nodeAffinity");
  constexpr std::string_view kRequired = "requiredDuringSchedulingIgnoredDuringExecution";
  auto required = object_field(**node_affinity, kRequired, node_path);
  if (!required) return required.error();
  if (*required == nullptr) return none;
  const std::string required_path = field_path(node_path, kRequired);
  // A required node selector without terms selects no node.
  auto terms = object_list(**required, "nodeSelectorTerms", required_path);
  if (!terms) return terms.error();
  std::vector<NodeSelectorTerm> out;
  const std::string terms_path = field_path(required_path, "nodeSelectorTerms");
  for (std::size_t i = 0; i < terms->size(); ++i) {
    const std::string term_path = index_path(terms_path, i);
    NodeSelectorTerm term;
    auto expressions = parse_requirements(*(*terms)[i], "matchExpressions", term_path);
    if (!expressions) return expressions.error();
    term.match_expressions = std::move(*expressions);
    auto fields = parse_requirements(*(*terms)[i], "matchFields", term_path);
    if (!fields) return fields.error();
    term.match_fields = std::move(*fields);
    out.push_back(std::move(term));
  }
  return std::optional<std::vector<NodeSelectorTerm>>(std::move(out));
}

Expected<std::vector<Toleration>> parse_tolerations(const json& spec, std::string_view path) {
  auto items = object_list(spec, "tolerations", path);
  if (!items) return items.error();
  std::vector<Toleration> out;
  const std::string list_path = field_path(path, "tolerations");
  for (std::size_t i = 0; i < items->size(); ++i) {
    const json& item = *(*items)[i];
    const std::string item_path = index_path(list_path, i);
    Toleration t;
    for (auto [key, target] : {std::pair{"key", &t.key}, std::pair{"operator", &t.op},
                               std::pair{"value", &t.value}, std::pair{"effect", &t.effect}}) {
      auto v = string_field(item, key, item_path, false);
      if (!v) return v.error();
      *target = std::move(*v);
    }
    out.push_back(std::move(t));
  }
  return out;
}

Expected<PodSpec> parse_pod_spec(const json& spec, std::string_view path) {
  if (!spec.is_object()) return Error{std::string(path), type_error("an object", spec)};
  PodSpec out;
  auto node_name = string_field(spec, "nodeName", path, false);
  if (!node_name) return node_name.error();
  out.node_name = std::move(*node_name);
  auto selector = string_map(spec, "nodeSelector", path);
  if (!selector) return selector.error();
  out.node_selector = std::move(*selector);
  auto terms = parse_required_terms(spec, path);
  if (!terms) return terms.error();
  out.required_terms = std::move(*terms);
  auto tolerations = parse_tolerations(spec, path);
  if (!tolerations) return tolerations.error();
  out.tolerations = std::move(*tolerations);

  for (const auto& [key, init] :
       {std::pair{"initContainers", true}, std::pair{"containers", false}}) {
    auto items = object_list(spec, key, path);
    if (!items) return items.error();
    const std::string list_path = field_path(path, key);
    for (std::size_t i = 0; i < items->size(); ++i) {
      auto c = parse_container(*(*items)[i], index_path(list_path, i), init);
      if (!c) return c.error();
      out.containers.push_back(std::move(*c));
    }
    if (!init && items->empty()) {
      return Error{list_path, "a pod needs at least one container"};
    }
  }
  return out;
}

// What the DaemonSet controller adds to every daemon pod
// (AddOrUpdateDaemonPodTolerations), so that daemons run on cordoned nodes
// and nodes under pressure.
void add_daemon_tolerations(const json& spec, std::vector<Toleration>& tolerations) {
  std::vector<Toleration> added = {
      {"node.kubernetes.io/not-ready", "Exists", "", "NoExecute"},
      {"node.kubernetes.io/unreachable", "Exists", "", "NoExecute"},
      {"node.kubernetes.io/disk-pressure", "Exists", "", "NoSchedule"},
      {"node.kubernetes.io/memory-pressure", "Exists", "", "NoSchedule"},
      {"node.kubernetes.io/pid-pressure", "Exists", "", "NoSchedule"},
      {"node.kubernetes.io/unschedulable", "Exists", "", "NoSchedule"},
  };
  const auto host_network = spec.find("hostNetwork");
  if (host_network != spec.end() && host_network->is_boolean() && host_network->get<bool>()) {
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

constexpr std::array<KindLayout, 7> kLayouts = {{
    {"Pod", "/spec"},
    {"Deployment", "/spec/template/spec"},
    {"ReplicaSet", "/spec/template/spec"},
    {"StatefulSet", "/spec/template/spec"},
    {"DaemonSet", "/spec/template/spec"},
    {"Job", "/spec/template/spec"},
    {"CronJob", "/spec/jobTemplate/spec/template/spec"},
}};

// Walks the pointer's steps, each an object that must be present.
Expected<const json*> descend(const json& object, std::string_view pointer, std::string& path) {
  const json* at = &object;
  std::size_t pos = 1;
  while (pos <= pointer.size()) {
    const std::size_t slash = pointer.find('/', pos);
    const std::string_view step =
        pointer.substr(pos, slash == std::string_view::npos ? std::string_view::npos : slash - pos);
    auto next = object_field(*at, step, path);
    if (!next) return next.error();
    path = field_path(path, step);
    if (*next == nullptr) return Error{path, "is required"};
    at = *next;
    if (slash == std::string_view::npos) break;
    pos = slash + 1;
  }
  return at;
}

Expected<StringPairs> annotations_of(const json& object, std::string_view path) {
  auto metadata = object_field(object, "metadata", path);
  if (!metadata) return metadata.error();
  if (*metadata == nullptr) return StringPairs{};
  return string_map(**metadata, "annotations", field_path(path, "metadata"));
}

}  // namespace

bool is_workload_kind(std::string_view kind) {
  return std::any_of(kLayouts.begin(), kLayouts.end(),
                     [&](const KindLayout& l) { return l.kind == kind; });
}

bool is_extended_resource(std::string_view name) {
  const auto slash = name.find('/');
  if (slash == std::string_view::npos) return false;
  const std::string_view domain = name.substr(0, slash);
  constexpr std::string_view kKube = "kubernetes.io";
  if (domain == kKube) return false;
  if (domain.size() > kKube.size() && domain.substr(domain.size() - kKube.size()) == kKube &&
      domain[domain.size() - kKube.size() - 1] == '.') {
    return false;
  }
  return true;
}

Expected<std::int64_t> parse_count_quantity(const json& value) {
  if (value.is_string()) return parse_count_text(value.get_ref<const std::string&>());
  if (value.is_number_unsigned()) {
    const auto v = value.get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return Error{"", "quantity " + value.dump() + " is too large"};
    }
    return static_cast<std::int64_t>(v);
  }
  if (value.is_number_integer()) {
    const auto v = value.get<std::int64_t>();
    if (v < 0) return Error{"", "must not be negative, got " + std::to_string(v)};
    return v;
  }
  if (value.is_number_float()) {
    const double v = value.get<double>();
    if (!std::isfinite(v) || v != std::floor(v)) {
      return Error{"", "expected an integer, got " + value.dump()};
    }
    if (v < 0) return Error{"", "must not be negative, got " + value.dump()};
    if (v >= 9.2e18) return Error{"", "quantity " + value.dump() + " is too large"};
    return static_cast<std::int64_t>(v);
  }
  return Error{"", type_error("an integer", value)};
}

const std::string* Workload::annotation(std::string_view key) const {
  const auto it =
      std::lower_bound(annotations.begin(), annotations.end(), key,
                       [](const auto& entry, std::string_view k) { return entry.first < k; });
  if (it == annotations.end() || it->first != key) return nullptr;
  return &it->second;
}

Expected<Workload> workload_from_json(const json& object, std::string_view where) {
  const std::string outer(where);
  auto fail = [&](const Error& e) { return e.within(outer); };
  if (!object.is_object()) return fail(Error{"", type_error("an object", object)});

  Workload w;
  auto api_version = string_field(object, "apiVersion", "", false);
  if (!api_version) return fail(api_version.error());
  w.resource.api_version = std::move(*api_version);
  auto kind = string_field(object, "kind", "", true);
  if (!kind) return fail(kind.error());
  w.resource.kind = std::move(*kind);
  const auto layout = std::find_if(kLayouts.begin(), kLayouts.end(),
                                   [&](const KindLayout& l) { return l.kind == w.resource.kind; });
  if (layout == kLayouts.end()) {
    return fail(Error{"kind",
                      "expected a Pod, Deployment, ReplicaSet, StatefulSet, DaemonSet, Job or "
                      "CronJob, got " +
                          quote_text(w.resource.kind)});
  }
  w.spec_pointer = std::string(layout->pointer);

  auto metadata = object_field(object, "metadata", "");
  if (!metadata) return fail(metadata.error());
  if (*metadata != nullptr) {
    auto name = string_field(**metadata, "name", "metadata", false);
    if (!name) return fail(name.error());
    w.resource.name = std::move(*name);
    if (w.resource.name.empty()) {
      // Pods of controllers are created with generateName; it is the best
      // name there is until the API server completes it.
      auto generate = string_field(**metadata, "generateName", "metadata", false);
      if (!generate) return fail(generate.error());
      w.resource.name = std::move(*generate);
    }
    auto ns = string_field(**metadata, "namespace", "metadata", false);
    if (!ns) return fail(ns.error());
    w.resource.namespace_ = std::move(*ns);
  }

  std::string spec_path;
  auto spec = descend(object, w.spec_pointer, spec_path);
  if (!spec) return fail(spec.error());

  std::map<std::string, std::string> annotations;
  auto own = annotations_of(object, "");
  if (!own) return fail(own.error());
  for (auto& [k, v] : *own) annotations[k] = std::move(v);
  if (w.spec_pointer != "/spec") {
    // The pod template: the object holding the spec, one level up.
    std::string template_path;
    const std::string template_pointer = w.spec_pointer.substr(0, w.spec_pointer.rfind('/'));
    auto tmpl = descend(object, template_pointer, template_path);
    if (!tmpl) return fail(tmpl.error());
    auto template_annotations = annotations_of(**tmpl, template_path);
    if (!template_annotations) return fail(template_annotations.error());
    for (auto& [k, v] : *template_annotations) annotations[k] = std::move(v);
  }
  w.annotations.assign(annotations.begin(), annotations.end());

  auto pod_spec = parse_pod_spec(**spec, spec_path);
  if (!pod_spec) return fail(pod_spec.error());
  w.spec = std::move(*pod_spec);
  if (w.resource.kind == "DaemonSet") add_daemon_tolerations(**spec, w.spec.tolerations);
  return w;
}

Expected<std::vector<Workload>> parse_workloads(std::string_view text, std::string_view source) {
  auto docs = parse_source_documents(text, source);
  if (!docs) return docs.error();
  std::vector<Workload> out;

  // Reads one object: a workload, a List of them, or something to skip.
  auto take = [&out](const json& value, const std::string& where) -> std::optional<Error> {
    if (!value.is_object()) return std::nullopt;
    const auto kind_it = value.find("kind");
    if (kind_it == value.end() || kind_it->is_null()) return std::nullopt;
    if (!kind_it->is_string()) return Error{"kind", type_error("a string", *kind_it)}.within(where);
    const auto& kind = kind_it->get_ref<const std::string&>();
    if (is_workload_kind(kind)) {
      auto w = workload_from_json(value, where);
      if (!w) return w.error();
      out.push_back(std::move(*w));
      return std::nullopt;
    }
    if (kind.size() < 4 || kind.compare(kind.size() - 4, 4, "List") != 0) return std::nullopt;
    auto items = array_field(value, "items", "");
    if (!items) return items.error().within(where);
    if (*items == nullptr) return std::nullopt;
    for (std::size_t i = 0; i < (*items)->size(); ++i) {
      const json& item = (**items)[i];
      const std::string item_where = where + (where.empty() ? "" : ": ") + index_path("items", i);
      if (!item.is_object()) return Error{"", type_error("an object", item)}.within(item_where);
      const auto item_kind = item.find("kind");
      if (item_kind == item.end() || !item_kind->is_string() ||
          !is_workload_kind(item_kind->get_ref<const std::string&>())) {
        continue;
      }
      auto w = workload_from_json(item, item_where);
      if (!w) return w.error();
      out.push_back(std::move(*w));
    }
    return std::nullopt;
  };

  const bool several = docs->count > 1;
  for (const auto& doc : docs->documents) {
    std::string where(source);
    if (several) where += (where.empty() ? "" : ": ") + ("document " + std::to_string(doc.index));
    if (doc.value.is_array()) {
      // A JSON array of objects reads like a List's items.
      for (std::size_t i = 0; i < doc.value.size(); ++i) {
        if (auto e = take(doc.value[i], where + (where.empty() ? "" : ": ") + index_path("", i))) {
          return *e;
        }
      }
      continue;
    }
    if (auto e = take(doc.value, where)) return *e;
  }
  return out;
}

}  // namespace cudagate

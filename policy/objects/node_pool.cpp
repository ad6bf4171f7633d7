// Node pools read from Karpenter NodePools and the policy, the nodes that
// stand for their next node, and Karpenter's rule for whether a pod fits one.
#include "policy/objects/node_pool.h"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "policy/objects/document.h"
#include "policy/objects/json_view.h"
#include "policy/objects/node_reader.h"
#include "policy/objects/workload_reader.h"
#include "types/quote.h"

namespace cudagate {
namespace {

using nlohmann::json;

Expected<KeyValues> string_map(const json& object, std::string_view key, const std::string& path) {
  auto map = object_field(object, key, path);
  if (!map) return map.error();
  KeyValues out;
  if (*map == nullptr) return out;
  for (const auto& [k, v] : (*map)->items()) {
    if (!v.is_string())
      return Error{field_path(field_path(path, key), k), type_error("a string", v)};
    out.emplace_back(k, v.get<std::string>());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// What Karpenter's API admits of a NodePool's requirements (its CRD's
// validation): a known operator, one integer for Gt and Lt, no values for
// Exists and DoesNotExist, at least one for In. The pod reader leaves such
// checks to matching, as the scheduler does; a NodePool is refused instead.
std::optional<Error> check_requirements(const std::vector<NodeSelectorRequirement>& list,
                                        const std::string& path) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    const NodeSelectorRequirement& r = list[i];
    const std::string item_path = index_path(path, i);
    if (r.key.empty()) return Error{field_path(item_path, "key"), "is required"};
    static constexpr std::string_view kOperators[] = {"In",           "NotIn", "Exists",
                                                      "DoesNotExist", "Gt",    "Lt"};
    if (std::find(std::begin(kOperators), std::end(kOperators), r.op) == std::end(kOperators)) {
      return Error{field_path(item_path, "operator"),
                   "expected In, NotIn, Exists, DoesNotExist, Gt or Lt, got " + quote(r.op)};
    }
    const bool bound = r.op == "Gt" || r.op == "Lt";
    const bool none = r.op == "Exists" || r.op == "DoesNotExist";
    std::int64_t number = 0;
    const bool integer =
        bound && r.values.size() == 1 &&
        std::from_chars(r.values[0].data(), r.values[0].data() + r.values[0].size(), number).ptr ==
            r.values[0].data() + r.values[0].size() &&
        !r.values[0].empty();
    if ((bound && !integer) || (none && !r.values.empty()) || (r.op == "In" && r.values.empty())) {
      return Error{field_path(item_path, "values"), "operator " + r.op +
                                                        (bound  ? " takes one integer value"
                                                         : none ? " takes no values"
                                                                : " takes at least one value")};
    }
  }
  return std::nullopt;
}

std::optional<Error> check_taints(const std::vector<Taint>& list, const std::string& path) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string item_path = index_path(path, i);
    if (list[i].key.empty()) return Error{field_path(item_path, "key"), "is required"};
    const std::string& effect = list[i].effect;
    if (effect != "NoSchedule" && effect != "PreferNoSchedule" && effect != "NoExecute") {
      return Error{field_path(item_path, "effect"),
                   "expected NoSchedule, PreferNoSchedule or NoExecute, got " + quote(effect)};
    }
  }
  return std::nullopt;
}

// Karpenter's Requirement: a set of label values, or its complement, with
// integer bounds (sigs.k8s.io/karpenter pkg/scheduling/requirement.go).
struct ValueSet {
  bool complement = false;
  std::set<std::string> values;
  std::optional<std::int64_t> greater_than;
  std::optional<std::int64_t> less_than;

  static ValueSet of(const NodeSelectorRequirement& r) {
    ValueSet s;
    if (r.op == "In") {
      s.values.insert(r.values.begin(), r.values.end());
    } else if (r.op == "NotIn") {
      s.complement = true;
      s.values.insert(r.values.begin(), r.values.end());
    } else if (r.op == "Exists") {
      s.complement = true;
    } else if (r.op == "Gt" || r.op == "Lt") {
      s.complement = true;
      std::int64_t bound = 0;
      const std::string& text = r.values.empty() ? std::string() : r.values[0];
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), bound);
      if (ec != std::errc() || end != text.data() + text.size()) return ValueSet{};
      (r.op == "Gt" ? s.greater_than : s.less_than) = bound;
    }
    return s;  // DoesNotExist: the empty set
  }

  [[nodiscard]] bool within(const std::string& value) const {
    if (!greater_than && !less_than) return true;
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || end != value.data() + value.size()) return false;
    return (!greater_than || v > *greater_than) && (!less_than || v < *less_than);
  }

  // Requirement.Intersection.
  [[nodiscard]] ValueSet intersection(const ValueSet& o) const {
    ValueSet out;
    out.complement = complement && o.complement;
    if (greater_than || o.greater_than) {
      out.greater_than =
          std::max(greater_than.value_or(std::numeric_limits<std::int64_t>::min()),
                   o.greater_than.value_or(std::numeric_limits<std::int64_t>::min()));
    }
    if (less_than || o.less_than) {
      out.less_than = std::min(less_than.value_or(std::numeric_limits<std::int64_t>::max()),
                               o.less_than.value_or(std::numeric_limits<std::int64_t>::max()));
    }
    if (out.greater_than && out.less_than && *out.greater_than >= *out.less_than) return ValueSet{};
    if (complement && o.complement) {
      out.values = values;
      out.values.insert(o.values.begin(), o.values.end());
    } else {
      const ValueSet& concrete = complement ? o : *this;
      const ValueSet& other = complement ? *this : o;
      for (const std::string& v : concrete.values) {
        if (other.complement ? other.values.count(v) == 0 : other.values.count(v) != 0) {
          out.values.insert(v);
        }
      }
    }
    for (auto it = out.values.begin(); it != out.values.end();) {
      it = out.within(*it) ? std::next(it) : out.values.erase(it);
    }
    if (!out.complement) out.greater_than = out.less_than = std::nullopt;
    return out;
  }

  // Requirement.Len() == 0: a complement is never empty.
  [[nodiscard]] bool empty() const { return !complement && values.empty(); }
  // Operator() is NotIn or DoesNotExist.
  [[nodiscard]] bool negative() const { return complement ? !values.empty() : values.empty(); }
};

// NormalizedLabels (sigs.k8s.io/karpenter pkg/apis/v1/labels.go): aliases
// read as the label they stand for, on pods and pools alike.
std::string_view normalized(std::string_view key) {
  if (key == "failure-domain.beta.kubernetes.io/zone") return "topology.kubernetes.io/zone";
  if (key == "failure-domain.beta.kubernetes.io/region") return "topology.kubernetes.io/region";
  if (key == "beta.kubernetes.io/arch") return "kubernetes.io/arch";
  if (key == "beta.kubernetes.io/os") return "kubernetes.io/os";
  if (key == "beta.kubernetes.io/instance-type") return "node.kubernetes.io/instance-type";
  return key;
}

using Requirements = std::map<std::string, ValueSet, std::less<>>;

// Requirements.Add: a second requirement of a key narrows the first.
void add(Requirements& set, const NodeSelectorRequirement& r) {
  const std::string key(normalized(r.key));
  ValueSet value = ValueSet::of(r);
  const auto [it, fresh] = set.try_emplace(key, value);
  if (!fresh) it->second = it->second.intersection(value);
}

// Requirements.Compatible(pod, AllowUndefinedWellKnownLabels).
bool compatible(const Requirements& pool, const Requirements& pod) {
  for (const auto& [key, wanted] : pod) {
    const auto have = pool.find(key);
    if (have == pool.end()) {
      if (is_well_known_pool_label(key) || wanted.negative()) continue;
      return false;
    }
    if (have->second.intersection(wanted).empty() &&
        !(wanted.negative() && have->second.negative())) {
      return false;
    }
  }
  return true;
}

bool has_gpu_facts(const KeyValues& labels) {
  for (const auto& [key, value] : labels) {
    if (key.starts_with("nvidia.com/gpu.") || key.starts_with("nvidia.com/cuda.") ||
        key.starts_with("cudagate.io/") || key == "cloud.google.com/gke-accelerator") {
      return true;
    }
  }
  return false;
}

// The pool's requirement on the first GPU kind key it constrains to values.
const NodeSelectorRequirement* kind_requirement(const NodePool& pool) {
  for (const std::string_view key : kPoolGpuKeys) {
    for (const NodeSelectorRequirement& r : pool.requirements) {
      if (normalized(r.key) == key && r.op == "In") return &r;
    }
  }
  return nullptr;
}

}  // namespace

bool is_well_known_pool_label(std::string_view key) {
  static constexpr std::string_view kWellKnown[] = {
      "karpenter.sh/nodepool",
      "topology.kubernetes.io/zone",
      "topology.kubernetes.io/region",
      "node.kubernetes.io/instance-type",
      "kubernetes.io/arch",
      "kubernetes.io/os",
      "karpenter.sh/capacity-type",
      "node.kubernetes.io/windows-build",
  };
  key = normalized(key);
  if (std::find(std::begin(kWellKnown), std::end(kWellKnown), key) != std::end(kWellKnown)) {
    return true;
  }
  // What the AWS and Azure providers register (karpenter.k8s.aws/instance-*,
  // topology.k8s.aws/zone-id, karpenter.azure.com/sku-*).
  return key.starts_with("karpenter.k8s.aws/") || key.starts_with("topology.k8s.aws/") ||
         key.starts_with("karpenter.azure.com/");
}

Expected<NodePool> node_pool_from_json(const json& object, std::string_view where) {
  const std::string at(where);
  if (!object.is_object()) return Error{at, type_error("an object", object)};
  auto api_version = string_field(object, "apiVersion", "", false);
  if (!api_version) return api_version.error().within(at);
  if (!api_version->empty() && *api_version != "karpenter.sh/v1") {
    return Error{"apiVersion",
                 "expected karpenter.sh/v1 for a NodePool, got " + quote(*api_version)}
        .within(at);
  }
  NodePool pool;
  pool.source = NodePool::Source::karpenter;
  pool.where = at;
  auto metadata = object_field(object, "metadata", "");
  if (!metadata) return metadata.error().within(at);
  if (*metadata == nullptr) return Error{"metadata", "is required"}.within(at);
  auto name = string_field(**metadata, "name", "metadata", true);
  if (!name) return name.error().within(at);
  if (name->empty()) return Error{"metadata.name", "is required"}.within(at);
  pool.name = std::move(*name);
  auto annotations = string_map(**metadata, "annotations", "metadata");
  if (!annotations) return annotations.error().within(at);
  if (const std::string* driver = find_value(*annotations, kDriverVersionKey)) {
    if (!DriverVersion::parse(*driver)) {
      return Error{"metadata.annotations." + std::string(kDriverVersionKey),
                   "expected a driver version such as 570.86.15, got " + quote(*driver)}
          .within(at);
    }
    pool.driver = *driver;
  }

  auto spec = object_field(object, "spec", "");
  if (!spec) return spec.error().within(at);
  if (*spec == nullptr) return Error{"spec", "is required"}.within(at);
  auto tmpl = object_field(**spec, "template", "spec");
  if (!tmpl) return tmpl.error().within(at);
  if (*tmpl == nullptr) return Error{"spec.template", "is required"}.within(at);
  auto tmpl_meta = object_field(**tmpl, "metadata", "spec.template");
  if (!tmpl_meta) return tmpl_meta.error().within(at);
  if (*tmpl_meta != nullptr) {
    auto labels = string_map(**tmpl_meta, "labels", "spec.template.metadata");
    if (!labels) return labels.error().within(at);
    pool.labels = std::move(*labels);
  }
  auto tmpl_spec = object_field(**tmpl, "spec", "spec.template");
  if (!tmpl_spec) return tmpl_spec.error().within(at);
  if (*tmpl_spec == nullptr) return Error{"spec.template.spec", "is required"}.within(at);
  const NlohmannView spec_view(**tmpl_spec);
  const workload_reader::Path spec_path("spec.template.spec");
  auto requirements = workload_reader::read_requirements(spec_view, "requirements", spec_path);
  if (!requirements) return requirements.error().within(at);
  if (auto e = check_requirements(*requirements, "spec.template.spec.requirements")) {
    return e->within(at);
  }
  pool.requirements = std::move(*requirements);
  if (auto e = node_reader::read_taints(spec_view.find("taints"), pool.taints, spec_path)) {
    return e->within(at);
  }
  if (auto e = check_taints(pool.taints, "spec.template.spec.taints")) return e->within(at);
  return pool;
}

bool is_gpu_pool(const NodePool& pool) {
  if (pool.source == NodePool::Source::policy) return true;
  if (!pool.driver.empty() || has_gpu_facts(pool.labels)) return true;
  if (kind_requirement(pool) != nullptr) return true;
  return std::any_of(pool.requirements.begin(), pool.requirements.end(), [](const auto& r) {
    return r.key == "karpenter.k8s.aws/instance-gpu-count" ||
           r.key == "karpenter.azure.com/sku-gpu-count";
  });
}

std::string pool_node_name(const NodePool& pool, std::string_view kind_value,
                           std::size_t nodes_now) {
  std::string name = pool.source == NodePool::Source::karpenter ? "NodePool " : "node pool ";
  name += pool.name;
  name += " (";
  if (!kind_value.empty()) {
    name += kind_value;
    name += ", ";
  }
  name += std::to_string(nodes_now);
  name += nodes_now == 1 ? " node now)" : " nodes now)";
  return name;
}

bool is_pool_member(const NodePool& pool, const KeyValues& labels) {
  if (pool.source == NodePool::Source::karpenter) {
    const std::string* name = find_value(labels, kNodePoolLabel);
    return name != nullptr && *name == pool.name;
  }
  return std::all_of(pool.labels.begin(), pool.labels.end(), [&labels](const auto& label) {
    const std::string* value = find_value(labels, label.first);
    return value != nullptr && *value == label.second;
  });
}

std::size_t pool_member_count(const NodePool& pool, std::span<const Node> nodes) {
  return static_cast<std::size_t>(std::count_if(nodes.begin(), nodes.end(), [&pool](const Node& n) {
    return n.pool == nullptr && is_pool_member(pool, n.labels);
  }));
}

std::vector<Node> pool_nodes(const std::shared_ptr<const NodePool>& pool, const CompatDb& db,
                             std::size_t nodes_now) {
  std::vector<Node> out;
  if (pool == nullptr || !is_gpu_pool(*pool)) return out;

  // The labels every node of the pool carries: the template's, the pool's
  // name, and each requirement that allows one value.
  KeyValues labels = pool->labels;
  auto put = [&labels](std::string_view key, const std::string& value) {
    if (find_value(labels, key) == nullptr) labels.emplace_back(std::string(key), value);
  };
  if (pool->source == NodePool::Source::karpenter) put(kNodePoolLabel, pool->name);
  const NodeSelectorRequirement* kind = kind_requirement(*pool);
  std::vector<NodeSelectorRequirement> rest;
  for (const NodeSelectorRequirement& r : pool->requirements) {
    if (&r == kind) continue;
    if (r.op == "In" && r.values.size() == 1) {
      put(normalized(r.key), r.values[0]);
    } else {
      rest.push_back(r);
    }
  }
  std::sort(labels.begin(), labels.end());

  std::vector<std::string> kinds;
  if (kind != nullptr) {
    kinds = kind->values;
    std::sort(kinds.begin(), kinds.end());
    kinds.erase(std::unique(kinds.begin(), kinds.end()), kinds.end());
  }
  const bool several = kinds.size() > 1;
  if (kinds.empty()) kinds.emplace_back();
  for (const std::string& value : kinds) {
    Node node;
    node.name =
        pool_node_name(*pool, several ? std::string_view(value) : std::string_view(), nodes_now);
    node.labels = labels;
    const std::string kind_key = kind != nullptr ? std::string(normalized(kind->key)) : "";
    if (!value.empty()) {
      node.labels.emplace_back(kind_key, value);
      std::sort(node.labels.begin(), node.labels.end());
    }
    node.taints = pool->taints;
    std::int64_t gpus = pool->gpus;
    if (gpus == 0 && kind_key == "node.kubernetes.io/instance-type") {
      if (const InstanceType* type = db.instance_type(value)) gpus = type->gpus;
    }
    node.allocatable.emplace_back(pool->gpu_resource, gpus > 0 ? gpus : kUnboundedGpus);
    auto info = std::make_shared<PoolNodeInfo>();
    info->pool = pool;
    info->requirements = rest;
    if (!value.empty()) {
      info->kind_key = kind_key;
      info->kind_value = value;
    }
    node.pool = std::move(info);
    out.push_back(std::move(node));
  }
  return out;
}

bool pool_admits(const Node& pool_node,
                 std::span<const std::pair<std::string_view, std::int64_t>> requests,
                 const PodSpec& spec) {
  if (pool_node.pool == nullptr || !spec.node_name.empty()) return false;
  const NodePool& pool = *pool_node.pool->pool;

  for (const Taint& taint : pool_node.taints) {
    if (taint.effect != "NoSchedule" && taint.effect != "NoExecute") continue;
    const bool tolerated = std::any_of(spec.tolerations.begin(), spec.tolerations.end(),
                                       [&](const Toleration& t) { return tolerates(t, taint); });
    if (!tolerated) return false;
  }
  for (const auto& [resource, amount] : requests) {
    if (amount <= 0) continue;
    if (resource == pool.gpu_resource) {
      if (amount > pool_node.allocatable.front().second) return false;
    } else if (resource.starts_with("nvidia.com/")) {
      return false;  // another kind of GPU (a MIG profile) than the pool offers
    }
  }

  Requirements offered;
  for (const auto& [key, value] : pool_node.labels) add(offered, {key, "In", {value}});
  for (const NodeSelectorRequirement& r : pool_node.pool->requirements) add(offered, r);

  Requirements selector;
  for (const auto& [key, value] : spec.node_selector) add(selector, {key, "In", {value}});
  if (!spec.required_terms) return compatible(offered, selector);
  for (const NodeSelectorTerm& term : *spec.required_terms) {
    // A field names a node that exists; only leaving nodes out (NotIn)
    // keeps a new node possible.
    if (std::any_of(term.match_fields.begin(), term.match_fields.end(),
                    [](const NodeSelectorRequirement& f) { return f.op != "NotIn"; })) {
      continue;
    }
    if (term.match_expressions.empty() && term.match_fields.empty()) continue;  // selects nothing
    // A requirement the scheduler cannot parse makes its term match no node.
    if (check_requirements(term.match_expressions, "")) continue;
    Requirements wanted = selector;
    for (const NodeSelectorRequirement& r : term.match_expressions) add(wanted, r);
    if (compatible(offered, wanted)) return true;
  }
  return false;
}

}  // namespace cudagate

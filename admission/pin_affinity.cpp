// Building the /mutate pin for a partial workload: node-label (or node-name) terms that select
// exactly its compatible nodes, checked against the inventory, and the JSON Patch that sets them.
#include "admission/pin_affinity.h"

#include <algorithm>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "admission/rule_pin.h"
#include "policy/objects/node_pool.h"
#include "policy/rules/evaluate.h"

namespace cudagate {
namespace {

using nlohmann::json;

constexpr std::string_view kRequired = "requiredDuringSchedulingIgnoredDuringExecution";

// GPU Feature Discovery and cudagate label keys (docs/contract.md §2.3).
constexpr std::string_view kGfdDriverFull = "nvidia.com/cuda.driver-version.full";
constexpr std::string_view kGfdDriverVersionParts[] = {"nvidia.com/cuda.driver-version.major",
                                                       "nvidia.com/cuda.driver-version.minor",
                                                       "nvidia.com/cuda.driver-version.revision"};
constexpr std::string_view kGfdDriverParts[] = {
    "nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor", "nvidia.com/cuda.driver.rev"};
constexpr std::string_view kGfdComputeParts[] = {"nvidia.com/gpu.compute.major",
                                                 "nvidia.com/gpu.compute.minor"};
constexpr std::string_view kGfdProduct = "nvidia.com/gpu.product";
constexpr std::string_view kCudagateDriver = "cudagate.io/driver-version";
constexpr std::string_view kCudagateCompute = "cudagate.io/compute-capability";
constexpr std::string_view kCudagateProduct = "cudagate.io/gpu-product";

// Label sets tried, narrowest first; `names` is the last resort.
enum class Scheme : unsigned char {
  compute,
  driver,
  driver_compute,
  driver_compute_product,
  names
};

// Distinct label signatures beyond which a label pin is not worth writing.
constexpr std::size_t kMaxSignatures = 64;

using Keys = std::vector<std::string_view>;
// (label key, value) pairs; the views point into the inventory's nodes.
using Signature = std::vector<std::pair<std::string_view, std::string_view>>;

// One node's labels as the inventory keeps them (valid as long as it).
struct NodeLabels {
  const Inventory& inventory;
  std::size_t index;
  [[nodiscard]] const std::string* label(std::string_view key) const {
    return inventory.node_label(index, key);
  }
};

bool has(const NodeLabels& node, std::string_view key) {
  return node.label(key) != nullptr;
}

// Appends `key` once; the key lists are a handful long.
void add_key(Keys& keys, std::string_view key) {
  if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
}

// Appends the parts present, in order; false when none is.
template <std::size_t N>
bool add_present(Keys& keys, const NodeLabels& node, const std::string_view (&parts)[N]) {
  bool any = false;
  for (const auto k : parts) {
    if (has(node, k)) {
      add_key(keys, k);
      any = true;
    }
  }
  return any;
}

bool add_first_present(Keys& keys, const NodeLabels& node,
                       std::initializer_list<std::string_view> keys_in_order) {
  for (const auto k : keys_in_order) {
    if (has(node, k)) {
      add_key(keys, k);
      return true;
    }
  }
  return false;
}

bool add_cloud_key(Keys& keys, const NodeLabels& node, const CompatDb& db) {
  for (const auto& c : db.cloud_accelerators) {
    if (has(node, c.label)) {
      add_key(keys, c.label);
      return true;
    }
  }
  return false;
}

bool add_product_keys(Keys& keys, const NodeLabels& node, const CompatDb& db) {
  return add_first_present(keys, node, {kGfdProduct, kCudagateProduct}) ||
         add_cloud_key(keys, node, db);
}

// The labels the node's driver fact was read from.
bool add_driver_keys(Keys& keys, const NodeLabels& node, const GpuFacts& facts) {
  switch (facts.driver_source) {
    case NodeFactSource::gfd:
      return add_first_present(keys, node, {kGfdDriverFull}) ||
             add_present(keys, node, kGfdDriverVersionParts) ||
             add_present(keys, node, kGfdDriverParts);
    case NodeFactSource::cudagate:
      return add_first_present(keys, node, {kCudagateDriver});
    case NodeFactSource::none:
    case NodeFactSource::cloud:
    case NodeFactSource::product:
    case NodeFactSource::dra:   // attributes of ResourceSlices, not labels
    case NodeFactSource::pool:  // declared for a node pool, on no label
      break;
  }
  return false;
}

// The labels the node's compute capability was read from.
bool add_compute_keys(Keys& keys, const NodeLabels& node, const GpuFacts& facts,
                      const CompatDb& db) {
  switch (facts.cc_source) {
    case NodeFactSource::gfd:
      return add_present(keys, node, kGfdComputeParts);
    case NodeFactSource::cudagate:
      return add_first_present(keys, node, {kCudagateCompute});
    case NodeFactSource::cloud:
      return add_cloud_key(keys, node, db);
    case NodeFactSource::product:
      return add_first_present(keys, node, {kGfdProduct, kCudagateProduct});
    case NodeFactSource::none:
    case NodeFactSource::dra:
    case NodeFactSource::pool:
      break;
  }
  return false;
}

// The keys `scheme` pins `node` on, into `keys` (cleared first); false
// when the node lacks them.
bool scheme_keys(Scheme scheme, const NodeLabels& node, const GpuFacts& facts, const CompatDb& db,
                 Keys& keys) {
  keys.clear();
  switch (scheme) {
    case Scheme::compute:
      return add_compute_keys(keys, node, facts, db);
    case Scheme::driver:
      return add_driver_keys(keys, node, facts);
    case Scheme::driver_compute:
      return add_driver_keys(keys, node, facts) && add_compute_keys(keys, node, facts, db);
    case Scheme::driver_compute_product:
      return add_driver_keys(keys, node, facts) && add_compute_keys(keys, node, facts, db) &&
             add_product_keys(keys, node, db);
    case Scheme::names:
      break;
  }
  return false;
}

// Pin terms from label signatures. Signatures with the same keys that
// differ only in the last value share one term with an In list; that merge
// selects exactly the same nodes.
std::vector<NodeSelectorTerm> label_terms(const std::set<Signature>& signatures) {
  // prefix (every pair but the last, then the last key with no value) -> last values
  std::map<Signature, std::vector<std::string>> merged;
  for (const auto& sig : signatures) {
    Signature prefix(sig.begin(), sig.end() - 1);
    prefix.emplace_back(sig.back().first, std::string_view());
    merged[prefix].emplace_back(sig.back().second);
  }
  std::vector<NodeSelectorTerm> terms;
  for (auto& [prefix, values] : merged) {
    NodeSelectorTerm term;
    for (std::size_t i = 0; i + 1 < prefix.size(); ++i) {
      term.match_expressions.push_back(
          {std::string(prefix[i].first), "In", {std::string(prefix[i].second)}});
    }
    term.match_expressions.push_back({std::string(prefix.back().first), "In", std::move(values)});
    terms.push_back(std::move(term));
  }
  return terms;
}

// The pin terms of `scheme` for the `compatible` nodes. With `sampled`, one
// member per group stands for its group: nodes with equal GPU facts nearly
// always carry equal fact labels, and the caller verifies the result, then
// reads every node when the sample was not enough.
Expected<std::vector<NodeSelectorTerm>> scheme_terms(Scheme scheme, const NodeSet& compatible,
                                                     const Inventory& inventory, const CompatDb& db,
                                                     bool sampled, std::string& keys_used) {
  std::vector<NodeSelectorTerm> terms;
  if (scheme == Scheme::names) {
    if (compatible.count() > kMaxPinnedNodeNames) {
      return Error{
          "", "more than " + std::to_string(kMaxPinnedNodeNames) + " nodes would have to be named"};
    }
    compatible.for_each([&](std::size_t i) {
      NodeSelectorTerm term;
      term.match_fields.push_back({"metadata.name", "In", {inventory.node_name(i)}});
      terms.push_back(std::move(term));
      return true;
    });
    keys_used = "node names";
    return terms;
  }
  std::set<Signature> signatures;
  std::set<std::string_view> keys;
  bool complete = true;
  Keys node_keys;
  Signature sig;
  std::vector<bool> group_seen(sampled ? inventory.groups().size() : 0, false);
  compatible.for_each([&](std::size_t i) {
    const std::size_t group = inventory.group_of(i);
    if (sampled) {
      if (group_seen[group]) return true;
      group_seen[group] = true;
    }
    const NodeLabels node{inventory, i};
    const GpuFacts& facts = inventory.groups()[group].facts;
    if (!scheme_keys(scheme, node, facts, db, node_keys)) {
      complete = false;
      return false;
    }
    sig.clear();
    for (const auto key : node_keys) sig.emplace_back(key, *node.label(key));
    if (signatures.find(sig) == signatures.end()) {
      signatures.insert(sig);
      keys.insert(node_keys.begin(), node_keys.end());
    }
    return signatures.size() <= kMaxSignatures;
  });
  if (!complete) return Error{"", "some compatible nodes lack the labels"};
  if (signatures.size() > kMaxSignatures) return Error{"", "too many distinct label values"};
  keys_used = "labels";
  const char* separator = " ";
  for (const auto key : keys) {
    keys_used += separator;
    keys_used += key;
    separator = ", ";
  }
  return label_terms(signatures);
}

// Whether `nodes` holds a node pool's node.
bool holds_pool(const NodeSet& nodes, const Inventory& inventory) {
  bool found = false;
  nodes.for_each([&](std::size_t i) {
    found = inventory.pool_info(i) != nullptr;
    return !found;
  });
  return found;
}

// The terms that select the compatible pools among `wanted` by the labels
// the pools define, which an autoscaler knows before it launches a node: a
// NodePool by karpenter.sh/nodepool (and its GPU kind's label for a pool of
// several kinds), a policy pool by its labels.
std::vector<NodeSelectorTerm> pool_terms(const NodeSet& wanted, const Inventory& inventory) {
  std::set<Signature> signatures;
  wanted.for_each([&](std::size_t i) {
    const PoolNodeInfo* info = inventory.pool_info(i);
    if (info == nullptr) return true;
    Signature sig;
    if (info->pool->source == NodePool::Source::karpenter) {
      sig.emplace_back(kNodePoolLabel, info->pool->name);
    } else {
      for (const auto& [key, value] : info->pool->labels) sig.emplace_back(key, value);
    }
    if (!info->kind_key.empty()) sig.emplace_back(info->kind_key, info->kind_value);
    signatures.insert(std::move(sig));
    return true;
  });
  return label_terms(signatures);
}

// Each term with the nodes of `excluded` left out by name (a
// metadata.name NotIn field per node, one value each as the API server
// requires): an autoscaler reads no field of a term, so the pools the terms
// select stay selected.
void exclude_names(std::vector<NodeSelectorTerm>& terms, const NodeSet& excluded,
                   const Inventory& inventory) {
  for (NodeSelectorTerm& term : terms) {
    excluded.for_each([&](std::size_t i) {
      term.match_fields.push_back({"metadata.name", "NotIn", {inventory.node_name(i)}});
      return true;
    });
  }
}

json requirement_json(const NodeSelectorRequirement& r) {
  json j = {{"key", r.key}, {"operator", r.op}};
  if (!r.values.empty()) j["values"] = r.values;
  return j;
}

void append_requirements(json& term, const char* field,
                         const std::vector<NodeSelectorRequirement>& more) {
  if (more.empty()) return;
  json& list = term[field];
  if (!list.is_array()) list = json::array();
  for (const auto& r : more) list.push_back(requirement_json(r));
}

// T+P for every existing term T and pin term P; P alone without T.
json combined_terms(const json* existing, const std::vector<NodeSelectorTerm>& pins) {
  json out = json::array();
  const auto add = [&](json base, const NodeSelectorTerm& p) {
    append_requirements(base, "matchExpressions", p.match_expressions);
    append_requirements(base, "matchFields", p.match_fields);
    out.push_back(std::move(base));
  };
  if (existing != nullptr && existing->is_array() && !existing->empty()) {
    for (const auto& t : *existing) {
      for (const auto& p : pins) add(t, p);
    }
  } else {
    for (const auto& p : pins) add(json::object(), p);
  }
  return out;
}

const json* member(const json* object, std::string_view key) {
  if (object == nullptr || !object->is_object()) return nullptr;
  const auto it = object->find(key);
  if (it == object->end() || it->is_null()) return nullptr;
  return &*it;
}

// The value at a pointer made of plain object keys; nullptr when absent.
const json* at_pointer(const json& root, std::string_view pointer) {
  const json* at = &root;
  while (!pointer.empty()) {
    if (pointer.front() != '/') return nullptr;
    pointer.remove_prefix(1);
    const auto end = pointer.find('/');
    at = member(at, pointer.substr(0, end));
    if (at == nullptr) return nullptr;
    pointer.remove_prefix(end == std::string_view::npos ? pointer.size() : end);
  }
  return at;
}

json op(std::string_view name, std::string path, json value) {
  return json{{"op", name}, {"path", std::move(path)}, {"value", std::move(value)}};
}

// The operation that sets the pod's required terms to `terms`, written at
// the shallowest member that is missing, so every starting shape works.
json affinity_op(const json& spec, const std::string& base, json terms) {
  const json* affinity = member(&spec, "affinity");
  const json* node_affinity = member(affinity, "nodeAffinity");
  const json* required = member(node_affinity, kRequired);
  const json* existing = member(required, "nodeSelectorTerms");
  json value = {{"nodeSelectorTerms", std::move(terms)}};
  std::string path = base + "/affinity";
  if (affinity == nullptr) {
    return op("add", path, {{"nodeAffinity", {{std::string(kRequired), std::move(value)}}}});
  }
  path += "/nodeAffinity";
  if (node_affinity == nullptr) {
    return op("add", path, {{std::string(kRequired), std::move(value)}});
  }
  path += "/" + std::string(kRequired);
  if (required == nullptr) return op("add", path, std::move(value));
  path += "/nodeSelectorTerms";
  return op(existing == nullptr ? "add" : "replace", path, std::move(value["nodeSelectorTerms"]));
}

// The spec with its required terms replaced, as the patch leaves it.
json patched_spec(const json& spec, const json& terms) {
  json out = spec;
  json& affinity = out["affinity"];
  if (!affinity.is_object()) affinity = json::object();
  json& node_affinity = affinity["nodeAffinity"];
  if (!node_affinity.is_object()) node_affinity = json::object();
  json& required = node_affinity[std::string(kRequired)];
  if (!required.is_object()) required = json::object();
  required["nodeSelectorTerms"] = terms;
  return out;
}

json annotation_op(const json& object, const std::string& spec_pointer, std::string_view reason) {
  // The pod's metadata sits beside its spec: /metadata, /spec/template/metadata.
  std::string meta = spec_pointer.substr(0, spec_pointer.size() - std::string_view("/spec").size());
  meta += "/metadata";
  const json* metadata = at_pointer(object, meta);
  const json entry = {{std::string(kPinnedAnnotation), std::string(reason)}};
  if (metadata == nullptr) return op("add", meta, {{"annotations", entry}});
  if (member(metadata, "annotations") == nullptr) return op("add", meta + "/annotations", entry);
  return op("add", meta + "/annotations/" + json_pointer_token(kPinnedAnnotation),
            std::string(reason));
}

std::vector<Scheme> schemes_for(const Decision& decision) {
  bool driver = false;
  bool device = false;
  for (const auto& g : decision.groups) {
    if (g.outcome == Outcome::compatible) continue;
    for (const auto& f : g.findings) {
      if (rule_info(f.rule).facts == RuleFacts::driver) {
        driver = true;
      } else {
        device = true;
      }
    }
  }
  if (device && !driver) {
    return {Scheme::compute, Scheme::driver_compute, Scheme::driver_compute_product, Scheme::names};
  }
  if (driver && !device) {
    return {Scheme::driver, Scheme::driver_compute, Scheme::driver_compute_product, Scheme::names};
  }
  return {Scheme::driver_compute, Scheme::driver_compute_product, Scheme::names};
}

}  // namespace

std::string json_pointer_token(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (const char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

NodeSet compatible_candidates(const Workload& workload, const Decision& decision,
                              const Inventory& inventory) {
  NodeSet compatible(inventory.size());
  for (const auto& g : decision.groups) {
    if (g.outcome == Outcome::compatible && g.group < inventory.groups().size()) {
      compatible |= inventory.groups()[g.group].members;
    }
  }
  compatible &= inventory.candidates(workload.spec, added_requests(decision));
  return compatible;
}

namespace {

// One workload's pin being made: what every candidate set of terms is
// checked against, and the check.
struct PinAttempt {
  const json& object;
  const json& spec;
  const std::string& base;  // the pod spec's JSON pointer
  const Decision& decision;
  const Inventory& inventory;
  const CompatDb& db;
  const json* existing = nullptr;  // the pod's own required terms, or null
  std::size_t existing_terms = 1;  // how many (1 when none)
  NodeSet wanted;                  // the compatible candidates

  [[nodiscard]] bool too_many(std::size_t terms) const {
    return terms * existing_terms > kMaxPinnedTerms;
  }

  // The pin of `terms` when the patched pod's candidates are exactly the
  // compatible candidates of the original (the check the contract asks for).
  Expected<std::optional<Pin>> verified(std::vector<NodeSelectorTerm> terms, std::string keys_used,
                                        std::string_view annotation) const {
    json combined = combined_terms(existing, terms);
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", "pin-check"}}},
                {"spec", patched_spec(spec, combined)}};
    auto patched = workload_from_json(pod, "pinned pod");
    if (!patched) return patched.error();
    if (!(inventory.candidates(patched->spec, added_requests(decision)) == wanted)) {
      return std::optional<Pin>();
    }
    Pin pin;
    pin.nodes = wanted.count();
    pin.scheme = std::move(keys_used);
    pin.terms = std::move(terms);
    pin.patch = json::array();
    pin.patch.push_back(affinity_op(spec, base, std::move(combined)));
    pin.patch.push_back(annotation_op(object, base, annotation));
    return std::optional<Pin>(std::move(pin));
  }
};

// A node pool among the compatible candidates: the pin selects the
// compatible pools by their own labels, their nodes that cannot run the
// workload by name, and the compatible nodes of no such pool by a scheme.
Expected<Pin> pin_by_pools(const PinAttempt& attempt, std::string_view reason) {
  const Inventory& inventory = attempt.inventory;
  std::vector<NodeSelectorTerm> by_pool = pool_terms(attempt.wanted, inventory);
  // What the pool terms select: the pools, and the nodes that carry their labels.
  json probe = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", "pin-check"}}},
                {"spec", patched_spec(attempt.spec, combined_terms(attempt.existing, by_pool))}};
  auto probed = workload_from_json(probe, "pinned pod");
  if (!probed) return probed.error();
  const NodeSet pooled = inventory.candidates(probed->spec, added_requests(attempt.decision));
  NodeSet excluded = pooled;
  excluded.subtract(attempt.wanted);
  if (excluded.count() > kMaxPinnedNodeNames) {
    return Error{"", "more than " + std::to_string(kMaxPinnedNodeNames) +
                         " nodes of the compatible pools cannot run it and would have to be "
                         "named"};
  }
  exclude_names(by_pool, excluded, inventory);
  NodeSet rest = attempt.wanted;
  rest.subtract(pooled);
  std::string pool_keys = "node pools";
  if (rest.empty()) {
    if (!attempt.too_many(by_pool.size())) {
      auto pin = attempt.verified(by_pool, pool_keys, reason);
      if (!pin) return pin.error();
      if (*pin) return std::move(**pin);
    }
  } else {
    for (const Scheme scheme : schemes_for(attempt.decision)) {
      std::string keys_used;
      auto terms = scheme_terms(scheme, rest, inventory, attempt.db, false, keys_used);
      if (!terms) continue;
      terms->insert(terms->begin(), by_pool.begin(), by_pool.end());
      if (attempt.too_many(terms->size())) continue;
      std::string scheme_keys = pool_keys;
      scheme_keys += " and ";
      scheme_keys += keys_used;
      auto pin = attempt.verified(std::move(*terms), std::move(scheme_keys), reason);
      if (!pin) return pin.error();
      if (*pin) return std::move(**pin);
    }
  }
  return Error{"", "no terms on the compatible pools' labels select exactly the " +
                       std::to_string(attempt.wanted.count()) + " compatible nodes and pools"};
}

// The pin on the rules' label ranges (rule_pin_terms), or none with why
// not added to `annotation`: the pin on today's exact values says so.
Expected<std::optional<Pin>> pin_by_rules(const PinAttempt& attempt, const Policy& policy,
                                          std::string_view reason, std::string& annotation) {
  auto rule = rule_pin_terms(attempt.decision, policy, attempt.db);
  std::string why;
  if (!rule) {
    why = rule.error().message;
  } else if (attempt.too_many(rule->terms.size())) {
    why = "the pinned affinity would have too many terms";
  } else {
    auto pin = attempt.verified(std::move(rule->terms), std::move(rule->keys), reason);
    if (!pin) return pin.error();
    if (*pin) return pin;
    why =
        "the rules' label ranges select other nodes than the compatible ones (some nodes "
        "lack GPU Feature Discovery's numeric labels)";
  }
  annotation += " (pinned on today's exact values: " + why + ")";
  return std::optional<Pin>();
}

// The pin on today's exact values: the schemes the findings call for, each
// on a sample of labels first, then on all of them; node names last.
Expected<Pin> pin_by_schemes(const PinAttempt& attempt, std::string_view annotation) {
  std::string failures;
  for (const Scheme scheme : schemes_for(attempt.decision)) {
    for (const bool sampled : {true, false}) {
      if (scheme == Scheme::names && sampled) continue;
      std::string keys_used;
      auto terms =
          scheme_terms(scheme, attempt.wanted, attempt.inventory, attempt.db, sampled, keys_used);
      if (!terms) {
        if (scheme == Scheme::names) failures += terms.error().message;
        break;
      }
      if (attempt.too_many(terms->size())) {
        if (scheme == Scheme::names) failures += "the pinned affinity would have too many terms";
        break;
      }
      auto pin = attempt.verified(std::move(*terms), std::move(keys_used), annotation);
      if (!pin) return pin.error();
      if (*pin) return std::move(**pin);
    }
  }
  return Error{
      "", "no driver, compute-capability or product labels set the " +
              std::to_string(attempt.wanted.count()) +
              " compatible nodes apart from the others, and " +
              (failures.empty() ? std::string("naming them selects other nodes too") : failures)};
}

}  // namespace

Expected<Pin> pin_affinity(const json& object, const Workload& workload, const Decision& decision,
                           const Inventory& inventory, const CompatDb& db, std::string_view reason,
                           const Policy* policy) {
  const std::string& base = workload.spec_pointer;
  if (base.size() < 5 || base.compare(base.size() - 5, 5, "/spec") != 0) {
    return Error{base, "expected the JSON pointer of a pod spec"};
  }
  const json* spec = at_pointer(object, base);
  if (spec == nullptr || !spec->is_object()) return Error{base, "the object has no pod spec here"};
  if (const json* a = member(spec, "affinity"); a != nullptr && !a->is_object()) {
    return Error{base + "/affinity", "expected an object"};
  }

  NodeSet wanted = compatible_candidates(workload, decision, inventory);
  if (wanted.empty()) return Error{"", "no candidate node can run it"};
  const json* existing = member(member(member(member(spec, "affinity"), "nodeAffinity"), kRequired),
                                "nodeSelectorTerms");
  const std::size_t existing_terms =
      existing != nullptr && existing->is_array() && !existing->empty() ? existing->size() : 1;
  const PinAttempt attempt{object, *spec,    base,           decision,         inventory,
                           db,     existing, existing_terms, std::move(wanted)};

  if (holds_pool(attempt.wanted, inventory)) return pin_by_pools(attempt, reason);
  std::string exact_annotation(reason);
  if (policy != nullptr) {
    auto pin = pin_by_rules(attempt, *policy, reason, exact_annotation);
    if (!pin) return pin.error();
    if (*pin) return std::move(**pin);
  }
  return pin_by_schemes(attempt, exact_annotation);
}

}  // namespace cudagate

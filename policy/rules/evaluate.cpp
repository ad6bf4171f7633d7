// evaluate(): one workload judged against the inventory's node groups, and the per-thread memo
// that lets later decisions reuse metadata and judgements instead of redoing them.
#include "policy/rules/evaluate.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "policy/rules/container_check.h"
#include "types/saturating.h"

namespace cudagate {
namespace {

constexpr std::string_view kModeAnnotation = "cudagate.io/mode";

int rank(Outcome outcome) {
  switch (outcome) {
    case Outcome::incompatible:
      return 0;
    case Outcome::unknown:
      return 1;
    case Outcome::compatible:
      return 2;
  }
  return 2;
}

Outcome combine(Outcome a, Outcome b) {
  return rank(a) <= rank(b) ? a : b;
}

bool has_image_facts(const ContainerMetadata& md) {
  return md.cuda.value || md.archs.value || (md.require.value && !md.require.value->empty());
}

template <class T, class Print>
SourcedValue sourced(const Sourced<T>& value, Print print) {
  SourcedValue out;
  if (value.value) {
    out.value = print(*value.value);
    out.source = std::string(to_string(value.source));
  }
  return out;
}

ContainerDecision describe(const ContainerSpec& container, const ContainerMetadata& md) {
  ContainerDecision out{container.name, container.image, true, {}, {}, {}, {}};
  out.cuda = sourced(md.cuda, [](const CudaVersion& v) { return v.str(); });
  out.archs = sourced(md.archs, [](const ArchSet& v) { return v.str(); });
  out.require = sourced(md.require, [](const RequirementSet& v) { return v.str(); });
  if (md.require_disabled) {
    // Say why there is no requirement rather than leave it blank.
    out.require.value = md.require.text;
    out.require.source = std::string(to_string(md.require.source));
  }
  out.min_cc = sourced(md.min_cc, [](const ComputeCapability& v) { return v.str(); });
  return out;
}

Verdict verdict_of(std::size_t compatible, std::size_t incompatible, std::size_t unknown) {
  if (incompatible == 0 && unknown == 0) return Verdict::pass;
  if (compatible > 0 && incompatible > 0) return Verdict::partial;
  if (compatible == 0 && unknown == 0) return Verdict::fail;
  return Verdict::unknown;
}

// One container judged on one group, with what the judgement depends on
// besides the container: the group's facts and the policy's rule settings.
struct GroupCheck {
  bool valid = false;
  GpuFacts facts;
  bool minor_version_compatibility = false;
  ArchMatch arch_match = ArchMatch::cuda;
  ToolkitMode toolkit_mode = ToolkitMode::legacy;
  RuleResult result;
};

// A container's metadata, its record in decisions and its judgements by
// group index (an index is checked against the group's facts before use,
// so entries survive inventory updates).
struct ContainerEntry {
  explicit ContainerEntry(Expected<ContainerMetadata> md) : metadata(std::move(md)) {}
  Expected<ContainerMetadata> metadata;
  ContainerDecision described;
  std::vector<GroupCheck> checks;
};

// The state evaluate() keeps in a MetadataMemo. Keyed by everything that
// resolve_metadata reads, so a hit gives what resolving again would; a
// judgement depends only on that, the group's facts, three policy settings and
// the compat-db (the state starts over with another compat-db).
struct EvaluationState {
  static constexpr std::size_t kMaxContainers = 256;
  static constexpr std::size_t kMaxChecks = std::size_t{1} << 16;

  // Called once per decision, before any lookup: entries stay put for the
  // rest of the decision.
  void start(const CompatDb& with) {
    if (db != &with || containers.size() >= kMaxContainers || checks >= kMaxChecks) {
      containers.clear();
      checks = 0;
      db = &with;
    }
  }

  const CompatDb* db = nullptr;
  std::unordered_map<std::string, ContainerEntry> containers;
  std::size_t checks = 0;  // GroupChecks held by all entries, which bound its memory
  // Reused by each decision.
  std::string key;
  std::vector<ContainerEntry*> entries;
  struct Judged {
    std::size_t group;
    std::size_t count;
    Outcome outcome;
  };
  std::vector<Judged> judged;
};

void append_text(std::string& key, std::string_view text) {
  const auto size = static_cast<std::uint32_t>(text.size());
  char bytes[sizeof size];
  std::memcpy(bytes, &size, sizeof size);
  key.append(bytes, sizeof size);
  key.append(text);
}

void append_optional(std::string& key, const std::optional<std::string>& text) {
  key += text ? '1' : '0';
  if (text) append_text(key, *text);
}

// Everything resolve_metadata reads for `container`, each part tagged and
// sized so that different inputs never give the same key.
void metadata_key(std::string& key, const Workload& workload, const ContainerSpec& container,
                  const Policy& policy, const RegistryFacts* registry, const FlagValues* flags) {
  constexpr std::string_view kAnnotationPrefix = "cudagate.io/";
  key.clear();
  // How TORCH_CUDA_ARCH_LIST names expand is the policy's.
  key += policy.arch_list_reading == ArchListReading::cmake ? 'C' : 'P';
  append_text(key, container.image);
  append_text(key, container.name);
  if (const CatalogEntry* entry = policy.catalog_entry(container.image)) {
    key += 'c';
    append_optional(key, entry->cuda_version);
    append_optional(key, entry->arch_list);
    append_optional(key, entry->require_cuda);
  } else if (registry != nullptr) {
    if (const ImageConfig* config = registry->find(container.image)) {
      // A config is content-addressed: its digest stands for its contents.
      if (!config->digest.empty()) {
        key += 'd';
        append_text(key, config->digest);
      } else {
        for (const auto& [name, value] : config->env) {
          key += 'r';
          append_text(key, name);
          append_text(key, value);
        }
        for (const auto& [name, value] : config->labels) {
          key += 'l';
          append_text(key, name);
          append_text(key, value);
        }
      }
      key += 'R';
      if (config->scan != nullptr) {
        // A scan is of one manifest: its digest stands for its contents.
        key += 's';
        append_text(key, config->scan->digest);
        for (const std::string& glob : policy.scan.counted_files) {
          key += 'g';
          append_text(key, glob);
        }
      }
    }
  }
  for (const EnvVar& var : container.env) {
    if (!metadata_reads_env(var.name)) continue;
    key += 'e';
    append_text(key, var.name);
    append_optional(key, var.value);
  }
  for (const auto& [name, value] : workload.annotations) {
    if (name.compare(0, kAnnotationPrefix.size(), kAnnotationPrefix) != 0) continue;
    key += 'a';
    append_text(key, name);
    append_text(key, value);
  }
  if (flags != nullptr) {
    key += 'f';
    append_optional(key, flags->cuda);
    append_optional(key, flags->arch_list);
    append_optional(key, flags->min_cc);
  }
}

// The judgement of the entry's container on group g, computed when the
// entry has none for these facts and policy settings.
const RuleResult& judge(ContainerEntry& entry, std::string_view container, std::size_t g,
                        std::size_t groups, const GpuFacts& facts, const Policy& policy,
                        const CompatDb& db, EvaluationState& state) {
  if (entry.checks.size() <= g) {
    state.checks += groups - entry.checks.size();
    entry.checks.resize(groups);
  }
  GroupCheck& check = entry.checks[g];
  if (check.valid && check.minor_version_compatibility == policy.minor_version_compatibility &&
      check.arch_match == policy.arch_match && check.toolkit_mode == policy.toolkit_mode &&
      check.facts == facts) {
    return check.result;
  }
  check.result = check_container(container, *entry.metadata, facts, policy, db);
  check.facts = facts;
  check.minor_version_compatibility = policy.minor_version_compatibility;
  check.arch_match = policy.arch_match;
  check.toolkit_mode = policy.toolkit_mode;
  check.valid = true;
  return check.result;
}

}  // namespace

namespace {

std::vector<const ContainerSpec*> gpu_containers_of(const Workload& workload, const Policy& policy,
                                                    const ClaimUse* use) {
  std::vector<const ContainerSpec*> out;
  for (std::size_t i = 0; i < workload.spec.containers.size(); ++i) {
    const ContainerSpec& c = workload.spec.containers[i];
    const bool gpu = std::any_of(c.resources.begin(), c.resources.end(), [&](const auto& r) {
      return r.second > 0 && is_gpu_resource(r.first, policy.gpu_resources);
    });
    if (gpu || (use != nullptr && use->gpu[i])) out.push_back(&c);
  }
  return out;
}

// The claims' device requests as requests of the DRA allocatable entries
// (dra_resource_name), on the first container that uses a GPU claim, so
// that candidate selection counts devices as it counts extended resources.
void set_device_requests(Decision& d, const ClaimUse& use) {
  const auto first = std::find(use.gpu.begin(), use.gpu.end(), true);
  if (first == use.gpu.end()) return;
  d.device_container = static_cast<std::size_t>(first - use.gpu.begin());
  for (const ClaimUse::Request& request : use.requests) {
    const std::string name = dra_resource_name(request.devices.driver, request.devices.type);
    const auto it = std::find_if(d.device_requests.begin(), d.device_requests.end(),
                                 [&](const auto& entry) { return entry.first == name; });
    if (it != d.device_requests.end()) {
      it->second = saturating_add(it->second, request.count);
    } else {
      d.device_requests.emplace_back(name, request.count);
    }
  }
}

void add_findings(std::vector<Finding>& to, const std::vector<Finding>& from) {
  for (const Finding& f : from) {
    const bool seen = std::any_of(to.begin(), to.end(), [&](const Finding& g) {
      return g.rule == f.rule && g.container == f.container && g.message == f.message;
    });
    if (!seen) to.push_back(f);
  }
}

// The decision's containers when none is judged: each with whether it uses a GPU.
void list_unjudged(Decision& d, const Workload& workload,
                   const std::vector<const ContainerSpec*>& gpus) {
  for (const ContainerSpec& c : workload.spec.containers) {
    const bool gpu = std::find(gpus.begin(), gpus.end(), &c) != gpus.end();
    d.containers.push_back(ContainerDecision{c.name, c.image, gpu, {}, {}, {}, {}});
  }
}

// Why the workload is not ours to judge (a skip, docs/contract.md §2.6), or "".
// Skips come before any metadata is resolved: a skipped pod costs no lookups.
std::string skip_reason(const Workload& workload, const Policy& policy, bool asks_for_gpus) {
  const std::string& ns = workload.resource.namespace_;
  if (!asks_for_gpus) return "no GPU container";
  if (std::find(policy.exclude_namespaces.begin(), policy.exclude_namespaces.end(),
                ns.empty() ? std::string("default") : ns) != policy.exclude_namespaces.end()) {
    return "namespace " + (ns.empty() ? std::string("default") : ns) +
           " is excluded by the policy (excludeNamespaces)";
  }
  if (const std::string* mode = workload.annotation(kModeAnnotation);
      policy.allow_pod_opt_out && mode != nullptr && *mode == "off") {
    return "opted out with the annotation cudagate.io/mode: off (policy allowPodOptOut)";
  }
  return {};
}

void add_note(Decision& d, std::string note) {
  if (std::find(d.notes.begin(), d.notes.end(), note) == d.notes.end()) {
    d.notes.push_back(std::move(note));
  }
}

// Step 1: the metadata of each GPU container, from the memo or resolved and
// kept there, into state.entries (in the order of `gpus`); the decision's
// container records. An Error where a container's metadata cannot be read.
std::optional<Error> resolve_containers(Decision& d, EvaluationState& state,
                                        const Workload& workload,
                                        const std::vector<const ContainerSpec*>& gpus,
                                        const Policy& policy, const CompatDb& db,
                                        const EvaluationInputs& inputs) {
  std::vector<ContainerEntry*>& entries = state.entries;
  entries.clear();
  for (const ContainerSpec* c : gpus) {
    metadata_key(state.key, workload, *c, policy, inputs.registry, inputs.flags);
    auto it = state.containers.find(state.key);
    if (it == state.containers.end()) {
      ContainerEntry entry(
          resolve_metadata(workload, *c, policy, db, inputs.registry, inputs.flags, inputs.memo));
      if (entry.metadata) entry.described = describe(*c, *entry.metadata);
      it = state.containers.emplace(state.key, std::move(entry)).first;
    }
    ContainerEntry& entry = it->second;
    if (!entry.metadata) return entry.metadata.error();
    if (!has_image_facts(*entry.metadata)) d.unknown_image = true;
    for (const std::string& note : entry.metadata->scan_notes) {
      add_note(d, "container \"" + c->name + "\": " + note);
    }
    entries.push_back(&entry);
  }
  d.containers.reserve(workload.spec.containers.size());
  for (const ContainerSpec& c : workload.spec.containers) {
    const auto it = std::find(gpus.begin(), gpus.end(), &c);
    if (it == gpus.end()) {
      d.containers.push_back(ContainerDecision{c.name, c.image, false, {}, {}, {}, {}});
    } else {
      d.containers.push_back(entries[static_cast<std::size_t>(it - gpus.begin())]->described);
    }
  }
  return std::nullopt;
}

// The candidates counted by outcome.
struct OutcomeCounts {
  std::size_t compatible = 0;
  std::size_t incompatible = 0;
  std::size_t unknown = 0;
};

// The findings of the groups judged on DRA device kinds, by group.
using DeviceFindings = std::vector<std::pair<std::size_t, std::vector<Finding>>>;

// Step 2: each group with candidate members judged, every GPU container on
// its facts (a DRA container on each kind of device its requests may be
// given there), into state.judged. A group where some request can be given
// no device is no candidate: its members leave d.candidates.
OutcomeCounts judge_groups(Decision& d, EvaluationState& state, DeviceFindings& by_devices,
                           const Workload& workload, const std::vector<const ContainerSpec*>& gpus,
                           const ClaimUse& use, const Inventory& inventory,
                           const NodeSet& candidates, const Policy& policy, const CompatDb& db) {
  using Judged = EvaluationState::Judged;
  const std::vector<ContainerEntry*>& entries = state.entries;
  std::vector<Judged>& judged = state.judged;
  judged.clear();
  OutcomeCounts counts;
  const bool devices = !use.requests.empty();
  const std::vector<NodeGroup>& groups = inventory.groups();
  // DRA: the device kinds judged on the current group.
  std::vector<const DeviceKind*> taken;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const NodeGroup& group = groups[g];
    const auto [begin, end] = inventory.group_slots(g);
    const std::size_t count = candidates.count_range(begin, end);
    if (count == 0) continue;
    Outcome outcome = Outcome::compatible;
    taken.clear();
    bool placeable = true;
    if (devices && !group.facts.devices.empty()) {
      for (const ClaimUse::Request& request : use.requests) {
        bool any = false;
        for (const DeviceKind& kind : group.facts.devices) {
          if (!may_take(request, kind)) continue;
          any = true;
          if (std::find(taken.begin(), taken.end(), &kind) == taken.end()) taken.push_back(&kind);
        }
        placeable = placeable && any;
      }
    }
    if (!placeable) {
      d.candidates -= count;
      continue;
    }
    std::vector<Finding>* device_findings = nullptr;
    for (std::size_t k = 0; k < gpus.size(); ++k) {
      const auto index = static_cast<std::size_t>(gpus[k] - workload.spec.containers.data());
      if (!taken.empty() && use.gpu[index]) {
        if (device_findings == nullptr)
          device_findings = &by_devices.emplace_back(g, std::vector<Finding>{}).second;
        for (const DeviceKind* kind : taken) {
          const RuleResult r = check_container(gpus[k]->name, *entries[k]->metadata,
                                               device_gpu_facts(*kind, db), policy, db);
          outcome = combine(outcome, r.outcome);
          for (const std::string& note : r.notes) add_note(d, note);
          add_findings(*device_findings, r.findings);
        }
        continue;
      }
      const RuleResult& r =
          judge(*entries[k], gpus[k]->name, g, groups.size(), group.facts, policy, db, state);
      outcome = combine(outcome, r.outcome);
      for (const std::string& note : r.notes) add_note(d, note);
      if (device_findings != nullptr) add_findings(*device_findings, r.findings);
    }
    if (group.facts.has_gpu && !group.facts.driver) d.unknown_node = true;
    switch (outcome) {
      case Outcome::compatible:
        counts.compatible += count;
        break;
      case Outcome::incompatible:
        counts.incompatible += count;
        break;
      case Outcome::unknown:
        counts.unknown += count;
        break;
    }
    judged.push_back(Judged{g, count, outcome});
  }
  return counts;
}

// Step 3: the judged groups as the decision's records, ordered by outcome
// (incompatible first), then by size, each with its findings and the names
// of its candidate members.
void record_groups(Decision& d, EvaluationState& state, const DeviceFindings& by_devices,
                   const Inventory& inventory, const NodeSet& candidates) {
  using Judged = EvaluationState::Judged;
  std::vector<Judged>& judged = state.judged;
  const std::vector<ContainerEntry*>& entries = state.entries;
  const std::vector<NodeGroup>& groups = inventory.groups();
  std::sort(judged.begin(), judged.end(), [](const Judged& a, const Judged& b) {
    if (rank(a.outcome) != rank(b.outcome)) return rank(a.outcome) < rank(b.outcome);
    if (a.count != b.count) return a.count > b.count;
    return a.group < b.group;
  });
  d.groups.reserve(judged.size());
  d.node_name_storage = inventory.name_storage();
  for (const Judged& j : judged) {
    GroupDecision& gd = d.groups.emplace_back();
    gd.group = j.group;
    gd.count = j.count;
    gd.facts = groups[j.group].facts;
    gd.outcome = j.outcome;
    const auto judged_on_devices =
        std::find_if(by_devices.begin(), by_devices.end(),
                     [&](const auto& entry) { return entry.first == j.group; });
    if (judged_on_devices != by_devices.end()) {
      gd.findings = judged_on_devices->second;
    } else if (entries.size() == 1) {
      gd.findings = entries.front()->checks[j.group].result.findings;
    } else {
      for (const ContainerEntry* entry : entries) {
        const std::vector<Finding>& findings = entry->checks[j.group].result.findings;
        gd.findings.insert(gd.findings.end(), findings.begin(), findings.end());
      }
    }
    // Views of the inventory's names, which the decision holds.
    const auto [begin, end] = inventory.group_slots(j.group);
    candidates.for_each_in_range(begin, end, [&](std::size_t slot) {
      gd.nodes.push_back(inventory.slot_name(slot));
      return gd.nodes.size() < kMaxGroupNodeNames;
    });
  }
}
}  // namespace

std::vector<const ContainerSpec*> gpu_containers(const Workload& workload, const Policy& policy,
                                                 const ClaimCatalog* claims) {
  if (workload.spec.resource_claims.empty()) return gpu_containers_of(workload, policy, nullptr);
  const ClaimUse use =
      claim_use(workload.spec, workload.resource.namespace_, claims, policy.dra_device_classes);
  return gpu_containers_of(workload, policy, &use);
}

// Read the workload's GPU containers and claims; skip what is not ours to
// judge; then resolve each container's metadata (step 1), find the
// candidates, judge their groups (step 2) and record them (step 3).
Expected<Decision> evaluate(const Workload& workload, const Inventory& inventory,
                            const Policy& policy, const CompatDb& db,
                            const EvaluationInputs& inputs) {
  Decision d;
  d.resource = workload.resource;
  // Claims only for pods that name some (Dynamic Resource Allocation).
  const bool claims = !workload.spec.resource_claims.empty();
  ClaimUse use;
  if (claims) {
    use = claim_use(workload.spec, workload.resource.namespace_, inputs.claims,
                    policy.dra_device_classes);
  }
  const std::vector<const ContainerSpec*> gpus =
      gpu_containers_of(workload, policy, claims ? &use : nullptr);

  std::string skip = skip_reason(workload, policy, !gpus.empty() || !use.missing.empty());
  if (!skip.empty()) {
    list_unjudged(d, workload, gpus);
    d.verdict = Verdict::skip;
    d.reason = std::move(skip);
    return d;
  }
  d.claims = use.notes;
  if (!use.missing.empty()) {
    // Which devices the pod asks for is not known: never a silent skip.
    list_unjudged(d, workload, gpus);
    d.verdict = Verdict::unknown;
    d.unknown_claim = true;
    for (const std::string& missing : use.missing) {
      if (!d.reason.empty()) d.reason += "; ";
      d.reason += missing;
    }
    d.claims.insert(d.claims.end(), use.missing.begin(), use.missing.end());
    return d;
  }

  // Metadata once per container, kept between decisions with the memo;
  // every group is then judged against it.
  EvaluationState local;
  EvaluationState* state = &local;
  if (inputs.memo != nullptr) {
    std::shared_ptr<void>& kept = inputs.memo->evaluation_state();
    if (!kept) kept = std::make_shared<EvaluationState>();
    state = static_cast<EvaluationState*>(kept.get());
  }
  state->start(db);
  if (auto error = resolve_containers(d, *state, workload, gpus, policy, db, inputs)) {
    return *std::move(error);
  }

  CandidateScratch scratch_here;
  CandidateScratch& scratch = inputs.scratch != nullptr ? *inputs.scratch : scratch_here;
  // Candidates as slots: each group's members are one range of them.
  const bool devices = !use.requests.empty();
  if (devices) set_device_requests(d, use);
  const NodeSet& candidates = inventory.candidate_slots(workload.spec, scratch, added_requests(d));
  d.candidates = candidates.count();
  if (d.candidates == 0) {
    d.verdict = Verdict::no_candidates;
    d.reason = inventory.size() == 0
                   ? "the node inventory is empty"
                   : "none of the " + std::to_string(inventory.size()) +
                         " nodes passes the pod's nodeName, nodeSelector, required node "
                         "affinity, tolerations and GPU resource requests" +
                         (devices ? std::string(" (and has devices of its claims' classes)") : "");
    return d;
  }

  // Judge each group with candidate members first, then order the small
  // judgements, and only then build the (larger) group records in order.
  DeviceFindings by_devices;
  const OutcomeCounts counts =
      judge_groups(d, *state, by_devices, workload, gpus, use, inventory, candidates, policy, db);
  if (d.candidates == 0) {
    d.verdict = Verdict::no_candidates;
    d.reason =
        "no candidate node has devices that the pod's claims can be given (their CEL "
        "selectors exclude every kind of device on the nodes)";
    return d;
  }
  record_groups(d, *state, by_devices, inventory, candidates);
  d.compatible = counts.compatible;
  d.verdict = verdict_of(counts.compatible, counts.incompatible, counts.unknown);
  return d;
}

}  // namespace cudagate

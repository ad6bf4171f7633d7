#include "policy/evaluate.h"

#include <algorithm>
#include <string>

#include "policy/rules.h"

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

}  // namespace

std::vector<const ContainerSpec*> gpu_containers(const Workload& workload, const Policy& policy) {
  std::vector<const ContainerSpec*> out;
  for (const ContainerSpec& c : workload.spec.containers) {
    const bool gpu = std::any_of(c.resources.begin(), c.resources.end(), [&](const auto& r) {
      return r.second > 0 && is_gpu_resource(r.first, policy.gpu_resources);
    });
    if (gpu) out.push_back(&c);
  }
  return out;
}

Expected<Decision> evaluate(const Workload& workload, const Inventory& inventory,
                            const Policy& policy, const CompatDb& db,
                            const EvaluationInputs& inputs) {
  Decision d;
  d.resource = workload.resource;
  const std::vector<const ContainerSpec*> gpus = gpu_containers(workload, policy);

  // Skips come before any metadata is resolved: a skipped pod costs no lookups.
  std::string skip;
  const std::string& ns = workload.resource.namespace_;
  if (gpus.empty()) {
    skip = "no GPU container";
  } else if (std::find(policy.exclude_namespaces.begin(), policy.exclude_namespaces.end(),
                       ns.empty() ? std::string("default") : ns) !=
             policy.exclude_namespaces.end()) {
    skip = "namespace " + (ns.empty() ? std::string("default") : ns) +
           " is excluded by the policy (excludeNamespaces)";
  } else if (const std::string* mode = workload.annotation(kModeAnnotation);
             policy.allow_pod_opt_out && mode != nullptr && *mode == "off") {
    skip = "opted out with the annotation cudagate.io/mode: off (policy allowPodOptOut)";
  }
  if (!skip.empty()) {
    for (const ContainerSpec& c : workload.spec.containers) {
      const bool gpu = std::find(gpus.begin(), gpus.end(), &c) != gpus.end();
      d.containers.push_back(ContainerDecision{c.name, c.image, gpu, {}, {}, {}, {}});
    }
    d.verdict = Verdict::skip;
    d.reason = std::move(skip);
    return d;
  }

  // Metadata once per container; every group is then judged against it.
  std::vector<ContainerMetadata> metadata;
  metadata.reserve(gpus.size());
  for (const ContainerSpec* c : gpus) {
    auto md =
        resolve_metadata(workload, *c, policy, db, inputs.registry, inputs.flags, inputs.memo);
    if (!md) return md.error();
    if (!has_image_facts(*md)) d.unknown_image = true;
    metadata.push_back(std::move(*md));
  }
  for (const ContainerSpec& c : workload.spec.containers) {
    const auto it = std::find(gpus.begin(), gpus.end(), &c);
    if (it == gpus.end()) {
      d.containers.push_back(ContainerDecision{c.name, c.image, false, {}, {}, {}, {}});
    } else {
      d.containers.push_back(describe(c, metadata[static_cast<std::size_t>(it - gpus.begin())]));
    }
  }

  CandidateScratch local;
  CandidateScratch& scratch = inputs.scratch != nullptr ? *inputs.scratch : local;
  // Candidates as slots: each group's members are one range of them.
  const NodeSet& candidates = inventory.candidate_slots(workload.spec, scratch);
  d.candidates = candidates.count();
  if (d.candidates == 0) {
    d.verdict = Verdict::no_candidates;
    d.reason = inventory.size() == 0
                   ? "the node inventory is empty"
                   : "none of the " + std::to_string(inventory.size()) +
                         " nodes passes the pod's nodeName, nodeSelector, required node "
                         "affinity, tolerations and GPU resource requests";
    return d;
  }

  // Judge each group with candidate members first, then order the small
  // judgements, and only then build the (larger) group records in order.
  struct Judged {
    std::size_t group;
    std::size_t count;
    Outcome outcome;
    std::vector<Finding> findings;
  };
  std::vector<Judged> judged;
  std::size_t compatible = 0;
  std::size_t incompatible = 0;
  std::size_t unknown = 0;
  const std::vector<NodeGroup>& groups = inventory.groups();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const NodeGroup& group = groups[g];
    const auto [begin, end] = inventory.group_slots(g);
    const std::size_t count = candidates.count_range(begin, end);
    if (count == 0) continue;
    Judged j{g, count, Outcome::compatible, {}};
    for (std::size_t k = 0; k < gpus.size(); ++k) {
      RuleResult r = check_container(gpus[k]->name, metadata[k], group.facts, policy, db);
      j.outcome = combine(j.outcome, r.outcome);
      if (j.findings.empty()) {
        j.findings = std::move(r.findings);
      } else {
        for (Finding& f : r.findings) j.findings.push_back(std::move(f));
      }
    }
    if (group.facts.has_gpu && !group.facts.driver) d.unknown_node = true;
    switch (j.outcome) {
      case Outcome::compatible:
        compatible += count;
        break;
      case Outcome::incompatible:
        incompatible += count;
        break;
      case Outcome::unknown:
        unknown += count;
        break;
    }
    judged.push_back(std::move(j));
  }
  std::sort(judged.begin(), judged.end(), [](const Judged& a, const Judged& b) {
    if (rank(a.outcome) != rank(b.outcome)) return rank(a.outcome) < rank(b.outcome);
    if (a.count != b.count) return a.count > b.count;
    return a.group < b.group;
  });
  d.groups.reserve(judged.size());
  for (Judged& j : judged) {
    GroupDecision& gd = d.groups.emplace_back();
    gd.group = j.group;
    gd.count = j.count;
    gd.facts = groups[j.group].facts;
    gd.outcome = j.outcome;
    gd.findings = std::move(j.findings);
    gd.nodes.reserve(std::min(j.count, kMaxGroupNodeNames));
    const auto [begin, end] = inventory.group_slots(j.group);
    candidates.for_each_in_range(begin, end, [&](std::size_t slot) {
      gd.nodes.push_back(inventory.node_name(inventory.node_at_slot(slot)));
      return gd.nodes.size() < kMaxGroupNodeNames;
    });
  }
  d.compatible = compatible;
  d.verdict = verdict_of(compatible, incompatible, unknown);
  return d;
}

}  // namespace cudagate

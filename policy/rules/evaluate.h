#pragma once
// The one pure call that decides: workload facts + inventory snapshot +
// policy + compat-db + gathered image metadata -> Decision. No lookup happens
// in the middle of a decision; the caller gathers registry facts first.

#include <vector>

#include "compat-db/compat_db.h"
#include "policy/config/policy.h"
#include "policy/inventory/inventory.h"
#include "policy/objects/dra.h"
#include "policy/objects/pod.h"
#include "policy/rules/decision.h"
#include "policy/rules/metadata.h"

namespace cudagate {

struct EvaluationInputs {
  const RegistryFacts* registry = nullptr;  // may be null: no registry results
  const FlagValues* flags = nullptr;        // may be null
  // May be null; a caller that passes one per thread decides without
  // allocating storage proportional to the fleet.
  CandidateScratch* scratch = nullptr;
  // May be null; kept by the caller between decisions (see MetadataMemo).
  // evaluate() keeps there, besides the metadata, each GPU container's
  // record and its judgement on each group's facts, keyed by everything
  // they are made from: a decision is the same with or without it.
  MetadataMemo* memo = nullptr;
  // May be null (none known); the ResourceClaims and ResourceClaimTemplates
  // that pods name in spec.resourceClaims.
  const ClaimCatalog* claims = nullptr;
};

// The GPU containers of `workload` (docs/contract.md §2.1), init containers
// included: those that request a GPU resource, and those that use a claim
// of a GPU device class (`claims` may be null: none known).
[[nodiscard]] std::vector<const ContainerSpec*> gpu_containers(
    const Workload& workload, const Policy& policy, const ClaimCatalog* claims = nullptr);

// What candidates are chosen for beside the pod spec: the decision's device
// requests (a pod that claims DRA devices; none for any other). The view
// lives as long as `decision`.
[[nodiscard]] inline AddedRequests added_requests(const Decision& decision) {
  return {decision.device_requests, decision.device_container};
}

// Evaluates docs/contract.md §2 in full. Errors are values a person wrote that
// do not parse (an annotation "12.x", an unknown arch name in the pod's env).
// The decision's node names (GroupDecision::nodes) are views of the
// inventory's strings, which the Decision holds (Decision::node_name_storage).
Expected<Decision> evaluate(const Workload& workload, const Inventory& inventory,
                            const Policy& policy, const CompatDb& db,
                            const EvaluationInputs& inputs);

}  // namespace cudagate

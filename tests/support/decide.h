#pragma once
// A workload read from a JSON object and judged against an inventory with the
// embedded matrix, for tests that build their pods as JSON: each throws with
// the reader's or the evaluator's error, which fails the test that asked.

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>

#include "policy/config/policy.h"
#include "policy/inventory/inventory.h"
#include "policy/objects/pod.h"
#include "policy/rules/evaluate.h"
#include "tests/support/embedded_compat_db.h"

namespace cudagate::test_support {

inline Workload workload_of(const nlohmann::json& object) {
  auto w = workload_from_json(object, "object");
  if (!w) throw std::runtime_error(w.error().str());
  return std::move(*w);
}

inline Decision decide(const Workload& w, const Inventory& inventory, const Policy& policy = {}) {
  auto d = evaluate(w, inventory, policy, db(), {});
  if (!d) throw std::runtime_error(d.error().str());
  return std::move(*d);
}

}  // namespace cudagate::test_support

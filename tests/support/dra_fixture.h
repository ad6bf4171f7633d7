#pragma once
// The Dynamic Resource Allocation fixtures of tests/fixtures/dra/, read once:
// the mixed fleet of Nodes and ResourceSlices, and the pods with the
// ResourceClaimTemplates and ResourceClaims they name.

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "policy/objects/dra.h"
#include "policy/objects/node.h"
#include "policy/objects/pod.h"
#include "tests/support/fixtures.h"

namespace cudagate::test_support {

inline std::string dra_fixture(const std::string& name) {
  std::ifstream in(std::string(CUDAGATE_TEST_DATA) + "/dra/" + name, std::ios::binary);
  if (!in) throw std::runtime_error("missing fixture dra/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct DraFixture {
  std::vector<Node> nodes;     // fleet.yaml
  std::vector<Workload> pods;  // pods.yaml
  ClaimCatalog claims;         // pods.yaml

  [[nodiscard]] const Node& node(const std::string& name) const {
    for (const Node& n : nodes) {
      if (n.name == name) return n;
    }
    throw std::runtime_error("no node " + name);
  }
  [[nodiscard]] const Workload& pod(const std::string& name) const {
    for (const Workload& w : pods) {
      if (w.resource.name == name) return w;
    }
    throw std::runtime_error("no pod " + name);
  }
};

inline const DraFixture& dra() {
  static const DraFixture loaded = [] {
    DraFixture out;
    auto nodes = parse_nodes(dra_fixture("fleet.yaml"), "fleet.yaml");
    if (!nodes) throw std::runtime_error(nodes.error().str());
    out.nodes = std::move(*nodes);
    const std::string text = dra_fixture("pods.yaml");
    auto pods = parse_workloads(text, "pods.yaml");
    if (!pods) throw std::runtime_error(pods.error().str());
    out.pods = std::move(*pods);
    auto claims = parse_claims(text, "pods.yaml");
    if (!claims) throw std::runtime_error(claims.error().str());
    for (ClaimSpec& c : *claims) out.claims.add(std::move(c));
    return out;
  }();
  return loaded;
}

}  // namespace cudagate::test_support

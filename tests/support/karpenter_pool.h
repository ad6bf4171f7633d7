#pragma once
// A GPU NodePool of Karpenter's AWS provider, as its documentation writes
// one, read: the pool the node-pool tests of several rooms share (its
// reading in tests/policy/objects, its nodes in the inventory in
// tests/policy/inventory); and a one-kind NodePool as the watchers get it.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "policy/objects/document.h"
#include "policy/objects/node_pool.h"

namespace cudagate::test_support {

// Two GPU kinds (t4, a100), two zones, a taint and a driver annotation.
inline constexpr const char* kKarpenterGpuPool = R"(apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu
  annotations:
    cudagate.io/driver-version: "570.124.06"
spec:
  template:
    metadata:
      labels:
        team: ml
    spec:
      requirements:
        - key: karpenter.k8s.aws/instance-gpu-name
          operator: In
          values: ["t4", "a100"]
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["on-demand"]
        - key: topology.kubernetes.io/zone
          operator: In
          values: ["us-east-1a", "us-east-1b"]
      taints:
        - key: nvidia.com/gpu
          value: "true"
          effect: NoSchedule
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
)";

// The first document of `yaml`, read as JSON.
inline nlohmann::json node_pool_json(const std::string& yaml) {
  auto docs = parse_documents(yaml, "nodepool.yaml");
  EXPECT_TRUE(docs) << (docs ? "" : docs.error().str());
  return docs->front();
}

// A NodePool `name` of one GPU kind (`gpu`, as Karpenter's AWS provider
// names it: "t4") with a driver annotation, as the API server sends it.
inline nlohmann::json karpenter_pool_json(const std::string& name, const std::string& gpu) {
  using nlohmann::json;
  return {{"apiVersion", "karpenter.sh/v1"},
          {"kind", "NodePool"},
          {"metadata",
           {{"name", name}, {"annotations", {{"cudagate.io/driver-version", "570.124.06"}}}}},
          {"spec",
           {{"template",
             {{"spec",
               {{"nodeClassRef",
                 {{"group", "karpenter.k8s.aws"}, {"kind", "EC2NodeClass"}, {"name", "default"}}},
                {"requirements", json::array({{{"key", "karpenter.k8s.aws/instance-gpu-name"},
                                               {"operator", "In"},
                                               {"values", json::array({gpu})}}})}}}}}}}};
}

// kKarpenterGpuPool read.
inline NodePool karpenter_gpu_pool() {
  auto pool = node_pool_from_json(node_pool_json(kKarpenterGpuPool), "nodepool.yaml");
  EXPECT_TRUE(pool) << (pool ? "" : pool.error().str());
  return *pool;
}

}  // namespace cudagate::test_support

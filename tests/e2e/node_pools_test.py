#!/usr/bin/env python3
"""End-to-end tests of node pools that scale from zero: Karpenter NodePools
in a --nodes file and pools in the policy judged by `check`, and the pins
/mutate writes on the labels the compatible pools define.

Runs the real binary:  python3 node_pools_test.py --binary PATH --source REPO
Fixtures: examples/node-pools (nodes.yaml: a CPU node and two NodePools at
zero; policy.yaml: two GKE node pools).
"""

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_support  # noqa: E402

BINARY = ""
SOURCE = ""


def example(*parts):
    return os.path.join(SOURCE, "examples", *parts)


def check(*args):
    """Exit status and the decision of `cudagate check -o json`."""
    result = subprocess.run([BINARY, "check", "--offline", "-o", "json", *args],
                            capture_output=True, text=True, timeout=120)
    try:
        return result.returncode, json.loads(result.stdout)
    except json.JSONDecodeError as e:
        raise AssertionError(f"exit {result.returncode}: {result.stderr}") from e


def group_nodes(decision, outcome):
    return sorted(n for g in decision["groups"] if g["outcome"] == outcome for n in g["nodes"])


class AuditTest(unittest.TestCase):
    def test_the_html_matrix_names_the_pools(self):
        r = subprocess.run([BINARY, "audit", "--offline", example("pods"), "--nodes",
                            example("node-pools", "nodes.yaml"), "--format", "html"],
                           capture_output=True, text=True, timeout=120)
        self.assertIn(r.returncode, (0, 1), r.stderr)
        self.assertIn("<span>NodePool gpu-t4 (0 nodes now)</span></th>", r.stdout)
        self.assertIn("<span>NodePool gpu-h100 (0 nodes now)</span></th>", r.stdout)
        self.assertNotIn("<span>1 node</span>", r.stdout)


class CheckTest(unittest.TestCase):
    def test_pools_at_zero_are_judged(self):
        # Without the pools the CPU node is the only node: no candidate,
        # admitted with a warning, and the pod then starts on whatever node
        # the autoscaler launches.
        with tempfile.TemporaryDirectory() as tmp:
            cpu_only = os.path.join(tmp, "cpu.yaml")
            with open(example("node-pools", "nodes.yaml")) as f:
                first = f.read().split("\n---\n")[0]
            with open(cpu_only, "w") as f:
                f.write(first)
            _, report = check("--cuda", "12.4", "--arch-list", "8.0;9.0", "--nodes", cpu_only)
            self.assertEqual(report["verdict"], "no-candidates")
        code, decision = check("--cuda", "12.4", "--arch-list", "8.0;9.0",
                               "--nodes", example("node-pools", "nodes.yaml"))
        self.assertEqual(decision["verdict"], "partial", decision)
        self.assertNotEqual(code, 0)
        self.assertEqual(group_nodes(decision, "incompatible"), ["NodePool gpu-t4 (0 nodes now)"])
        self.assertEqual(group_nodes(decision, "compatible"), ["NodePool gpu-h100 (0 nodes now)"])

    def test_policy_pools_are_judged(self):
        _, decision = check("--cuda", "12.4", "--arch-list", "7.5;8.0;8.9",
                            "--config", example("node-pools", "policy.yaml"),
                            "--nodes", example("nodes.yaml"))
        self.assertIn("node pool gke-t4-legacy (0 nodes now)", group_nodes(decision, "incompatible"))
        self.assertIn("node pool gke-l4 (0 nodes now)", group_nodes(decision, "compatible"))

    def test_a_bad_node_pool_names_its_field(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "pools.yaml")
            with open(path, "w") as f:
                f.write("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: a}\n"
                        "spec: {template: {spec: {requirements: "
                        "[{key: k, operator: Near, values: [x]}]}}}\n")
            result = subprocess.run([BINARY, "check", "--offline", "--cuda", "12.4",
                                     "--nodes", path], capture_output=True, text=True,
                                    timeout=60)
            self.assertEqual(result.returncode, 2, result.stderr)
            self.assertIn("spec.template.spec.requirements[0].operator", result.stderr)


# A pod whose image needs CUDA 12.4 and sm_90: only the H100 pool can run it.
POD = {
    "containers": [{
        "name": "train",
        "image": "registry.example.com/ml/train:v1",
        "env": [{"name": "CUDA_VERSION", "value": "12.4.1"},
                {"name": "TORCH_CUDA_ARCH_LIST", "value": "9.0"}],
        "resources": {"limits": {"nvidia.com/gpu": "1"}},
    }],
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
}


POOL_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: train, namespace: ml}
spec:
  tolerations: [{key: nvidia.com/gpu, operator: Exists}]
  containers:
  - name: main
    image: registry.example.com/train:v1
    env: [{name: CUDA_VERSION, value: "12.4.1"}, {name: TORCH_CUDA_ARCH_LIST, value: "7.5;8.0;9.0"}]
    resources: {limits: {nvidia.com/gpu: "1"}}
"""

L4_POOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu-l4
  annotations: {cudagate.io/driver-version: "550.54.15"}
spec:
  template:
    spec:
      requirements:
        - {key: karpenter.k8s.aws/instance-gpu-name, operator: In, values: [l4]}
      taints:
        - {key: nvidia.com/gpu, effect: NoSchedule}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
"""


class PlanTest(unittest.TestCase):
    """`plan` on pools: a pool's driver changed by its karpenter.sh/nodepool
    label, a pool removed, a NodePool added from a file."""

    def plan(self, *args, output="json"):
        with tempfile.TemporaryDirectory() as tmp:
            pod = os.path.join(tmp, "pod.yaml")
            with open(pod, "w") as f:
                f.write(POOL_POD)
            added = os.path.join(tmp, "l4.yaml")
            with open(added, "w") as f:
                f.write(L4_POOL)
            args = [added if a == "L4_POOL" else a for a in args]
            result = subprocess.run(
                [BINARY, "plan", "--offline", "-f", pod, "--nodes",
                 example("node-pools", "nodes.yaml"), "--format", output, *args],
                capture_output=True, text=True, timeout=120)
        self.assertIn(result.returncode, (0, 1), result.stderr)
        if output != "json":
            return result.stdout
        plan = json.loads(result.stdout)
        groups = {g["nodes"][0]: g for g in plan["nodeGroups"]}
        (workload,) = plan["workloads"]
        return groups, workload

    def test_a_pools_driver_changed(self):
        groups, workload = self.plan("--set-driver", "karpenter.sh/nodepool=gpu-t4=570.124.06")
        t4 = groups["NodePool gpu-t4 (0 nodes now)"]
        self.assertEqual((t4["change"], t4["before"]["driver"], t4["after"]["driver"]),
                         ("changed", "535.183.01", "570.124.06"))
        self.assertEqual((t4["runsBefore"], t4["runsAfter"]), (0, 1))
        self.assertEqual(groups["NodePool gpu-h100 (0 nodes now)"]["change"], "unchanged")
        self.assertEqual(workload["change"], "widens")
        # The HTML matrix's columns name the pools instead of counting them as nodes.
        html = self.plan("--set-driver", "karpenter.sh/nodepool=gpu-t4=570.124.06", output="html")
        self.assertIn("<span>NodePool gpu-t4 (0 nodes now)</span></th>", html)
        self.assertIn("<span>NodePool gpu-h100 (0 nodes now)</span></th>", html)
        self.assertNotIn("<span>1 node</span>", html)

    def test_a_pool_removed_and_one_added(self):
        groups, workload = self.plan("--remove-nodes", "karpenter.sh/nodepool=gpu-h100")
        self.assertEqual(groups["NodePool gpu-h100 (0 nodes now)"]["change"], "removed")
        self.assertEqual(workload["change"], "breaks")
        groups, workload = self.plan("--remove-nodes", "karpenter.sh/nodepool=gpu-h100",
                                     "--add-nodes", "L4_POOL")
        l4 = groups["NodePool gpu-l4 (0 nodes now)"]
        self.assertEqual((l4["change"], l4["after"]["product"], l4["runsAfter"]),
                         ("added", "L4", 1))
        self.assertEqual(workload["change"], "unchanged")


class MutateTest(server_support.ServerTestCase):
    @staticmethod
    def nodes():
        return example("node-pools", "nodes.yaml")

    def post(self, path, pod):
        uid, body = server_support.review(pod, namespace="ml", name="train")
        conn = self.server.connect()
        try:
            res, data = server_support.post(conn, path, body)
        finally:
            conn.close()
        self.assertEqual(res.status, 200, data)
        return json.loads(data)["response"]

    def test_the_pin_selects_the_compatible_pool_by_its_name(self):
        response = self.post("/mutate", POD)
        self.assertTrue(response["allowed"], response)
        patch = json.loads(base64.b64decode(response["patch"]))
        affinity = next(op["value"] for op in patch if op["path"] == "/spec/affinity")
        terms = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"]
        keys = sorted(e["key"] for t in terms for e in t["matchExpressions"])
        # Only labels the NodePool defines, which Karpenter knows before it
        # launches a node: its name and the instance type of its GPU kind.
        self.assertEqual(keys, ["karpenter.sh/nodepool", "node.kubernetes.io/instance-type"],
                         terms)
        values = {e["key"]: e["values"] for t in terms for e in t["matchExpressions"]}
        self.assertEqual(values["karpenter.sh/nodepool"], ["gpu-h100"])
        self.assertEqual(values["node.kubernetes.io/instance-type"], ["p5.48xlarge"])

    def test_validate_refuses_when_no_pool_can_run_it(self):
        pod = json.loads(json.dumps(POD))
        pod["nodeSelector"] = {"karpenter.sh/nodepool": "gpu-t4"}
        response = self.post("/validate", pod)
        self.assertFalse(response["allowed"], response)
        self.assertIn("NodePool gpu-t4", response["status"]["message"])


def main():
    global BINARY, SOURCE
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--binary", required=True, help="the cudagate executable")
    parser.add_argument("--source", required=True, help="the repository root")
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("tests", nargs="*", help="test names (Class or Class.test_name)")
    args = parser.parse_args()
    BINARY = os.path.abspath(args.binary)
    SOURCE = os.path.abspath(args.source)
    server_support.BINARY = BINARY
    server_support.SOURCE = SOURCE
    loader = unittest.TestLoader()
    module = sys.modules[__name__]
    suite = (loader.loadTestsFromNames(args.tests, module) if args.tests
             else loader.loadTestsFromModule(module))
    result = unittest.TextTestRunner(verbosity=2 if args.verbose else 1).run(suite)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    print(f"{result.testsRun - failed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

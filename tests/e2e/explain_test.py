#!/usr/bin/env python3
"""End-to-end tests of `cudagate explain`, offline: pods, events and nodes
as `kubectl get pod -o yaml`, `kubectl get events -o yaml` and `kubectl get
nodes -o yaml` print them (tests/fixtures/explain, nodes from
tests/fixtures/plan/nodes.yaml). The container statuses and events are
shaped as a kubelet with containerd and the NVIDIA container toolkit in
legacy mode reports them: CrashLoopBackOff with the last termination
message, RunContainerError and a Failed event with nvidia-container-cli's
refusal, FailedCreatePodSandBox with an error cudagate does not cover.
`explain pod NAME` is tested against the API server double
(tests/e2e/apiserver_double.py), there being no kube-apiserver here.

Runs the real binary:  python3 explain_test.py --binary PATH --source REPO
"""

import json
import os
import subprocess
import sys
import unittest

import harness
from double_case import DoubleTestCase

BINARY = ""
SOURCE = ""


def fixture(name):
    return os.path.join(SOURCE, "tests", "fixtures", "explain", name)


def node_pools():
    """The Karpenter NodePools of examples/node-pools."""
    import yaml
    with open(os.path.join(SOURCE, "examples", "node-pools", "nodes.yaml")) as f:
        return [d for d in yaml.safe_load_all(f) if d and d.get("kind") == "NodePool"]


def explain(pod, *extra, events=True, output="json", nodes=None):
    args = [BINARY, "explain", "--offline", "-f", fixture(pod), "--nodes",
            nodes or os.path.join(SOURCE, "tests", "fixtures", "plan", "nodes.yaml"), "-o", output]
    if events:
        args += ["--events", fixture("events.yaml")]
    return subprocess.run(args + list(extra), capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, NO_COLOR="1"))


class Recognised(unittest.TestCase):
    def test_crash_loop_no_kernel_image_is_the_arch_rule_with_its_fix(self):
        r = explain("pod-crashloop.yaml")
        self.assertEqual(r.returncode, 1, r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual(out["pod"], {"namespace": "ml", "name": "train-sm80-7d9f8b6c4-x2x7q",
                                      "node": "t4-1", "phase": "Running"})
        [f] = out["failures"]
        self.assertEqual((f["kind"], f["rule"], f["reproduced"]), ("no-kernel-image", "gpu-arch", True))
        self.assertIn("last terminated (Error, exit code 1), 5 restarts", f["origin"])
        self.assertIn('TORCH_CUDA_ARCH_LIST="7.5;8.0"', f["findings"][0]["fix"])
        self.assertEqual(out["decision"]["verdict"], "fail")
        # The BackOff event is a Warning cudagate does not recognise; Pulled (Normal) is not listed.
        self.assertEqual([u["origin"] for u in out["unrecognised"]],
                         ["event Warning BackOff (x24) from kubelet"])

    def test_toolkit_refusal_in_status_and_event_is_the_driver_rule(self):
        r = explain("pod-runcontainererror.yaml")
        self.assertEqual(r.returncode, 1, r.stderr)
        out = json.loads(r.stdout)
        kinds = [(f["origin"].split(":")[0], f["kind"], f["condition"]) for f in out["failures"]]
        self.assertEqual(kinds, [("container main", "requirement-unsatisfied", "cuda>=12.4"),
                                 ("event Warning Failed (x4) from kubelet", "requirement-unsatisfied",
                                  "cuda>=12.4")])
        finding = out["failures"][0]["findings"][0]
        self.assertEqual(finding["rule"], "cuda-driver")
        self.assertIn("driver 535.129.03 supports up to CUDA 12.2", finding["message"])
        self.assertIn("upgrade the driver to 550.54.14 or newer", finding["fix"])
        notes = out["admission"]["notes"]
        self.assertTrue(notes[0].startswith("with this policy (mode enforce), /validate denies it"))
        self.assertIn("/mutate in mode enforce (policy mutate: true) pins it to the 3 nodes", notes[1])

    def test_bf16_not_reproduced_names_the_annotation_that_would_have_stopped_it(self):
        r = explain("pod-bf16.yaml")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        [f] = out["failures"]
        self.assertEqual((f["kind"], f["rule"], f["reproduced"]), ("bf16-unsupported", "gpu-feature", False))
        self.assertIn('cudagate.io/min-compute-capability: "8.0"', f["hint"])
        self.assertEqual(out["decision"]["verdict"], "pass")

    def test_text_reads_like_check(self):
        r = explain("pod-runcontainererror.yaml", output="text")
        self.assertEqual(r.returncode, 1, r.stderr)
        lines = r.stdout.splitlines()
        self.assertTrue(lines[0].startswith("Pod inference/serve-cuda124-6b7c9d5f8-p4q2r on node t4-2: "
                                            "driver 535.129.03, max CUDA 12.2"))
        self.assertIn("-> requirement-unsatisfied: nvidia-container-cli refused the container", r.stdout)
        self.assertIn("cudagate finds the same: [cuda-driver] main: needs CUDA 12.4", r.stdout)
        self.assertIn("values: cuda 12.4 (inference), archs unknown", r.stdout)
        self.assertIn("FAIL  Pod inference/serve-cuda124-6b7c9d5f8-p4q2r: 0 of 1 candidate nodes", r.stdout)
        self.assertIn("At admission", r.stdout)


class Unrecognised(unittest.TestCase):
    def test_sandbox_error_is_said_so_with_the_decision_anyway(self):
        r = explain("pod-sandbox.yaml", output="text")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("event Warning FailedCreatePodSandBox (x7) from kubelet:", r.stdout)
        self.assertIn("nvml error: driver/library version mismatch", r.stdout)
        self.assertIn("-> not a failure cudagate recognises", r.stdout)
        self.assertIn("None of these messages is a CUDA compatibility failure", r.stdout)
        self.assertIn("PASS  Pod ml/notebook-0: 1 of 1 candidate nodes can run it", r.stdout)
        out = json.loads(explain("pod-sandbox.yaml").stdout)
        self.assertEqual(out["failures"], [])
        self.assertEqual(len(out["unrecognised"]), 1)

    def test_without_events_only_the_statuses(self):
        out = json.loads(explain("pod-runcontainererror.yaml", events=False).stdout)
        self.assertEqual(len(out["failures"]), 1)


class ThroughApiServer(DoubleTestCase):
    """`explain pod NAME -n NS` against the API server double
    (tests/e2e/apiserver_double.py: TLS, a bearer token, paged lists whose
    items carry no kind, as a live server sends them): the answer must be
    the offline one for the same objects (the nodes and Karpenter NodePools
    of a --nodes file listed from the API server instead), and every call a
    row of `cudagate api-calls` with when "explain"."""

    prefix = "cudagate-explain-"

    @classmethod
    def setUpClass(cls):
        import kube_support
        cls.kw = kube_support
        super().setUpClass()

    def double_options(self):
        return dict(page_size=2)

    def fill(self):
        import yaml
        from apiserver_double import realistic_node
        with open(os.path.join(SOURCE, "tests", "fixtures", "plan", "nodes.yaml")) as f:
            for node in yaml.safe_load(f)["items"]:
                self.api.put(realistic_node(node))
        for name in ("pod-crashloop.yaml", "pod-runcontainererror.yaml"):
            with open(fixture(name)) as f:
                self.api.put_object(yaml.safe_load(f))
        with open(fixture("events.yaml")) as f:
            for event in yaml.safe_load(f)["items"]:
                self.api.put_object(event)
        for pool in node_pools():
            self.api.put_object(pool)

    def setUp(self):
        super().setUp()
        self.kubeconfig = self.kw.kubeconfig(self.dir, self.api.url, ["token: test-token"])

    def test_the_same_answer_as_from_files_and_only_its_calls(self):
        env = dict(os.environ, NO_COLOR="1")
        env.pop("KUBECONFIG", None)
        for pod, ns, name in (("pod-runcontainererror.yaml", "inference", "serve-cuda124-6b7c9d5f8-p4q2r"),
                              ("pod-crashloop.yaml", "ml", "train-sm80-7d9f8b6c4-x2x7q")):
            r = subprocess.run([BINARY, "explain", "pod", name, "-n", ns, "--offline",
                                "--kubeconfig", self.kubeconfig, "-o", "json"],
                               capture_output=True, text=True, timeout=120, env=env)
            self.assertEqual(r.returncode, 1, r.stderr)
            live = json.loads(r.stdout)
            offline = json.loads(explain(pod).stdout)
            for key in ("pod", "failures", "unrecognised"):
                self.assertEqual(live[key], offline[key], key)
            self.assertEqual(live["decision"]["verdict"], offline["decision"]["verdict"])
        rows = {(c["verb"], c["group"], c["resource"]) for c in self.kw.api_calls()
                if c["when"] == "explain"}
        self.assertEqual(rows, {("get", "", "pods"), ("list", "", "events"), ("list", "", "nodes"),
                                ("list", "resource.k8s.io", "resourceslices"),
                                ("list", "karpenter.sh", "nodepools")})
        self.assertEqual(self.kw.seen_calls(self.api), rows)

    def test_at_admission_names_the_clusters_node_pools(self):
        """The NodePools the API server lists are judged at admission as a
        --nodes file's are (docs/contract.md §2.7): each pool that could
        launch a node for the pod is a group of its own."""
        import yaml
        nodes_file = os.path.join(self.dir, "nodes-and-pools.yaml")
        with open(os.path.join(SOURCE, "tests", "fixtures", "plan", "nodes.yaml")) as f:
            nodes = yaml.safe_load(f)
        # In the order the API server lists them (by name), which is the
        # order of the groups and of the reason's text.
        nodes["items"] += sorted(node_pools(), key=lambda p: p["metadata"]["name"])
        with open(nodes_file, "w") as f:
            yaml.safe_dump(nodes, f)
        env = dict(os.environ, NO_COLOR="1")
        env.pop("KUBECONFIG", None)
        r = subprocess.run([BINARY, "explain", "pod", "train-sm80-7d9f8b6c4-x2x7q", "-n", "ml",
                            "--offline", "--kubeconfig", self.kubeconfig, "-o", "json"],
                           capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual(r.returncode, 1, r.stderr)
        live = json.loads(r.stdout)["admission"]
        offline = json.loads(explain("pod-crashloop.yaml", nodes=nodes_file).stdout)["admission"]
        self.assertEqual(live, offline)
        named = [n for g in live["decision"]["groups"] for n in g["nodes"]]
        self.assertIn("NodePool gpu-t4 (0 nodes now)", named)
        self.assertIn("NodePool gpu-h100 (0 nodes now)", named)

    def test_a_missing_pod_is_an_error_naming_it(self):
        r = subprocess.run([BINARY, "explain", "pod", "nope", "-n", "ml", "--kubeconfig",
                            self.kubeconfig], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 2)
        self.assertIn("404", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


class Usage(unittest.TestCase):
    def test_errors_name_the_file(self):
        r = subprocess.run([BINARY, "explain", "-f", fixture("events.yaml"), "--nodes",
                            os.path.join(SOURCE, "tests", "fixtures", "plan", "nodes.yaml")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("events.yaml: expected one Pod", r.stderr)
        r = subprocess.run([BINARY, "explain", "--offline", "-f", fixture("pod-crashloop.yaml"),
                            "--nodes", os.path.join(SOURCE, "tests", "fixtures", "cli", "nodes.json")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("node \"t4-1\" (the pod's spec.nodeName) is not in the node list", r.stderr)
        r = subprocess.run([BINARY, "explain", "--offline", "--nodes", "x"], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("-f: required", r.stderr)


if __name__ == "__main__":
    sys.exit(harness.main(__name__))

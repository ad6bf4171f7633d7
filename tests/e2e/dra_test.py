#!/usr/bin/env python3
"""End-to-end tests of the command line on pods that claim GPUs through
Dynamic Resource Allocation: `check` and `audit` with ResourceSlices beside
Nodes (what `kubectl get nodes,resourceslices -o yaml` prints) and the
ResourceClaimTemplates and ResourceClaims their pods name, and `check -o
claims`, whose templates carry a selector that the next check evaluates.

Fixtures: tests/fixtures/dra/fleet.yaml (the H100 node and slices of a real
EKS capture, A100 nodes on driver 535, a node with an L4 and a T4, a
v1beta1 slice, a device-plugin node) and pods.yaml.

    python3 dra_test.py --binary build/release/cudagate --source .
"""

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import unittest

BINARY = ""
SOURCE = ""


def fixture(name):
    return os.path.join(SOURCE, "tests", "fixtures", "dra", name)


def cudagate(*args, stdin=None):
    return subprocess.run([BINARY, *args], input=stdin, capture_output=True, text=True,
                          timeout=120)


def decisions(result):
    out = json.loads(result.stdout)
    out = out if isinstance(out, list) else [out]
    return {d["resource"]["name"]: d for d in out}


def node_names(decision, outcome):
    return sorted(n for g in decision["groups"] if g["outcome"] == outcome for n in g["nodes"])


class Check(unittest.TestCase):
    def check(self, *files, code=1):
        args = ["check", "--offline", "--nodes", fixture("fleet.yaml"), "-o", "json"]
        for f in files:
            args += ["-f", f]
        result = cudagate(*args)
        self.assertEqual(result.returncode, code, result.stderr)
        return decisions(result)

    def test_cuda124_is_denied_on_the_slices_of_driver_535(self):
        d = self.check(fixture("pods.yaml"))["train-cuda124"]
        self.assertEqual(d["verdict"], "partial")
        self.assertEqual(node_names(d, "incompatible"), ["dra-a100-0", "dra-a100-1", "dra-mixed-0"])
        a100 = next(g for g in d["groups"] if "dra-a100-0" in g["nodes"])
        self.assertEqual(a100["driver"], "535.129.03", "the semantic version 535.129.3 as nvidia-smi prints it")
        self.assertEqual(a100["maxCuda"], "12.2")
        self.assertEqual(a100["findings"][0]["message"],
                         "needs CUDA 12.4; driver 535.129.03 supports up to CUDA 12.2")
        self.assertEqual(a100["devices"][0]["count"], 2)
        # The device-plugin node has no DRA devices: no candidate for a claim.
        self.assertNotIn("gfd-a100-0", node_names(d, "compatible") + node_names(d, "incompatible"))
        self.assertEqual(d["candidates"], 5)

    def test_the_captured_h100_node_and_the_v1beta1_slice_are_compatible(self):
        d = self.check(fixture("pods.yaml"))["train-cuda124"]
        self.assertEqual(node_names(d, "compatible"), ["dra-beta-0", "ip-10-0-171-111.ec2.internal"])

    def test_a_node_with_two_products_is_judged_per_device(self):
        d = self.check(fixture("pods.yaml"))["train-cuda124"]
        mixed = next(g for g in d["groups"] if "dra-mixed-0" in g["nodes"])
        self.assertEqual(len(mixed["devices"]), 2)
        self.assertEqual([f["rule"] for f in mixed["findings"]], ["gpu-arch"])
        self.assertIn("7.5 (Tesla T4)", mixed["findings"][0]["message"])

    def test_selectors_narrow_the_candidates(self):
        d = self.check(fixture("pods.yaml"))["train-h100"]
        self.assertEqual(d["verdict"], "pass")
        self.assertEqual(d["candidates"], 2)
        self.assertIn("CEL selectors evaluated", d["claims"][0])

    def test_a_pod_naming_a_missing_claim_is_unknown_with_the_reason(self):
        d = self.check(fixture("pods.yaml"))["missing-claim"]
        self.assertEqual(d["verdict"], "unknown")
        self.assertIn("ResourceClaimTemplate ml/no-such-template", d["reason"])

    def test_text_names_the_claim_and_the_devices(self):
        result = cudagate("check", "--offline", "--nodes", fixture("fleet.yaml"),
                          "-f", fixture("pods.yaml"))
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn('claim: claim "gpu" (ResourceClaimTemplate ml/one-gpu)', result.stdout)
        self.assertIn("DRA devices: 1 gpu NVIDIA L4, 1 gpu Tesla T4", result.stdout)

    def test_an_unread_slice_version_is_a_clear_error(self):
        with open(fixture("fleet.yaml")) as f:
            text = f.read().replace("resource.k8s.io/v1beta1", "resource.k8s.io/v1alpha3")
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write(text)
        try:
            result = cudagate("check", "--offline", "--nodes", f.name, "-f", fixture("pods.yaml"))
        finally:
            os.unlink(f.name)
        self.assertEqual(result.returncode, 2)
        self.assertIn("apiVersion", result.stderr)
        self.assertIn("resource.k8s.io/v1alpha3", result.stderr)


class ClaimSelectors(unittest.TestCase):
    def test_the_mutated_template_admits_only_devices_that_can_run_the_pod(self):
        result = cudagate("check", "--offline", "--nodes", fixture("fleet.yaml"),
                          "-f", fixture("pods.yaml"), "-o", "claims")
        self.assertEqual(result.returncode, 0, result.stderr)
        claims = json.loads(result.stdout)["items"]
        template = next(c for c in claims if c["metadata"]["name"] == "one-gpu")
        selectors = template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"]
        expression = selectors[-1]["cel"]["expression"]
        self.assertIn('cudaDriverVersion.compareTo(semver("12.4.0")) >= 0', expression)
        self.assertIn("train-cuda124", template["metadata"]["annotations"]["cudagate.io/device-selector"])
        # Judged again with the mutated templates: the scheduler can place the
        # pod only on devices that run it.
        with open(fixture("pods.yaml")) as f:
            pods = f.read()
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "claims.json")
            pod_path = os.path.join(d, "pods.yaml")
            with open(path, "w") as f:
                json.dump({"apiVersion": "v1", "kind": "List", "items": claims}, f)
            # The pods alone, then the mutated claims: later objects replace earlier ones.
            docs = [doc for doc in pods.split("\n---\n") if "kind: Pod" in doc]
            with open(pod_path, "w") as f:
                f.write("\n---\n".join(docs))
            again = cudagate("check", "--offline", "--nodes", fixture("fleet.yaml"), "-o", "json",
                             "-f", pod_path, "-f", path)
        d = decisions(again)["train-cuda124"]
        self.assertEqual(d["verdict"], "pass", again.stdout)
        # The node with an L4 and a T4 is one now: the claim can be given
        # only its L4.
        self.assertEqual(node_names(d, "compatible"),
                         ["dra-beta-0", "dra-mixed-0", "ip-10-0-171-111.ec2.internal"])
        self.assertEqual(d["candidates"], 3)
        self.assertIn("CEL selectors evaluated", d["claims"][0])


class Audit(unittest.TestCase):
    def test_audit_reads_slices_and_claims(self):
        result = cudagate("audit", fixture("pods.yaml"), "--nodes", fixture("fleet.yaml"),
                          "--offline", "--format", "json")
        self.assertIn(result.returncode, (0, 1), result.stderr)
        verdicts = {d["resource"]["name"]: d["verdict"] for d in json.loads(result.stdout)}
        self.assertEqual(verdicts.get("train-cuda124"), "partial", result.stdout[:2000])
        self.assertEqual(verdicts.get("train-h100"), "pass")
        self.assertEqual(verdicts.get("missing-claim"), "unknown")


def main():
    global BINARY, SOURCE
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("tests", nargs="*")
    args = parser.parse_args()
    BINARY = os.path.abspath(args.binary)
    SOURCE = os.path.abspath(args.source)
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

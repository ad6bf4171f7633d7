#!/usr/bin/env python3
"""Admission through a real API server: kube-apiserver v1.37 calls cudagate,
installed from manifests/overlays/local and running with its own
ServiceAccount's token, for kubectl's creates; the real scheduler places what
is admitted. Each verdict is also shown to differ without cudagate.

    python3 admission_test.py --binary build/release/cudagate --source .
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))

import harness  # noqa: E402
import kube_cluster as kc  # noqa: E402

T4 = "Tesla-T4"
A100 = "NVIDIA-A100-SXM4-80GB"
SERVICE_ACCOUNT = "system:serviceaccount:cudagate-system:cudagate"


@kc.needs_cluster
class AdmissionTest(kc.ClusterTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # A T4 on driver 535 (CUDA 12.2) and an A100 on 550 (CUDA 12.4).
        cls.cluster.add_nodes([kc.gfd_node("gpu-t4-1", "535.129.03", "7.5", T4, "12.2"),
                               kc.gfd_node("gpu-a100-1", "550.54.15", "8.0", A100, "12.4")])
        cls.cluster.namespace("enforced")
        cls.cluster.namespace("warned", {"cudagate.io/mode": "warn"})
        cls.cluster.namespace("dry", {"cudagate.io/mode": "dryrun"})
        cls.cluster.namespace("unguarded", {"cudagate.io/mode": "off"})
        cls.gate = cls.cudagate()
        cls.gate.install()
        cls.gate.start()

    @classmethod
    def tearDownClass(cls):
        status = cls.gate.stop()
        if status != 0:
            raise AssertionError(f"cudagate exited with {status}:\n{cls.gate.log_tail()}")

    def create(self, pod):
        return self.cluster.kubectl("create", "-f", "-", stdin=pod, check=False)

    def test_install_runs_on_its_own_serviceaccount_and_nothing_is_refused(self):
        # Every list and watch cudagate starts is its ServiceAccount's, and
        # the manifests' ClusterRole allows each: the audit log holds no 403
        # for it.
        requests = [e for e in self.cluster.audit_events()
                    if e.get("user", {}).get("username") == SERVICE_ACCOUNT]
        verbs = {(e["verb"], e.get("objectRef", {}).get("resource")) for e in requests}
        self.assertIn(("list", "nodes"), verbs)
        self.assertIn(("watch", "nodes"), verbs)
        refused = [(e["verb"], e.get("requestURI")) for e in requests
                   if e.get("responseStatus", {}).get("code") == 403]
        self.assertEqual(refused, [])

    def test_incompatible_pod_refused_with_cudagates_message(self):
        refused = self.create(kc.gpu_pod("train-t4", "enforced", node_selector={
            "nvidia.com/gpu.product": T4}))
        self.assertNotEqual(refused.returncode, 0, refused.stdout)
        # The namespace has no mode label: the policy's (enforce), whose
        # mutating webhook is called first and refuses a pod no candidate can run.
        self.assertIn('admission webhook "default.mutate.cudagate.io" denied the request',
                      refused.stderr)
        self.assertIn("driver 535.129.03 supports up to CUDA 12.2 (gpu-t4-1)", refused.stderr)
        self.assertFalse(self.cluster.exists("/api/v1/namespaces/enforced/pods/train-t4"))

    def test_compatible_pod_created_and_bound(self):
        created = self.create(kc.gpu_pod("train-a100", "enforced", node_selector={
            "nvidia.com/gpu.product": A100}))
        self.assertEqual(created.returncode, 0, created.stderr)
        self.assertEqual(self.cluster.node_of("enforced", "train-a100"), "gpu-a100-1")

    def test_without_cudagate_the_same_pod_lands_where_it_cannot_run(self):
        created = self.create(kc.gpu_pod("train-t4", "unguarded", node_selector={
            "nvidia.com/gpu.product": T4}))
        self.assertEqual(created.returncode, 0, created.stderr)
        self.assertEqual(self.cluster.node_of("unguarded", "train-t4"), "gpu-t4-1")

    def test_warn_namespace_shows_kubectls_warning(self):
        created = self.create(kc.gpu_pod("train-t4", "warned", node_selector={
            "nvidia.com/gpu.product": T4}))
        self.assertEqual(created.returncode, 0, created.stderr)
        self.assertIn("Warning: ", created.stderr)
        self.assertIn("driver 535.129.03 supports up to CUDA 12.2", created.stderr)

    def test_dryrun_leaves_its_verdict_in_the_audit_log(self):
        created = self.create(kc.gpu_pod("train-t4", "dry", node_selector={
            "nvidia.com/gpu.product": T4}))
        self.assertEqual(created.returncode, 0, created.stderr)
        self.assertNotIn("Warning: ", created.stderr)

        def annotations():
            for event in self.cluster.audit_events():
                ref = event.get("objectRef", {})
                if (event.get("verb") == "create" and ref.get("resource") == "pods"
                        and ref.get("namespace") == "dry" and ref.get("name") == "train-t4"
                        and event.get("stage") == "ResponseComplete"):
                    return event.get("annotations", {})
            return None
        found = kc.wait_until(annotations, "the create's audit event")
        self.assertEqual(found.get("dryrun.validate.cudagate.io/mode"), "dryrun", found)
        self.assertEqual(found.get("dryrun.validate.cudagate.io/decision"), "allow", found)
        self.assertEqual(found.get("dryrun.validate.cudagate.io/enforce-decision"), "deny", found)
        self.assertIn("driver 535.129.03 supports up to CUDA 12.2",
                      found.get("dryrun.validate.cudagate.io/findings", ""))

    def test_pods_without_a_gpu_never_reach_cudagate(self):
        before = self.gate.metric("cudagate_admission_requests_total")
        for i in range(3):
            created = self.create(kc.cpu_pod(f"web-{i}", "enforced"))
            self.assertEqual(created.returncode, 0, created.stderr)
        # A GPU pod afterwards does move the counter: the counter is read
        # from the same server, so the CPU pods' absence is not a lag.
        self.assertEqual(self.create(kc.gpu_pod("after", "enforced", node_selector={
            "nvidia.com/gpu.product": A100})).returncode, 0)
        kc.wait_until(lambda: self.gate.metric("cudagate_admission_requests_total") > before,
                      "the GPU pod's admission to be counted")
        after = self.gate.metric("cudagate_admission_requests_total")
        # The GPU pod went through the mutating and the validating webhook.
        self.assertEqual(after - before, 2)


if __name__ == "__main__":
    sys.exit(harness.main(__name__))

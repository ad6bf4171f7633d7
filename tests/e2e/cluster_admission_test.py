#!/usr/bin/env python3
"""End-to-end tests against a real Kubernetes control plane: kube-apiserver,
kube-scheduler and kube-controller-manager built from Kubernetes' own modules
(scripts/cluster-build.sh) and started by scripts/cluster.sh. kubectl
creates GPU pods through the real API server, which calls `cudagate serve
--kubeconfig` as a validating webhook; the real scheduler places what is
admitted. Each case also runs without cudagate, where the same pod lands on
a node that cannot run it.

Skipped where the components have not been built (scripts/cluster-build.sh).

    python3 cluster_admission_test.py --binary build/release/cudagate --source .
"""

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import harness
import server_test as st

TIMEOUT = 60


def cluster_bin(name):
    return os.path.join(harness.SOURCE, "build", "cluster", "bin", name)


def gfd_node(name, driver, runtime, cc, product):
    d, r, c = driver.split("."), runtime.split("."), cc.split(".")
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
        "kubernetes.io/hostname": name,
        "nvidia.com/gpu.present": "true",
        "nvidia.com/cuda.driver-version.full": driver,
        "nvidia.com/cuda.driver-version.major": d[0],
        "nvidia.com/cuda.driver-version.minor": d[1],
        "nvidia.com/cuda.driver-version.revision": d[2],
        "nvidia.com/cuda.runtime-version.full": runtime,
        "nvidia.com/cuda.runtime-version.major": r[0],
        "nvidia.com/cuda.runtime-version.minor": r[1],
        "nvidia.com/gpu.compute.major": c[0],
        "nvidia.com/gpu.compute.minor": c[1],
        "nvidia.com/gpu.product": product}}}


def gpu_pod(name, product):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeSelector": {"kubernetes.io/os": "linux"} if product is None
                     else {"nvidia.com/gpu.product": product},
                     "containers": [{"name": "train", "image": "registry.example.com/ml/train:v1",
                                     "env": [{"name": "CUDA_VERSION", "value": "12.4.1"}],
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


@unittest.skipUnless(os.path.exists(os.path.join(os.path.dirname(__file__), "..", "..", "build",
                                                 "cluster", "bin", "kube-apiserver")),
                     "the Kubernetes components are not built (scripts/cluster-build.sh)")
class RealApiServerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.share_paths()
        cls.tmp = tempfile.mkdtemp(prefix="cudagate-cluster-")
        cls.certs = os.path.join(cls.tmp, "certs")
        st.make_certs(cls.certs)
        cls.cluster = os.path.join(harness.SOURCE, "scripts", "cluster.sh")
        subprocess.run([cls.cluster, "up"], check=True, capture_output=True, timeout=300)
        cls.env = dict(os.environ,
                       KUBECONFIG=os.path.join(harness.SOURCE, "build", "cluster", "kubeconfig"))
        # A T4 on driver 535 (CUDA 12.2) and an A100 on 550 (CUDA 12.4): Ready,
        # with GPUs, and without the not-ready taint the API server puts on a
        # new Node, which no kubelet is here to lift.
        for node in (gfd_node("gpu-t4-1", "535.129.03", "12.2", "7.5", "Tesla-T4"),
                     gfd_node("gpu-a100-1", "550.54.15", "12.4", "8.0", "NVIDIA-A100-SXM4-80GB")):
            name = node["metadata"]["name"]
            cls.kubectl("apply", "-f", "-", stdin=json.dumps(node))
            resources = {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "4"}
            ready = {"type": "Ready", "status": "True", "reason": "KubeletReady",
                     "message": "no kubelet: set by the test"}
            cls.kubectl("patch", "node", name, "--subresource=status", "--type=merge", "-p",
                        json.dumps({"status": {"capacity": resources, "allocatable": resources,
                                               "conditions": [ready]}}))
            cls.kubectl("taint", "node", name, "node.kubernetes.io/not-ready:NoSchedule-",
                        check=False)
        cls.port = harness.free_port()
        cls.log_path = os.path.join(cls.tmp, "cudagate.log")
        with open(cls.log_path, "ab") as log:
            cls.proc = subprocess.Popen(
                [harness.BINARY, "serve", "--listen", f"127.0.0.1:{cls.port}",
                 "--tls-cert", os.path.join(cls.certs, "server.crt"),
                 "--tls-key", os.path.join(cls.certs, "server.key"),
                 "--kubeconfig", cls.env["KUBECONFIG"], "--threads", "2"],
                stdout=log, stderr=log, env=cls.env)
        st.poll_until(cls.ready, TIMEOUT, "cudagate to be ready")

    @classmethod
    def tearDownClass(cls):
        try:
            cls.kubectl("delete", "validatingwebhookconfiguration", "cudagate-test",
                        "--ignore-not-found", check=False)
            cls.proc.terminate()
            status = cls.proc.wait(timeout=30)
        finally:
            subprocess.run([cls.cluster, "down"], capture_output=True, timeout=120)
            with open(cls.log_path, encoding="utf-8", errors="replace") as f:
                tail = f.read()[-3000:]
            shutil.rmtree(cls.tmp, ignore_errors=True)
        if status != 0:
            raise AssertionError(f"cudagate exited with {status}:\n{tail}")

    @classmethod
    def kubectl(cls, *args, stdin=None, check=True):
        out = subprocess.run([cluster_bin("kubectl"), *args], input=stdin, capture_output=True,
                             text=True, env=cls.env, timeout=120)
        if check and out.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {out.stderr}")
        return out

    @classmethod
    def ready(cls):
        if cls.proc.poll() is not None:
            raise AssertionError(f"cudagate exited with {cls.proc.returncode}")
        out = subprocess.run(["curl", "-s", "--cacert", os.path.join(cls.certs, "ca.crt"),
                              f"https://127.0.0.1:{cls.port}/readyz"], capture_output=True,
                             text=True, timeout=10)
        return out.stdout.strip() == "ok"

    def register(self):
        with open(os.path.join(self.certs, "ca.crt"), "rb") as f:
            ca = base64.b64encode(f.read()).decode()
        config = {"apiVersion": "admissionregistration.k8s.io/v1",
                  "kind": "ValidatingWebhookConfiguration",
                  "metadata": {"name": "cudagate-test"},
                  "webhooks": [{"name": "validate.cudagate.io",
                                "admissionReviewVersions": ["v1"], "sideEffects": "None",
                                "failurePolicy": "Fail",
                                "clientConfig": {"url": f"https://127.0.0.1:{self.port}/validate",
                                                 "caBundle": ca},
                                "rules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                           "operations": ["CREATE"], "resources": ["pods"]}]}]}
        self.kubectl("apply", "-f", "-", stdin=json.dumps(config))
        self.addCleanup(self.kubectl, "delete", "validatingwebhookconfiguration", "cudagate-test",
                        "--ignore-not-found", check=False)

    def create(self, pod):
        self.addCleanup(self.kubectl, "delete", "pod", pod["metadata"]["name"], "--wait=false",
                        "--ignore-not-found", check=False)
        return self.kubectl("create", "-f", "-", stdin=json.dumps(pod), check=False)

    def node_of(self, name):
        return self.kubectl("get", "pod", name, "-o", "jsonpath={.spec.nodeName}").stdout

    def bound(self, name):
        node = []
        st.poll_until(lambda: node.append(self.node_of(name)) or node[-1], TIMEOUT,
                      f"the scheduler to bind {name}")
        return node[-1]

    def test_incompatible_pod_refused_and_compatible_one_placed(self):
        # The webhook registered only now, so that the API server's first
        # calls find cudagate listening.
        self.register()
        refused = self.create(gpu_pod("train-t4", "Tesla-T4"))
        self.assertNotEqual(refused.returncode, 0, refused.stdout)
        self.assertIn('admission webhook "validate.cudagate.io" denied the request', refused.stderr)
        self.assertIn("driver 535.129.03 supports up to CUDA 12.2 (gpu-t4-1)", refused.stderr)
        created = self.create(gpu_pod("train-a100", "NVIDIA-A100-SXM4-80GB"))
        self.assertEqual(created.returncode, 0, created.stderr)
        self.assertEqual(self.bound("train-a100"), "gpu-a100-1")

    def test_without_cudagate_the_pod_lands_where_it_cannot_run(self):
        created = self.create(gpu_pod("unguarded", "Tesla-T4"))
        self.assertEqual(created.returncode, 0, created.stderr)
        self.assertEqual(self.bound("unguarded"), "gpu-t4-1")


if __name__ == "__main__":
    sys.exit(harness.main(__name__))

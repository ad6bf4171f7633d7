#!/usr/bin/env python3
"""Decisions from the image's own files, through a real API server: an image
laid out as `pip install torch` lays it out (libtorch_cuda.so compiled by
nvcc for 8.0 and 9.0 with PTX 9.0, flash-attn's extension for 9.0 only, and
no variable that says so) is pushed to Debian's docker-registry. Blind, it
is admitted onto a T4, where it would fail with `no kernel image is
available`; once `cudagate scan --attach` has attached its scan, the
validating and mutating webhooks called by kube-apiserver v1.37 refuse it
there naming the library, pin it off the T4 elsewhere (kube-scheduler
binds it to a node that can run it), and warn that flash-attn has no
kernel for the A100. `cudagate check --image` and `cudagate audit` say the
same. With scan.background, cudagate scans an image it admitted blind by
itself, and the next admission of that image is judged on its files.

    python3 scans_test.py --binary build/release/cudagate --source .
"""

import gzip
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))

import harness  # noqa: E402
import kube_cluster as kc  # noqa: E402
import registry_support as rs  # noqa: E402
import scan_support as ss  # noqa: E402

T4 = "Tesla-T4"
A100 = "NVIDIA-A100-SXM4-80GB"
H100 = "NVIDIA-H100-80GB-HBM3"
DRIVER = "570.124.06"  # CUDA 12.8 on every node: only the architectures differ
TORCH_LIB = f"/{ss.SITE}/torch/lib/libtorch_cuda.so"
NO_KERNEL_ON_T4 = (f"ships {TORCH_LIB}, which has kernels for 8.0, 9.0 and PTX 9.0 (scan); no "
                   "kernel image for compute capability 7.5 (Tesla-T4)")
# The same, as the webhook's denial words it.
DENIED_ON_T4 = (f'container "train" ships {TORCH_LIB}, which has kernels for 8.0, 9.0 and PTX 9.0 '
                "(scan); 1 of 1 candidate node cannot run it: no kernel image for compute "
                "capability 7.5 (Tesla-T4) (gpu-t4-1)")


@kc.needs_cluster
class ScansTest(kc.ClusterTestCase):
    @classmethod
    def setUpClass(cls):
        ss.need_nvcc(kc.SOURCE)
        super().setUpClass()
        cls.cluster.add_nodes([kc.gfd_node("gpu-t4-1", DRIVER, "7.5", T4, "12.8"),
                               kc.gfd_node("gpu-a100-1", DRIVER, "8.0", A100, "12.8"),
                               kc.gfd_node("gpu-h100-1", DRIVER, "9.0", H100, "12.8")])
        cls.cluster.namespace("ml")
        cls.cluster.namespace("unguarded", {"cudagate.io/mode": "off"})
        cls.registry = rs.Registry(cls.tmp).start()
        cls.addClassCleanup(cls.registry.stop)
        members = ss.pip_torch_members(
            kc.SOURCE, cls.tmp,
            ["-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=sm_90",
             "-gencode", "arch=compute_90,code=compute_90"],
            ["-gencode", "arch=compute_90,code=sm_90"])
        # Three images of these files, told apart by a build id: one to
        # attach a scan to, one admitted blind, one the server scans.
        cls.images = {}
        for tag in ("attached", "blind", "background"):
            layer = ss.tar_of(members + [("etc/build-id", tag.encode())])
            layout = os.path.join(cls.tmp, f"layout-{tag}")
            ss.write_layout(layout, tag, [ss.image_manifest(
                layout, "amd64", [("tar+gzip", layer, gzip.compress(layer, mtime=0))],
                env=("PATH=/usr/local/bin:/usr/bin",))])
            cls.images[tag] = f"{cls.registry.host}/ml/torch:{tag}"
            rs.push(layout, tag, cls.images[tag])
        cls.policy = os.path.join(cls.tmp, "policy.yaml")
        cls.write_policy(background=True)
        attached = subprocess.run(
            [cls.binary, "scan", cls.images["attached"], "--attach", cls.images["attached"],
             "--config", cls.policy], capture_output=True, text=True, timeout=600)
        if attached.returncode != 0:
            raise AssertionError(f"scan --attach failed: {attached.stderr}")
        cls.gate = cls.cudagate(policy=cls.policy)
        cls.gate.install()
        cls.gate.start()

    @classmethod
    def write_policy(cls, background):
        with open(os.path.join(kc.SOURCE, "manifests", "base", "policy.yaml"),
                  encoding="utf-8") as f:
            text = f.read()
        text, count = re.subn(r"(?m)^registry:\n", "registry:\n  insecure: [%s]\n"
                              "  credentials: \"\"\n" % json.dumps(cls.registry.host), text)
        if count != 1:
            raise AssertionError("manifests/base/policy.yaml: no `registry:` section")
        text, count = re.subn(r"(?m)^(scan:\n(?:  .*\n)*?)  background: false\n",
                              r"\1  background: %s\n" % ("true" if background else "false"), text)
        if count != 1:
            raise AssertionError("manifests/base/policy.yaml: no `scan: background: false`")
        with open(cls.policy, "w", encoding="utf-8") as f:
            f.write(text)

    @classmethod
    def tearDownClass(cls):
        status = cls.gate.stop()
        if status != 0:
            raise AssertionError(f"cudagate exited with {status}:\n{cls.gate.log_tail()}")

    def create(self, name, tag, namespace="ml", node_selector=None):
        pod = kc.gpu_pod(name, namespace, cuda=None, image=self.images[tag],
                         node_selector=node_selector)
        return self.cluster.kubectl("create", "-f", "-", stdin=pod, check=False)

    def test_an_attached_scan_keeps_the_image_off_a_t4(self):
        refused = self.create("torch-t4", "attached", node_selector={"nvidia.com/gpu.product": T4})
        self.assertNotEqual(refused.returncode, 0, refused.stdout)
        self.assertIn("denied the request", refused.stderr)
        self.assertIn(DENIED_ON_T4, refused.stderr)
        self.assertFalse(self.cluster.exists("/api/v1/namespaces/ml/pods/torch-t4"))

    def test_without_cudagate_it_lands_on_the_t4(self):
        created = self.create("torch-t4", "attached", namespace="unguarded",
                              node_selector={"nvidia.com/gpu.product": T4})
        self.assertEqual(created.returncode, 0, created.stderr)
        self.assertEqual(self.cluster.node_of("unguarded", "torch-t4"), "gpu-t4-1")

    def test_pinned_off_the_t4_with_a_warning_for_flash_attn(self):
        created = self.create("torch-any", "attached")
        self.assertEqual(created.returncode, 0, created.stderr)
        self.assertIn("flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so has kernels for 9.0: "
                      "no kernel image for compute capability 8.0", created.stderr)
        pod = self.cluster.pod("ml", "torch-any")
        terms = pod["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        self.assertNotIn("gpu-t4-1", json.dumps(terms))
        self.assertIn(self.cluster.node_of("ml", "torch-any"), {"gpu-a100-1", "gpu-h100-1"})

    def nodes_file(self):
        nodes = os.path.join(self.tmp, "nodes.json")
        with open(nodes, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "List",
                       "items": [kc.gfd_node("gpu-t4-1", DRIVER, "7.5", T4, "12.8"),
                                 kc.gfd_node("gpu-h100-1", DRIVER, "9.0", H100, "12.8")]}, f)
        return nodes

    def test_audit_reads_the_same_scan(self):
        pods = os.path.join(self.tmp, "pods.json")
        with open(pods, "w") as f:
            json.dump(kc.gpu_pod("torch", "ml", cuda=None, image=self.images["attached"]), f)
        out = subprocess.run([self.binary, "audit", pods, "--nodes", self.nodes_file(),
                              "--config", self.policy, "--format", "json"],
                             capture_output=True, text=True, timeout=120)
        records = json.loads(out.stdout)
        records = records if isinstance(records, list) else records.get("items", [records])
        self.assertEqual([r["verdict"] for r in records], ["partial"], out.stderr)
        findings = [f["message"] for g in records[0]["groups"] for f in g["findings"]]
        self.assertEqual(findings, [NO_KERNEL_ON_T4])

    def test_check_reads_the_same_scan(self):
        nodes = self.nodes_file()
        out = subprocess.run([self.binary, "check", "--image", self.images["attached"], "--nodes",
                              nodes, "--config", self.policy, "-o", "json"],
                             capture_output=True, text=True, timeout=120)
        record = json.loads(out.stdout)
        self.assertEqual(record["verdict"], "partial", out.stderr)
        container = record["containers"][0]
        self.assertEqual(container["archs"], {"value": "8.0;9.0+PTX", "source": "scan"})
        self.assertEqual(container["cuda"], {"value": "12.8", "source": "scan"})
        findings = [f["message"] for g in record["groups"] for f in g["findings"]]
        self.assertEqual(findings, [NO_KERNEL_ON_T4])

    def test_the_server_scans_what_it_admitted_blind(self):
        # No scan attached: judged on what the image says, which is nothing.
        blind = self.create("blind-t4", "background", node_selector={"nvidia.com/gpu.product": T4})
        self.assertEqual(blind.returncode, 0, blind.stderr)
        kc.wait_until(lambda: self.gate.metric("cudagate_image_scans_total", result="scanned") >= 1,
                      "the server's scan of the image")
        self.assertGreater(self.gate.metric("cudagate_image_scan_bytes_total"), 0)
        # The next admission of that image is judged on its files.
        refused = self.create("next-t4", "background",
                              node_selector={"nvidia.com/gpu.product": T4})
        self.assertNotEqual(refused.returncode, 0, refused.stdout)
        self.assertIn(DENIED_ON_T4, refused.stderr)

    def test_an_image_nobody_scanned_is_admitted_blind(self):
        # The blind image is never admitted in this test class before: its
        # first admission cannot wait for a scan.
        created = self.create("blind-first", "blind", node_selector={"nvidia.com/gpu.product": T4})
        self.assertEqual(created.returncode, 0, created.stderr)
        self.assertEqual(self.cluster.node_of("ml", "blind-first"), "gpu-t4-1")


if __name__ == "__main__":
    sys.exit(harness.main(__name__))

#!/usr/bin/env python3
"""End-to-end checks of what the fast paths must not change (no timing).

- A large JSON node list, read item by item by the streaming reader, gives
  the same answers as the same nodes in YAML, read the ordinary way.
- The load comparison's 13 KB review (bench/data/gpu-pod.json) is answered
  on /validate and /mutate as the API server expects.
- TLS sessions are resumed (TLS 1.2 session cache, TLS 1.3 tickets), and
  one keep-alive connection carries many requests.

    python3 performance_test.py --binary build/dev/cudagate --source .

The last line printed is "N passed, M failed"; the exit status is non-zero
when a test fails.
"""

import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from harness import free_port
import harness

BINARY = None
SOURCE = None
READY_TIMEOUT = 120  # a sanitizer build reading thousands of nodes starts slowly


def fleet(count):
    """A NodeList in kubectl's JSON shape: CPU, T4 and A100 pools."""
    pools = [
        ("cpu", None, None, None, 0),
        ("t4", "Tesla-T4", "535.183.01", ("7", "5"), 1),
        ("a100", "NVIDIA-A100-SXM4-80GB", "550.90.07", ("8", "0"), 8),
        ("a100-new", "NVIDIA-A100-SXM4-80GB", "570.124.06", ("8", "0"), 8),
    ]
    items = []
    for i in range(count):
        pool, product, driver, cc, gpus = pools[i % len(pools)]
        name = "node-%05d.example.internal" % i
        labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "pool": pool,
                  "topology.kubernetes.io/zone": "zone-%d" % (i % 3)}
        node = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": labels,
                             "annotations": {"note": "escaped \"quotes\" and \\ backslashes"}},
                "spec": {}, "status": {"allocatable": {"cpu": "8", "pods": "110"}}}
        if product:
            labels.update({"nvidia.com/gpu.product": product,
                           "nvidia.com/cuda.driver-version.full": driver,
                           "nvidia.com/gpu.compute.major": cc[0],
                           "nvidia.com/gpu.compute.minor": cc[1]})
            node["status"]["allocatable"]["nvidia.com/gpu"] = str(gpus)
            node["spec"]["taints"] = [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
        if i % 97 == 5:
            node["spec"]["unschedulable"] = True
        items.append(node)
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}


def to_yaml(value, indent=0):
    """JSON-compatible YAML (flow style per node), without a YAML library."""
    pad = " " * indent
    lines = [pad + "apiVersion: v1", pad + "kind: List", pad + "items:"]
    for item in value["items"]:
        lines.append(pad + "- " + json.dumps(item))
    return "\n".join(lines) + "\n"


class Server:
    def __init__(self, workdir, certs, nodes):
        self.workdir, self.certs, self.nodes = workdir, certs, nodes
        self.port = free_port()
        self.log = open(os.path.join(workdir, "server-%d.log" % self.port), "w")
        self.proc = subprocess.Popen(
            [BINARY, "serve", "--listen", "127.0.0.1:%d" % self.port,
             "--tls-cert", os.path.join(certs, "server.crt"),
             "--tls-key", os.path.join(certs, "server.key"), "--nodes", nodes, "--threads", "1"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                raise AssertionError("cudagate exited at start")
            try:
                status, _ = self.request("GET", "/readyz")
                if status == 200:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("cudagate not ready in time")
            threading.Event().wait(0.05)

    def context(self, version=None):
        ctx = ssl.create_default_context(cafile=os.path.join(self.certs, "ca.crt"))
        if version is not None:
            ctx.minimum_version = ctx.maximum_version = version
        return ctx

    def request(self, method, path, body=None):
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context(),
                                           timeout=30)
        try:
            headers = {"Content-Type": "application/json"} if body is not None else {}
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=30)
        self.log.close()
        return code


class PerformancePathsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.workdir = tempfile.mkdtemp(prefix="cudagate-perf-e2e-")
        cls.certs = os.path.join(cls.workdir, "certs")
        subprocess.run(["bash", os.path.join(SOURCE, "certs", "dev-certs.sh"), "--out", cls.certs],
                       check=True, capture_output=True, text=True, timeout=60)
        nodes = fleet(2000)
        cls.json_nodes = os.path.join(cls.workdir, "nodes.json")
        with open(cls.json_nodes, "w") as f:
            json.dump(nodes, f)
        cls.yaml_nodes = os.path.join(cls.workdir, "nodes.yaml")
        with open(cls.yaml_nodes, "w") as f:
            f.write(to_yaml(nodes))
        try:
            cls.server = Server(cls.workdir, cls.certs, cls.json_nodes)
        except Exception:
            shutil.rmtree(cls.workdir, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            assert cls.server.stop() == 0
        finally:
            shutil.rmtree(cls.workdir, ignore_errors=True)

    def bench_body(self, cuda=None):
        with open(os.path.join(SOURCE, "bench", "data", "gpu-pod.json")) as f:
            review = json.load(f)
        if cuda is not None:
            for c in review["request"]["object"]["spec"]["containers"]:
                c["image"] = "registry.example.com/ml/train:v1"
                for e in c.get("env", []):
                    if e["name"] == "CUDA_VERSION":
                        e["value"] = cuda
        return review

    def pod_review(self, selector, cuda):
        spec = {"containers": [{"name": "train", "image": "registry.example.com/ml/train:v1",
                                "env": [{"name": "CUDA_VERSION", "value": cuda}],
                                "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}
        if selector:
            spec["nodeSelector"] = selector
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "request": {"uid": "u-1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                            "operation": "CREATE", "namespace": "ml", "name": "trainer",
                            "object": {"apiVersion": "v1", "kind": "Pod",
                                       "metadata": {"name": "trainer", "namespace": "ml"},
                                       "spec": spec}}}

    def test_streamed_json_list_answers_as_yaml(self):
        yaml_server = Server(self.workdir, self.certs, self.yaml_nodes)
        try:
            bodies = [self.pod_review({}, "12.4.1"), self.pod_review({"pool": "t4"}, "12.4.1"),
                      self.pod_review({"pool": "a100"}, "12.8.0"),
                      self.pod_review({"kubernetes.io/hostname": "node-00003.example.internal"},
                                      "12.2"),
                      self.bench_body(), self.bench_body("12.8.0")]
            for body in bodies:
                data = json.dumps(body).encode()
                for path in ("/validate", "/mutate"):
                    self.assertEqual(self.server.request("POST", path, data),
                                     yaml_server.request("POST", path, data), path)
        finally:
            self.assertEqual(yaml_server.stop(), 0)

    def test_bench_review_is_answered(self):
        review = self.bench_body()
        status, body = self.server.request("POST", "/validate", json.dumps(review).encode())
        self.assertEqual(status, 200)
        answer = json.loads(body)
        self.assertEqual(answer["apiVersion"], "admission.k8s.io/v1")
        self.assertEqual(answer["kind"], "AdmissionReview")
        self.assertEqual(answer["response"]["uid"], review["request"]["uid"])
        self.assertIn("allowed", answer["response"])

    def test_tls_sessions_are_resumed(self):
        for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
            ctx = self.server.context(version)
            session = None
            reused = []
            for _ in range(2):
                raw = socket.create_connection(("127.0.0.1", self.server.port), timeout=30)
                with ctx.wrap_socket(raw, server_hostname="127.0.0.1", session=session) as s:
                    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    data = b""
                    while True:
                        chunk = s.recv(4096)
                        if not chunk:
                            break
                        data += chunk
                    self.assertTrue(data.startswith(b"HTTP/1.1 200"), data[:40])
                    reused.append(s.session_reused)
                    session = s.session
            self.assertEqual(reused, [False, True], version.name)

    def test_one_connection_carries_many_requests(self):
        conn = http.client.HTTPSConnection("127.0.0.1", self.server.port,
                                           context=self.server.context(), timeout=30)
        data = json.dumps(self.bench_body()).encode()
        try:
            conn.connect()
            first = conn.sock
            for i in range(200):
                conn.request("POST", "/validate", body=data,
                             headers={"Content-Type": "application/json"})
                response = conn.getresponse()
                self.assertEqual(response.status, 200, i)
                response.read()
                self.assertIs(conn.sock, first, "the connection was not kept alive")
        finally:
            conn.close()


if __name__ == "__main__":
    sys.exit(harness.main(__name__))

"""What the tests of `cudagate serve` share: the T4 + A100 GPU Feature
Discovery inventory, AdmissionReviews for a Pod, development certificates
(certs/dev-certs.sh), TLS client contexts, `Server` (one `cudagate serve`
process on a free loopback port), `ServerTestCase` (a test class with its own
server), polling with a deadline, Prometheus samples and promtool.

Used by server_test.py and the other end-to-end tests that start a server,
by tests/cluster and by the bench scripts. BINARY and SOURCE are set by the
test that runs (harness.share_paths or its setUpModule).
"""

import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import unittest
import uuid
import warnings

from harness import free_port

BINARY = None
SOURCE = None

READY_TIMEOUT = 60  # an instrumented (sanitizer) build starts slowly
POLL = 0.05

# A T4 node on driver 535 (CUDA 12.2) and an A100 node on driver 550
# (CUDA 12.4), labelled by GPU Feature Discovery.
def gfd_node(name, driver, runtime, cc, product, family):
    major, minor, rev = driver.split(".")
    rt_major, rt_minor = runtime.split(".")
    cc_major, cc_minor = cc.split(".")
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/arch": "amd64",
                "nvidia.com/gpu.present": "true",
                "nvidia.com/cuda.driver.major": major,
                "nvidia.com/cuda.driver.minor": minor,
                "nvidia.com/cuda.driver.rev": rev,
                "nvidia.com/cuda.runtime.major": rt_major,
                "nvidia.com/cuda.runtime.minor": rt_minor,
                "nvidia.com/gpu.compute.major": cc_major,
                "nvidia.com/gpu.compute.minor": cc_minor,
                "nvidia.com/gpu.product": product,
                "nvidia.com/gpu.family": family,
            },
        },
        "spec": {},
        "status": {
            "allocatable": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "4", "pods": "110"},
            "capacity": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "4", "pods": "110"},
        },
    }


T4_NODE = gfd_node("gpu-t4-1", "535.129.03", "12.2", "7.5", "Tesla-T4", "turing")
A100_NODE = gfd_node("gpu-a100-1", "550.54.15", "12.4", "8.0", "NVIDIA-A100-SXM4-80GB", "ampere")


def node_list(*nodes):
    return {"apiVersion": "v1", "kind": "NodeList", "items": list(nodes)}


def review(pod_spec=None, namespace="default", name="web", uid=None):
    """A minimal admission.k8s.io/v1 AdmissionReview for a Pod CREATE."""
    uid = uid or str(uuid.uuid4())
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": pod_spec or {"containers": [{"name": "web", "image": "nginx:1.25"}]},
    }
    gvk = {"group": "", "version": "v1", "kind": "Pod"}
    gvr = {"group": "", "version": "v1", "resource": "pods"}
    body = {
        "kind": "AdmissionReview",
        "apiVersion": "admission.k8s.io/v1",
        "request": {
            "uid": uid,
            "kind": gvk,
            "resource": gvr,
            "requestKind": gvk,
            "requestResource": gvr,
            "name": name,
            "namespace": namespace,
            "operation": "CREATE",
            "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters"]},
            "object": pod,
            "oldObject": None,
            "dryRun": False,
            "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
        },
    }
    return uid, json.dumps(body).encode()


# A GPU pod whose image needs CUDA 12.4: incompatible with the T4 node's
# driver 535 (CUDA 12.2).
CUDA124_POD = {
    "containers": [
        {
            "name": "train",
            "image": "registry.example.com/ml/train:v1",
            "env": [{"name": "CUDA_VERSION", "value": "12.4.1"}],
            "resources": {"limits": {"nvidia.com/gpu": "1"}},
        }
    ],
    "nodeSelector": {"nvidia.com/gpu.product": "Tesla-T4"},
}

JSON_HEADERS = {"Content-Type": "application/json"}


def poll_until(condition, timeout, what):
    """Calls condition() until it returns a true value; fails after timeout."""
    deadline = time.monotonic() + timeout
    last_error = None
    while time.monotonic() < deadline:
        try:
            value = condition()
            if value:
                return value
        except Exception as e:  # noqa: BLE001 - reported below if it persists
            last_error = e
        threading.Event().wait(POLL)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}"
                         + (f" (last error: {last_error!r})" if last_error else ""))


def make_certs(directory, *extra):
    script = os.path.join(SOURCE, "certs", "dev-certs.sh")
    out = subprocess.run(["bash", script, "--out", directory, *extra], check=True,
                         capture_output=True, text=True, timeout=60)
    return out.stdout.strip().splitlines()[-1]


def client_context(certs, *, client_cert=False, minimum=None, maximum=None, alpn=None,
                   ciphers=None):
    ctx = ssl.create_default_context(cafile=os.path.join(certs, "ca.crt"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        if minimum is not None:
            ctx.minimum_version = minimum
        if maximum is not None:
            ctx.maximum_version = maximum
    if ciphers is not None:
        ctx.set_ciphers(ciphers)
    if alpn is not None:
        ctx.set_alpn_protocols(alpn)
    if client_cert:
        ctx.load_cert_chain(os.path.join(certs, "client.crt"), os.path.join(certs, "client.key"))
    return ctx


class Server:
    """One `cudagate serve` process."""

    def __init__(self, workdir, certs, *args, host="127.0.0.1", nodes=None, config=None,
                 client_cert=False, threads=4):
        self.workdir = workdir
        self.threads = threads
        self.certs = certs
        self.client_cert = client_cert
        self.host = host
        self.nodes = nodes or os.path.join(workdir, "nodes.json")
        if nodes is None:
            with open(self.nodes, "w") as f:
                json.dump(node_list(T4_NODE, A100_NODE), f)
        self.config = config
        self.args = list(args)
        self.proc = None
        self.port = None
        self.log_path = os.path.join(workdir, f"server-{uuid.uuid4().hex[:8]}.log")

    def command(self):
        listen = f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"
        cmd = [BINARY, "serve", "--listen", listen,
               "--tls-cert", os.path.join(self.certs, "server.crt"),
               "--tls-key", os.path.join(self.certs, "server.key"),
               "--nodes", self.nodes, "--threads", str(self.threads),
               "--log-format", "json", "--log-level", "debug"]
        if self.config:
            cmd += ["--config", self.config]
        return cmd + self.args

    def start(self):
        for _ in range(5):  # another process may take the free port first
            self.port = free_port(self.host)
            log = open(self.log_path, "ab")
            self.proc = subprocess.Popen(self.command(), stdout=log, stderr=log)
            log.close()
            try:
                poll_until(self._ready, READY_TIMEOUT, "the server to become ready")
                return self
            except AssertionError:
                if self.proc.poll() is None:
                    self.proc.kill()
                    self.proc.wait()
                    raise AssertionError("server not ready:\n" + self.log_tail())
                if "Address already in use" not in self.log_tail():
                    raise AssertionError(f"server exited with {self.proc.returncode}:\n"
                                         + self.log_tail())
        raise AssertionError("no free port found")

    def _ready(self):
        if self.proc.poll() is not None:
            raise AssertionError("exited")
        conn = self.connect()
        try:
            conn.request("GET", "/readyz")
            return conn.getresponse().status == 200
        finally:
            conn.close()

    def connect(self, ctx=None, timeout=10):
        ctx = ctx or client_context(self.certs, client_cert=self.client_cert)
        return http.client.HTTPSConnection(self.host, self.port, context=ctx, timeout=timeout)

    def tls_socket(self, ctx=None, timeout=10):
        ctx = ctx or client_context(self.certs, client_cert=self.client_cert)
        raw = socket.create_connection((self.host, self.port), timeout=timeout)
        return ctx.wrap_socket(raw, server_hostname=self.host)

    def stop(self):
        """SIGTERM; returns the exit status."""
        return stop_process(self.proc)

    def log_tail(self, lines=40):
        return file_tail(self.log_path, lines)

    def metrics(self):
        conn = self.connect()
        try:
            conn.request("GET", "/metrics")
            res = conn.getresponse()
            return res.status, res.getheader("Content-Type"), res.read().decode()
        finally:
            conn.close()


def stop_process(proc):
    """SIGTERM, then SIGKILL after 30 s; returns the exit status (None when
    there is no process)."""
    if proc is None or proc.poll() is not None:
        return proc.returncode if proc else None
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return "killed after 30 s"


def file_tail(path, lines=40):
    """The last `lines` lines of a log file, or "" when it cannot be read."""
    try:
        with open(path, "rb") as f:
            return "\n".join(f.read().decode(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def metric_value(text, name, **labels):
    """The value of one sample in a Prometheus text exposition, or None."""
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)$", line)
        if not m or m.group(1) != name:
            continue
        found = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        if all(found.get(k) == v for k, v in labels.items()):
            return float(m.group(4))
    return None


def assert_promtool_accepts(test, text):
    """`promtool check metrics` passes the exposition `text`."""
    promtool = shutil.which("promtool")
    if promtool is None:
        test.skipTest("promtool not installed (Debian package prometheus)")
    out = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                         text=True, timeout=60)
    test.assertEqual(out.returncode, 0, out.stdout + out.stderr)


def post(conn, path, body, headers=None):
    conn.request("POST", path, body=body, headers=headers or JSON_HEADERS)
    res = conn.getresponse()
    return res, res.read()


def is_closed(sock, timeout):
    """Whether the peer closes `sock` within `timeout` seconds (data read is dropped)."""
    sock.settimeout(timeout)
    try:
        return sock.recv(4096) == b""
    except (socket.timeout, TimeoutError):
        return False
    except (ConnectionError, ssl.SSLError, OSError):
        return True


class ServerTestCase(unittest.TestCase):
    server_args = ()
    config_text = None
    # The --nodes file; None: the T4 + A100 fleet.
    nodes = None
    # One I/O thread runs sessions without strands; more run each on its own.
    threads = 4

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="cudagate-server-test-")
        cls.certs = os.path.join(cls.tmp, "certs")
        cls.ca_bundle = make_certs(cls.certs)
        config = None
        if cls.config_text is not None:
            config = os.path.join(cls.tmp, "policy.yaml")
            with open(config, "w") as f:
                f.write(cls.config_text)
        cls.server = Server(cls.tmp, cls.certs, *cls.server_args, config=config,
                            nodes=cls.nodes() if callable(cls.nodes) else cls.nodes,
                            threads=cls.threads).start()

    @classmethod
    def tearDownClass(cls):
        status = cls.server.stop()
        tail = cls.server.log_tail()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        if status != 0:
            raise AssertionError(f"server exited with {status} after SIGTERM:\n{tail}")

    def assert_served(self):
        """The server still answers a new client."""
        conn = self.server.connect()
        try:
            conn.request("GET", "/healthz")
            res = conn.getresponse()
            self.assertEqual(res.status, 200)
            self.assertEqual(res.read(), b"ok\n")
        finally:
            conn.close()

    def assert_review_answer(self, res, data, uid):
        self.assertEqual(res.status, 200, data)
        answer = json.loads(data)
        self.assertEqual(answer["apiVersion"], "admission.k8s.io/v1")
        self.assertEqual(answer["kind"], "AdmissionReview")
        self.assertEqual(answer["response"]["uid"], uid)
        return answer

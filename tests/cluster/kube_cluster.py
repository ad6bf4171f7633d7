"""What the cluster tests share: a real control plane of their own
(scripts/cluster.sh, on free loopback ports and in a folder of the test's),
kubectl and a REST client on it, the API server SIGKILLed, the CRDs of
scripts/cluster-crds.sh installed, kubectl's JSON output read as objects,
GPU nodes made from a fleet description, and cudagate installed through
manifests/overlays/local, running as a process with its own
ServiceAccount's token.

There is no kubelet. A node is a Node object: the test writes its labels and
taints, then its status (capacity, allocatable and a Ready condition), and
takes off the node.kubernetes.io/not-ready taint that the API server puts on
every new Node and that a kubelet would lift. The scheduler and the
controllers treat such a node as any other; nothing runs on it.
"""

import base64
import copy
import http.client
import json
import os
import random
import re
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
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.join(SOURCE, "build", "cluster", "bin")
TIMEOUT = 60
POLL = 0.1


def built():
    return all(os.access(os.path.join(BIN, name), os.X_OK) for name in
               ("etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager", "kubectl"))


def needs_cluster(cls):
    """Skips a TestCase where scripts/cluster-build.sh has not run; under CI
    (CI=true) a missing build fails instead, so CI cannot pass by skipping."""
    if built() or os.environ.get("CI") == "true":
        return cls
    return unittest.skip("the Kubernetes components are not built (scripts/cluster-build.sh)")(cls)


def wait_until(condition, what, timeout=TIMEOUT):
    """Calls condition() until it returns a true value, which it returns; fails
    after `timeout` seconds naming `what` and the last error."""
    deadline = time.monotonic() + timeout
    last_error = None
    while True:
        try:
            value = condition()
            if value:
                return value
        except Fatal:
            raise
        except Exception as e:  # noqa: BLE001 - reported below if it persists
            last_error = e
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}"
                                 + (f" (last error: {last_error})" if last_error else ""))
        threading.Event().wait(POLL)


def free_port_block(count):
    """A loopback port p such that p .. p+count-1 are free now, taken below
    the kernel's ephemeral range (net.ipv4.ip_local_port_range, 32768 and up
    by default), so that no outgoing connection takes one of them between
    this check and the component's bind."""
    low, high = 20000, 32000
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="utf-8") as f:
            high = min(high, int(f.read().split()[0]) - 1)
    except (OSError, ValueError, IndexError):
        pass
    rng = random.Random()
    for _ in range(500):
        base = rng.randrange(low, high - count)
        try:
            for port in range(base, base + count):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise AssertionError(f"no block of {count} free loopback ports in {low}..{high}")


class Fatal(AssertionError):
    """A failure that waiting cannot mend (a process that exited):
    wait_until raises it at once."""


class ApiError(Exception):
    def __init__(self, status, body):
        super().__init__(f"HTTP {status}: {body[:500]}")
        self.status = status
        self.body = body


class Cluster:
    """One control plane: etcd, kube-apiserver, kube-scheduler and
    kube-controller-manager, in `directory`, on ports of its own."""

    def __init__(self, directory):
        self.directory = directory
        self.etcd_port = free_port_block(2)
        self.apiserver_port = free_port_block(3)
        self.kubeconfig = os.path.join(directory, "kubeconfig")
        self.run_dir = os.path.join(directory, "run")
        self.pki = os.path.join(self.run_dir, "pki")
        self.audit_log = os.path.join(self.run_dir, "audit.log")
        self.env = dict(os.environ, CLUSTER_DIR=directory,
                        CLUSTER_ETCD_PORT=str(self.etcd_port),
                        CLUSTER_APISERVER_PORT=str(self.apiserver_port),
                        KUBECONFIG=self.kubeconfig)
        self.script = os.path.join(SOURCE, "scripts", "cluster.sh")
        self._tls = None

    # --- the control plane --------------------------------------------------

    def up(self):
        out = subprocess.run([self.script, "up"], env=self.env, capture_output=True, text=True,
                             timeout=300, check=False)
        if out.returncode != 0:
            raise AssertionError(f"cluster.sh up failed:\n{out.stdout}\n{out.stderr}")

    def down(self):
        subprocess.run([self.script, "down"], env=self.env, capture_output=True, timeout=120,
                       check=False)

    def log(self, part, lines=30):
        try:
            with open(os.path.join(self.run_dir, f"{part}.log"), encoding="utf-8",
                      errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def pid(self, part):
        with open(os.path.join(self.run_dir, f"{part}.pid"), encoding="utf-8") as f:
            return int(f.read().strip())

    # --- kubectl ------------------------------------------------------------

    def kubectl(self, *args, stdin=None, check=True, kubeconfig=None, timeout=120):
        env = dict(self.env, KUBECONFIG=kubeconfig or self.kubeconfig)
        if stdin is not None and not isinstance(stdin, str):
            stdin = json.dumps(stdin)
        out = subprocess.run([os.path.join(BIN, "kubectl"), *args], input=stdin,
                             capture_output=True, text=True, env=env, timeout=timeout,
                             check=False)
        if check and out.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {out.stderr}")
        return out

    def serviceaccount_kubeconfig(self, namespace, name, path, duration="24h"):
        out = subprocess.run([self.script, "serviceaccount-kubeconfig", namespace, name, duration],
                             env=self.env, capture_output=True, text=True, timeout=60,
                             check=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(out.stdout)
        os.chmod(path, 0o600)
        return path

    # --- REST, as admin -----------------------------------------------------

    def _context(self):
        if self._tls is None:
            ctx = ssl.create_default_context(cafile=os.path.join(self.pki, "ca.crt"))
            ctx.load_cert_chain(os.path.join(self.pki, "admin.crt"),
                                os.path.join(self.pki, "admin.key"))
            self._tls = ctx
        return self._tls

    def request(self, method, path, body=None, content_type="application/json",
                query=None):
        """One call to the API server as admin; returns the decoded JSON body
        and raises ApiError on a status of 400 or more."""
        if query:
            path += "?" + urllib.parse.urlencode(query)
        conn = http.client.HTTPSConnection("127.0.0.1", self.apiserver_port,
                                           context=self._context(), timeout=60)
        try:
            payload = None if body is None else json.dumps(body)
            conn.request(method, path, body=payload,
                         headers={"Content-Type": content_type, "Accept": "application/json"})
            response = conn.getresponse()
            data = response.read().decode()
        finally:
            conn.close()
        if response.status >= 400:
            raise ApiError(response.status, data)
        return json.loads(data) if data else {}

    def get(self, path):
        return self.request("GET", path)

    def exists(self, path):
        try:
            self.get(path)
            return True
        except ApiError as e:
            if e.status == 404:
                return False
            raise

    def merge_patch(self, path, patch):
        return self.request("PATCH", path, patch, "application/merge-patch+json")

    def delete(self, path):
        try:
            return self.request("DELETE", path)
        except ApiError as e:
            if e.status != 404:
                raise
            return {}

    # --- nodes --------------------------------------------------------------

    def add_nodes(self, nodes):
        """Creates each Node (a dict as `kubectl get node -o json` gives one,
        or as gfd_node() builds) and makes it schedulable: status with its
        capacity, allocatable and a Ready condition, and without the
        not-ready taint. Returns the names."""
        names = []
        for node in nodes:
            node = copy.deepcopy(node)
            status = node.pop("status", {}) or {}
            metadata = node["metadata"]
            for key in ("resourceVersion", "uid", "creationTimestamp", "managedFields"):
                metadata.pop(key, None)
            node.setdefault("apiVersion", "v1")
            node.setdefault("kind", "Node")
            created = self.request("POST", "/api/v1/nodes", node)
            name = created["metadata"]["name"]
            resources = {"cpu": "32", "memory": "256Gi", "pods": "110"}
            capacity = dict(resources, **status.get("capacity", {}))
            allocatable = dict(resources, **status.get("allocatable", capacity))
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            ready = {"type": "Ready", "status": "True", "reason": "KubeletReady",
                     "message": "no kubelet: set by the test",
                     "lastHeartbeatTime": now, "lastTransitionTime": now}
            self.merge_patch(f"/api/v1/nodes/{name}/status",
                             {"status": {"capacity": capacity, "allocatable": allocatable,
                                         "conditions": [ready],
                                         "nodeInfo": status.get("nodeInfo", {})}})
            self.untaint_not_ready(name)
            names.append(name)
        return names

    def untaint_not_ready(self, name):
        """Takes off node.kubernetes.io/not-ready, which the API server's
        admission puts on a new Node (a kubelet's first Ready status would
        have the node lifecycle controller lift it)."""
        def untainted():
            node = self.get(f"/api/v1/nodes/{name}")
            taints = node.get("spec", {}).get("taints", [])
            kept = [t for t in taints if t.get("key") != "node.kubernetes.io/not-ready"]
            if kept != taints:
                # A PUT with the read resourceVersion: a writer in between
                # (409) sends us round again.
                self.request("PUT", f"/api/v1/nodes/{name}",
                             dict(node, spec=dict(node["spec"], taints=kept)))
            return True
        wait_until(untainted, f"the not-ready taint to come off {name}")

    def set_labels(self, name, labels):
        """Merges `labels` into the node's (a value None removes a label)."""
        return self.merge_patch(f"/api/v1/nodes/{name}", {"metadata": {"labels": labels}})

    def delete_node(self, name):
        return self.delete(f"/api/v1/nodes/{name}")

    # --- namespaces and pods ------------------------------------------------

    def namespace(self, name, labels=None):
        self.request("POST", "/api/v1/namespaces",
                     {"apiVersion": "v1", "kind": "Namespace",
                      "metadata": {"name": name, "labels": labels or {}}})
        wait_until(lambda: self.exists(f"/api/v1/namespaces/{name}/serviceaccounts/default"),
                   f"the default ServiceAccount of {name}")
        return name

    def pod(self, namespace, name):
        return self.get(f"/api/v1/namespaces/{namespace}/pods/{name}")

    def node_of(self, namespace, name, timeout=TIMEOUT):
        """The node the scheduler binds the pod to, once it has."""
        return wait_until(lambda: self.pod(namespace, name)["spec"].get("nodeName"),
                          f"the scheduler to bind {namespace}/{name}", timeout)

    def events(self, namespace, reason=None):
        items = self.get(f"/api/v1/namespaces/{namespace}/events")["items"]
        return [e for e in items if reason is None or e.get("reason") == reason]

    def audit_events(self):
        """The API server's audit log, one dict per event."""
        try:
            with open(self.audit_log, encoding="utf-8") as f:
                return [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []


# --- the API server, its CRDs and kubectl's output ----------------------------

CRDS = os.path.join(SOURCE, "build", "cluster", "crds")
# Exit status of scripts/cluster-crds.sh when a module cannot be downloaded.
NO_PROXY = 69


def kill_apiserver(cluster):
    """SIGKILLs kube-apiserver (no graceful close of its watches) and waits
    until it is gone, so that `cluster.sh up` starts it again."""
    pid = cluster.pid("kube-apiserver")
    os.kill(pid, signal.SIGKILL)

    def gone():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False
    wait_until(gone, f"kube-apiserver (PID {pid}) to exit and be reaped")


def cluster_crds():
    """scripts/cluster-crds.sh into build/cluster/crds. Where the Go module
    proxy cannot be reached the tests are skipped, except under CI=true."""
    out = subprocess.run([os.path.join(SOURCE, "scripts", "cluster-crds.sh"), CRDS],
                         capture_output=True, text=True, timeout=900, check=False)
    if out.returncode == NO_PROXY and os.environ.get("CI") != "true":
        raise unittest.SkipTest("the Go module proxy cannot be reached for the CRDs "
                                f"(scripts/cluster-crds.sh): {out.stderr.strip()[-300:]}")
    if out.returncode != 0:
        raise AssertionError(f"scripts/cluster-crds.sh failed:\n{out.stdout}\n{out.stderr}")
    sys.stderr.write(out.stdout)


def apply_crds(cluster, files):
    """Applies CRD files of build/cluster/crds and waits until the API server
    serves each (its Established condition)."""
    args = ["apply", "--server-side", "-o", "name"]
    for name in files:
        args += ["-f", os.path.join(CRDS, name)]
    names = cluster.kubectl(*args).stdout.split()
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", *names)
    return names


def items(text):
    """The objects of kubectl's JSON output: one object, a List, or (for
    several documents) objects one after another."""
    decoder = json.JSONDecoder()
    found, at = [], 0
    text = text.strip()
    while at < len(text):
        document, at = decoder.raw_decode(text, at)
        found += document["items"] if "items" in document else [document]
        while at < len(text) and text[at].isspace():
            at += 1
    return found


def identity(obj):
    return (obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


# --- fleets -------------------------------------------------------------------

def gfd_node(name, driver, cc, product, runtime=None, gpus=4, taint=True, labels=None):
    """A GPU node as GPU Feature Discovery labels one: driver version, CUDA
    runtime version (the driver's own, `runtime`), compute capability and
    product; `gpus` nvidia.com/gpu; tainted nvidia.com/gpu=present:NoSchedule
    as the GPU Operator's pools are."""
    d, c = driver.split("."), cc.split(".")
    node_labels = {
        "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/cuda.driver-version.full": driver,
        "nvidia.com/cuda.driver-version.major": d[0],
        "nvidia.com/cuda.driver-version.minor": d[1],
        "nvidia.com/cuda.driver-version.revision": d[2] if len(d) > 2 else "0",
        "nvidia.com/gpu.compute.major": c[0],
        "nvidia.com/gpu.compute.minor": c[1],
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.count": str(gpus),
    }
    if runtime:
        r = runtime.split(".")
        node_labels.update({"nvidia.com/cuda.runtime-version.full": runtime,
                            "nvidia.com/cuda.runtime-version.major": r[0],
                            "nvidia.com/cuda.runtime-version.minor": r[1]})
    node_labels.update(labels or {})
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": node_labels},
            "spec": {},
            "status": {"capacity": {"nvidia.com/gpu": str(gpus)},
                       "allocatable": {"nvidia.com/gpu": str(gpus)}}}
    if taint:
        node["spec"]["taints"] = [{"key": "nvidia.com/gpu", "value": "present",
                                   "effect": "NoSchedule"}]
    return node


def cpu_node(name):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                  "kubernetes.io/os": "linux"}},
            "spec": {}}


def pool(prefix, count, driver, cc, product, runtime=None, **kw):
    """`count` GPU nodes prefix-01 .. prefix-NN of one kind."""
    return [gfd_node(f"{prefix}-{i:02d}", driver, cc, product, runtime, **kw)
            for i in range(1, count + 1)]


def nodes_of_file(path):
    """The Node objects of a NodeList, a List or YAML documents of Nodes
    (examples/nodes.yaml's shape), read with kubectl so YAML needs no parser
    here."""
    out = subprocess.run([os.path.join(BIN, "kubectl"), "create", "--dry-run=client", "-o",
                          "json", "-f", path], capture_output=True, text=True, check=True,
                         timeout=60)
    document = json.loads(out.stdout)
    items = document.get("items", [document])
    return [item for item in items if item.get("kind") == "Node"]


# --- pods ---------------------------------------------------------------------

GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def gpu_pod(name, namespace="default", cuda="12.4.1", archs=None, gpus=1,
            image="registry.example.com/ml/train:v1", node_selector=None, labels=None):
    """A pod of one container that asks for `gpus` nvidia.com/gpu and says
    its CUDA version (and, given, its TORCH_CUDA_ARCH_LIST) in its env, as
    NVIDIA's and PyTorch's images do (`cuda` None: says nothing, as a pip
    image's pod does). It tolerates the GPU taint."""
    env = [] if cuda is None else [{"name": "CUDA_VERSION", "value": cuda}]
    if archs:
        env.append({"name": "TORCH_CUDA_ARCH_LIST", "value": archs})
    spec = {"containers": [{"name": "train", "image": image, "env": env,
                            "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
            "tolerations": [GPU_TOLERATION]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": spec}


def cpu_pod(name, namespace="default"):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "web", "image": "registry.example.com/web:v1"}]}}


# --- cudagate -----------------------------------------------------------------

class Cudagate:
    """cudagate installed as manifests/overlays/local says: the overlay
    applied server-side (namespace, ServiceAccount, RBAC, policy, webhook
    configurations pointing at loopback with the development CA), then
    `cudagate serve --kubeconfig` with a token of the cudagate ServiceAccount.
    The overlay's port 8443 is replaced by a free one so tests can run side
    by side."""

    NAMESPACE = "cudagate-system"

    def __init__(self, cluster, binary, directory, policy=None, extra_args=()):
        self.cluster = cluster
        self.binary = binary
        self.directory = directory
        self.policy = policy or self.base_policy_without_registry()
        self.extra_args = list(extra_args)
        self.certs = os.path.join(directory, "certs")
        self.port = free_port_block(1)
        self.log_path = os.path.join(directory, "cudagate.log")
        self.kubeconfig = os.path.join(directory, "cudagate.kubeconfig")
        self.proc = None

    def base_policy_without_registry(self):
        """manifests/base/policy.yaml with registry lookups off: the tests'
        images are in no registry, and their CUDA versions are in their env."""
        with open(os.path.join(SOURCE, "manifests", "base", "policy.yaml"), encoding="utf-8") as f:
            text = f.read()
        text, count = re.subn(r"(?m)^(registry:\n  )enabled: true", r"\1enabled: false", text)
        if count != 1:
            raise AssertionError("manifests/base/policy.yaml: no `registry: enabled: true`")
        path = os.path.join(self.directory, "policy.yaml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def manifests(self):
        """The local overlay as kustomize renders it (kubectl kustomize),
        its caBundle the CA of this test's certificates, on this test's
        port."""
        tree = os.path.join(self.directory, "manifests")
        shutil.rmtree(tree, ignore_errors=True)
        shutil.copytree(os.path.join(SOURCE, "manifests"), tree,
                        ignore=shutil.ignore_patterns("generated"))
        subprocess.run(["bash", os.path.join(SOURCE, "certs", "dev-certs.sh"), "--out",
                        self.certs, "--overlay", os.path.join(tree, "overlays", "local")],
                       check=True, capture_output=True, timeout=60)
        out = self.cluster.kubectl("kustomize", os.path.join(tree, "overlays", "local"))
        return out.stdout.replace("https://127.0.0.1:8443/", f"https://127.0.0.1:{self.port}/")

    def install(self, register_webhooks=True):
        """Applies the overlay; without `register_webhooks` the webhook
        configurations are left out (to be applied later with
        register())."""
        rendered = self.manifests()
        self.webhook_documents = [d for d in rendered.split("\n---\n")
                                  if re.search(r"^kind: (Mutating|Validating)WebhookConfiguration",
                                               d, re.M)]
        rest = "\n---\n".join(d for d in rendered.split("\n---\n")
                              if d not in self.webhook_documents)
        self.cluster.kubectl("apply", "--server-side", "-f", "-", stdin=rest)
        if register_webhooks:
            self.register()

    def register(self, kinds=("Mutating", "Validating")):
        docs = [d for d in self.webhook_documents
                if any(re.search(rf"^kind: {k}WebhookConfiguration", d, re.M) for k in kinds)]
        self.cluster.kubectl("apply", "--server-side", "-f", "-", stdin="\n---\n".join(docs))

    def unregister(self):
        for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
            self.cluster.kubectl("delete", kind, "cudagate", "--ignore-not-found")

    def command(self):
        return [self.binary, "serve", "--listen", f"127.0.0.1:{self.port}",
                "--tls-cert", os.path.join(self.certs, "server.crt"),
                "--tls-key", os.path.join(self.certs, "server.key"),
                "--kubeconfig", self.kubeconfig, "--config", self.policy,
                "--threads", "2", *self.extra_args]

    def start(self):
        if not os.path.exists(self.kubeconfig):
            self.cluster.serviceaccount_kubeconfig(self.NAMESPACE, "cudagate", self.kubeconfig)
        log = open(self.log_path, "ab")  # noqa: SIM115 - the process owns it
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=log)
        log.close()
        wait_until(self.ready, "cudagate to be ready")

    def stop(self):
        if self.proc is None:
            return 0
        self.proc.terminate()
        try:
            status = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            status = self.proc.wait()
        self.proc = None
        return status

    def _get(self, path):
        ctx = ssl.create_default_context(cafile=os.path.join(self.certs, "ca.crt"))
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=ctx, timeout=10)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            return response.status, response.read().decode()
        finally:
            conn.close()

    def ready(self):
        if self.proc is not None and self.proc.poll() is not None:
            raise Fatal(f"cudagate exited with {self.proc.returncode}:\n"
                                 + self.log_tail())
        try:
            status, body = self._get("/readyz")
        except OSError:
            return False
        return status == 200 and body.strip() == "ok"

    def metrics(self):
        return self._get("/metrics")[1]

    def metric(self, name, **labels):
        """The sum of the samples of `name` whose labels include `labels`."""
        total = 0.0
        for line in self.metrics().splitlines():
            m = re.match(r"^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)", line)
            if not m or m.group(1) != name:
                continue
            sample = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
            if all(sample.get(k) == v for k, v in labels.items()):
                total += float(m.group(3))
        return total

    def log_tail(self, size=4000):
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return f.read()[-size:]
        except OSError:
            return ""


class ClusterTestCase(unittest.TestCase):
    """A TestCase class with a control plane of its own for all its tests
    (up in setUpClass, down in tearDownClass) and the cudagate binary the
    command line named (harness.BINARY)."""

    binary = None

    @classmethod
    def setUpClass(cls):
        import harness  # noqa: PLC0415 - set by the test script's main
        cls.binary = harness.BINARY
        cls.tmp = tempfile.mkdtemp(prefix="cudagate-cluster-")
        cls.cluster = Cluster(os.path.join(cls.tmp, "cluster"))
        # Class cleanups run even when a setUpClass fails after this line,
        # so no control plane outlives its test.
        cls.addClassCleanup(cls._remove_cluster)
        cls.cluster.up()

    @classmethod
    def _remove_cluster(cls):
        cls.cluster.down()
        if os.environ.get("CUDAGATE_KEEP_CLUSTER_DIR") is None:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def cudagate(cls, name="cudagate", **kw):
        """A Cudagate in a folder of its own, stopped (if running) before the
        control plane goes down."""
        directory = os.path.join(cls.tmp, name)
        os.makedirs(directory, exist_ok=True)
        gate = Cudagate(cls.cluster, cls.binary, directory, **kw)
        cls.addClassCleanup(gate.stop)
        return gate


def b64(path):
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()

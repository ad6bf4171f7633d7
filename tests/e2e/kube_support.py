"""What the tests of `cudagate serve --kubeconfig` share: the EKS fleet of
tests/fixtures/nodes/fleet.json as an API server holds it, a driver rollout
relabelled as GPU Feature Discovery does, kubeconfigs for the API server
double, `Webhook` (one `cudagate serve --kubeconfig` process),
`KubeTestCase` (a fresh double holding the fleet, per test), and the rows of
`cudagate api-calls` beside the calls the double saw.

Used by kube_watch_test.py and the other end-to-end tests that run cudagate
against the double (cluster audits, DRA, compat-db reloads, explain,
manifests) and by the bench scripts. BINARY and SOURCE are set by
harness.share_paths.
"""

import copy
import json
import os
import subprocess
import uuid

from apiserver_double import rbac_call, realistic_node
from double_case import DoubleTestCase
from harness import free_port
from server_support import (client_context, file_tail, metric_value, poll_until, post, review,
                            stop_process)

BINARY = None
SOURCE = None

TIMEOUT = 60  # an instrumented (sanitizer) build starts slowly

T4_NODE = "ip-10-0-2-21.ec2.internal"

# Needs CUDA 12.4, pinned to one T4 node (driver 535.129.03: CUDA 12.2).
CUDA124_ON_T4 = {
    "containers": [{
        "name": "train",
        "image": "registry.example.com/ml/train:v1",
        "env": [{"name": "CUDA_VERSION", "value": "12.4.1"}],
        "resources": {"limits": {"nvidia.com/gpu": "1"}},
    }],
    "nodeSelector": {"kubernetes.io/hostname": T4_NODE},
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
}


def fleet():
    with open(os.path.join(SOURCE, "tests", "fixtures", "nodes", "fleet.json")) as f:
        return [realistic_node(n) for n in json.load(f)["items"]]


def upgraded(node, driver, runtime):
    """`node` after a driver rollout, relabelled as GPU Feature Discovery does."""
    node = copy.deepcopy(node)
    labels = node["metadata"]["labels"]
    major, minor, rev = driver.split(".")
    rt_major, rt_minor = runtime.split(".")
    labels.update({
        "nvidia.com/cuda.driver-version.full": driver,
        "nvidia.com/cuda.driver-version.major": major,
        "nvidia.com/cuda.driver-version.minor": minor,
        "nvidia.com/cuda.driver-version.revision": rev,
        "nvidia.com/cuda.driver.major": major,
        "nvidia.com/cuda.driver.minor": minor,
        "nvidia.com/cuda.driver.rev": rev,
        "nvidia.com/cuda.runtime-version.full": runtime,
        "nvidia.com/cuda.runtime-version.major": rt_major,
        "nvidia.com/cuda.runtime-version.minor": rt_minor,
        "nvidia.com/cuda.runtime.major": rt_major,
        "nvidia.com/cuda.runtime.minor": rt_minor,
    })
    return node


def by_name(nodes, name):
    return next(n for n in nodes if n["metadata"]["name"] == name)


def write(path, text, mode=0o600):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def kubeconfig(directory, server, user, name="kubeconfig"):
    """A kubeconfig whose current context is `server` with the dev CA and `user`."""
    lines = [
        "apiVersion: v1",
        "kind: Config",
        "preferences: {}",
        "current-context: test",
        "contexts:",
        "- name: other",
        "  context: {cluster: nowhere, user: nobody}",
        "- name: test",
        "  context:",
        "    cluster: double",
        "    user: cudagate",
        "    namespace: cudagate-system",
        "clusters:",
        "- name: nowhere",
        "  cluster: {server: 'https://192.0.2.1:6443'}",
        "- name: double",
        "  cluster:",
        f"    server: {server}",
        "    certificate-authority: certs/ca.crt",
        "users:",
        "- name: nobody",
        "  user: {token: wrong}",
        "- name: cudagate",
        "  user:",
    ] + ["    " + line for line in user]
    return write(os.path.join(directory, name), "\n".join(lines) + "\n")


# Needs CUDA 12.4, tolerates every taint: its candidates are the GPU nodes.
CUDA124_ANYWHERE = {
    "containers": [{
        "name": "train",
        "image": "registry.example.com/ml/train:v1",
        "env": [{"name": "CUDA_VERSION", "value": "12.4.1"}],
        "resources": {"limits": {"nvidia.com/gpu": "1"}},
    }],
    "tolerations": [{"operator": "Exists"}],
}


def json_patch(document, patch):
    """RFC 6902 add and replace on object members, as a pin uses them."""
    document = copy.deepcopy(document)
    for op in patch:
        *parents, last = [p.replace("~1", "/").replace("~0", "~")
                          for p in op["path"].split("/")[1:]]
        target = document
        for key in parents:
            target = target[key]
        if op["op"] not in ("add", "replace"):
            raise AssertionError(f"unexpected operation {op}")
        target[last] = op["value"]
    return document


class Webhook:
    """One `cudagate serve --kubeconfig` process."""

    def __init__(self, workdir, certs, config_path, log_level="debug", threads=2):
        self.log_level = log_level
        self.threads = threads
        self.workdir = workdir
        self.certs = certs
        self.config_path = config_path
        self.log_path = os.path.join(workdir, f"cudagate-{uuid.uuid4().hex[:8]}.log")
        self.proc = None
        self.port = None

    def command(self):
        return [BINARY, "serve", "--listen", f"127.0.0.1:{self.port}",
                "--tls-cert", os.path.join(self.certs, "server.crt"),
                "--tls-key", os.path.join(self.certs, "server.key"),
                "--kubeconfig", self.config_path, "--threads", str(self.threads),
                "--log-format", "json", "--log-level", self.log_level]

    def environment(self):
        env = dict(os.environ)
        env.pop("KUBECONFIG", None)
        return env

    def start(self, wait_ready=True):
        self.port = free_port()
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=log,
                                     env=self.environment())
        log.close()
        poll_until(self.serving, TIMEOUT, "the webhook to answer /healthz")
        if wait_ready:
            self.wait_ready()
        return self

    def connect(self):
        import http.client
        return http.client.HTTPSConnection("127.0.0.1", self.port,
                                           context=client_context(self.certs), timeout=10)

    def get(self, path):
        if self.proc.poll() is not None:
            raise AssertionError(f"cudagate exited with {self.proc.returncode}:\n"
                                 + self.log_tail())
        conn = self.connect()
        try:
            conn.request("GET", path)
            res = conn.getresponse()
            return res.status, res.read().decode()
        finally:
            conn.close()

    def serving(self):
        return self.get("/healthz")[0] == 200

    def ready(self):
        return self.get("/readyz")[0] == 200

    def wait_ready(self):
        try:
            poll_until(self.ready, TIMEOUT, "/readyz to answer 200")
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.log_tail()}") from None

    def metric(self, name, **labels):
        return metric_value(self.get("/metrics")[1], name, **labels)

    def answer(self, pod_spec, path="/validate"):
        uid, body = review(pod_spec, namespace="ml", name="train")
        conn = self.connect()
        try:
            res, data = post(conn, path, body)
        finally:
            conn.close()
        if res.status != 200:
            raise AssertionError(f"{path} answered {res.status}: {data!r}")
        return json.loads(data)["response"]

    def verdict(self, pod_spec):
        return self.answer(pod_spec).get("auditAnnotations", {}).get("verdict")

    def wait_verdict(self, pod_spec, expected, what):
        poll_until(lambda: self.verdict(pod_spec) == expected, TIMEOUT, what)

    def stop(self):
        return stop_process(self.proc)

    def log_tail(self, lines=40):
        return file_tail(self.log_path, lines)


class KubeTestCase(DoubleTestCase):
    """A fresh double holding the fleet, and helpers to start cudagate."""

    prefix = "cudagate-kube-"
    page_size = 4
    tokens = ("token-one",)
    client_ca = False

    def double_options(self):
        return dict(tokens=self.tokens, page_size=self.page_size,
                    client_ca=os.path.join(self.certs, "client-ca.crt") if self.client_ca else None)

    def fill(self):
        self.nodes = fleet()
        for node in self.nodes:
            self.api.put(node)

    def webhook(self, user, wait_ready=True):
        config = kubeconfig(self.dir, self.api.url, user)
        webhook = Webhook(self.dir, self.certs, config)
        self.webhooks.append(webhook)
        return webhook.start(wait_ready=wait_ready)

    def token_user(self, token="token-one"):
        path = write(os.path.join(self.dir, "token"), token + "\n")
        return ["tokenFile: token"], path

    def watches(self):
        """The Node watches (the ResourceSlice and claim watches are the DRA tests')."""
        return self.api.requests_where(
            lambda r: r["path"] == "/api/v1/nodes" and r["query"].get("watch") == "1")

    def lists(self):
        return self.api.requests_where(
            lambda r: r["path"] == "/api/v1/nodes" and "watch" not in r["query"])


def api_calls():
    out = subprocess.run([BINARY, "api-calls"], capture_output=True, text=True, timeout=60,
                         check=True)
    return json.loads(out.stdout)


def seen_calls(api):
    return {rbac_call(r) for r in api.requests_where(lambda r: True)}

#!/usr/bin/env python3
"""Failure policy and certificate rotation through a real API server:
kube-apiserver v1.37 calls cudagate, installed from manifests/overlays/local,
while cudagate is stopped and started again, and while its serving
certificate, then its CA, is replaced under a steady stream of pod creates.

FailurePolicyTest: with cudagate down the API server itself refuses GPU pods
in enforce namespaces (failurePolicy Fail), creates pods without a GPU (the
matchConditions keep them from the webhook) and admits GPU pods in warn
namespaces (failurePolicy Ignore); without the webhook configurations the
refused pod is created; a new cudagate on the same port and certificates
answers again, and a ReplicaSet whose pods were refused (FailedCreate) gets
them once it is back.

RotationTest: a thread creates GPU pods one after the other while the server
certificate is re-issued under the same CA (certs/dev-certs.sh --renew), and
while the CA is replaced as docs/install.md ("Certificate rotation") says (the new CA
trusted beside the old, the new certificate served, the old CA dropped). No
create may fail; cudagate must serve the new certificate; a certificate of
the dropped CA is then refused.

    python3 failure_test.py --binary build/release/cudagate --source .
"""

import base64
import hashlib
import http.client
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))

import harness  # noqa: E402
import kube_cluster as kc  # noqa: E402

T4 = "Tesla-T4"
A100 = "NVIDIA-A100-SXM4-80GB"
DEV_CERTS = os.path.join(kc.SOURCE, "certs", "dev-certs.sh")
ADMISSION = "/apis/admissionregistration.k8s.io/v1"


# --- what these tests add to kube_cluster ----------------------------------------

class AdmissionSync:
    """Waits until the API server's admission uses every webhook
    configuration written before the call.

    The dispatchers read the configurations from an informer
    (k8s.io/apiserver/pkg/admission/configuration/mutating_webhook_manager.go
    and validating_webhook_manager.go: a lister, re-read after each event),
    and one informer delivers the events of its kind in the order they were
    written. So each call rewrites a probe configuration of each kind, one
    webhook named after the call that fails closed on a port nothing listens
    on, for pods of a probe namespace only; once a create there is refused
    naming this call's webhook, every earlier change of that kind is in use
    too."""

    NAME = "zz-admission-sync"

    def __init__(self, cluster):
        self.cluster = cluster
        self.port = kc.free_port_block(1)
        self.generation = 0
        self.namespaces = {"Mutating": "sync-mutating", "Validating": "sync-validating"}
        for namespace in self.namespaces.values():
            cluster.namespace(namespace)

    def webhook(self, kind):
        hook = {"name": f"g{self.generation}.{kind.lower()}.sync.cudagate.test",
                "admissionReviewVersions": ["v1"], "sideEffects": "None",
                "failurePolicy": "Fail", "timeoutSeconds": 5,
                "clientConfig": {"url": f"https://127.0.0.1:{self.port}/sync"},
                "namespaceSelector": {"matchLabels": {
                    "kubernetes.io/metadata.name": self.namespaces[kind]}},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                           "resources": ["pods"], "scope": "Namespaced"}]}
        if kind == "Mutating":
            hook["reinvocationPolicy"] = "Never"
        return hook

    def __call__(self):
        self.generation += 1
        for kind in self.namespaces:
            path = f"{ADMISSION}/{kind.lower()}webhookconfigurations"
            if self.generation == 1:
                self.cluster.request("POST", path, {
                    "apiVersion": "admissionregistration.k8s.io/v1",
                    "kind": f"{kind}WebhookConfiguration",
                    "metadata": {"name": self.NAME}, "webhooks": [self.webhook(kind)]})
            else:
                self.cluster.merge_patch(f"{path}/{self.NAME}",
                                         {"webhooks": [self.webhook(kind)]})
        for kind, namespace in self.namespaces.items():
            name = self.webhook(kind)["name"]
            kc.wait_until(lambda namespace=namespace, name=name: self.refused_by(namespace, name),
                          f"the API server's admission to call {name}")

    def refused_by(self, namespace, name):
        try:
            self.cluster.request("POST", f"/api/v1/namespaces/{namespace}/pods",
                                 kc.cpu_pod("probe", namespace), query={"dryRun": "All"})
        except kc.ApiError as e:
            return f'failed calling webhook "{name}"' in json.loads(e.body).get("message", "")
        return False


class CreateStream:
    """A thread that creates GPU pods through the API server one after the
    other, each `interval` seconds after the last one's answer, until
    stopped; it keeps every created pod and every failure with its error."""

    def __init__(self, cluster, namespace, prefix, make_pod, interval=0.1):
        self.cluster = cluster
        self.namespace = namespace
        self.prefix = prefix
        self.make_pod = make_pod
        self.interval = interval
        self.created = []
        self.failures = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, name=f"creates-{prefix}", daemon=True)
        self.lock = threading.Lock()

    def run(self):
        index = 0
        while not self.stopping.is_set():
            name = f"{self.prefix}-{index:04d}"
            index += 1
            started = time.monotonic()
            try:
                pod = self.cluster.request("POST", f"/api/v1/namespaces/{self.namespace}/pods",
                                           self.make_pod(name, self.namespace))
                with self.lock:
                    self.created.append(pod)
            except Exception as e:  # noqa: BLE001 - every failure is the finding
                with self.lock:
                    self.failures.append((name, round(time.monotonic() - started, 3), str(e)))
            self.stopping.wait(self.interval)

    def count(self):
        with self.lock:
            return len(self.created)

    def more(self, extra, what):
        """Waits until `extra` more pods than now have been created."""
        target = self.count() + extra
        kc.wait_until(lambda: self.count() >= target or self.failures,
                      f"{extra} more creates {what}", timeout=120)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.thread.join(timeout=120)


def served_certificate(port):
    """The DER of the certificate a new TLS handshake with 127.0.0.1:port
    gets (unverified: the caller compares it)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            ctx.wrap_socket(raw) as tls:
        return tls.getpeercert(binary_form=True)


def verifies_with(port, ca_file):
    """True when a handshake with 127.0.0.1:port verifies against ca_file,
    the address checked against the certificate's names as the API server
    checks a webhook URL's host."""
    ctx = ssl.create_default_context(cafile=ca_file)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
                ctx.wrap_socket(raw, server_hostname="127.0.0.1"):
            return True
    except ssl.SSLCertVerificationError:
        return False


def pem_certificates(text):
    return re.findall(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", text, re.S)


def read(path):
    with open(path, encoding="ascii") as f:
        return f.read()


def fingerprint_of_file(path):
    return hashlib.sha256(ssl.PEM_cert_to_DER_cert(pem_certificates(read(path))[0])).hexdigest()


def metric(port, ca_file, name, **labels):
    """The sum of the samples of `name` (labels including `labels`) on
    cudagate's /metrics, its certificate verified against ca_file (the CA of
    the moment during a CA rotation)."""
    ctx = ssl.create_default_context(cafile=ca_file)
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
    try:
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
    finally:
        conn.close()
    total = 0.0
    for line in text.splitlines():
        m = re.match(r"^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)", line)
        if not m or m.group(1) != name:
            continue
        sample = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        if all(sample.get(k) == v for k, v in labels.items()):
            total += float(m.group(3))
    return total


def serial_of_file(path):
    out = subprocess.run(["openssl", "x509", "-in", path, "-noout", "-serial"],
                         capture_output=True, text=True, check=True, timeout=30)
    return out.stdout.strip().split("=", 1)[1].upper()


def dev_certs(*args):
    out = subprocess.run(["bash", DEV_CERTS, *args], capture_output=True, text=True,
                         timeout=120, check=False)
    if out.returncode != 0:
        raise AssertionError(f"dev-certs.sh {' '.join(args)}: {out.stderr}")
    return out.stderr


def replace_file(source, target):
    """Puts a copy of source at target by a rename, as a Secret volume's
    update or dev-certs.sh replaces a file: a reader sees the old file or the
    new one, never a half-written one."""
    temporary = f"{target}.new"
    shutil.copyfile(source, temporary)
    os.chmod(temporary, os.stat(source).st_mode & 0o777)
    os.replace(temporary, target)


def serve_pair(directory, certs):
    """Makes `certs` (the files cudagate serves) hold directory's server
    key and certificate, the key first, as dev-certs.sh installs them."""
    replace_file(os.path.join(directory, "server.key"), os.path.join(certs, "server.key"))
    replace_file(os.path.join(directory, "server.crt"), os.path.join(certs, "server.crt"))


# --- failure policy ------------------------------------------------------------

@kc.needs_cluster
class FailurePolicyTest(kc.ClusterTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # Eight GPUs on the A100: room for every pod the tests bind there.
        cls.cluster.add_nodes([kc.gfd_node("gpu-t4-1", "535.129.03", "7.5", T4, "12.2"),
                               kc.gfd_node("gpu-a100-1", "550.54.15", "8.0", A100, "12.4",
                                           gpus=8)])
        # Unlabeled: the policy's mode (enforce) through the default.* webhooks.
        cls.cluster.namespace("defaulted")
        cls.cluster.namespace("enforced", {"cudagate.io/mode": "enforce"})
        cls.cluster.namespace("warned", {"cudagate.io/mode": "warn"})
        cls.sync = AdmissionSync(cls.cluster)
        cls.gate = cls.cudagate()
        cls.gate.install()
        cls.gate.start()
        cls.sync()

    def create(self, pod):
        return self.cluster.kubectl("create", "-f", "-", stdin=pod, check=False)

    def down(self):
        self.assertEqual(self.gate.stop(), 0, self.gate.log_tail())
        with self.assertRaises(OSError):
            socket.create_connection(("127.0.0.1", self.gate.port), timeout=10).close()

    def up(self):
        if self.gate.proc is None:
            self.gate.start()

    def assert_refused_by_api_server(self, created, webhook):
        self.assertNotEqual(created.returncode, 0, created.stdout)
        # k8s.io/apiserver/pkg/admission/plugin/webhook/mutating/dispatcher.go:
        # a call error of a webhook without failurePolicy Ignore is returned
        # as apierrors.NewInternalError; util/webhook/error.go words it
        # "failed calling webhook %q: %v". The mutating webhook is called
        # first, so the validating one is never reached.
        self.assertIn("Internal error occurred", created.stderr)
        self.assertIn(f'failed calling webhook "{webhook}"', created.stderr)
        self.assertIn(f"127.0.0.1:{self.gate.port}", created.stderr)
        self.assertIn("connection refused", created.stderr)

    def test_gpu_pod_refused_by_the_api_server_while_cudagate_is_down(self):
        self.down()
        for namespace, webhook in (("defaulted", "default.mutate.cudagate.io"),
                                   ("enforced", "enforce.mutate.cudagate.io")):
            with self.subTest(namespace=namespace):
                # A pod cudagate would admit: the refusal is the failure
                # policy's, not a verdict.
                created = self.create(kc.gpu_pod("train-down", namespace, node_selector={
                    "nvidia.com/gpu.product": A100}))
                self.assert_refused_by_api_server(created, webhook)
                print(f"\n  {namespace}: {created.stderr.strip()}", file=sys.stderr)
                self.assertFalse(self.cluster.exists(
                    f"/api/v1/namespaces/{namespace}/pods/train-down"))

    def test_pod_without_a_gpu_created_while_cudagate_is_down(self):
        self.down()
        for namespace in ("defaulted", "enforced"):
            with self.subTest(namespace=namespace):
                created = self.create(kc.cpu_pod("web-down", namespace))
                self.assertEqual(created.returncode, 0, created.stderr)
                self.assertTrue(self.cluster.exists(
                    f"/api/v1/namespaces/{namespace}/pods/web-down"))
                # In the same namespace at the same time a GPU pod is
                # refused: the matchConditions (asks-for-a-gpu) are what
                # kept the webhook from being called.
                refused = self.create(kc.gpu_pod("train-beside-web", namespace))
                self.assertNotEqual(refused.returncode, 0, refused.stdout)
                self.assertIn("failed calling webhook", refused.stderr)

    def test_warn_namespace_admits_gpu_pod_while_cudagate_is_down(self):
        self.down()
        # One cudagate would warn about (CUDA 12.4 on the T4's 12.2).
        created = self.create(kc.gpu_pod("train-t4", "warned", node_selector={
            "nvidia.com/gpu.product": T4}))
        self.assertEqual(created.returncode, 0, created.stderr)
        # No answer, so no warning: the pod went in unchecked.
        self.assertNotIn("Warning: ", created.stderr)
        self.assertEqual(self.cluster.node_of("warned", "train-t4"), "gpu-t4-1")

        # failurePolicy Ignore: the dispatchers (mutating/dispatcher.go,
        # validating/dispatcher.go) admit and record each webhook that failed
        # open as an audit annotation failed-open.<mutation|validating>.
        # webhook.admission.k8s.io/round_R_index_I = the webhook's name.
        def annotations():
            for event in self.cluster.audit_events():
                ref = event.get("objectRef", {})
                if (event.get("verb") == "create" and ref.get("resource") == "pods"
                        and ref.get("namespace") == "warned" and ref.get("name") == "train-t4"
                        and event.get("stage") == "ResponseComplete"):
                    return event.get("annotations", {})
            return None
        found = kc.wait_until(annotations, "the create's audit event")
        failed_open = {key.split("/")[0]: value for key, value in found.items()
                       if key.startswith("failed-open.")}
        self.assertEqual(failed_open, {
            "failed-open.mutation.webhook.admission.k8s.io": "warn.mutate.cudagate.io",
            "failed-open.validating.webhook.admission.k8s.io": "warn.validate.cudagate.io"},
            found)

    def test_without_the_webhooks_the_refused_pod_is_created(self):
        self.down()
        pod = kc.gpu_pod("train-unregistered", "defaulted",
                         node_selector={"nvidia.com/gpu.product": A100})
        self.assert_refused_by_api_server(self.create(pod), "default.mutate.cudagate.io")
        self.gate.unregister()
        try:
            self.sync()
            created = self.create(pod)
            self.assertEqual(created.returncode, 0, created.stderr)
            self.assertEqual(self.cluster.node_of("defaulted", "train-unregistered"),
                             "gpu-a100-1")
        finally:
            self.gate.register()
            self.sync()

    def test_controller_creates_its_pods_once_cudagate_is_back(self):
        self.up()
        template = kc.gpu_pod("unused", "enforced", cuda="12.4.1", labels={"app": "trainer"})
        replicaset = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                      "metadata": {"name": "trainer", "namespace": "enforced"},
                      "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "trainer"}},
                               "template": {"metadata": {"labels": {"app": "trainer"}},
                                            "spec": template["spec"]}}}
        # The ReplicaSet is created while cudagate answers (its own create
        # and update go through the webhook too); its scale subresource does
        # not match the webhooks' rules (replicasets, not replicasets/scale).
        self.cluster.request("POST", "/apis/apps/v1/namespaces/enforced/replicasets", replicaset)
        self.down()
        self.cluster.merge_patch("/apis/apps/v1/namespaces/enforced/replicasets/trainer/scale",
                                 {"spec": {"replicas": 2}})

        # kube-controller-manager's ReplicaSet controller
        # (pkg/controller/replicaset/replica_set.go, manageReplicas) creates
        # the pods through the API server, which refuses them; RealPodControl
        # (pkg/controller/controller_utils.go) records FailedCreate "Error
        # creating: ..." and the sync is retried with backoff (AddRateLimited).
        def refused():
            return [e for e in self.cluster.events("enforced", "FailedCreate")
                    if e["involvedObject"].get("name") == "trainer"
                    and 'failed calling webhook "enforce.mutate.cudagate.io"' in e["message"]]
        events = kc.wait_until(refused, "the ReplicaSet controller's FailedCreate event")
        print(f"\n  {events[0]['message']}", file=sys.stderr)
        self.assertEqual(self.trainer_pods(), [])

        restarted = time.monotonic()
        self.gate.start()
        pods = kc.wait_until(lambda: len(self.trainer_pods()) == 2 and self.trainer_pods(),
                             "the ReplicaSet's pods once cudagate is back", timeout=180)
        print(f"  pods created {time.monotonic() - restarted:.1f}s after cudagate was started",
              file=sys.stderr)
        # Admitted by cudagate, not past it: its mutating webhook pinned each
        # pod to the node that can run it (the T4 cannot run CUDA 12.4).
        for pod in pods:
            self.assertIn("cudagate.io/pinned", pod["metadata"].get("annotations", {}),
                          pod["metadata"]["name"])
            self.assertEqual(self.cluster.node_of("enforced", pod["metadata"]["name"]),
                             "gpu-a100-1")

    def trainer_pods(self):
        return self.cluster.get("/api/v1/namespaces/enforced/pods?labelSelector=app%3Dtrainer")[
            "items"]

    def test_restarted_cudagate_answers_again(self):
        self.down()
        refused = self.create(kc.gpu_pod("train-restart", "defaulted", node_selector={
            "nvidia.com/gpu.product": A100}))
        self.assert_refused_by_api_server(refused, "default.mutate.cudagate.io")
        # A new process on the same port with the same certificates: the
        # webhook configurations are untouched.
        self.gate.start()
        for namespace, webhook in (("defaulted", "default.mutate.cudagate.io"),
                                   ("enforced", "enforce.mutate.cudagate.io")):
            with self.subTest(namespace=namespace):
                denied = self.create(kc.gpu_pod("train-t4-restart", namespace, node_selector={
                    "nvidia.com/gpu.product": T4}))
                self.assertNotEqual(denied.returncode, 0, denied.stdout)
                self.assertIn(f'admission webhook "{webhook}" denied the request',
                              denied.stderr)
                self.assertIn("driver 535.129.03 supports up to CUDA 12.2 (gpu-t4-1)",
                              denied.stderr)
                created = self.create(kc.gpu_pod("train-restart", namespace, node_selector={
                    "nvidia.com/gpu.product": A100}))
                self.assertEqual(created.returncode, 0, created.stderr)
                self.assertEqual(self.cluster.node_of(namespace, "train-restart"),
                                 "gpu-a100-1")


# --- certificate rotation ------------------------------------------------------

def stream_pod(name, namespace):
    # CUDA 12.4: the A100 (driver 550) runs it, the T4 (driver 535) does not,
    # so cudagate's mutating webhook pins it and says so in an annotation.
    return kc.gpu_pod(name, namespace, cuda="12.4.1")


@kc.needs_cluster
class RotationTest(kc.ClusterTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.cluster.add_nodes([kc.gfd_node("gpu-t4-1", "535.129.03", "7.5", T4, "12.2"),
                               kc.gfd_node("gpu-a100-1", "550.54.15", "8.0", A100, "12.4")])
        cls.cluster.namespace("stream", {"cudagate.io/mode": "enforce"})
        cls.sync = AdmissionSync(cls.cluster)
        cls.gate = cls.cudagate()
        cls.gate.install()
        cls.gate.start()
        cls.sync()

    @classmethod
    def tearDownClass(cls):
        status = cls.gate.stop()
        if status != 0:
            raise AssertionError(f"cudagate exited with {status}:\n{cls.gate.log_tail()}")

    def served_fingerprint(self):
        return hashlib.sha256(served_certificate(self.gate.port)).hexdigest()

    def apply_webhooks(self, certs, also_trust=None):
        """docs/install.md's `dev-certs.sh --out CERTS --overlay ... [--also-trust CA]`
        and `kubectl apply`, for the local overlay and this test's port; the
        webhook configurations only (the rest does not carry the CA)."""
        overlay = os.path.join(self.gate.directory, "manifests", "overlays", "local")
        dev_certs("--out", certs, "--overlay", overlay,
                  *(["--also-trust", also_trust] if also_trust else []))
        rendered = self.cluster.kubectl("kustomize", overlay).stdout.replace(
            "https://127.0.0.1:8443/", f"https://127.0.0.1:{self.gate.port}/")
        documents = [d for d in rendered.split("\n---\n")
                     if re.search(r"^kind: (Mutating|Validating)WebhookConfiguration", d, re.M)]
        self.assertEqual(len(documents), 2)
        self.cluster.kubectl("apply", "--server-side", "-f", "-", stdin="\n---\n".join(documents))

    def assert_ca_bundles(self, *ca_files):
        want = sorted(pem_certificates("".join(read(f) for f in ca_files)))
        for kind in ("mutating", "validating"):
            configuration = self.cluster.get(f"{ADMISSION}/{kind}webhookconfigurations/cudagate")
            for hook in configuration["webhooks"]:
                bundle = base64.b64decode(hook["clientConfig"]["caBundle"]).decode()
                self.assertEqual(sorted(pem_certificates(bundle)), want, hook["name"])

    def assert_stream_clean(self, stream, admissions_before, ca_file):
        for name, seconds, error in stream.failures:
            print(f"  failed: {name} after {seconds}s: {error}", file=sys.stderr)
        self.assertEqual(stream.failures, [])
        self.assertGreater(stream.count(), 0)
        # Each create went through cudagate: its mutating webhook's answer
        # is on the pod, and cudagate counted a mutating and a validating
        # review for each (more where the API server retried a call).
        unpinned = [p["metadata"]["name"] for p in stream.created
                    if "cudagate.io/pinned" not in p["metadata"].get("annotations", {})]
        self.assertEqual(unpinned, [])
        admissions = (metric(self.gate.port, ca_file, "cudagate_admission_requests_total")
                      - admissions_before)
        self.assertGreaterEqual(admissions, 2 * stream.count())

    def test_server_certificate_renewed_without_a_failed_create(self):
        certs = self.gate.certs
        old = self.served_fingerprint()
        self.assertEqual(old, fingerprint_of_file(os.path.join(certs, "server.crt")))
        reloads = self.gate.metric("cudagate_file_reloads_total", file="certificate",
                                   result="success")
        admissions = self.gate.metric("cudagate_admission_requests_total")
        with CreateStream(self.cluster, "stream", "renew", stream_pod) as stream:
            stream.more(5, "before the renewal")
            renewed = time.monotonic()
            dev_certs("--out", certs, "--renew")
            new = fingerprint_of_file(os.path.join(certs, "server.crt"))
            self.assertNotEqual(new, old)
            kc.wait_until(lambda: self.served_fingerprint() == new,
                          "cudagate to serve the renewed certificate")
            # docs/install.md: the files are re-read (server/file_watch.h: polled every second,
            # read once they stay unchanged for one more poll).
            print(f"\n  renewed certificate served after {time.monotonic() - renewed:.1f}s",
                  file=sys.stderr)
            stream.more(5, "after the renewal")
        print(f"  {stream.count()} creates, {len(stream.failures)} failed", file=sys.stderr)
        self.assert_stream_clean(stream, admissions, os.path.join(certs, "ca.crt"))
        self.assertTrue(verifies_with(self.gate.port, os.path.join(certs, "ca.crt")))
        self.assertGreater(self.gate.metric("cudagate_file_reloads_total", file="certificate",
                                            result="success"), reloads)
        serial = serial_of_file(os.path.join(certs, "server.crt"))
        with open(self.gate.log_path, encoding="utf-8", errors="replace") as f:
            self.assertIn(f"(serial {serial}) reloaded", f.read())

        # The API server may have kept the connections it opened before the
        # renewal (cudagate gives a new certificate to new handshakes only,
        # server/cert_store.h). A cudagate started afresh leaves it none, so
        # this create is the API server verifying the renewed certificate.
        self.assertEqual(self.gate.stop(), 0, self.gate.log_tail())
        self.gate.start()
        self.assertEqual(self.served_fingerprint(), new)
        created = self.cluster.kubectl("create", "-f", "-",
                                       stdin=stream_pod("renewed", "stream"), check=False)
        self.assertEqual(created.returncode, 0, created.stderr)

    def test_ca_replaced_without_a_failed_create(self):
        certs = self.gate.certs
        following = os.path.join(self.gate.directory, "certs-next")
        retired = os.path.join(self.gate.directory, "certs-retired")
        shutil.rmtree(following, ignore_errors=True)
        shutil.rmtree(retired, ignore_errors=True)
        shutil.copytree(certs, retired)
        old_ca = os.path.join(retired, "ca.crt")
        new_ca = os.path.join(following, "ca.crt")
        admissions = self.gate.metric("cudagate_admission_requests_total")
        with CreateStream(self.cluster, "stream", "ca", stream_pod) as stream:
            stream.more(5, "before the CA rotation")
            # docs/install.md "Certificate rotation", step by step. A new CA and its
            # server certificate, not served yet.
            dev_certs("--out", following)
            self.assertNotEqual(read(new_ca), read(old_ca))
            # The new CA trusted beside the old one.
            self.apply_webhooks(certs, also_trust=new_ca)
            self.assert_ca_bundles(old_ca, new_ca)
            self.sync()
            stream.more(5, "with both CAs trusted")
            # The new CA's certificate in the caBundle and served (the
            # Secret's files replaced), the old CA still trusted.
            self.apply_webhooks(following, also_trust=old_ca)
            self.assert_ca_bundles(old_ca, new_ca)
            self.sync()
            serve_pair(following, certs)
            new = fingerprint_of_file(os.path.join(following, "server.crt"))
            kc.wait_until(lambda: self.served_fingerprint() == new,
                          "cudagate to serve the new CA's certificate")
            self.assertTrue(verifies_with(self.gate.port, new_ca))
            self.assertFalse(verifies_with(self.gate.port, old_ca))
            stream.more(5, "serving the new CA's certificate")
            # The old CA dropped.
            self.apply_webhooks(following)
            self.assert_ca_bundles(new_ca)
            self.sync()
            # The API server's webhook client is cached by its client config
            # (k8s.io/apiserver/pkg/util/webhook/client.go, HookClient), so a
            # new caBundle is a new client and its connections are new
            # handshakes, verified against the new CA alone.
            stream.more(5, "with the old CA dropped")
        print(f"\n  {stream.count()} creates, {len(stream.failures)} failed", file=sys.stderr)
        self.assert_stream_clean(stream, admissions, new_ca)

        # The old CA is no longer trusted: a cudagate started afresh (no
        # connection left open) with the old CA's certificate is refused by
        # the API server's TLS verification, under failurePolicy Fail.
        self.assertEqual(self.gate.stop(), 0, self.gate.log_tail())
        serve_pair(retired, certs)
        self.gate.start()
        refused = self.cluster.kubectl("create", "-f", "-", "--dry-run=server",
                                       stdin=stream_pod("old-ca", "stream"), check=False)
        self.assertNotEqual(refused.returncode, 0, refused.stdout)
        self.assertIn('failed calling webhook "enforce.mutate.cudagate.io"', refused.stderr)
        self.assertIn("x509: certificate signed by unknown authority", refused.stderr)

        # docs/install.md's last step: the new CA's folder becomes the one in use.
        for name in ("ca.key", "ca.crt"):
            replace_file(os.path.join(following, name), os.path.join(certs, name))
        serve_pair(following, certs)
        kc.wait_until(lambda: self.served_fingerprint() == new,
                      "cudagate to serve the new CA's certificate again")
        shutil.rmtree(following)
        shutil.rmtree(retired)
        created = self.cluster.kubectl("create", "-f", "-",
                                       stdin=stream_pod("new-ca", "stream"), check=False)
        self.assertEqual(created.returncode, 0, created.stderr)


if __name__ == "__main__":
    sys.exit(harness.main(__name__))

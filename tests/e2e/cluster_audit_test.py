#!/usr/bin/env python3
"""End-to-end tests of audits of a live cluster: `cudagate audit --cluster`,
and `cudagate serve --audit-interval` with and without `--write-reports`.

There is no kube-apiserver on the machines these tests run on; they start
apiserver_double.ApiServerDouble, which speaks the API server's protocol over
TLS: paged lists of Nodes, Pods and pod controllers (items without kind and
apiVersion, with managedFields, ownerReferences and status, as a live server
sends them), server-side apply and delete of PolicyReports and Reports
(content type, fieldManager and force checked, bodies validated against the
CRDs' own schemas from tests/fixtures/audit/crds), 401 and 429.

The workloads are the audit fixtures (tests/fixtures/audit/manifests) with
what their controllers make in a cluster: a Deployment's ReplicaSet and Pod,
a StatefulSet's Pod, a CronJob's Job and its Pod. An audit of the cluster
must say what an audit of the same objects from a file says, in every
format. Every call the double sees must be a row of `cudagate api-calls`,
and every row of the feature under test must have been seen.

Every wait is a poll of a condition (/reports, /metrics, the double's
state) with a deadline.

    python3 cluster_audit_test.py --binary build/release/cudagate --source .
"""

import copy
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import audit_support  # noqa: E402
import harness  # noqa: E402
import kube_support  # noqa: E402
import server_support  # noqa: E402
from apiserver_double import realistic_node, realistic_object  # noqa: E402
from double_case import DoubleTestCase  # noqa: E402
from kube_support import api_calls, seen_calls  # noqa: E402
from server_support import poll_until  # noqa: E402

BINARY = None
SOURCE = None

TIMEOUT = 60
EPOCH = audit_support.EPOCH
WORKLOAD_KINDS = {"Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob"}
# The order the audit lists collections in (kube/api_calls.h).
LIST_ORDER = ["Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob"]
L4_NODE = "ip-10-0-3-31.ec2.internal"  # driver 550.90.07: CUDA 12.4


def fixture(*parts):
    return os.path.join(SOURCE, "tests", "fixtures", *parts)


def owner(obj):
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
            "uid": obj["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def child(kind, api_version, name, parent, template):
    meta = {"name": name, "namespace": parent["metadata"]["namespace"],
            "ownerReferences": [owner(parent)]}
    tmeta = template.get("metadata", {})
    if tmeta.get("labels"):
        meta["labels"] = dict(tmeta["labels"])
    if tmeta.get("annotations"):
        meta["annotations"] = dict(tmeta["annotations"])
    if kind == "Pod":
        return realistic_object({"apiVersion": api_version, "kind": kind, "metadata": meta,
                                 "spec": copy.deepcopy(template["spec"])}, manager=parent["kind"])
    return realistic_object({"apiVersion": api_version, "kind": kind, "metadata": meta,
                             "spec": {"template": copy.deepcopy(template)}})


def live_objects(docs):
    """The workloads of `docs` as a cluster holds them, with what their
    controllers created."""
    out = []
    for doc in docs:
        if doc.get("kind") not in WORKLOAD_KINDS:
            continue
        obj = realistic_object(doc)
        out.append(obj)
        kind, name = obj["kind"], obj["metadata"]["name"]
        spec = obj.get("spec", {})
        if kind == "Deployment":
            rs = child("ReplicaSet", "apps/v1", name + "-5d8f7c9b4", obj, spec["template"])
            out += [rs, child("Pod", "v1", rs["metadata"]["name"] + "-x7k2p", rs,
                              spec["template"])]
        elif kind == "StatefulSet":
            out.append(child("Pod", "v1", name + "-0", obj, spec["template"]))
        elif kind == "CronJob":
            tmpl = spec["jobTemplate"]
            job = child("Job", "batch/v1", name + "-29410560", obj, tmpl["spec"]["template"])
            job["spec"] = copy.deepcopy(tmpl["spec"])
            out += [job, child("Pod", "v1", job["metadata"]["name"] + "-q9w8e", job,
                               tmpl["spec"]["template"])]
        elif kind == "Job":
            out.append(child("Pod", "v1", name + "-h4j5k", obj, spec["template"]))
    return out


def fixture_workloads():
    import yaml
    docs = []
    for name in ("trainer.yaml", os.path.join("charts", "serving.yaml")):
        with open(fixture("audit", "manifests", name)) as f:
            docs += [d for d in yaml.safe_load_all(f) if d]
    with open(fixture("audit", "manifests", "cluster", "kubectl-get.json")) as f:
        docs += json.load(f)["items"]
    return live_objects(docs)


def listed_order(objects):
    """`objects` in the order an audit of the cluster reads them."""
    return sorted(objects, key=lambda o: (LIST_ORDER.index(o["kind"]),
                                          o["metadata"]["namespace"], o["metadata"]["name"]))


def schemas():
    audit_support.SOURCE = SOURCE
    out = {}
    for key, crd, version in ((("wgpolicyk8s.io", "v1alpha2", "policyreports"),
                               "wgpolicyk8s.io_policyreports.yaml", "v1alpha2"),
                              (("openreports.io", "v1alpha1", "reports"),
                               "openreports.io_reports.yaml", "v1alpha1")):
        out[key] = audit_support.crd_schema(crd, version)[2]
    return out


class ClusterTestCase(DoubleTestCase):
    prefix = "cudagate-cluster-"
    page_size = 3  # small pages: every collection of the fixtures takes several
    tokens = ("test-token",)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.schemas = schemas()

    def double_options(self):
        return dict(tokens=self.tokens, page_size=self.page_size, schemas=self.schemas)

    def setUp(self):
        super().setUp()
        self.kubeconfig = kube_support.kubeconfig(self.dir, self.api.url,
                                                  ["token: test-token"])

    def assert_calls_are_rows(self, whens):
        """Every call the double saw is a row of `cudagate api-calls` with
        one of `whens`, and every such row was called."""
        rows = {(r["verb"], r["group"], r["resource"]) for r in api_calls() if r["when"] in whens}
        seen = seen_calls(self.api)
        self.assertEqual(seen - rows, set(), "calls that `cudagate api-calls` does not list")
        self.assertEqual(rows - seen, set(), "rows of `cudagate api-calls` never called")


class AuditCluster(ClusterTestCase):
    def setUp(self):
        super().setUp()
        with open(fixture("cli", "nodes.json")) as f:
            self.node_list = json.load(f)
        for node in self.node_list["items"]:
            self.api.put(realistic_node(node))
        self.objects = fixture_workloads()
        for obj in self.objects:
            self.api.put_object(obj)
        # The same objects in a file, in the order the cluster lists them.
        self.file = os.path.join(self.dir, "workloads.json")
        with open(self.file, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "List", "items": listed_order(self.objects)},
                      f, indent=1)
        self.nodes_file = fixture("cli", "nodes.json")

    def audit(self, *args, env=None):
        full_env = dict(os.environ, SOURCE_DATE_EPOCH=EPOCH, NO_COLOR="1")
        full_env.pop("KUBECONFIG", None)
        full_env.update(env or {})
        return subprocess.run([BINARY, "audit", "--offline", *args], capture_output=True,
                              text=True, timeout=300, env=full_env, cwd=self.dir)

    def cluster(self, *args, **kw):
        return self.audit("--cluster", "--kubeconfig", self.kubeconfig, *args, **kw)

    def normalise(self, fmt, text):
        """The output without the places (file and line), which only a file has."""
        name = re.escape(os.path.basename(self.file))
        if fmt == "table":
            return [re.sub(rf"\s*{name}\S*(: items\[\d+\])?\s*$", "", line).rstrip()
                    for line in text.splitlines()]
        if fmt == "json":
            return json.loads(text)
        if fmt in ("policyreport", "openreports"):
            docs = audit_support.load_yaml_documents(text)
            for doc in docs:
                for result in doc.get("results", []):
                    result.get("properties", {}).pop("place", None)
            return docs
        if fmt == "junit":
            return re.sub(r' (file|line)="[^"]*"', "", text)
        if fmt == "html":
            text = re.sub(r' <span class="place">[^<]*</span>', "", text)
            return re.sub(rf" \({name}[^)\"]*\)", "", text)
        raise AssertionError(fmt)

    def test_every_format_says_what_the_audit_of_the_same_objects_from_a_file_says(self):
        for fmt in ("table", "json", "policyreport", "openreports", "junit", "html"):
            with self.subTest(format=fmt):
                from_file = self.audit(os.path.basename(self.file), "--nodes", self.nodes_file, "--format", fmt)
                live = self.cluster("--nodes", self.nodes_file, "--format", fmt)
                self.assertIn(from_file.returncode, (0, 1), from_file.stderr)
                self.assertEqual(live.returncode, from_file.returncode, live.stderr)
                self.assertEqual(live.stderr, from_file.stderr)
                self.assertEqual(self.normalise(fmt, live.stdout),
                                 self.normalise(fmt, from_file.stdout))
        # What the check above compares: the fixtures' verdicts, owned objects
        # reported once, as their controllers.
        records = json.loads(self.cluster("--nodes", self.nodes_file, "--format", "json").stdout)
        names = sorted(f'{r["resource"]["kind"]} {r["resource"]["namespace"]}/'
                       f'{r["resource"]["name"]}' for r in records)
        self.assertIn("Deployment serving/inference", names)
        self.assertIn("CronJob ml/nightly-eval", names)
        self.assertNotIn("ReplicaSet serving/inference-5d8f7c9b4", names)
        self.assertFalse(any(n.startswith("Pod serving/inference-") for n in names), names)
        self.assertFalse(any(n.startswith("Job ml/nightly-eval-") for n in names), names)
        self.assertGreaterEqual(len({r["verdict"] for r in records}), 3, records)

    def plan(self, *args):
        env = dict(os.environ, SOURCE_DATE_EPOCH=EPOCH, NO_COLOR="1")
        env.pop("KUBECONFIG", None)
        return subprocess.run([BINARY, "plan", "--offline", *args], capture_output=True,
                              text=True, timeout=300, env=env, cwd=self.dir)

    def test_plan_of_the_cluster_says_what_the_plan_of_the_same_objects_from_a_file_says(self):
        # The T4 pool moves from 535 to 570, the 525 A100 is replaced.
        changes = ["--set-driver", "nvidia.com/gpu.product=Tesla-T4=570.124.06",
                   "--remove-nodes", "nvidia.com/cuda.driver-version.full=525.85.12"]
        # The nodes in the order the cluster lists them (by name), so that the
        # node groups come in the same order.
        nodes_file = os.path.join(self.dir, "nodes-listed.json")
        with open(nodes_file, "w") as f:
            json.dump(dict(self.node_list, items=sorted(
                self.node_list["items"], key=lambda n: n["metadata"]["name"])), f)
        from_file = self.plan("-f", os.path.basename(self.file), "--nodes", nodes_file,
                              *changes, "--format", "json")
        self.assertIn(from_file.returncode, (0, 1), from_file.stderr)
        for nodes in ((), ("--nodes", nodes_file)):
            with self.subTest(nodes=nodes):
                live = self.plan("--cluster", "--kubeconfig", self.kubeconfig, *nodes, *changes,
                                 "--format", "json")
                self.assertEqual(live.returncode, from_file.returncode, live.stderr)
                self.assertEqual(live.stderr, from_file.stderr)
                want, got = json.loads(from_file.stdout), json.loads(live.stdout)
                strip = re.compile(rf'"{re.escape(os.path.basename(self.file))}[^"]*"')
                self.assertEqual(strip.sub('""', json.dumps(got, sort_keys=True)),
                                 strip.sub('""', json.dumps(want, sort_keys=True)))
        # What was compared: workloads whose verdict the change moves.
        self.assertRegex(from_file.stdout, r'"(heals|breaks|narrows|widens)"')
        self.assert_calls_are_rows({"audit-cluster"})
        # The cluster replaces -f, and its flags need it.
        both = self.plan("--cluster", "-f", self.file, *changes)
        self.assertEqual(both.returncode, 2)
        self.assertIn("give either -f or --cluster", both.stderr)
        alone = self.plan("-f", self.file, "--nodes", self.nodes_file, "-n", "ml", *changes)
        self.assertEqual(alone.returncode, 2)
        self.assertIn("--namespace: only with --cluster", alone.stderr)

    def test_nodes_come_from_the_cluster_unless_a_file_is_given(self):
        live = self.cluster("--format", "json")
        from_file = self.cluster("--nodes", self.nodes_file, "--format", "json")
        self.assertEqual(live.returncode, from_file.returncode, live.stderr)
        self.assertEqual(json.loads(live.stdout), json.loads(from_file.stdout))
        self.assertTrue(self.api.requests_where(lambda r: r["path"] == "/api/v1/nodes"))
        # And the cluster's nodes are what is judged: without the A100 on 550
        # and the H100, no node runs a CUDA 12.4 image.
        for name in ("gpu-a100-1", "gpu-h100-1"):
            node = next(n for n in self.node_list["items"] if n["metadata"]["name"] == name)
            self.api.put(kube_support.upgraded(realistic_node(node), "535.129.03", "12.2"))
        changed = json.loads(self.cluster("--format", "json").stdout)
        self.assertNotEqual([r["verdict"] for r in changed],
                            [r["verdict"] for r in json.loads(live.stdout)])

    def test_lists_are_paged_and_the_calls_are_the_audit_cluster_rows(self):
        result = self.cluster("--format", "json")
        self.assertIn(result.returncode, (0, 1), result.stderr)
        pods = self.api.requests_where(lambda r: r["path"] == "/api/v1/pods")
        self.assertGreater(len(pods), 1)
        self.assertTrue(all(r["query"].get("limit") == "500" for r in pods))
        self.assertEqual(sum("continue" in r["query"] for r in pods), len(pods) - 1)
        self.assert_calls_are_rows({"audit-cluster"})

    def test_namespace_lists_one_namespace(self):
        result = self.cluster("-n", "ml", "--format", "json")
        self.assertIn(result.returncode, (0, 1), result.stderr)
        records = json.loads(result.stdout)
        self.assertTrue(records)
        self.assertEqual({r["resource"]["namespace"] for r in records}, {"ml"})
        # Nodes, ResourceSlices and NodePools (node facts) are cluster-scoped.
        workload_paths = {r["path"] for r in self.api.requests_where(
            lambda r: r["path"] not in ("/api/v1/nodes", "/apis/resource.k8s.io/v1/resourceslices",
                                        "/apis/karpenter.sh/v1/nodepools"))}
        self.assertIn("/api/v1/namespaces/ml/pods", workload_paths)
        self.assertIn("/apis/batch/v1/namespaces/ml/cronjobs", workload_paths)
        self.assertTrue(all("/namespaces/ml/" in p for p in workload_paths), workload_paths)

    def test_credentials_from_an_exec_plugin(self):
        plugin = os.path.join(self.dir, "credential-plugin")
        kube_support.write(plugin, "\n".join([
            f"#!{sys.executable}",
            "import json",
            "print(json.dumps({'kind': 'ExecCredential',",
            "                  'apiVersion': 'client.authentication.k8s.io/v1',",
            "                  'status': {'token': 'test-token'}}))",
        ]) + "\n", mode=0o700)
        config = kube_support.kubeconfig(self.dir, self.api.url, [
            "exec:", "  apiVersion: client.authentication.k8s.io/v1",
            "  command: ./credential-plugin", "  interactiveMode: Never"], "exec")
        result = self.audit("--cluster", "--kubeconfig", config, "--format", "json")
        self.assertIn(result.returncode, (0, 1), result.stderr)
        self.assertTrue(json.loads(result.stdout))
        tokens = {r["token"] for r in self.api.requests_where(lambda r: True)}
        self.assertEqual(tokens, {"test-token"})

    def test_refused_credentials_are_an_error_naming_the_server(self):
        config = kube_support.kubeconfig(self.dir, self.api.url, ["token: wrong"], "bad")
        result = self.audit("--cluster", "--kubeconfig", config)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertRegex(result.stderr, r"cudagate: error: API server 127\.0\.0\.1: list nodes: "
                                        r"401 Unauthorized")
        self.assertEqual(result.stdout, "")
        # Asked again once with the credentials read anew, then given up.
        self.assertEqual(len(self.api.requests_where(lambda r: r.get("status") == 401)), 2)

    def test_throttled_requests_wait_retry_after(self):
        self.api.fail(429, count=2, retry_after=1)
        started = time.monotonic()
        result = self.cluster("--nodes", self.nodes_file, "--format", "json")
        self.assertIn(result.returncode, (0, 1), result.stderr)
        self.assertGreaterEqual(time.monotonic() - started, 2.0)
        statuses = [r["status"] for r in self.api.requests_where(lambda r: True)]
        self.assertEqual(statuses[:3], [429, 429, 200])
        expected = self.audit(self.file, "--nodes", self.nodes_file, "--format", "json")
        self.assertEqual(json.loads(result.stdout), json.loads(expected.stdout))

    def test_an_expired_continue_token_lists_again_from_the_first_page(self):
        self.api.continue_gate.clear()
        full_env = dict(os.environ, SOURCE_DATE_EPOCH=EPOCH, NO_COLOR="1")
        full_env.pop("KUBECONFIG", None)
        proc = subprocess.Popen([BINARY, "audit", "--offline", "--cluster", "--kubeconfig",
                                 self.kubeconfig, "--nodes", self.nodes_file, "--format", "json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=full_env, cwd=self.dir)
        try:
            poll_until(lambda: self.api.requests_where(
                lambda r: r["path"] == "/api/v1/pods" and "continue" in r["query"]),
                TIMEOUT, "the second page of pods to be asked for")
            # etcd compacted while the list was in progress: the token is too old.
            self.api.compact()
        finally:
            self.api.continue_gate.set()
        out, err = proc.communicate(timeout=120)
        self.assertIn(proc.returncode, (0, 1), err)
        pods = self.api.requests_where(lambda r: r["path"] == "/api/v1/pods")
        self.assertEqual(pods[1]["status"], 410)
        self.assertNotIn("continue", pods[2]["query"])  # from the first page again
        expected = self.audit(os.path.basename(self.file), "--nodes", self.nodes_file,
                              "--format", "json")
        self.assertEqual(json.loads(out), json.loads(expected.stdout))

    def test_errors_from_the_server_are_reported(self):
        self.api.fail(500, count=10)
        result = self.cluster("--nodes", self.nodes_file)
        self.assertEqual(result.returncode, 2)
        self.assertRegex(result.stderr, r"list pods: 500 Internal Server Error: injected")
        self.assertEqual(len(self.api.requests_where(lambda r: r.get("status") == 500)), 5)


def deployment(name, namespace, node, cuda="12.4.1"):
    return realistic_object({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": {
                     "containers": [{"name": "train", "image": "registry.example.com/ml/train:v1",
                                     "env": [{"name": "CUDA_VERSION", "value": cuda}],
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
                     "nodeSelector": {"kubernetes.io/hostname": node},
                     "tolerations": [{"operator": "Exists"}]}}}})


class AuditingWebhook(kube_support.Webhook):
    def __init__(self, *args, extra=(), **kw):
        super().__init__(*args, **kw)
        self.extra = list(extra)

    def command(self):
        return super().command() + self.extra

    def reports(self, namespace=""):
        status, body = self.get(f"/reports?format=json&namespace={namespace}")
        if status != 200:
            raise AssertionError(f"/reports answered {status}")
        return {(r["resource"]["kind"], r["resource"]["namespace"], r["resource"]["name"]):
                r["verdict"] for r in json.loads(body)}


class BackgroundAudit(ClusterTestCase):
    page_size = 500

    def setUp(self):
        super().setUp()
        self.nodes = kube_support.fleet()
        for node in self.nodes:
            self.api.put(node)

    def webhook(self, *extra):
        w = AuditingWebhook(self.dir, self.certs, self.kubeconfig, extra=extra)
        self.webhooks.append(w)
        return w.start()

    def test_a_driver_rollout_shows_running_workloads_that_no_longer_fit(self):
        self.api.put_object(deployment("trainer", "ml", L4_NODE))
        rs = child("ReplicaSet", "apps/v1", "trainer-7c9d", self.api.stored("deployments")[
            ("ml", "trainer")], self.api.stored("deployments")[("ml", "trainer")]["spec"][
            "template"])
        self.api.put_object(rs)
        w = self.webhook("--audit-interval", "1s")
        key = ("Deployment", "ml", "trainer")
        poll_until(lambda: w.reports("ml").get(key) == "pass", TIMEOUT,
                   "the background audit to report the deployment passing")
        self.assertNotIn(("ReplicaSet", "ml", "trainer-7c9d"), w.reports())
        poll_until(lambda: (w.metric("cudagate_audit_workloads", verdict="pass") or 0) >= 1,
                   TIMEOUT, "cudagate_audit_workloads{verdict=pass}")
        self.assertEqual(w.metric("cudagate_audit_workloads", verdict="fail"), 0)
        runs = w.metric("cudagate_audit_runs_total", result="success")
        self.assertGreaterEqual(runs, 1)
        self.assertGreater(w.metric("cudagate_audit_last_run_timestamp_seconds"), 0)

        # The L4 node is rolled back to a driver for CUDA 12.2: the running
        # deployment would not start there again.
        node = kube_support.by_name(self.nodes, L4_NODE)
        self.api.put(kube_support.upgraded(node, "535.129.03", "12.2"))
        poll_until(lambda: w.reports("ml").get(key) == "fail", TIMEOUT,
                   "/reports to show the deployment failing after the rollout")
        poll_until(lambda: w.metric("cudagate_audit_workloads", verdict="fail") == 1, TIMEOUT,
                   "cudagate_audit_workloads{verdict=fail} to be 1")
        self.assertEqual(w.metric("cudagate_audit_workloads", verdict="pass"), 0)
        self.assertGreater(w.metric("cudagate_audit_runs_total", result="success"), runs)
        # The deployment is deleted: it leaves /reports at the next run.
        self.api.remove_object("Deployment", "ml", "trainer")
        poll_until(lambda: key not in w.reports("ml"), TIMEOUT,
                   "/reports to drop the deleted deployment")
        # Nothing was written without --write-reports.
        self.assertEqual(self.api.applied, [])
        self.assert_calls_are_rows({"inventory", "background-audit"})
        server_support.assert_promtool_accepts(self, w.get("/metrics")[1])

    def wait_reports(self, resource, expected, what):
        def current():
            stored = self.api.stored(resource)
            return set(stored) == expected and stored
        return poll_until(current, TIMEOUT, what)

    def check_applies(self, resource):
        applies = self.api.requests_where(lambda r: r.get("method") == "PATCH")
        self.assertTrue(applies)
        for r in applies:
            self.assertEqual(r["content_type"], "application/apply-patch+yaml")
            self.assertEqual(r["query"].get("fieldManager"), "cudagate")
            self.assertEqual(r["query"].get("force"), "true")
            self.assertIn(f"/{resource}/", r["path"])
            self.assertIn(r["status"], (200, 201), r)

    def write_reports_case(self, resource, kind, *extra):
        for name in ("a-trainer", "b-trainer"):
            self.api.put_object(deployment(name, "ml", L4_NODE))
        self.api.put_object(deployment("server", "serving", L4_NODE, cuda="12.9.0"))
        # A report cudagate wrote before, in a namespace with nothing left,
        # and one of another tool, left alone.
        group_version = ("wgpolicyk8s.io/v1alpha2" if kind == "PolicyReport"
                         else "openreports.io/v1alpha1")
        for name, ns, manager in (("cudagate", "old", "cudagate"),
                                  ("kyverno-abc", "ml", "kyverno")):
            self.api.put_object({"apiVersion": group_version, "kind": kind,
                                 "metadata": {"name": name, "namespace": ns, "labels": {
                                     "app.kubernetes.io/managed-by": manager}},
                                 "results": [], "summary": {"pass": 0}})
        w = self.webhook("--audit-interval", "1s", "--write-reports",
                         "--max-report-results", "3", *extra)
        # 3 results a workload: one workload a report, in numbered parts.
        stored = self.wait_reports(resource, {("ml", "cudagate"), ("ml", "cudagate-1"),
                                              ("ml", "kyverno-abc"), ("serving", "cudagate")},
                                   "one report per namespace, split, the stale one deleted")
        self.check_applies(resource)
        self.assertIn((resource, "old", "cudagate"), self.api.deleted)
        by_report = {}
        for (ns, name), report in stored.items():
            if name.startswith("kyverno"):
                continue
            self.assertEqual(report["kind"], kind)
            self.assertLessEqual(len(report["results"]), 3)
            by_report[(ns, name)] = {r["resources"][0]["name"] for r in report["results"]}
            verdicts = {r["result"] for r in report["results"]}
            self.assertEqual(report["summary"]["fail"],
                             sum(r["result"] == "fail" for r in report["results"]))
            self.assertTrue(verdicts)
        self.assertEqual(by_report[("ml", "cudagate")] | by_report[("ml", "cudagate-1")],
                         {"a-trainer", "b-trainer"})
        self.assertEqual(by_report[("serving", "cudagate")], {"server"})
        server_results = stored[("serving", "cudagate")]["results"]
        self.assertIn("fail", {r["result"] for r in server_results})  # CUDA 12.9 on the L4

        # A workload goes away: its results go, and the part no longer needed.
        self.api.remove_object("Deployment", "ml", "b-trainer")
        stored = self.wait_reports(resource, {("ml", "cudagate"), ("ml", "kyverno-abc"),
                                              ("serving", "cudagate")},
                                   "the report part of the deleted workload deleted")
        self.assertEqual({r["resources"][0]["name"] for r in stored[("ml", "cudagate")]["results"]},
                         {"a-trainer"})
        # The writes are counted when the cycle that made them ends, a moment
        # after the API server has them.
        poll_until(lambda: (w.metric("cudagate_audit_report_writes_total", operation="delete",
                                     result="success") or 0) >= 2, TIMEOUT,
                   "both deletes counted")
        self.assertEqual(w.metric("cudagate_audit_report_writes_total", operation="apply",
                                  result="error"), None)
        return w

    def test_write_reports_keeps_one_policyreport_per_namespace(self):
        self.write_reports_case("policyreports", "PolicyReport")
        self.assertEqual(self.api.stored("reports"), {})
        rows = {(r["verb"], r["group"], r["resource"]) for r in api_calls()
                if r["when"] in ("inventory", "background-audit", "write-reports")
                and r["group"] != "openreports.io"}
        self.assertEqual(seen_calls(self.api), rows)

    def test_write_reports_as_openreports(self):
        self.write_reports_case("reports", "Report", "--report-api", "openreports")
        rows = {(r["verb"], r["group"], r["resource"]) for r in api_calls()
                if r["when"] in ("inventory", "background-audit", "write-reports")
                and r["group"] != "wgpolicyk8s.io"}
        self.assertEqual(seen_calls(self.api), rows)

    def test_write_reports_needs_the_audit(self):
        result = subprocess.run([BINARY, "serve", "--tls-cert", "x", "--tls-key", "y",
                                 "--kubeconfig", self.kubeconfig, "--write-reports"],
                                capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 2)
        self.assertIn("--write-reports: needs --audit-interval", result.stderr)


if __name__ == "__main__":
    sys.exit(harness.main(__name__))

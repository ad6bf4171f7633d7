#!/usr/bin/env python3
"""End-to-end tests of `cudagate audit`: every input shape and format.

Runs the real binary:  python3 audit_test.py --binary PATH --source REPO
Fixtures: tests/fixtures/audit (its README.md lists the manifests and the
verdict of each against tests/fixtures/cli/nodes.json). The golden files under
tests/fixtures/audit/golden are regenerated on purpose only, with
CUDAGATE_UPDATE_GOLDEN=1, and read by eye before they are committed.
PolicyReport and OpenReports output is validated against the CRDs' own
OpenAPI schemas (tests/fixtures/audit/crds) with jsonschema; JUnit output is
read with xml.etree.
"""

import copy
import json
import os
import pty
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

import audit_support
import harness
from audit_support import EPOCH, audit_dir, crd_schema, load_yaml_documents

BINARY = ""
SOURCE = ""


def setUpModule():
    audit_support.SOURCE = SOURCE


def nodes():
    return os.path.join(SOURCE, "tests", "fixtures", "cli", "nodes.json")


def cudagate(*args, stdin=None, cwd=None, env=None):
    # Judged from the manifests alone, whatever registries the machine can
    # reach (registry_test.py covers lookups).
    if args and args[0] == "audit":
        args = ("audit", "--offline", *args[1:])
    full_env = dict(os.environ, SOURCE_DATE_EPOCH=EPOCH, NO_COLOR="1")
    full_env.update(env or {})
    return subprocess.run([BINARY, *args], input=stdin, capture_output=True, text=True,
                          timeout=300, cwd=cwd, env=full_env)


def audit_fixture(fmt, *extra):
    """The fixture manifests audited from tests/fixtures/audit, so places are relative."""
    return cudagate("audit", "manifests", "--nodes", "../cli/nodes.json", "--format", fmt,
                    *extra, cwd=audit_dir())


class AuditTestCase(unittest.TestCase):
    maxDiff = None

    def assert_exit(self, result, code):
        self.assertEqual(result.returncode, code,
                         f"exit {result.returncode}, expected {code}\n"
                         f"stdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr}")


class Golden(AuditTestCase):
    """Every format of the fixture audit, byte for byte."""

    FILES = {"table": "audit.txt", "json": "audit.json", "policyreport": "policyreport.yaml",
             "openreports": "openreports.yaml", "junit": "junit.xml", "html": "audit.html"}

    def check(self, fmt):
        result = audit_fixture(fmt)
        self.assert_exit(result, 1)  # the fixtures hold a fail and an error
        self.assertEqual(result.stderr, "")
        path = audit_dir("golden", self.FILES[fmt])
        if os.environ.get("CUDAGATE_UPDATE_GOLDEN") == "1":
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(result.stdout)
        with open(path) as f:
            self.assertEqual(result.stdout, f.read(), f"{fmt} differs from {path}")

    def test_table(self):
        self.check("table")

    def test_json(self):
        self.check("json")

    def test_policyreport(self):
        self.check("policyreport")

    def test_openreports(self):
        self.check("openreports")

    def test_junit(self):
        self.check("junit")

    def test_html(self):
        self.check("html")


class Schemas(AuditTestCase):
    """PolicyReport and OpenReports objects as their CRDs define them."""

    def validate(self, fmt, namespaced, cluster):
        import jsonschema  # python3-jsonschema
        result = audit_fixture(fmt)
        self.assert_exit(result, 1)
        docs = load_yaml_documents(result.stdout)
        schemas = {}
        for crd_file, version in (namespaced, cluster):
            kind, api_version, schema = crd_schema(crd_file, version)
            schemas[kind] = (api_version, schema)
        self.assertEqual(len(docs), 4, result.stdout[:2000])
        for doc in docs:
            self.assertIn(doc["kind"], schemas)
            api_version, schema = schemas[doc["kind"]]
            self.assertEqual(doc["apiVersion"], api_version)
            jsonschema.validate(doc, schema)
            # The validator bites: a result word the CRD does not know is refused.
            broken = copy.deepcopy(doc)
            broken["results"][0]["result"] = "maybe"
            with self.assertRaises(jsonschema.ValidationError):
                jsonschema.validate(broken, schema)
            broken = copy.deepcopy(doc)
            broken["results"][0]["details"] = "x"
            with self.assertRaises(jsonschema.ValidationError):
                jsonschema.validate(broken, schema)
        return docs

    def test_policyreport_matches_the_wgpolicyk8s_crds(self):
        docs = self.validate("policyreport",
                             ("wgpolicyk8s.io_policyreports.yaml", "v1alpha2"),
                             ("wgpolicyk8s.io_clusterpolicyreports.yaml", "v1alpha2"))
        self.assertEqual([d["kind"] for d in docs], ["PolicyReport"] * 3 + ["ClusterPolicyReport"])

    def test_openreports_matches_the_openreports_crds(self):
        docs = self.validate("openreports",
                             ("openreports.io_reports.yaml", "v1alpha1"),
                             ("openreports.io_clusterreports.yaml", "v1alpha1"))
        self.assertEqual([d["kind"] for d in docs], ["Report"] * 3 + ["ClusterReport"])

    def test_summaries_count_the_results(self):
        for doc in load_yaml_documents(audit_fixture("policyreport").stdout):
            counted = {word: 0 for word in ("pass", "fail", "warn", "error", "skip")}
            for r in doc["results"]:
                counted[r["result"]] += 1
            self.assertEqual(doc["summary"], counted, doc["metadata"])


class Junit(AuditTestCase):
    """JUnit XML as JUnit readers want it: the schema's required elements and attributes, and
    counts that add up."""

    def read(self, *extra, code=1):
        result = audit_fixture("junit", *extra)
        self.assert_exit(result, code)
        return ET.fromstring(result.stdout)

    def test_required_elements_and_counts(self):
        root = self.read()
        self.assertEqual(root.tag, "testsuites")
        total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for suite in root:
            self.assertEqual(suite.tag, "testsuite")
            for attribute in ("name", "tests", "failures", "errors", "time", "timestamp"):
                self.assertIn(attribute, suite.attrib)
            cases = suite.findall("testcase")
            self.assertEqual(int(suite.get("tests")), len(cases))
            self.assertEqual(int(suite.get("failures")),
                             sum(1 for c in cases if c.find("failure") is not None))
            self.assertEqual(int(suite.get("errors")),
                             sum(1 for c in cases if c.find("error") is not None))
            self.assertEqual(int(suite.get("skipped")),
                             sum(1 for c in cases if c.find("skipped") is not None))
            for case in cases:
                self.assertTrue(case.get("name"))
                self.assertTrue(case.get("classname"))
                for child in case:
                    self.assertIn(child.tag, {"failure", "error", "skipped", "system-out"})
                    if child.tag in ("failure", "error"):
                        self.assertTrue(child.get("message"))
            for key in total:
                total[key] += int(suite.get(key))
        for key, value in total.items():
            self.assertEqual(int(root.get(key)), value, key)
        self.assertEqual(total, {"tests": 9, "failures": 1, "errors": 1, "skipped": 2})

    def test_fail_on_warn_makes_partial_workloads_failures(self):
        root = self.read("--fail-on", "warn")
        failed = {c.get("name") for c in root.iter("testcase") if c.find("failure") is not None}
        self.assertEqual(failed, {"Pod ml/trainer", "Deployment serving/inference",
                                  "Deployment research/embedder", "Job bf16-finetune"})

    def test_unreadable_documents_are_errored_cases(self):
        result = cudagate("audit", audit_dir("broken"), "--nodes", nodes(), "--format", "junit")
        self.assert_exit(result, 2)
        root = ET.fromstring(result.stdout)
        inputs = [s for s in root if s.get("name") == "inputs"]
        self.assertEqual(len(inputs), 1)
        self.assertEqual(int(inputs[0].get("errors")), 3)


class Inputs(AuditTestCase):
    """Folders, stdin, broken documents, and what is skipped."""

    def test_folder_with_a_broken_file(self):
        result = cudagate("audit", audit_dir("broken"), "--nodes", nodes(), "--format", "json")
        self.assert_exit(result, 2)
        records = json.loads(result.stdout)
        self.assertEqual([r["resource"]["name"] for r in records], ["notebook", "first", "last"])
        lines = result.stderr.splitlines()
        self.assertEqual(len(lines), 3, result.stderr)
        for line in lines:
            self.assertTrue(line.startswith("cudagate: error: "), line)
        self.assertIn("broken/mixed.yaml:23: invalid YAML", lines[0])
        self.assertIn("broken/mixed.yaml:25: spec.containers", lines[1])
        self.assertIn("broken/truncated.json:2:26: invalid JSON", lines[2])

    def test_stdin(self):
        with open(audit_dir("manifests", "trainer.yaml")) as f:
            text = f.read()
        result = cudagate("audit", "-", "--nodes", nodes(), "--format", "json", stdin=text)
        self.assert_exit(result, 1)
        records = json.loads(result.stdout)
        self.assertEqual([(r["resource"]["name"], r["verdict"]) for r in records],
                         [("trainer", "fail"), ("bf16-finetune", "partial"), ("typo", "error")])
        table = cudagate("audit", "-", "--nodes", nodes(), stdin=text)
        self.assertIn("<stdin>:1", table.stdout)

    def test_kubectl_list_reports_owned_pods_as_their_controller(self):
        result = cudagate("audit", audit_dir("manifests", "cluster", "kubectl-get.json"),
                          "--nodes", nodes(), "--format", "json")
        self.assert_exit(result, 0)
        names = [r["resource"]["name"] for r in json.loads(result.stdout)]
        self.assertEqual(names, ["notebook", "embedder", "redis", "nightly-eval"])
        table = cudagate("audit", audit_dir("manifests", "cluster", "kubectl-get.json"),
                         "--nodes", nodes())
        self.assertIn("1 reported as their controller", table.stdout.splitlines()[-1])

    def test_other_kinds_are_skipped_and_counted(self):
        result = cudagate("audit", audit_dir("manifests", "charts"), "--nodes", nodes())
        self.assert_exit(result, 0)
        self.assertEqual(result.stdout.splitlines()[-1],
                         "2 workloads: 1 partial, 1 skip; 2 other objects skipped")

    def test_yaml_list_and_json_array(self):
        with open(audit_dir("manifests", "cluster", "kubectl-get.json")) as f:
            listed = json.load(f)
        import yaml
        as_yaml = yaml.safe_dump(listed)
        result = cudagate("audit", "-", "--nodes", nodes(), "--format", "json", stdin=as_yaml)
        self.assert_exit(result, 0)
        self.assertEqual(len(json.loads(result.stdout)), 4)
        as_array = json.dumps(listed["items"])
        result = cudagate("audit", "-", "--nodes", nodes(), "--format", "json", stdin=as_array)
        self.assertEqual(len(json.loads(result.stdout)), 4)

    def test_json_and_yaml_give_the_same_records_and_errors(self):
        # JSON is read with simdjson, YAML through the document tree: the same
        # workloads, places and errors either way.
        import yaml
        with open(audit_dir("manifests", "cluster", "kubectl-get.json")) as f:
            listed = json.load(f)
        listed["items"].insert(2, {"apiVersion": "v1", "kind": "Pod",
                                   "metadata": {"name": "bad", "namespace": "ml"},
                                   "spec": {"containers": 3}})
        listed["items"].insert(0, {"apiVersion": "v1", "kind": 7})
        as_json = cudagate("audit", "-", "--nodes", nodes(), "--format", "json",
                           stdin=json.dumps(listed))
        as_yaml = cudagate("audit", "-", "--nodes", nodes(), "--format", "json",
                           stdin=yaml.safe_dump(listed))
        self.assert_exit(as_json, 2)
        self.assertEqual(as_json.stdout, as_yaml.stdout)
        self.assertEqual(as_json.stderr, as_yaml.stderr)
        self.assertEqual(as_json.stderr.splitlines(), [
            "cudagate: error: <stdin>:1: items[0]: kind: expected a string, got number",
            "cudagate: error: <stdin>:1: items[3]: spec.containers: expected a list, got number",
        ])

    def test_bad_usage(self):
        cases = [
            (("audit", "no/such/dir", "--nodes", nodes()), "no/such/dir: no such file"),
            (("audit", audit_dir("manifests")), "--nodes: required"),
            (("audit", "-", "--nodes", "-"), "stdin"),
            (("audit", audit_dir("manifests"), "--nodes", nodes(), "--format", "xml"), "--format"),
            (("audit", audit_dir("manifests"), "--nodes", nodes(), "--fail-on", "x"), "--fail-on"),
        ]
        for args, fragment in cases:
            result = cudagate(*args, stdin="")
            self.assert_exit(result, 2)
            lines = result.stderr.splitlines()
            self.assertEqual(len(lines), 1, result.stderr)
            self.assertIn(fragment, lines[0])
            self.assertEqual(result.stdout, "")

    def test_offline_is_accepted(self):
        result = cudagate("audit", audit_dir("manifests", "charts"), "--nodes", nodes(),
                          "--offline", "--format", "json")
        self.assert_exit(result, 0)


class FailOn(AuditTestCase):
    """Exit 1 exactly when a workload is at or above --fail-on."""

    def exit_code(self, path, fail_on):
        args = ["audit", audit_dir(*path), "--nodes", nodes(), "--format", "json"]
        if fail_on is not None:
            args += ["--fail-on", fail_on]
        return cudagate(*args).returncode

    def test_each_threshold(self):
        rows = [
            # path, default, fail, warn, never
            (("manifests",), 1, 1, 1, 0),                    # a fail and an error
            (("manifests", "charts"), 0, 0, 1, 0),           # partial at worst
            (("broken", "good.yaml"), 0, 0, 0, 0),           # pass only
            (("broken",), 2, 2, 2, 2),                       # unreadable documents
        ]
        for path, default, on_fail, on_warn, on_never in rows:
            got = tuple(self.exit_code(path, f) for f in (None, "fail", "warn", "never"))
            self.assertEqual(got, (default, on_fail, on_warn, on_never), path)


def many_pods(n):
    docs = []
    for i in range(n):
        docs.append(f"""apiVersion: v1
kind: Pod
metadata:
  name: p{i}
  namespace: ns{i % 7}
spec:
  containers:
  - name: main
    image: pytorch/pytorch:2.1.2-cuda11.8-cudnn8-runtime
    resources:
      limits:
        nvidia.com/gpu: 1
  tolerations:
  - key: nvidia.com/gpu
    operator: Exists
""")
    return "---\n".join(docs)


class Progress(AuditTestCase):
    """Progress on stderr for long runs, only when stderr is a terminal."""

    def test_progress_on_a_terminal_only(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "pods.yaml")
            with open(path, "w") as f:
                f.write(many_pods(300))
            args = [BINARY, "audit", path, "--nodes", nodes(), "--format", "json"]

            controller, terminal = pty.openpty()
            # stdout to a file: a pipe left unread while the terminal is read would fill.
            out_file = open(os.path.join(tmp, "out.json"), "w+b")
            process = subprocess.Popen(args, stdout=out_file, stderr=terminal)
            os.close(terminal)
            shown = b""
            while True:
                try:
                    chunk = os.read(controller, 65536)
                except OSError:  # EIO: the last writer closed the terminal
                    break
                if not chunk:
                    break
                shown += chunk
            os.close(controller)
            self.assertEqual(process.wait(timeout=120), 0)
            out_file.seek(0)
            out = out_file.read()
            out_file.close()
            self.assertEqual(len(json.loads(out)), 300)
            self.assertIn(b"auditing 300/300 workloads", shown)
            self.assertTrue(shown.endswith(b"\r\x1b[K"), shown[-40:])

            piped = cudagate("audit", path, "--nodes", nodes(), "--format", "json")
            self.assert_exit(piped, 0)
            self.assertEqual(piped.stderr, "")


if __name__ == "__main__":
    sys.exit(harness.main(__name__))

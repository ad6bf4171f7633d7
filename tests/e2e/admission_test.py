#!/usr/bin/env python3
"""End-to-end admission tests: the real `cudagate serve` over real TLS.

Starts the binary on a loopback port with development certificates from
certs/dev-certs.sh, POSTs AdmissionReviews (tests/fixtures/admission/) and
checks every answer against the API server's rules (admission-contract.md
section 8), applies every patch with python3-jsonpatch and submits the
patched object again. Candidate nodes are recomputed here, independently of
cudagate, with Kubernetes' scheduling semantics.

    python3 admission_test.py --binary build/release/cudagate --source .
"""

import argparse
import base64
import copy
import http.client
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

import jsonpatch

ARGS = None
SERVER = None

FLEET_A100 = ["gpu-a100-1", "gpu-a100-2", "gpu-a100-3", "gpu-a100-4"]
FLEET_T4 = ["gpu-t4-1", "gpu-t4-2", "gpu-t4-3", "gpu-t4-4"]
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
STD_BASE64 = re.compile(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$")

POLICY = """apiVersion: cudagate.io/v1alpha1
kind: Policy
mode: enforce
registry:
  enabled: false
"""


def fixture(name):
    path = os.path.join(ARGS.source, "tests", "fixtures", "admission", name)
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One `cudagate serve` process and a TLS client for it."""

    def __init__(self, workdir):
        self.workdir = workdir
        certs = os.path.join(workdir, "certs")
        subprocess.run(["bash", os.path.join(ARGS.source, "certs", "dev-certs.sh"), "--out", certs],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
        self.context = ssl.create_default_context(cafile=os.path.join(certs, "ca.crt"))
        config = os.path.join(workdir, "policy.yaml")
        with open(config, "w", encoding="utf-8") as f:
            f.write(POLICY)
        self.nodes = os.path.join(ARGS.source, "tests", "fixtures", "admission", "nodes-t4-a100.json")
        self.log = open(os.path.join(workdir, "serve.log"), "wb")
        self.port = None
        self.process = None
        for _ in range(5):  # another process may take the port between probe and bind
            self.port = free_port()
            self.process = subprocess.Popen(
                [ARGS.binary, "serve", "--listen", f"127.0.0.1:{self.port}",
                 "--tls-cert", os.path.join(certs, "server.crt"),
                 "--tls-key", os.path.join(certs, "server.key"),
                 "--nodes", self.nodes, "--config", config, "--threads", "2"],
                stdout=self.log, stderr=subprocess.STDOUT)
            if self.wait_ready():
                return
            self.stop()
        raise RuntimeError("cudagate serve did not become ready; log:\n" + self.log_text())

    def wait_ready(self, budget=30.0):
        deadline = time.monotonic() + budget
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                status, _, _ = self.request("GET", "/readyz", timeout=2)
                if status == 200:
                    return True
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.05)  # poll interval, not a wait for a guessed duration
        return False

    def request(self, method, path, body=None, headers=None, timeout=10):
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context,
                                           timeout=timeout)
        try:
            hdrs = {"Accept": "application/json, */*", "User-Agent": "kube-apiserver-admission"}
            if body is not None:
                hdrs["Content-Type"] = "application/json"
            hdrs.update(headers or {})
            conn.request(method, path, body=body, headers=hdrs)
            resp = conn.getresponse()
            return resp.status, dict(resp.getheaders()), resp.read()
        finally:
            conn.close()

    def log_text(self):
        self.log.flush()
        with open(self.log.name, "rb") as f:
            return f.read().decode("utf-8", "replace")[-4000:]

    def log_lines_with(self, needle, count, budget=20.0):
        """The log lines containing `needle`, once there are `count` of them
        (the server writes its lines in batches: poll, don't read once)."""
        deadline = time.monotonic() + budget
        while True:
            self.log.flush()
            with open(self.log.name, "rb") as f:
                lines = [l for l in f.read().decode("utf-8", "replace").splitlines()
                         if needle in l]
            if len(lines) >= count or time.monotonic() > deadline:
                return lines
            time.sleep(0.05)  # poll interval, not a wait for a guessed duration

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


# --- admission-contract.md section 8 ---------------------------------------

def valid_warning(text):
    """What the API server's warning recorder keeps unchanged."""
    if not isinstance(text, str) or not text:
        return False
    if any(0xD800 <= ord(c) <= 0xDFFF for c in text):  # not encodable as UTF-8
        return False
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in text):
        return False
    return len(text) <= 256


def check_contract(test, status, headers, raw, sent, mutating):
    """The API server's decision for one v1 / v1beta1 call; returns the response."""
    test.assertTrue(200 <= status <= 206, f"HTTP {status}: {raw[:300]!r}")
    ctype = headers.get("Content-Type", headers.get("content-type", "application/json"))
    test.assertRegex(ctype, r"^[a-z]+/[a-z0-9.+-]+(\s*;.*)?$")
    test.assertTrue(raw, "0-length response")
    body = json.loads(raw.decode("utf-8"))  # strict JSON, valid UTF-8
    version = sent["apiVersion"]
    test.assertEqual(body.get("apiVersion"), version)
    test.assertEqual(body.get("kind"), "AdmissionReview")
    r = body.get("response")
    test.assertIsNotNone(r, "webhook response was absent")
    uid = sent["request"]["uid"]
    test.assertEqual(r.get("uid"), uid, f'expected response.uid="{uid}"')
    test.assertIsInstance(r.get("allowed"), bool)
    if mutating:
        test.assertEqual("patch" in r, "patchType" in r, "patch xor patchType")
        if "patchType" in r:
            test.assertEqual(r["patchType"], "JSONPatch")
            test.assertTrue(r["allowed"], "a patch on a denial")
            test.assertRegex(r["patch"], STD_BASE64)
            ops = json.loads(base64.b64decode(r["patch"], validate=True))
            test.assertIsInstance(ops, list)
            test.assertTrue(ops)
    else:
        test.assertFalse(r.get("patch"), "validating webhook may not return response.patch")
        test.assertNotIn("patchType", r, "validating webhook may not return response.patchType")
    for key, value in (r.get("auditAnnotations") or {}).items():
        test.assertNotIn("/", key)
        test.assertLessEqual(len(key), 63)
        test.assertRegex(key, QUALIFIED_NAME)
        test.assertIsInstance(value, str)
    warnings = r.get("warnings") or []
    test.assertLessEqual(len(warnings), 10)
    test.assertEqual(len(set(warnings)), len(warnings))
    test.assertLess(sum(len(w) for w in warnings), 4096)
    for w in warnings:
        test.assertTrue(valid_warning(w), f"warning the API server would drop or cut: {w!r}")
    if not r["allowed"]:
        st = r.get("status") or {}
        test.assertGreaterEqual(st.get("code", 0), 400)
        test.assertEqual(st.get("status"), "Failure")
        test.assertTrue(st.get("message"), "denied the request without explanation")
    return r


# --- candidate nodes, independently (admission-contract.md section 5) ------

def label_matches(labels, expr):
    key, op, values = expr["key"], expr["operator"], expr.get("values", [])
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if not present or not re.fullmatch(r"[+-]?[0-9]+", labels[key]):
            return False
        a, b = int(labels[key]), int(values[0])
        return a > b if op == "Gt" else a < b
    raise ValueError(op)


def field_matches(name, expr):
    assert expr["key"] == "metadata.name"
    return (name in expr["values"]) == (expr["operator"] == "In")


def term_matches(node, term):
    exprs, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not exprs and not fields:
        return False
    labels = node["metadata"].get("labels", {})
    return all(label_matches(labels, e) for e in exprs) and \
        all(field_matches(node["metadata"]["name"], f) for f in fields)


def tolerated(taint, tolerations):
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint["effect"]:
            continue
        if not t.get("key"):
            if t.get("operator") == "Exists":
                return True
            continue
        if t["key"] != taint["key"]:
            continue
        if t.get("operator") == "Exists" or t.get("value", "") == taint.get("value", ""):
            return True
    return False


def candidates(spec, nodes):
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    wanted = {}
    for c in spec.get("containers", []) + spec.get("initContainers", []):
        res = c.get("resources", {})
        for k, v in {**res.get("requests", {}), **res.get("limits", {})}.items():
            if "/" in k and not k.endswith("kubernetes.io"):
                wanted[k] = max(wanted.get(k, 0), int(v))
    out = []
    for n in nodes:
        name, labels = n["metadata"]["name"], n["metadata"].get("labels", {})
        if spec.get("nodeName") and spec["nodeName"] != name:
            continue
        if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
            continue
        if affinity is not None and not any(term_matches(n, t) for t in affinity["nodeSelectorTerms"]):
            continue
        taints = [t for t in n.get("spec", {}).get("taints", []) if t["effect"] in ("NoSchedule", "NoExecute")]
        if n.get("spec", {}).get("unschedulable"):
            taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
        if not all(tolerated(t, spec.get("tolerations") or []) for t in taints):
            continue
        alloc = n.get("status", {}).get("allocatable", {})
        if any(int(alloc.get(k, 0)) < v for k, v in wanted.items()):
            continue
        out.append(name)
    return sorted(out)


def metrics_value(text, **labels):
    total = 0.0
    for line in text.splitlines():
        if not line.startswith("cudagate_admission_requests_total{"):
            continue
        head, value = line.rsplit(" ", 1)
        got = dict(re.findall(r'(\w+)="([^"]*)"', head))
        if all(got.get(k) == v for k, v in labels.items()):
            total += float(value)
    return total


class AdmissionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(SERVER.nodes, encoding="utf-8") as f:
            cls.nodes = json.load(f)["items"]

    def post(self, path, review, mutating=None):
        body = review if isinstance(review, (bytes, str)) else json.dumps(review)
        status, headers, raw = SERVER.request("POST", path, body=body)
        if isinstance(review, (bytes, str)):
            return status, headers, raw
        if mutating is None:
            mutating = path.startswith("/mutate")
        return check_contract(self, status, headers, raw, review, mutating)

    def patched(self, obj, response):
        ops = json.loads(base64.b64decode(response["patch"]))
        return jsonpatch.JsonPatch(ops).apply(copy.deepcopy(obj))

    def resubmit(self, review, new_object):
        again = copy.deepcopy(review)
        again["request"]["object"] = new_object
        again["request"]["uid"] = again["request"]["uid"][:-4] + "beef"
        return again

    # --- the seed scenarios -------------------------------------------------

    def test_cuda124_on_driver_535_is_denied(self):
        review = fixture("pod-cuda124.json")
        for path in ("/validate", "/mutate"):
            r = self.post(path, review)
            self.assertFalse(r["allowed"])
            self.assertEqual(r["status"]["code"], 403)
            self.assertEqual(r["status"]["reason"], "Forbidden")
            msg = r["status"]["message"]
            self.assertIn('container "train" needs CUDA 12.4 (from env); 8 of 8 candidate nodes '
                          "cannot run it: driver 535.129.03 supports up to CUDA 12.2", msg)
            self.assertIn("upgrade the driver to 550.54.14 or newer", msg)
            self.assertEqual(r["auditAnnotations"]["verdict"], "fail")
            self.assertIn("550.54.14", r["auditAnnotations"]["cuda-driver"] +
                          r["auditAnnotations"]["findings"])

    def test_one_log_line_per_decision(self):
        review = fixture("pod-cuda124.json")
        review["request"]["uid"] = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"
        r = self.post("/validate", review)
        self.assertFalse(r["allowed"])
        lines = SERVER.log_lines_with(review["request"]["uid"], 1)
        self.assertEqual(len(lines), 1, lines)
        line = lines[0]
        record = json.loads(line[line.index("{"):])
        pod = review["request"]["object"]
        self.assertEqual(record["uid"], review["request"]["uid"])
        self.assertEqual(record["namespace"], review["request"]["namespace"])
        self.assertEqual(record["kind"], "Pod")
        self.assertEqual(record["name"], pod["metadata"]["name"])
        self.assertEqual(record["verdict"], "fail")
        self.assertEqual(record["decision"], "deny")
        self.assertEqual(record["endpoint"], "validate")
        self.assertIsInstance(record["duration_ms"], (int, float))
        self.assertGreaterEqual(record["duration_ms"], 0)
        # No request bodies in logs: not the image, not the environment.
        container = pod["spec"]["containers"][0]
        self.assertNotIn(container["image"], line)
        for env in container.get("env", []):
            self.assertNotIn(json.dumps(env), line)
        # A second decision is a second line, written without a shutdown.
        self.post("/validate", review)
        self.assertEqual(len(SERVER.log_lines_with(review["request"]["uid"], 2)), 2)

    def test_arch80_is_pinned_to_the_a100s(self):
        review = fixture("pod-arch80.json")
        original = review["request"]["object"]
        self.assertEqual(candidates(original["spec"], self.nodes), sorted(FLEET_T4 + FLEET_A100))
        r = self.post("/mutate", review)
        self.assertTrue(r["allowed"])
        self.assertIn("patch", r)
        pinned = self.patched(original, r)
        self.assertEqual(candidates(pinned["spec"], self.nodes), sorted(FLEET_A100))
        self.assertIn("cudagate.io/pinned", pinned["metadata"]["annotations"])
        # Everything but the pin is as it was.
        rest = copy.deepcopy(pinned)
        del rest["spec"]["affinity"]
        del rest["metadata"]["annotations"]["cudagate.io/pinned"]
        self.assertEqual(rest, original)

        again = self.resubmit(review, pinned)
        r2 = self.post("/mutate", again)
        self.assertTrue(r2["allowed"])
        self.assertNotIn("patch", r2)
        self.assertEqual(r2["auditAnnotations"]["verdict"], "pass")
        self.assertEqual(r2["auditAnnotations"]["candidates"], "4")
        self.assertTrue(self.post("/validate", again)["allowed"])

    def test_existing_affinity_shapes(self):
        review = fixture("pod-arch80-affinity.json")
        original = review["request"]["object"]
        before = candidates(original["spec"], self.nodes)
        r = self.post("/mutate", review)
        pinned = self.patched(original, r)
        self.assertEqual(candidates(pinned["spec"], self.nodes),
                         [n for n in before if n in FLEET_A100])
        self.assertEqual(pinned["spec"]["affinity"]["podAntiAffinity"],
                         original["spec"]["affinity"]["podAntiAffinity"])
        r2 = self.post("/mutate", self.resubmit(review, pinned))
        self.assertNotIn("patch", r2)

        # Every starting shape of affinity patches cleanly and pins exactly.
        shapes = [None, {}, {"nodeAffinity": None}, {"nodeAffinity": {}},
                  {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                      {"weight": 1, "preference": {"matchExpressions": [
                          {"key": "zone", "operator": "In", "values": ["a"]}]}}]}},
                  {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}]
        base = fixture("pod-arch80.json")
        for shape in shapes:
            with self.subTest(shape=shape):
                review = copy.deepcopy(base)
                obj = review["request"]["object"]
                if shape is None:
                    obj["spec"].pop("affinity", None)
                else:
                    obj["spec"]["affinity"] = shape
                del obj["metadata"]["annotations"]
                r = self.post("/mutate", review)
                pinned = self.patched(obj, r)
                self.assertEqual(candidates(pinned["spec"], self.nodes), sorted(FLEET_A100))
                self.assertNotIn("patch", self.post("/mutate", self.resubmit(review, pinned)))

    def test_warn_mode_allows_with_warnings(self):
        for name in ("pod-cuda124.json", "pod-arch80.json"):
            for path in ("/validate?mode=warn", "/mutate?mode=warn"):
                with self.subTest(name=name, path=path):
                    r = self.post(path, fixture(name))
                    self.assertTrue(r["allowed"])
                    self.assertNotIn("patch", r)
                    self.assertTrue(r.get("warnings"))
                    self.assertEqual(r["auditAnnotations"]["mode"], "warn")
        r = self.post("/validate?mode=warn", fixture("pod-cuda124.json"))
        self.assertTrue(any("550.54.14" in w for w in r["warnings"]))

    def test_dryrun_is_silent_and_counted(self):
        def count():
            status, _, raw = SERVER.request("GET", "/metrics")
            self.assertEqual(status, 200)
            return metrics_value(raw.decode(), endpoint="validate", verdict="fail",
                                 decision="allow", mode="dryrun")
        before = count()
        r = self.post("/validate?mode=dryrun", fixture("pod-cuda124.json"))
        self.assertTrue(r["allowed"])
        self.assertNotIn("warnings", r)
        self.assertEqual(r["auditAnnotations"]["verdict"], "fail")
        self.assertEqual(r["auditAnnotations"]["enforce-decision"], "deny")
        self.assertEqual(count(), before + 1)
        r = self.post("/mutate?mode=dryrun", fixture("pod-arch80.json"))
        self.assertTrue(r["allowed"])
        self.assertNotIn("patch", r)
        self.assertNotIn("warnings", r)

    def test_request_dry_run_is_evaluated_and_not_counted(self):
        def count():
            _, _, raw = SERVER.request("GET", "/metrics")
            return metrics_value(raw.decode(), endpoint="validate", verdict="fail")
        review = fixture("pod-cuda124.json")
        review["request"]["dryRun"] = True
        before = count()
        r = self.post("/validate", review)
        self.assertFalse(r["allowed"])
        self.assertEqual(count(), before)

    # --- versions and kinds -------------------------------------------------

    def test_v1beta1_is_answered_in_kind(self):
        review = fixture("pod-cuda124.json")
        review["apiVersion"] = "admission.k8s.io/v1beta1"
        r = self.post("/validate", review)
        self.assertFalse(r["allowed"])

    def test_deployment(self):
        review = fixture("deployment-arch80.json")
        r = self.post("/validate", review)
        self.assertTrue(r["allowed"])
        self.assertTrue(any("pinned to them at creation" in w for w in r["warnings"]))
        r = self.post("/mutate", review)
        obj = review["request"]["object"]
        pinned = self.patched(obj, r)
        self.assertEqual(candidates(pinned["spec"]["template"]["spec"], self.nodes), sorted(FLEET_A100))
        self.assertIn("cudagate.io/pinned", pinned["spec"]["template"]["metadata"]["annotations"])
        self.assertNotIn("patch", self.post("/mutate", self.resubmit(review, pinned)))

        # An UPDATE that leaves the template alone is not judged again.
        update = copy.deepcopy(review)
        update["request"]["operation"] = "UPDATE"
        update["request"]["oldObject"] = copy.deepcopy(obj)
        update["request"]["object"]["spec"]["replicas"] = 7
        r = self.post("/mutate", update)
        self.assertNotIn("patch", r)
        self.assertNotIn("auditAnnotations", r)
        update["request"]["object"]["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = "12.4.1"
        r = self.post("/validate", update)
        self.assertFalse(r["allowed"])

    def test_cronjob_v1beta1(self):
        review = fixture("cronjob-arch80-v1beta1.json")
        r = self.post("/mutate", review)
        obj = review["request"]["object"]
        pinned = self.patched(obj, r)
        spec = pinned["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        self.assertEqual(candidates(spec, self.nodes), sorted(FLEET_A100))
        tmeta = pinned["spec"]["jobTemplate"]["spec"]["template"]["metadata"]
        self.assertEqual(tmeta["annotations"]["team"], "vision")
        self.assertIn("cudagate.io/pinned", tmeta["annotations"])
        self.assertNotIn("patch", self.post("/mutate", self.resubmit(review, pinned)))
        self.assertTrue(self.post("/validate", review)["allowed"])

    def test_untouched_requests(self):
        excluded = fixture("pod-cuda124.json")
        excluded["request"]["namespace"] = "kube-system"
        excluded["request"]["object"]["metadata"]["namespace"] = "kube-system"
        update = fixture("pod-cuda124.json")
        update["request"]["operation"] = "UPDATE"
        update["request"]["oldObject"] = copy.deepcopy(update["request"]["object"])
        delete = fixture("pod-cuda124.json")
        delete["request"]["operation"] = "DELETE"
        delete["request"]["oldObject"], delete["request"]["object"] = delete["request"]["object"], None
        status = fixture("pod-cuda124.json")
        status["request"]["subResource"] = "status"
        for name, review in [("excluded namespace", excluded), ("pod update", update),
                             ("delete", delete), ("status subresource", status),
                             ("no GPU", fixture("pod-cpu.json"))]:
            for path in ("/validate", "/mutate"):
                with self.subTest(name=name, path=path):
                    r = self.post(path, review)
                    self.assertTrue(r["allowed"])
                    self.assertNotIn("patch", r)
                    self.assertNotIn("warnings", r)
                    self.assertNotIn("auditAnnotations", r)

    # --- bad input --------------------------------------------------------------

    def test_bad_input_is_400_with_a_json_error(self):
        full = json.dumps(fixture("pod-cuda124.json"))
        cases = [
            ("not JSON", "this is not json", "not JSON"),
            ("truncated JSON", full[: len(full) // 2], "truncated JSON"),
            ("not an AdmissionReview", json.dumps({"apiVersion": "v1", "kind": "Pod"}),
             "expected kind AdmissionReview"),
            ("missing request", json.dumps({"apiVersion": "admission.k8s.io/v1",
                                            "kind": "AdmissionReview"}), "has no request"),
        ]
        for name, body, expected in cases:
            with self.subTest(name=name):
                status, _, raw = self.post("/validate", body)
                self.assertEqual(status, 400, raw[:200])
                self.assertIn(expected, json.loads(raw)["error"])
        status, _, raw = SERVER.request("POST", "/validate?mode=loud", body=full)
        self.assertEqual(status, 400)
        self.assertIn("invalid mode", json.loads(raw)["error"])
        # The server keeps serving.
        self.assertEqual(SERVER.request("GET", "/healthz")[0], 200)

    def test_wrong_field_types_are_denied_naming_the_field(self):
        review = fixture("pod-bad-types.json")
        r = self.post("/validate", review)
        self.assertFalse(r["allowed"])
        self.assertIn("nvidia.com/gpu", r["status"]["message"])
        r = self.post("/validate?mode=warn", review)
        self.assertTrue(r["allowed"])
        self.assertTrue(any("nvidia.com/gpu" in w for w in r["warnings"]))


def main():
    global ARGS, SERVER
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True, help="the cudagate executable")
    parser.add_argument("--source", required=True, help="the repository root")
    ARGS, rest = parser.parse_known_args()
    ARGS.binary = os.path.abspath(ARGS.binary)
    ARGS.source = os.path.abspath(ARGS.source)

    workdir = tempfile.mkdtemp(prefix="cudagate-admission-e2e-")
    result = None
    try:
        SERVER = Server(workdir)
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(AdmissionTest)
        if rest:
            suite = unittest.TestSuite(t for t in suite if any(r in t.id() for r in rest))
        result = unittest.TextTestRunner(verbosity=2).run(suite)
    except Exception as e:  # the server did not start: report it as the failure it is
        print(f"error: {e}", file=sys.stderr)
    finally:
        if SERVER is not None:
            SERVER.stop()
            if result is None or not result.wasSuccessful():
                print("--- serve log (tail) ---", file=sys.stderr)
                print(SERVER.log_text(), file=sys.stderr)
            SERVER.log.close()
        shutil.rmtree(workdir, ignore_errors=True)
    if result is None:
        print("0 passed, 1 failed")
        return 1
    failed = len(result.failures) + len(result.errors)
    print(f"{result.testsRun - failed} passed, {failed} failed")
    return 0 if failed == 0 and result.testsRun > 0 else 1


if __name__ == "__main__":
    sys.exit(main())

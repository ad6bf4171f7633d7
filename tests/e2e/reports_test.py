#!/usr/bin/env python3
"""End-to-end tests of the server's GET /reports over real TLS.

Starts `cudagate serve` (certificates from certs/dev-certs.sh, the T4 + A100
inventory of server_support.py), posts AdmissionReviews with Python's
http.client, and reads /reports back in every format with http.client and
curl: the latest decision per workload, by namespace, never the API
server's dryRun ones.

    python3 reports_test.py --binary build/release/cudagate --source .
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import html.parser

import harness
import server_support
from server_support import CUDA124_POD, Server, make_certs, post, review

BINARY = None
SOURCE = None

GPU_POD_124 = CUDA124_POD
GPU_POD_118 = {
    "containers": [{"name": "nb", "image": "pytorch/pytorch:2.1.2-cuda11.8-cudnn8-runtime",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
}


class ReportsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        server_support.BINARY, server_support.SOURCE = BINARY, SOURCE
        cls.workdir = tempfile.mkdtemp(prefix="cudagate-reports-")
        cls.certs = os.path.join(cls.workdir, "certs")
        make_certs(cls.certs)
        cls.server = Server(cls.workdir, cls.certs).start()

    @classmethod
    def tearDownClass(cls):
        status = cls.server.stop()
        shutil.rmtree(cls.workdir, ignore_errors=True)
        if status != 0:
            raise AssertionError(f"server exit status {status}")

    def admit(self, pod, namespace, name, dry_run=False, path="/validate?mode=warn"):
        _, body = review(pod, namespace=namespace, name=name)
        if dry_run:
            data = json.loads(body)
            data["request"]["dryRun"] = True
            body = json.dumps(data).encode()
        conn = self.server.connect()
        try:
            res, _ = post(conn, path, body)
            self.assertEqual(res.status, 200)
        finally:
            conn.close()

    def get(self, target):
        conn = self.server.connect()
        try:
            conn.request("GET", target)
            res = conn.getresponse()
            return res.status, res.getheader("Content-Type"), res.read().decode()
        finally:
            conn.close()

    def records(self, query=""):
        status, content_type, body = self.get("/reports" + query)
        self.assertEqual(status, 200, body)
        self.assertEqual(content_type, "application/json")
        return {(r["resource"]["namespace"], r["resource"]["name"]): r for r in json.loads(body)}

    def test_latest_decision_per_workload_by_namespace(self):
        self.admit(GPU_POD_124, "reports-ml", "trainer")
        self.admit(GPU_POD_118, "reports-ml", "notebook")
        self.admit(GPU_POD_118, "reports-web", "trainer")
        records = self.records()
        self.assertEqual(records[("reports-ml", "trainer")]["verdict"], "fail")
        self.assertEqual(records[("reports-ml", "notebook")]["verdict"], "pass")
        # Judged again with another spec: the latest decision replaces the first.
        self.admit(GPU_POD_118, "reports-ml", "trainer")
        self.assertEqual(self.records()[("reports-ml", "trainer")]["verdict"], "pass")
        only_web = self.records("?namespace=reports-web")
        self.assertEqual(set(only_web), {("reports-web", "trainer")})

    def test_dry_run_requests_are_not_recorded(self):
        self.admit(GPU_POD_124, "reports-dry", "ghost", dry_run=True)
        self.assertNotIn(("reports-dry", "ghost"), self.records())

    def test_policyreport_and_openreports_formats(self):
        import yaml
        self.admit(GPU_POD_124, "reports-pr", "trainer")
        for fmt, kind in (("policyreport", "PolicyReport"), ("openreports", "Report")):
            status, content_type, body = self.get(f"/reports?format={fmt}&namespace=reports-pr")
            self.assertEqual(status, 200)
            self.assertEqual(content_type, "application/yaml")
            docs = [d for d in yaml.safe_load_all(body) if d]
            self.assertEqual([(d["kind"], d["metadata"]["namespace"]) for d in docs],
                             [(kind, "reports-pr")])
            driver = [r for r in docs[0]["results"] if r["rule"] == "cuda-driver"]
            self.assertEqual(driver[0]["result"], "fail")
            self.assertEqual(docs[0]["summary"]["fail"], 1)

    def test_html_format_with_curl(self):
        self.admit(GPU_POD_124, "reports-html", "trainer")
        curl = shutil.which("curl")
        self.assertIsNotNone(curl, "curl is not installed")
        out = subprocess.run(
            [curl, "-sS", "--fail", "--cacert", os.path.join(self.certs, "ca.crt"),
             f"https://127.0.0.1:{self.server.port}/reports?format=html&namespace=reports-html"],
            capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)

        class Rows(html.parser.HTMLParser):
            rows = []

            def handle_starttag(self, tag, attrs):
                a = dict(attrs)
                if tag == "tr" and a.get("class") == "workload":
                    self.rows.append(a.get("data-verdict"))

        parser = Rows()
        parser.feed(out.stdout)
        self.assertEqual(parser.rows, ["fail"])

    def test_unknown_format_is_400(self):
        status, content_type, body = self.get("/reports?format=csv")
        self.assertEqual(status, 400)
        self.assertIn("unknown format", json.loads(body)["error"])


if __name__ == "__main__":
    sys.exit(harness.main(__name__))

#!/usr/bin/env python3
"""End-to-end tests of `cudagate scan REGISTRY/REPO[:TAG|@DIGEST]` and
`cudagate scan --attach REF` against Debian's docker-registry (the CNCF
distribution registry, which has no referrers API: the referrers tag
schema is what --attach keeps there).

Images are OCI layouts built here from libraries nvcc compiles (NVIDIA's
wheels under build/cuda-tools, or CUDAGATE_CUDA_TOOLS), with gzip and zstd
layers, a layer that deletes a library and a two-platform index, pushed
with skopeo. A registry scan must say what a scan of the same layout with
--oci-layout says; an attached scan is read back over HTTP here and each
field of the artifact checked.

    python3 scan_registry_test.py --binary build/release/cudagate --source .
"""

import base64
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import urllib.error
import urllib.request

import harness
import registry_support as rs
import scan_support as ss
from scan_support import image_manifest, tar_of, write_layout, zstd_compress

BINARY = None
SOURCE = None

SCAN_TYPE = "application/vnd.cudagate.scan.v1+json"
EMPTY_DIGEST = "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
OCI_MANIFEST = ss.OCI_MANIFEST
OCI_INDEX = ss.OCI_INDEX
FACT_KEYS = ["digest", "platform", "cudaRuntime", "cudaCompat", "framework", "files"]



class ScanRegistryTestCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        ss.need_nvcc(SOURCE)
        cls.tmp = tempfile.mkdtemp(prefix="cudagate-scan-registry-test-")
        cls.stoppers = []
        sm = ss.compile_library
        kept = sm(SOURCE, cls.tmp, "libkept", ["-gencode", "arch=compute_80,code=sm_80",
                                               "-gencode", "arch=compute_90,code=compute_90"])
        gone = sm(SOURCE, cls.tmp, "libgone", ["-gencode", "arch=compute_75,code=sm_75"])
        arm = sm(SOURCE, cls.tmp, "libarm", ["-gencode", "arch=compute_90,code=sm_90"])
        base = tar_of([("usr/local/cuda/lib64/libcudart.so.12.4.127", b"runtime"),
                       ("usr/lib/libgone.so", gone)])
        added = tar_of([("opt/app/lib/libkept.so", kept)])
        deleting = tar_of([("usr/lib/.wh.libgone.so", b"")])
        cls.layout = os.path.join(cls.tmp, "layout")
        amd64 = image_manifest(cls.layout, "amd64", [
            ("tar+gzip", base, gzip.compress(base, mtime=0)),
            ("tar+zstd", added, zstd_compress(added)),
            ("tar+gzip", deleting, gzip.compress(deleting, mtime=0))])
        arm_layer = tar_of([("opt/app/lib/libarm.so", arm)])
        arm64 = image_manifest(cls.layout, "arm64", [
            ("tar+zstd", arm_layer, zstd_compress(arm_layer))])
        cls.amd64_digest, cls.arm64_digest = amd64["digest"], arm64["digest"]
        write_layout(cls.layout, "v1", [amd64, arm64])

    @classmethod
    def tearDownClass(cls):
        for stop in reversed(cls.stoppers):
            stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def started(cls, thing):
        cls.stoppers.append(thing.stop)
        return thing

    def write(self, name, content):
        return rs.write_file(self.tmp, name, content)

    def policy(self, name, **registry):
        return rs.registry_policy(self.tmp, name, **registry)

    def scan(self, *args, status=0):
        out = subprocess.run([BINARY, "scan", *args], capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, status, out.stderr)
        self.assertNotIn("Sanitizer", out.stderr)
        return out

    def scan_json(self, *args):
        return json.loads(self.scan(*args, "-o", "json").stdout)

    def get(self, host, path, accept=OCI_MANIFEST, headers=None):
        request = urllib.request.Request(f"http://{host}{path}",
                                         headers={"Accept": accept, **(headers or {})})
        try:
            with urllib.request.urlopen(request, timeout=30) as res:
                return res.status, res.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()


class PlainRegistry(ScanRegistryTestCase):
    """A plain-HTTP registry listed in registry.insecure."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.registry = cls.started(rs.Registry(cls.tmp).start())
        rs.push(cls.layout, "v1", f"{cls.registry.host}/ml/app:v1")

    def setUp(self):
        self.pol = self.policy("plain.yaml", insecure=[self.registry.host], credentials="")

    def test_a_registry_scan_says_what_the_layout_scan_says(self):
        for platform, digest in [("linux/amd64", self.amd64_digest),
                                 ("linux/arm64", self.arm64_digest)]:
            with self.subTest(platform=platform):
                reference = f"{self.registry.host}/ml/app:v1"
                pulled = self.scan_json(reference, "--config", self.pol, "--platform", platform)
                stored = self.scan_json("--oci-layout", f"{self.layout}:v1", "--platform", platform)
                self.assertEqual(pulled.pop("source"), {"kind": "registry", "location": reference})
                self.assertEqual(stored.pop("source")["kind"], "oci-layout")
                self.assertEqual(pulled, stored)
                self.assertEqual(pulled["digest"], digest)
                self.assertEqual(pulled["platform"], platform)
                self.assertEqual(pulled["problems"], [])
        amd64 = self.scan_json(f"{self.registry.host}/ml/app:v1", "--config", self.pol)
        # The third layer deleted libgone.so; the zstd layer's library stays.
        self.assertEqual(amd64["files"], [{"path": "/opt/app/lib/libkept.so", "sass": ["8.0"],
                                           "ptx": ["9.0"]}])
        self.assertEqual(amd64["cudaRuntime"], "12.4.127")
        self.assertEqual(amd64["stats"]["layers"], 3)

    def test_by_digest_and_as_text(self):
        reference = f"{self.registry.host}/ml/app@{self.amd64_digest}"
        text = self.scan(reference, "--config", self.pol).stdout
        self.assertIn(f"image:         registry {reference}", text)
        self.assertIn(f"digest:        {self.amd64_digest}", text)
        self.assertIn("/opt/app/lib/libkept.so", text)

    def test_errors_name_the_image(self):
        missing = self.scan(f"{self.registry.host}/ml/none:v1", "--config", self.pol, status=2)
        self.assertIn("ml/none", missing.stderr)
        self.assertIn("404", missing.stderr)
        no_platform = self.scan(f"{self.registry.host}/ml/app:v1", "--config", self.pol,
                                "--platform", "linux/s390x", status=2)
        self.assertIn("no manifest for linux/s390x (it has linux/amd64, linux/arm64)",
                      no_platform.stderr)
        # Not listed as insecure: TLS to a plain-HTTP registry fails.
        self.scan(f"{self.registry.host}/ml/app:v1", "--config",
                  self.policy("tls.yaml", credentials=""), status=2)

    def referrers(self, digest):
        status, body = self.get(self.registry.host,
                                f"/v2/ml/app/manifests/sha256-{digest.split(':')[1]}", OCI_INDEX)
        self.assertEqual(status, 200, body)
        return json.loads(body)

    def check_artifact(self, entry, subject_digest, scan):
        """Every field of the artifact `entry` (a referrers descriptor) names."""
        status, body = self.get(self.registry.host, f"/v2/ml/app/manifests/{entry['digest']}")
        self.assertEqual(status, 200, body)
        self.assertEqual(entry["digest"], "sha256:" + hashlib.sha256(body).hexdigest())
        self.assertEqual(entry["size"], len(body))
        self.assertEqual(entry["mediaType"], OCI_MANIFEST)
        self.assertEqual(entry["artifactType"], SCAN_TYPE)
        manifest = json.loads(body)
        self.assertEqual(manifest["schemaVersion"], 2)
        self.assertEqual(manifest["mediaType"], OCI_MANIFEST)
        self.assertEqual(manifest["artifactType"], SCAN_TYPE)
        self.assertEqual(manifest["config"], {"mediaType": "application/vnd.oci.empty.v1+json",
                                              "digest": EMPTY_DIGEST, "size": 2})
        status, empty = self.get(self.registry.host, f"/v2/ml/app/blobs/{EMPTY_DIGEST}")
        self.assertEqual((status, empty), (200, b"{}"))
        self.assertEqual(len(manifest["layers"]), 1)
        layer = manifest["layers"][0]
        self.assertEqual(layer["mediaType"], SCAN_TYPE)
        status, document = self.get(self.registry.host, f"/v2/ml/app/blobs/{layer['digest']}")
        self.assertEqual(status, 200)
        self.assertEqual(layer["size"], len(document))
        self.assertEqual(json.loads(document), scan)
        status, subject = self.get(self.registry.host, f"/v2/ml/app/manifests/{subject_digest}")
        self.assertEqual(manifest["subject"], {"mediaType": OCI_MANIFEST, "digest": subject_digest,
                                               "size": len(subject)})
        annotations = manifest["annotations"]
        self.assertEqual(entry["annotations"], annotations)
        self.assertRegex(annotations["org.opencontainers.image.created"],
                         r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        facts_text = annotations["io.cudagate.scan.facts"]
        self.assertNotRegex(facts_text, r"\s")
        facts = json.loads(facts_text)
        self.assertEqual(list(facts), FACT_KEYS)
        self.assertEqual(facts, {key: scan[key] for key in FACT_KEYS})
        self.assertEqual(facts["digest"], subject_digest)

    def test_attach_pushes_the_scan_as_a_referrer(self):
        repo = f"{self.registry.host}/ml/app"
        first = self.scan(f"{repo}:v1", "--config", self.pol, "--platform", "linux/arm64",
                          "--attach", f"{repo}:v1", "-o", "json")
        scan = json.loads(first.stdout)
        self.assertEqual(scan["digest"], self.arm64_digest)
        self.assertRegex(first.stderr, rf"attached scan sha256:[0-9a-f]{{64}} to {re.escape(repo)}"
                                       rf":v1@{self.arm64_digest} \(referrers tag sha256-")
        index = self.referrers(self.arm64_digest)
        self.assertEqual(index["mediaType"], OCI_INDEX)
        self.assertEqual(len(index["manifests"]), 1)
        self.check_artifact(index["manifests"][0], self.arm64_digest, scan)

        # A second scan, of the layout this time: both descriptors are kept.
        second = self.scan("--oci-layout", f"{self.layout}:v1", "--platform", "linux/arm64",
                           "--config", self.pol, "--attach", f"{repo}:v1", "-o", "json")
        index = self.referrers(self.arm64_digest)
        self.assertEqual(len(index["manifests"]), 2)
        self.check_artifact(index["manifests"][1], self.arm64_digest, json.loads(second.stdout))
        self.assertNotEqual(index["manifests"][0]["digest"], index["manifests"][1]["digest"])

    def test_attach_a_root_file_system_scan_records_the_subject(self):
        rootfs = os.path.join(self.tmp, "rootfs", "usr", "lib")
        os.makedirs(rootfs, exist_ok=True)
        shutil.copy(os.path.join(self.tmp, "libkept.so"), rootfs)
        out = self.scan("--rootfs", os.path.dirname(os.path.dirname(rootfs)), "--config", self.pol,
                        "--attach", f"{self.registry.host}/ml/app@{self.amd64_digest}", "-o", "json")
        scan = json.loads(out.stdout)
        self.assertEqual(scan["digest"], self.amd64_digest)
        index = self.referrers(self.amd64_digest)
        self.check_artifact(index["manifests"][-1], self.amd64_digest, scan)

    def test_attach_to_another_manifest_is_refused(self):
        before = self.registry.requests("PUT", r"/manifests/")
        out = self.scan(f"{self.registry.host}/ml/app:v1", "--config", self.pol,
                        "--platform", "linux/amd64",
                        "--attach", f"{self.registry.host}/ml/app@{self.arm64_digest}", status=2)
        self.assertIn(self.amd64_digest, out.stderr)
        self.assertIn(self.arm64_digest, out.stderr)
        self.assertEqual(self.registry.requests("PUT", r"/manifests/"), before)


class TokenRegistry(ScanRegistryTestCase):
    """A registry whose token endpoint grants pull and push to one user."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.issuer = cls.started(rs.TokenServer(cls.tmp, "pusher", "token-pass-789").start())
        cls.registry = cls.started(rs.Registry(
            cls.tmp, auth=("token", cls.issuer.realm, cls.issuer.service, cls.issuer.issuer,
                           cls.issuer.cert)).start())
        rs.push(cls.layout, "v1", f"{cls.registry.host}/ml/app:v1", creds="pusher:token-pass-789")

    def test_pull_and_attach_with_tokens(self):
        creds = self.write("token.json", {"auths": {self.registry.host: {"auth": base64.b64encode(
            b"pusher:token-pass-789").decode()}}})
        pol = self.policy("token.yaml", insecure=[self.registry.host], credentials=creds)
        reference = f"{self.registry.host}/ml/app:v1"
        before = len(self.issuer.issued)
        out = self.scan(reference, "--config", pol, "--attach", reference, "-o", "json")
        scan = json.loads(out.stdout)
        self.assertEqual(scan["digest"], self.amd64_digest)
        scopes = [scope for scope, granted in self.issuer.issued[before:] if granted]
        self.assertIn(["repository:ml/app:pull"], scopes)
        self.assertIn(["repository:ml/app:pull,push"], scopes)
        for secret in ["token-pass-789", *self.issuer.tokens]:
            self.assertNotIn(secret, out.stderr)
        # The tag index, read with a token of our own.
        token = json.loads(urllib.request.urlopen(urllib.request.Request(
            f"{self.issuer.realm}?service={self.issuer.service}&scope=repository:ml/app:pull",
            headers={"Authorization": "Basic " + base64.b64encode(
                b"pusher:token-pass-789").decode()}), timeout=30).read())["token"]
        status, body = self.get(self.registry.host,
                                f"/v2/ml/app/manifests/sha256-{self.amd64_digest.split(':')[1]}",
                                OCI_INDEX, {"Authorization": "Bearer " + token})
        self.assertEqual(status, 200, body)
        self.assertEqual([m["artifactType"] for m in json.loads(body)["manifests"]], [SCAN_TYPE])
        # Without credentials the issuer refuses, naming the scope.
        anonymous = self.scan(reference, "--config",
                              self.policy("anon.yaml", insecure=[self.registry.host],
                                          credentials=""), status=2)
        self.assertIn("refused an anonymous request", anonymous.stderr)


if __name__ == "__main__":
    sys.exit(harness.main(__name__))

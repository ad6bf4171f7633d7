#!/usr/bin/env python3
"""End-to-end tests of image metadata read from real OCI registries.

The registries are Debian's docker-registry (the CNCF distribution
registry), started on loopback ports by the tests: plain HTTP (listed in
registry.insecure), TLS with a test CA (registry.caFile), htpasswd Basic
auth, and token auth whose token endpoint is a test issuer signing JWTs
the registry verifies against its rootcertbundle. Images are OCI layouts
built here with configs shaped as nvidia/cuda, NGC PyTorch and vLLM have
them, pushed with skopeo. Around them: servers that redirect blobs to
another loopback server, delay, rate-limit, tamper or never answer.

`cudagate check --image` and `cudagate serve` read them with the same
client.

    python3 registry_test.py --binary build/dev/cudagate --source .
"""

import base64
import hashlib
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import harness
import registry_support as rs
import server_support as st

BINARY = None
SOURCE = None

# The requirement of nvidia/cuda:12.4.1 images, kept to its driver-470
# groups (the images also list 525 and 535): CUDA 12.4, or driver 470 on a
# datacenter GPU through forward compatibility.
NVIDIA_REQUIRE_CUDA_124 = (
    "cuda>=12.4 brand=tesla,driver>=470,driver<471 brand=unknown,driver>=470,driver<471 "
    "brand=nvidia,driver>=470,driver<471 brand=nvidiartx,driver>=470,driver<471 "
    "brand=geforce,driver>=470,driver<471 brand=quadro,driver>=470,driver<471")

CUDA_124 = rs.image_config(
    {"NVARCH": "x86_64", "NVIDIA_REQUIRE_CUDA": NVIDIA_REQUIRE_CUDA_124,
     "NV_CUDA_CUDART_VERSION": "12.4.127-1", "CUDA_VERSION": "12.4.1",
     "LD_LIBRARY_PATH": "/usr/local/nvidia/lib:/usr/local/nvidia/lib64",
     "NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"},
    {"maintainer": "NVIDIA CORPORATION <cudatools@nvidia.com>"})

# NGC PyTorch 24.03: CUDA 12.4 with the compat package; its own arch list.
NGC_PYTORCH = rs.image_config(
    {"CUDA_VERSION": "12.4.0.041", "CUDA_DRIVER_VERSION": "550.54.14",
     "NVIDIA_REQUIRE_CUDA": "cuda>=9.0", "NVIDIA_PYTORCH_VERSION": "24.03",
     "PYTORCH_VERSION": "2.3.0a0+40ec155",
     "TORCH_CUDA_ARCH_LIST": "5.2 6.0 6.1 7.0 7.2 7.5 8.0 8.6 8.7 9.0+PTX"},
    {"com.nvidia.build.id": "85286408", "com.nvidia.pytorch.version": "2.3.0a0+40ec155"})

# vLLM's multi-arch image: the arm64 build (for GH200) differs.
VLLM_AMD64 = rs.image_config(
    {"CUDA_VERSION": "12.4.1", "TORCH_CUDA_ARCH_LIST": "7.0 7.5 8.0 8.6 8.9 9.0+PTX"})
VLLM_ARM64 = rs.image_config(
    {"CUDA_VERSION": "12.8.1", "TORCH_CUDA_ARCH_LIST": "9.0 10.0+PTX"}, architecture="arm64",
    variant="v8")

UBUNTU = rs.image_config({"LANG": "C.UTF-8"})


def node(name, driver, runtime, cc, product, family, arch="amd64"):
    n = st.gfd_node(name, driver, runtime, cc, product, family)
    n["metadata"]["labels"]["kubernetes.io/arch"] = arch
    n["metadata"]["labels"]["kubernetes.io/os"] = "linux"
    return n


FLEET_535 = [node("t4-535", "535.129.03", "12.2", "7.5", "Tesla-T4", "turing")]
FLEET_470 = [node("t4-470", "470.223.02", "11.4", "7.5", "Tesla-T4", "turing")]
FLEET_GH200 = [node("gh200-570", "570.86.15", "12.8", "9.0", "NVIDIA-GH200-480GB", "hopper",
                    arch="arm64")]
FLEET_H100 = [node("h100-570", "570.86.15", "12.8", "9.0", "NVIDIA-H100-80GB-HBM3", "hopper")]


def gpu_pod(image):
    return {"containers": [{"name": "main", "image": image,
                            "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}


class RegistryTestCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        st.BINARY, st.SOURCE = BINARY, SOURCE
        cls.tmp = tempfile.mkdtemp(prefix="cudagate-registry-test-")
        cls.stoppers = []
        cls.layouts = {}
        for name, tag, configs in [("cuda", "12.4", [CUDA_124]), ("pytorch", "24.03-py3", [NGC_PYTORCH]),
                                   ("vllm", "v0.6", [VLLM_AMD64, VLLM_ARM64]),
                                   ("ubuntu", "22.04", [UBUNTU])]:
            layout = os.path.join(cls.tmp, "layouts", name)
            digests = rs.oci_layout(layout, tag, configs)
            cls.layouts[name] = (layout, tag, digests)

    @classmethod
    def tearDownClass(cls):
        statuses = [stop() for stop in reversed(cls.stoppers)]
        server = getattr(cls, "server", None)
        tail = server.log_tail() if server else ""
        shutil.rmtree(cls.tmp, ignore_errors=True)
        # Server.stop() returns the exit status after SIGTERM: 0 when it
        # drained cleanly (and, in a sanitizer build, found nothing).
        if server is not None and statuses[-1 - cls.stoppers.index(server.stop)] != 0:
            raise AssertionError(f"server exited with {statuses} after SIGTERM:\n{tail}")

    @classmethod
    def started(cls, thing):
        cls.stoppers.append(thing.stop)
        return thing

    @classmethod
    def push_all(cls, host, names=None, **kw):
        for name in names or cls.layouts:
            layout, tag, _ = cls.layouts[name]
            rs.push(layout, tag, f"{host}/ml/{name}:{tag}", **kw)

    def write(self, name, content):
        return rs.write_file(self.tmp, name, content)

    def policy(self, name, **registry):
        return rs.registry_policy(self.tmp, name, **registry)

    def check(self, image, nodes, policy, *extra):
        nodes_file = self.write(f"nodes-{abs(hash(json.dumps(nodes)))}.json", st.node_list(*nodes))
        out = subprocess.run([BINARY, "check", "--image", image, "--nodes", nodes_file,
                              "--config", policy, "-o", "json", "--log-level", "debug", *extra],
                             capture_output=True, text=True, timeout=120)
        self.assertIn(out.returncode, (0, 1), out.stderr)
        self.assertNotIn("Sanitizer", out.stderr)
        return json.loads(out.stdout), out.stderr


def _upload_blob(port, repo, data):
    """Pushes one blob (POST, then one PUT of the whole); its digest."""
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", f"/v2/{repo}/blobs/uploads/")
    res = conn.getresponse()
    res.read()
    location = res.getheader("Location")
    location = location[location.index("/v2/"):]
    sep = "&" if "?" in location else "?"
    conn.request("PUT", f"{location}{sep}digest={digest}", body=data,
                 headers={"Content-Type": "application/octet-stream"})
    res = conn.getresponse()
    res.read()
    conn.close()
    if res.status != 201:
        raise AssertionError(f"blob upload to {repo}: {res.status}")
    return digest


def _put_manifest(port, repo, reference, body, media_type):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("PUT", f"/v2/{repo}/manifests/{reference}", body=body,
                 headers={"Content-Type": media_type})
    res = conn.getresponse()
    res.read()
    conn.close()
    if res.status != 201:
        raise AssertionError(f"manifest {repo}:{reference}: {res.status}")


def attach_scan(port, repo, subject, files):
    """Attaches a scan of `subject` by hand, as a registry without the
    referrers API keeps it: the artifact's manifest, and the referrers tag's
    index listing it with its annotations (docs/contract.md 9.2)."""
    artifact_type = "application/vnd.cudagate.scan.v1+json"
    facts = {"digest": subject, "platform": "linux/amd64", "cudaRuntime": "12.4.127",
             "cudaCompat": None, "framework": None, "files": files}
    scan = json.dumps(dict(facts, source={"kind": "registry", "location": repo}),
                      separators=(",", ":")).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", f"/v2/{repo}/manifests/{subject}",
                 headers={"Accept": "application/vnd.oci.image.manifest.v1+json"})
    subject_size = len(conn.getresponse().read())
    conn.close()
    empty = _upload_blob(port, repo, b"{}")
    layer = _upload_blob(port, repo, scan)
    annotations = {"org.opencontainers.image.created": "2025-03-01T10:00:00Z",
                   "io.cudagate.scan.facts": json.dumps(facts, separators=(",", ":"))}
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "artifactType": artifact_type,
        "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": empty, "size": 2},
        "layers": [{"mediaType": artifact_type, "digest": layer, "size": len(scan)}],
        "subject": {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": subject,
                    "size": subject_size},
        "annotations": annotations}).encode()
    digest = "sha256:" + hashlib.sha256(manifest).hexdigest()
    _put_manifest(port, repo, digest, manifest, "application/vnd.oci.image.manifest.v1+json")
    index = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "digest": digest, "size": len(manifest), "artifactType": artifact_type,
                       "annotations": annotations}]}).encode()
    _put_manifest(port, repo, "sha256-" + subject.split(":", 1)[1], index,
                  "application/vnd.oci.image.index.v1+json")


class PlainRegistry(RegistryTestCase):
    """A plain-HTTP registry, listed in registry.insecure."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.registry = cls.started(rs.Registry(cls.tmp).start())
        cls.push_all(cls.registry.host)
        # The same image as Docker schema 2 (skopeo converts on push).
        layout, tag, _ = cls.layouts["cuda"]
        rs.push(layout, tag, f"{cls.registry.host}/ml/cuda-v2s2:{tag}", format="v2s2")

    def setUp(self):
        self.pol = self.policy("plain.yaml", insecure=[self.registry.host])

    def image(self, name):
        return f"{self.registry.host}/ml/{name}:{self.layouts[name][1]}"

    def test_cuda_12_4_from_the_config_is_denied_on_535(self):
        record, _ = self.check(self.image("cuda"), FLEET_535, self.pol)
        self.assertEqual(record["verdict"], "fail")
        container = record["containers"][0]
        self.assertEqual(container["cuda"], {"value": "12.4", "source": "registry"})
        self.assertEqual(container["require"]["source"], "registry")
        self.assertIn("driver", json.dumps(record["groups"][0]["findings"]))

    def test_docker_schema_2_manifests_read_the_same(self):
        record, _ = self.check(f"{self.registry.host}/ml/cuda-v2s2:12.4", FLEET_535, self.pol)
        self.assertEqual(record["verdict"], "fail")
        self.assertEqual(record["containers"][0]["cuda"]["source"], "registry")

    def test_brand_groups_admit_it_on_a_470_datacenter_gpu(self):
        # libnvidia-container: a brand=tesla,driver>=470,driver<471 group
        # satisfies NVIDIA_REQUIRE_CUDA on a Tesla GPU with driver 470.
        record, _ = self.check(self.image("cuda"), FLEET_470, self.pol)
        self.assertEqual(record["verdict"], "pass", json.dumps(record, indent=1))
        self.assertEqual(record["containers"][0]["require"]["source"], "registry")

    def test_arch_list_from_the_config(self):
        record, _ = self.check(self.image("pytorch"), FLEET_H100, self.pol)
        container = record["containers"][0]
        self.assertEqual(container["archs"]["source"], "registry")
        self.assertIn("9.0", container["archs"]["value"])
        self.assertEqual(record["verdict"], "pass")

    def test_index_resolves_to_the_platform_of_the_nodes(self):
        amd, _ = self.check(self.image("vllm"), FLEET_H100, self.pol)
        arm, _ = self.check(self.image("vllm"), FLEET_GH200, self.pol)
        self.assertEqual(amd["containers"][0]["cuda"], {"value": "12.4", "source": "registry"})
        self.assertEqual(arm["containers"][0]["cuda"], {"value": "12.8", "source": "registry"})
        self.assertIn("10.0", arm["containers"][0]["archs"]["value"])
        self.assertNotIn("10.0", amd["containers"][0]["archs"]["value"])
        # registry.platform decides when the nodes do not say.
        unlabelled = json.loads(json.dumps(FLEET_H100))
        del unlabelled[0]["metadata"]["labels"]["kubernetes.io/arch"]
        arm_default = self.policy("arm.yaml", insecure=[self.registry.host], platform="linux/arm64")
        by_policy, _ = self.check(self.image("vllm"), unlabelled, arm_default)
        self.assertEqual(by_policy["containers"][0]["cuda"]["value"], "12.8")

    def test_an_image_without_cuda_metadata_and_a_missing_image_are_unknown(self):
        record, _ = self.check(self.image("ubuntu"), FLEET_535, self.pol)
        self.assertEqual(record["verdict"], "unknown")
        missing, stderr = self.check(f"{self.registry.host}/ml/nothing:1.0", FLEET_535, self.pol)
        self.assertEqual(missing["verdict"], "unknown")
        self.assertIn("not found (404)", stderr)

    def test_pinned_by_digest_skips_the_tag(self):
        manifest_digest = self.manifest_digest("cuda", "12.4")
        before = len(self.registry.requests("GET", r"/v2/ml/cuda/manifests/12\.4$"))
        record, _ = self.check(f"{self.registry.host}/ml/cuda@{manifest_digest}", FLEET_535, self.pol)
        self.assertEqual(record["containers"][0]["cuda"]["source"], "registry")
        self.assertEqual(len(self.registry.requests("GET", r"/v2/ml/cuda/manifests/12\.4$")), before)
        self.assertTrue(self.registry.requests("GET", "/v2/ml/cuda/manifests/" + manifest_digest))

    def test_a_scan_attached_at_the_referrers_tag_is_asked_for(self):
        # Debian's registry (distribution 2.8) has no referrers API: the
        # lookup asks it (404), then the referrers tag sha256-<hex>, where
        # an attached scan is listed with its facts.
        layout, tag, _ = self.layouts["cuda"]
        for repo, files in (("scanned", [{"path": "/opt/k.so", "sass": ["9.0a"], "ptx": ["9.0"]}]),
                            ("badscan", [{"path": "/opt/k.so", "sass": ["9.0b"], "ptx": []}])):
            rs.push(layout, tag, f"{self.registry.host}/ml/{repo}:{tag}")
            subject = self.manifest_digest(repo, tag)
            attach_scan(self.registry.port, f"ml/{repo}", subject, files)
            record, stderr = self.check(f"{self.registry.host}/ml/{repo}:{tag}", FLEET_535,
                                        self.pol)
            hex_digest = subject.split(":", 1)[1]
            self.assertEqual([status for _, status in self.registry.requests(
                "GET", rf"^/v2/ml/{repo}/referrers/{subject}\?artifactType=")], [404])
            self.assertEqual([status for _, status in self.registry.requests(
                "GET", rf"^/v2/ml/{repo}/manifests/sha256-{hex_digest}$")], [200])
            if repo == "badscan":
                # A warning naming the referrer and the field; the config still counts.
                self.assertIn(f"not read: referrers tag {self.registry.host}/ml/{repo}:sha256-",
                              stderr)
                self.assertIn("annotation io.cudagate.scan.facts: files[0].sass[0]", stderr)
                self.assertEqual(record["containers"][0]["cuda"]["source"], "registry")
            else:
                self.assertNotIn("not read:", stderr)

    def manifest_digest(self, name, tag):
        conn = http.client.HTTPConnection("127.0.0.1", self.registry.port, timeout=10)
        conn.request("HEAD", f"/v2/ml/{name}/manifests/{tag}",
                     headers={"Accept": "application/vnd.oci.image.manifest.v1+json"})
        res = conn.getresponse()
        res.read()
        conn.close()
        return res.getheader("Docker-Content-Digest")

    def test_offline_reads_nothing(self):
        record, _ = self.check(self.image("cuda"), FLEET_535, self.pol, "--offline")
        self.assertNotEqual(record["containers"][0]["cuda"].get("source"), "registry")

    def test_plain_http_only_when_listed_insecure(self):
        strict = self.policy("strict.yaml")
        record, stderr = self.check(self.image("cuda"), FLEET_535, strict)
        self.assertEqual(record["verdict"], "unknown")
        self.assertIn("connecting with TLS", stderr)

    def test_audit_reads_each_image_once_with_the_same_client(self):
        layout, tag, _ = self.layouts["cuda"]
        rs.push(layout, tag, f"{self.registry.host}/ml/audited:{tag}")
        image = f"{self.registry.host}/ml/audited:{tag}"
        manifest = os.path.join(self.tmp, "audited")
        os.makedirs(manifest, exist_ok=True)
        for name in ("train-a", "train-b"):
            with open(os.path.join(manifest, f"{name}.json"), "w") as f:
                json.dump({"apiVersion": "apps/v1", "kind": "Deployment",
                           "metadata": {"name": name, "namespace": "ml"},
                           "spec": {"selector": {"matchLabels": {"app": name}},
                                    "template": {"metadata": {"labels": {"app": name}},
                                                 "spec": gpu_pod(image)}}}, f)
        nodes_file = self.write("audit-nodes.json", st.node_list(*FLEET_535))
        out = subprocess.run([BINARY, "audit", manifest, "--nodes", nodes_file, "--config",
                              self.pol, "--format", "json", "--fail-on", "never"],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        records = json.loads(out.stdout)
        self.assertEqual(len(records), 2)
        for record in records:
            self.assertEqual(record["verdict"], "fail")
            self.assertEqual(record["containers"][0]["cuda"],
                             {"value": "12.4", "source": "registry"})
        # Manifests, not the referrers tag (sha256-<hex>) asked for a scan.
        manifests = r"^/v2/ml/audited/manifests/(?!sha256-)"
        self.assertEqual(len(self.registry.requests("GET", manifests)), 1)
        offline = subprocess.run([BINARY, "audit", "--offline", manifest, "--nodes", nodes_file,
                                  "--config", self.pol, "--format", "json", "--fail-on", "never"],
                                 capture_output=True, text=True, timeout=120)
        self.assertNotEqual(json.loads(offline.stdout)[0]["containers"][0]["cuda"].get("source"),
                            "registry")
        self.assertEqual(len(self.registry.requests("GET", manifests)), 1)

    def test_a_redirect_for_blobs_to_another_server_is_followed(self):
        # The blob store answers blob requests with 307 to the registry
        # itself, another loopback server, as S3-backed registries do.
        def decide(handler):
            if "/blobs/" in handler.path:
                return 307, {"Location": f"http://{self.registry.host}{handler.path}"}, b""
            return None
        front = self.started(rs.FrontServer(self.registry.host, decide).start())
        pol = self.policy("redirect.yaml", insecure=[front.host, self.registry.host])
        record, _ = self.check(f"{front.host}/ml/pytorch:24.03-py3", FLEET_H100, pol)
        self.assertEqual(record["containers"][0]["archs"]["source"], "registry")
        self.assertTrue(any("/blobs/" in p for p in front.seen))

    def test_a_config_not_matching_its_digest_is_refused(self):
        def decide(handler):
            if "/blobs/" in handler.path:
                body = json.dumps(rs.image_config({"CUDA_VERSION": "11.8.0"})).encode()
                return 200, {"Content-Type": "application/octet-stream"}, body
            return None
        front = self.started(rs.FrontServer(self.registry.host, decide).start())
        pol = self.policy("tamper.yaml", insecure=[front.host])
        record, stderr = self.check(f"{front.host}/ml/cuda:12.4", FLEET_535, pol)
        self.assertNotEqual(record["containers"][0]["cuda"].get("source"), "registry")
        self.assertIn("does not match its digest", stderr)

    def test_a_429_is_honoured(self):
        def decide(handler):
            return 429, {"Retry-After": "30", "Content-Type": "application/json"}, \
                b'{"errors":[{"code":"TOOMANYREQUESTS"}]}'
        front = self.started(rs.FrontServer(self.registry.host, decide).start())
        pol = self.policy("limited.yaml", insecure=[front.host])
        record, stderr = self.check(f"{front.host}/ml/cuda:12.4", FLEET_535, pol)
        self.assertEqual(record["verdict"], "unknown")
        self.assertIn("rate-limited (429)", stderr)


class TlsAndAuthRegistries(RegistryTestCase):
    """TLS with a test CA; htpasswd Basic auth; token auth."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        certs = os.path.join(cls.tmp, "certs")
        os.makedirs(certs)
        cls.ca, crt, key = rs.make_ca_and_server_cert(certs)
        cls.tls = cls.started(rs.Registry(cls.tmp, tls=(crt, key)).start())
        cert_dir = os.path.join(cls.tmp, "skopeo-certs")
        os.makedirs(cert_dir)
        shutil.copy(cls.ca, os.path.join(cert_dir, "ca.crt"))
        cls.push_all(cls.tls.host, ["cuda"], tls_verify=True, cert_dir=cert_dir)

        htpasswd = os.path.join(cls.tmp, "htpasswd")
        with open(htpasswd, "w") as f:
            f.write(rs.htpasswd_line("ml-robot", "basic-pass-123"))
        cls.basic = cls.started(rs.Registry(cls.tmp, auth=("htpasswd", htpasswd)).start())
        cls.push_all(cls.basic.host, ["cuda"], creds="ml-robot:basic-pass-123")

        cls.issuer = cls.started(rs.TokenServer(cls.tmp, "puller", "token-pass-456").start())
        cls.token = cls.started(rs.Registry(
            cls.tmp, auth=("token", cls.issuer.realm, cls.issuer.service, cls.issuer.issuer,
                           cls.issuer.cert)).start())
        cls.push_all(cls.token.host, ["cuda"], creds="puller:token-pass-456")

    def credentials(self, name, auths):
        return self.write(name, {"auths": {host: {"auth": base64.b64encode(
            f"{user}:{password}".encode()).decode()} for host, (user, password) in auths.items()}})

    def test_tls_verified_against_the_ca_file(self):
        pol = self.policy("tls.yaml", caFile=self.ca)
        record, _ = self.check(f"{self.tls.host}/ml/cuda:12.4", FLEET_535, pol)
        self.assertEqual(record["containers"][0]["cuda"]["source"], "registry")
        without, stderr = self.check(f"{self.tls.host}/ml/cuda:12.4", FLEET_535, self.policy("noca.yaml"))
        self.assertNotEqual(without["containers"][0]["cuda"].get("source"), "registry")
        self.assertIn("certificate verify failed", stderr)

    def test_basic_credentials_from_a_dockerconfigjson_file(self):
        creds = self.credentials("basic.json", {self.basic.host: ("ml-robot", "basic-pass-123")})
        pol = self.policy("basic.yaml", insecure=[self.basic.host], credentials=creds)
        record, stderr = self.check(f"{self.basic.host}/ml/cuda:12.4", FLEET_535, pol)
        self.assertEqual(record["containers"][0]["cuda"]["source"], "registry", stderr)

    def test_a_401_without_credentials(self):
        pol = self.policy("nocreds.yaml", insecure=[self.basic.host], credentials="")
        record, stderr = self.check(f"{self.basic.host}/ml/cuda:12.4", FLEET_535, pol)
        self.assertEqual(record["verdict"], "unknown")
        self.assertIn(f"none are configured for {self.basic.host}", stderr)

    def test_wrong_credentials_never_show_in_errors(self):
        creds = self.credentials("wrong.json", {self.basic.host: ("ml-robot", "Wr0ng-Secret")})
        pol = self.policy("wrong.yaml", insecure=[self.basic.host], credentials=creds)
        record, stderr = self.check(f"{self.basic.host}/ml/cuda:12.4", FLEET_535, pol)
        self.assertEqual(record["verdict"], "unknown")
        self.assertIn("401", stderr)
        self.assertNotIn("Wr0ng-Secret", stderr)
        self.assertNotIn(base64.b64encode(b"ml-robot:Wr0ng-Secret").decode(), stderr)

    def test_token_auth_with_the_registrys_challenge(self):
        creds = self.credentials("token.json", {self.token.host: ("puller", "token-pass-456")})
        pol = self.policy("token.yaml", insecure=[self.token.host], credentials=creds)
        before = len(self.issuer.issued)
        record, stderr = self.check(f"{self.token.host}/ml/cuda:12.4", FLEET_535, pol)
        self.assertEqual(record["containers"][0]["cuda"]["source"], "registry", stderr)
        scopes = [s for s, granted in self.issuer.issued[before:] if granted]
        self.assertEqual(scopes, [["repository:ml/cuda:pull"]])
        # Logged at debug level, yet neither the credentials nor the token show.
        self.assertTrue(self.issuer.tokens)
        for secret in ["token-pass-456", base64.b64encode(b"puller:token-pass-456").decode(),
                       *self.issuer.tokens, *(t.split(".")[2] for t in self.issuer.tokens)]:
            self.assertNotIn(secret, stderr)
        # Without credentials the issuer refuses, and the image is unknown.
        anonymous, stderr = self.check(f"{self.token.host}/ml/cuda:12.4", FLEET_535,
                                       self.policy("anon.yaml", insecure=[self.token.host],
                                                   credentials=""))
        self.assertEqual(anonymous["verdict"], "unknown")
        self.assertIn("refused an anonymous request", stderr)


class ServeWithRegistry(RegistryTestCase):
    """`cudagate serve` reading the registry while it answers admissions."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.registry = cls.started(rs.Registry(cls.tmp).start())
        cls.push_all(cls.registry.host, ["cuda", "pytorch"])
        for n in range(4):  # images (and configs) no test has looked up yet
            config = json.loads(json.dumps(CUDA_124))
            config["config"]["Env"].append(f"IMAGE_VARIANT=fresh{n}")
            layout = os.path.join(cls.tmp, "layouts", f"fresh{n}")
            rs.oci_layout(layout, "12.4", [config])
            rs.push(layout, "12.4", f"{cls.registry.host}/ml/fresh{n}:12.4")
        cls.slow = cls.started(rs.FrontServer(cls.registry.host, delay=3.0).start())
        cls.silent = cls.started(rs.SilentServer())
        cls.certs = os.path.join(cls.tmp, "server-certs")
        st.make_certs(cls.certs)
        policy = os.path.join(cls.tmp, "serve-policy.yaml")
        with open(policy, "w") as f:
            f.write("apiVersion: cudagate.io/v1alpha1\nkind: Policy\nregistry:\n"
                    f"  timeout: 1s\n  insecure: {json.dumps([cls.registry.host, cls.slow.host, cls.silent.host])}\n")
        nodes = os.path.join(cls.tmp, "serve-nodes.json")
        with open(nodes, "w") as f:
            json.dump(st.node_list(*FLEET_535), f)
        cls.server = st.Server(cls.tmp, cls.certs, nodes=nodes, config=policy, threads=2).start()
        cls.stoppers.append(cls.server.stop)

    def admit(self, image, timeout=30):
        uid, body = st.review(gpu_pod(image))
        conn = self.server.connect(timeout=timeout)
        try:
            start = time.monotonic()
            res, data = st.post(conn, "/validate", body)
            elapsed = time.monotonic() - start
        finally:
            conn.close()
        return st.ServerTestCase.assert_review_answer(self, res, data, uid)["response"], elapsed

    def metric(self, name, **labels):
        return st.metric_value(self.server.metrics()[2], name, **labels) or 0

    def test_denied_on_535_with_the_registrys_cuda_version(self):
        response, _ = self.admit(f"{self.registry.host}/ml/cuda:12.4")
        self.assertFalse(response["allowed"])
        self.assertEqual(response["status"]["code"], 403)
        self.assertIn("from registry", response["status"]["message"])
        self.assertGreater(self.metric("cudagate_image_metadata_lookups_total",
                                       source="registry", result="found"), 0)
        self.assertGreater(self.metric("cudagate_registry_request_duration_seconds_count"), 0)

    def test_concurrent_admissions_of_one_uncached_image_make_one_set_of_requests(self):
        image = f"{self.registry.host}/ml/fresh0:12.4"
        results = []
        errors = []

        def one():
            try:
                results.append(self.admit(image, timeout=60)[0])
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)
        threads = [threading.Thread(target=one) for _ in range(200)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertEqual(errors, [])
        self.assertEqual(len(results), 200)
        self.assertTrue(all(not r["allowed"] for r in results))
        # One manifest (the referrers tag, sha256-<hex>, is the scan's).
        self.assertEqual(
            len(self.registry.requests("GET", r"^/v2/ml/fresh0/manifests/(?!sha256-)")), 1)
        self.assertEqual(len(self.registry.requests("GET", r"^/v2/ml/fresh0/blobs/")), 1)

    def test_a_slow_registry_answers_within_the_budget_then_from_the_cache(self):
        image = f"{self.slow.host}/ml/fresh1:12.4"
        found_before = self.metric("cudagate_registry_lookups_total", result="found")
        response, elapsed = self.admit(image)
        # The budget is 1 s; the registry answers after 3 s per request.
        self.assertLess(elapsed, 2.9)
        self.assertTrue(response["allowed"])  # unknown image: warn by default
        # The lookup finishes in the background...
        st.poll_until(lambda: self.metric("cudagate_registry_lookups_total", result="found")
                      > found_before, 60, "the background lookup to finish")
        # ...and the next admission is answered from the cache, at once.
        response, elapsed = self.admit(image)
        self.assertFalse(response["allowed"])
        self.assertIn("from registry", response["status"]["message"])
        self.assertLess(elapsed, 2.9)

    def test_a_registry_that_never_answers_does_not_hold_admissions(self):
        response, elapsed = self.admit(f"{self.silent.host}/ml/cuda:12.4")
        self.assertTrue(response["allowed"])
        self.assertLess(elapsed, 2.9)
        # Other admissions in flight meanwhile are not held either.
        response, elapsed = self.admit(f"{self.registry.host}/ml/pytorch:24.03-py3")
        self.assertLess(elapsed, 2.9)

    def test_a_pod_without_gpus_makes_no_lookup(self):
        before = len(self.registry.requests("GET", r"^/v2/ml/fresh3/"))
        uid, body = st.review({"containers": [{"name": "web", "image": f"{self.registry.host}/ml/fresh3:12.4"}]})
        conn = self.server.connect()
        try:
            res, data = st.post(conn, "/validate", body)
        finally:
            conn.close()
        self.assertTrue(json.loads(data)["response"]["allowed"])
        self.assertEqual(len(self.registry.requests("GET", r"^/v2/ml/fresh3/")), before)

    def test_metrics_pass_promtool(self):
        self.admit(f"{self.registry.host}/ml/fresh2:12.4")
        text = self.server.metrics()[2]
        for family in ("cudagate_registry_cache_requests_total", "cudagate_registry_lookups_total",
                       "cudagate_registry_cache_entries"):
            self.assertIn(family, text)
        self.assertGreater(self.metric("cudagate_registry_cache_entries", kind="configs"), 0)
        st.assert_promtool_accepts(self, text)


class ServeCacheAndReload(RegistryTestCase):
    """maxCacheEntries bounds the cache; a reloaded policy's registry
    settings apply to the next lookups."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.registry = cls.started(rs.Registry(cls.tmp).start())
        for n in range(3):
            config = json.loads(json.dumps(CUDA_124))
            config["config"]["Env"].append(f"IMAGE_VARIANT=bound{n}")
            layout = os.path.join(cls.tmp, "layouts", f"bound{n}")
            rs.oci_layout(layout, "12.4", [config])
            rs.push(layout, "12.4", f"{cls.registry.host}/ml/bound{n}:12.4")
        cls.certs = os.path.join(cls.tmp, "server-certs")
        st.make_certs(cls.certs)
        cls.policy_file = os.path.join(cls.tmp, "bound-policy.yaml")
        cls.write_policy(mirrors={})
        nodes = os.path.join(cls.tmp, "bound-nodes.json")
        with open(nodes, "w") as f:
            json.dump(st.node_list(*FLEET_535), f)
        cls.server = st.Server(cls.tmp, cls.certs, nodes=nodes, config=cls.policy_file,
                               threads=1).start()
        cls.stoppers.append(cls.server.stop)

    @classmethod
    def write_policy(cls, mirrors):
        with open(cls.policy_file + ".new", "w") as f:
            f.write("apiVersion: cudagate.io/v1alpha1\nkind: Policy\nregistry:\n"
                    f"  maxCacheEntries: 2\n  insecure: {json.dumps([cls.registry.host])}\n"
                    f"  mirrors: {json.dumps(mirrors)}\n")
        os.replace(cls.policy_file + ".new", cls.policy_file)

    admit = ServeWithRegistry.admit
    metric = ServeWithRegistry.metric

    def test_the_cache_keeps_at_most_max_cache_entries(self):
        for n in range(3):
            response, _ = self.admit(f"{self.registry.host}/ml/bound{n}:12.4")
            self.assertIn("from registry", response["status"]["message"])
        self.assertEqual(self.metric("cudagate_registry_cache_entries", kind="images"), 2)
        self.assertEqual(self.metric("cudagate_registry_cache_entries", kind="configs"), 2)

    def test_a_reloaded_policy_changes_where_images_are_read(self):
        # registry.example.org does not exist; mirrored to the test registry
        # after the reload, its image is read from there.
        image = "registry.example.org/ml/bound0:12.4"
        self.write_policy(mirrors={"registry.example.org": f"http://{self.registry.host}"})
        st.poll_until(lambda: self.metric("cudagate_file_reloads_total", file="config",
                                          result="success") >= 1, 30, "the policy reload")
        response, _ = self.admit(image)
        self.assertFalse(response["allowed"])
        self.assertIn("from registry", response["status"]["message"])


if __name__ == "__main__":
    sys.exit(harness.main(__name__))

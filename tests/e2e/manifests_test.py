#!/usr/bin/env python3
"""Tests of the deployment: manifests/ rendered, validated and held to the binary.

- Every folder of manifests/ renders with the kubectl that
  scripts/install-deps.sh brings from npm (1.35, kustomize v5) and with Debian
  12's (1.20, kustomize v2.0.3), to the same objects.
- Every rendered object passes the Kubernetes API's OpenAPI schemas (1.35+;
  cert-manager's and the Prometheus operator's CRDs): tests/manifests/validate.mjs.
- The webhooks' CEL matchConditions, run by a CEL implementation
  (tests/manifests/cel.mjs), select exactly the objects the binary judges as
  GPU workloads, DRA claims too, and never fail to evaluate.
- The Deployment's flags, paths, port and mounted files are ones
  `cudagate serve --help` accepts and the volumes provide; the binary started
  with those flags answers the probes and every webhook path in its mode; the
  policies pass the binary's own policy validation; the ClusterRoles grant
  exactly the API calls `cudagate api-calls` lists for the flags each overlay
  passes.
- The Containerfile's stages name what the Deployment runs (no container
  engine here: its runtime root filesystem is laid out by the same script and
  the binary is run inside it with chroot).

There is no kube-apiserver here: the selector and CEL semantics are the API
server's (k8s.io/apiserver's webhook dispatchers and matchConditions),
evaluated by real implementations where one exists; tests/cluster applies
the same manifests to a real API server. A tool that is missing skips its
tests with the reason, except under CI=true, where it fails them.

    python3 manifests_test.py --binary build/release/cudagate --source .
"""

import base64
import copy
import glob
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

import yaml

from harness import free_port
import harness

BINARY = None
SOURCE = None

TIMEOUT = 120
READY_TIMEOUT = 60
NAMESPACE = "cudagate-system"
SERVICE = "cudagate"
POD_KINDS = {
    ("", "v1", "Pod"): "pods",
    ("apps", "v1", "Deployment"): "deployments",
    ("apps", "v1", "ReplicaSet"): "replicasets",
    ("apps", "v1", "StatefulSet"): "statefulsets",
    ("apps", "v1", "DaemonSet"): "daemonsets",
    ("batch", "v1", "Job"): "jobs",
    ("batch", "v1", "CronJob"): "cronjobs",
}
CLUSTER_SCOPED = {
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
}
# serve --report-api: the API group of the reports it writes.
REPORT_API_GROUPS = {"policyreport": "wgpolicyk8s.io", "openreports": "openreports.io"}
# What kustomize v5 says of the fields it still reads for v2.0.3's sake.
DEPRECATION = re.compile(
    r"^# Warning: '(bases|patchesStrategicMerge|patchesJson6902)' is deprecated\."
)


def tools_dir():
    return os.path.join(SOURCE, "tests", "manifests")


def kubectls():
    """(name, path) of the two kubectls install-deps.sh provides."""
    tools = os.path.join(tools_dir(), "tools")
    return [
        ("kubectl 1.35 (kustomize v5)", os.path.join(tools, "kubectl")),
        ("Debian's kubectl 1.20 (kustomize v2.0.3)",
         os.path.join(tools, "debian", "usr", "bin", "kubectl")),
    ]


def missing_tools():
    """What of the test tools is absent, as one sentence, or None."""
    missing = [name for name, path in kubectls() if not os.access(path, os.X_OK)]
    if shutil.which("node") is None:
        missing.append("node")
    if not os.path.isdir(os.path.join(tools_dir(), "node_modules", "kubernetes-models")):
        missing.append("the npm packages of tests/manifests")
    if not missing:
        return None
    return "missing " + ", ".join(missing) + " (scripts/install-deps.sh installs them)"


def need_tools(test):
    reason = missing_tools()
    if reason is None:
        return
    if os.environ.get("CI"):
        test.fail(reason)
    test.skipTest(reason)


def run(argv, **kwargs):
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("text", True)
    kwargs.setdefault("timeout", TIMEOUT)
    return subprocess.run(argv, **kwargs)


def key(obj):
    return (obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


def by_key(objects):
    return {key(o): o for o in objects}


def kind_of(objects, kind):
    return [o for o in objects if o["kind"] == kind]


def one(objects, kind, name=None):
    found = [o for o in kind_of(objects, kind) if name is None or o["metadata"]["name"] == name]
    if len(found) != 1:
        raise AssertionError(f"expected one {kind} {name or ''}, found {len(found)}")
    return found[0]


def without_empty_annotations(obj):
    if obj.get("metadata", {}).get("annotations") == {}:
        obj = copy.deepcopy(obj)
        del obj["metadata"]["annotations"]
    return obj


class Rendered:
    """Every folder of manifests/ rendered by both kubectls, once per run.
    The self-signed and local overlays' generated files are written into a
    copy of manifests/ by certs/dev-certs.sh, as a user would."""

    work = None
    certs = None
    folders = {}   # name -> path in the copy
    objects = {}   # name -> [object] (kubectl 1.35)
    outputs = {}   # (name, kubectl name) -> CompletedProcess

    @classmethod
    def load(cls):
        if cls.work is not None:
            return
        cls.work = tempfile.mkdtemp(prefix="cudagate-manifests-")
        manifests = os.path.join(cls.work, "manifests")
        shutil.copytree(os.path.join(SOURCE, "manifests"), manifests,
                        ignore=shutil.ignore_patterns("generated"))
        cls.certs = os.path.join(cls.work, "certs")
        made = run(["bash", os.path.join(SOURCE, "certs", "dev-certs.sh"), "--out", cls.certs,
                    "--overlay", os.path.join(manifests, "overlays", "self-signed")])
        if made.returncode != 0:
            raise AssertionError(f"dev-certs.sh --overlay failed: {made.stderr}")
        cls.ca_bundle = made.stdout.strip().splitlines()[-1]
        made = run(["bash", os.path.join(SOURCE, "certs", "dev-certs.sh"), "--out", cls.certs,
                    "--overlay", os.path.join(manifests, "overlays", "local")])
        if made.returncode != 0:
            raise AssertionError(f"dev-certs.sh --overlay (local) failed: {made.stderr}")
        cls.folders = {"base": os.path.join(manifests, "base")}
        for path in sorted(glob.glob(os.path.join(manifests, "overlays", "*"))):
            cls.folders[os.path.basename(path)] = path
        for name, folder in cls.folders.items():
            for tool, kubectl in kubectls():
                cls.outputs[(name, tool)] = run([kubectl, "kustomize", folder])
            out = cls.outputs[(name, kubectls()[0][0])]
            if out.returncode == 0:
                cls.objects[name] = [o for o in yaml.safe_load_all(out.stdout) if o]

    @classmethod
    def in_cluster(cls):
        """The folders that run cudagate in the cluster: all but `local`,
        whose cudagate is a process on the machine."""
        return {n: o for n, o in cls.objects.items()
                if any(x.get("kind") == "Deployment" for x in o)}

    @classmethod
    def overlays(cls):
        return {n: o for n, o in cls.in_cluster().items() if n != "base"}

    @classmethod
    def cleanup(cls):
        if cls.work:
            shutil.rmtree(cls.work, ignore_errors=True)


def tearDownModule():
    Rendered.cleanup()


class ManifestTest(unittest.TestCase):
    def setUp(self):
        need_tools(self)
        Rendered.load()

    def deployment(self, overlay):
        return one(Rendered.objects[overlay], "Deployment", SERVICE)

    def container(self, overlay):
        return self.deployment(overlay)["spec"]["template"]["spec"]["containers"][0]

    def args(self, overlay):
        """The Deployment's serve flags as {flag: value or True}."""
        container = self.container(overlay)
        args = container["args"]
        self.assertEqual(args[0], "serve")
        flags = {}
        for arg in args[1:]:
            self.assertTrue(arg.startswith("--"), f"{overlay}: argument {arg!r} is not a flag")
            name, eq, value = arg[2:].partition("=")
            flags[name] = value if eq else True
        return flags


class RenderTest(ManifestTest):
    def test_the_overlays_the_install_doc_names_exist(self):
        self.assertEqual(
            sorted(Rendered.folders),
            sorted(["base", "cert-manager", "local", "self-signed", "prometheus",
                    "policy-patch", "write-reports"]))

    def test_local_points_every_webhook_at_loopback_with_the_ca(self):
        objects = Rendered.objects["local"]
        kinds = sorted({o["kind"] for o in objects})
        self.assertNotIn("Deployment", kinds)
        self.assertNotIn("Service", kinds)
        self.assertIn("ServiceAccount", kinds)
        self.assertIn("ClusterRoleBinding", kinds)
        for kind, endpoint in (("MutatingWebhookConfiguration", "mutate"),
                               ("ValidatingWebhookConfiguration", "validate")):
            base = one(Rendered.objects["base"], kind)["webhooks"]
            webhooks = one(objects, kind)["webhooks"]
            self.assertEqual([w["name"] for w in webhooks], [w["name"] for w in base])
            for webhook, original in zip(webhooks, base):
                mode = original["clientConfig"]["service"]["path"].rsplit("/", 1)[-1]
                suffix = "" if mode == endpoint else f"/{mode}"
                self.assertEqual(webhook["clientConfig"],
                                 {"url": f"https://127.0.0.1:8443/{endpoint}{suffix}",
                                  "caBundle": Rendered.ca_bundle})

    def test_every_folder_renders_alike_with_old_and_current_kustomize(self):
        for name in Rendered.folders:
            with self.subTest(folder=name):
                outputs = [(tool, Rendered.outputs[(name, tool)]) for tool, _ in kubectls()]
                for tool, out in outputs:
                    self.assertEqual(out.returncode, 0, f"{tool}: {out.stderr}")
                    for line in out.stderr.splitlines():
                        self.assertRegex(line, DEPRECATION, f"{tool} says more than the "
                                         "deprecations of the v2.0.3 fields")
                # kustomize v2.0.3 writes "annotations: {}" on a replaced
                # ConfigMap, which is the same object.
                rendered = [by_key(without_empty_annotations(o)
                                   for o in yaml.safe_load_all(out.stdout) if o)
                            for _, out in outputs]
                self.assertEqual(sorted(rendered[0]), sorted(rendered[1]))
                for k in rendered[0]:
                    self.assertEqual(rendered[0][k], rendered[1][k], f"{k} differs")

    def test_namespaces(self):
        for name, objects in Rendered.objects.items():
            for o in objects:
                with self.subTest(folder=name, object=key(o)):
                    if o["kind"] in CLUSTER_SCOPED:
                        self.assertNotIn("namespace", o["metadata"])
                    else:
                        self.assertEqual(o["metadata"].get("namespace"), NAMESPACE)

    def test_base(self):
        objects = Rendered.objects["base"]
        ns = one(objects, "Namespace", NAMESPACE)
        self.assertEqual(ns["metadata"]["labels"]["cudagate.io/mode"], "off")
        deployment = self.deployment("base")
        spec = deployment["spec"]
        self.assertEqual(spec["replicas"], 2)
        pod = spec["template"]["spec"]
        self.assertEqual(pod["priorityClassName"], "system-cluster-critical")
        anti = pod["affinity"]["podAntiAffinity"]
        terms = anti.get("requiredDuringSchedulingIgnoredDuringExecution", []) + [
            t["podAffinityTerm"]
            for t in anti.get("preferredDuringSchedulingIgnoredDuringExecution", [])
        ]
        self.assertTrue(terms)
        for term in terms:
            self.assertEqual(term["topologyKey"], "kubernetes.io/hostname")
            self.assertEqual(term["labelSelector"]["matchLabels"],
                             spec["selector"]["matchLabels"])
        pdb = one(objects, "PodDisruptionBudget", SERVICE)
        self.assertEqual(pdb["spec"]["selector"], spec["selector"])
        self.assertLess(pdb["spec"]["minAvailable"], spec["replicas"])
        self.assertEqual(spec["strategy"]["rollingUpdate"]["maxUnavailable"], 0)
        quota = one(objects, "ResourceQuota")["spec"]
        self.assertIn(pod["priorityClassName"],
                      quota["scopeSelector"]["matchExpressions"][0]["values"])
        self.assertGreaterEqual(int(quota["hard"]["pods"]),
                                spec["replicas"] + spec["strategy"]["rollingUpdate"]["maxSurge"])

        self.assertTrue(pod["securityContext"]["runAsNonRoot"])
        self.assertGreater(pod["securityContext"]["runAsUser"], 0)
        self.assertEqual(pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault")
        c = pod["containers"][0]
        sc = c["securityContext"]
        self.assertFalse(sc["allowPrivilegeEscalation"])
        self.assertTrue(sc["readOnlyRootFilesystem"])
        self.assertEqual(sc["capabilities"]["drop"], ["ALL"])
        self.assertNotIn("add", sc["capabilities"])
        # Memory: requests and limits, the limit above the request.
        mem = {k: c["resources"][k]["memory"] for k in ("requests", "limits")}
        mib = {k: int(v.removesuffix("Mi")) for k, v in mem.items()}
        self.assertGreaterEqual(mib["requests"], 119 + 50, "below the 119 MiB measured with "
                                "10,000 nodes and an audit of 10,000 workloads, plus the cache")
        self.assertGreaterEqual(mib["limits"], 2 * 150, "below twice the 150 MiB at 50,000 nodes")
        self.assertIn("cpu", c["resources"]["requests"])
        self.assertNotIn("cpu", c["resources"]["limits"])
        # No token beyond the projected one the watch reads.
        self.assertFalse(pod["automountServiceAccountToken"])
        self.assertFalse(one(objects, "ServiceAccount", SERVICE)["automountServiceAccountToken"])
        self.assertEqual(pod["serviceAccountName"], SERVICE)

    def test_overlays_add_what_they_say(self):
        objects = Rendered.objects
        base = by_key(objects["base"])
        for name in ("cert-manager", "prometheus", "policy-patch", "write-reports"):
            with self.subTest(overlay=name):
                kinds = {o["kind"] for o in objects[name]}
                self.assertTrue({"Issuer", "Certificate"} <= kinds)
                for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
                    ann = one(objects[name], kind)["metadata"]["annotations"]
                    self.assertEqual(ann["cert-manager.io/inject-ca-from"],
                                     f"{NAMESPACE}/cudagate-serving")
        self.assertIn("ServiceMonitor", {o["kind"] for o in objects["prometheus"]})
        policy = lambda n: one(objects[n], "ConfigMap", "cudagate-policy")["data"]["policy.yaml"]
        self.assertNotEqual(policy("policy-patch"), policy("base"))
        self.assertEqual(policy("cert-manager"), policy("base"))
        self.assertIn("write-reports", self.args("write-reports"))
        self.assertNotIn("write-reports", self.args("cert-manager"))
        self.assertGreater(len(kind_of(objects["write-reports"], "ClusterRole")),
                           len(kind_of(objects["cert-manager"], "ClusterRole")))
        # An overlay changes only what it names.
        for k, o in by_key(objects["cert-manager"]).items():
            if k in base and k[0] not in ("MutatingWebhookConfiguration",
                                          "ValidatingWebhookConfiguration"):
                self.assertEqual(o, base[k], f"cert-manager changes {k}")

    def test_certificates(self):
        objects = Rendered.objects["cert-manager"]
        volumes = {v["name"]: v for v in self.deployment("cert-manager")["spec"]["template"]
                   ["spec"]["volumes"]}
        serving = one(objects, "Certificate", "cudagate-serving")["spec"]
        self.assertEqual(serving["secretName"], volumes["tls"]["secret"]["secretName"])
        self.assertIn(f"{SERVICE}.{NAMESPACE}.svc", serving["dnsNames"])
        self.assertIn("server auth", serving["usages"])
        issuer = one(objects, "Issuer", serving["issuerRef"]["name"])
        ca = one(objects, "Certificate", issuer["spec"]["ca"]["secretName"].replace(
            "cudagate-ca", "cudagate-ca"))
        self.assertTrue(ca["spec"]["isCA"])

    def test_self_signed_secret_and_ca_bundle(self):
        objects = Rendered.objects["self-signed"]
        secret = one(objects, "Secret", "cudagate-tls")
        self.assertEqual(secret["type"], "kubernetes.io/tls")
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            for hook in one(objects, kind)["webhooks"]:
                self.assertEqual(hook["clientConfig"]["caBundle"], Rendered.ca_bundle,
                                 f"{kind} {hook['name']}")
        work = tempfile.mkdtemp(dir=Rendered.work)
        for k in ("tls.crt", "ca.crt"):
            with open(os.path.join(work, k), "wb") as f:
                f.write(base64.b64decode(secret["data"][k]))
        self.assertEqual(base64.b64decode(secret["data"]["ca.crt"]),
                         base64.b64decode(Rendered.ca_bundle))
        # The name the API server verifies (SNI <service>.<namespace>.svc).
        verify = run(["openssl", "verify", "-CAfile", os.path.join(work, "ca.crt"),
                      "-verify_hostname", f"{SERVICE}.{NAMESPACE}.svc", "-purpose", "sslserver",
                      os.path.join(work, "tls.crt")])
        self.assertEqual(verify.returncode, 0, verify.stdout + verify.stderr)
        wrong = run(["openssl", "verify", "-CAfile", os.path.join(work, "ca.crt"),
                     "-verify_hostname", f"{SERVICE}.other.svc", os.path.join(work, "tls.crt")])
        self.assertNotEqual(wrong.returncode, 0)


class RotationTest(ManifestTest):
    def test_ca_rotation_trusts_both_cas_in_turn(self):
        """docs/install.md's recipe: a new CA is trusted beside the old before any
        server certificate it signs is served, and dropped after."""
        work = tempfile.mkdtemp(dir=Rendered.work)
        overlay = os.path.join(work, "manifests", "overlays", "self-signed")
        shutil.copytree(os.path.join(SOURCE, "manifests"), os.path.join(work, "manifests"),
                        ignore=shutil.ignore_patterns("generated"))
        old, new = os.path.join(work, "old"), os.path.join(work, "new")
        script = os.path.join(SOURCE, "certs", "dev-certs.sh")

        def step(out, *extra):
            done = run(["bash", script, "--out", out, "--overlay", overlay, *extra])
            self.assertEqual(done.returncode, 0, done.stderr)
            objects = [o for o in yaml.safe_load_all(
                run([kubectls()[0][1], "kustomize", overlay]).stdout) if o]
            bundle = base64.b64decode(
                one(objects, "ValidatingWebhookConfiguration")["webhooks"][0]["clientConfig"]
                ["caBundle"])
            secret = one(objects, "Secret", "cudagate-tls")["data"]
            self.assertEqual(base64.b64decode(secret["ca.crt"]), bundle)
            path = os.path.join(work, "bundle.pem")
            with open(path, "wb") as f:
                f.write(bundle)
            served = os.path.join(work, "served.crt")
            with open(served, "wb") as f:
                f.write(base64.b64decode(secret["tls.crt"]))
            trusts = {}
            for name, leaf in (("old", os.path.join(old, "server.crt")),
                               ("new", os.path.join(new, "server.crt")), ("served", served)):
                verify = run(["openssl", "verify", "-CAfile", path, leaf])
                trusts[name] = verify.returncode == 0
            return bundle.count(b"BEGIN CERTIFICATE"), trusts

        self.assertEqual(step(old)[0], 1)
        made = run(["bash", script, "--out", new])
        self.assertEqual(made.returncode, 0, made.stderr)
        # 1. Trust the new CA too; still serve the old certificate.
        self.assertEqual(step(old, "--also-trust", os.path.join(new, "ca.crt")),
                         (2, {"old": True, "new": True, "served": True}))
        # 2. Serve the new certificate; the old CA still trusted.
        self.assertEqual(step(new, "--also-trust", os.path.join(old, "ca.crt")),
                         (2, {"old": True, "new": True, "served": True}))
        # 3. Drop the old CA.
        self.assertEqual(step(new), (1, {"old": False, "new": True, "served": True}))


class SchemaTest(ManifestTest):
    def validate(self, entries):
        path = os.path.join(Rendered.work, f"objects-{len(entries)}.json")
        with open(path, "w") as f:
            json.dump(entries, f)
        return run(["node", os.path.join(tools_dir(), "validate.mjs"), path], timeout=300)

    def test_every_rendered_object_matches_the_api_schema(self):
        entries, seen = [], set()
        for name, objects in Rendered.objects.items():
            for o in objects:
                text = json.dumps(o, sort_keys=True)
                if text not in seen:
                    seen.add(text)
                    entries.append({"source": name, "object": o})
        out = self.validate(entries)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn(f"{len(entries)} objects validated, 0 problems", out.stdout)

    def test_the_validator_finds_unknown_and_missing_fields(self):
        deployment = self.deployment("cert-manager")
        webhook = one(Rendered.objects["base"], "ValidatingWebhookConfiguration")
        monitor = one(Rendered.objects["prometheus"], "ServiceMonitor")
        cert = one(Rendered.objects["cert-manager"], "Certificate", "cudagate-serving")
        broken = {}

        def breaking(name, obj, change):
            obj = copy.deepcopy(obj)
            obj["metadata"]["name"] = name
            change(obj)
            broken[name] = obj

        breaking("unknown-container-field", deployment,
                 lambda o: o["spec"]["template"]["spec"]["containers"][0].update(
                     {"readOnlyRootFS": True}))
        breaking("missing-selector", deployment, lambda o: o["spec"].pop("selector"))
        breaking("wrong-type", deployment, lambda o: o["spec"].update({"replicas": "two"}))
        breaking("missing-side-effects", webhook, lambda o: o["webhooks"][0].pop("sideEffects"))
        breaking("unknown-match-condition-field", webhook,
                 lambda o: o["webhooks"][0]["matchConditions"][0].update({"cel": "true"}))
        breaking("unknown-tls-field", monitor,
                 lambda o: o["spec"]["endpoints"][0]["tlsConfig"].update({"sni": "x"}))
        breaking("unknown-certificate-field", cert,
                 lambda o: o["spec"].update({"dnsName": "x"}))
        out = self.validate([{"source": "broken", "object": o} for o in broken.values()])
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        for name in broken:
            self.assertRegex(out.stdout, rf"broken: \w+/{name}: ", f"{name} not reported")


def selector_matches(selector, labels):
    """A LabelSelector against a label set, with the API's semantics
    (NotIn and DoesNotExist match an absent key)."""
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in selector.get("matchExpressions") or []:
        present = e["key"] in labels
        value = labels.get(e["key"])
        op = e["operator"]
        if op == "In" and not (present and value in e["values"]):
            return False
        if op == "NotIn" and present and value in e["values"]:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


class WebhookTest(ManifestTest):
    def configs(self, overlay="base"):
        return [one(Rendered.objects[overlay], k)
                for k in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")]

    def policy(self, overlay="base"):
        return yaml.safe_load(one(Rendered.objects[overlay], "ConfigMap",
                                  "cudagate-policy")["data"]["policy.yaml"])

    def test_timeouts_exceed_each_policys_registry_budget(self):
        for overlay in Rendered.objects:
            budget = self.policy(overlay).get("registry", {}).get("timeout", "2s")
            self.assertRegex(budget, r"^\d+(ms|s)$")
            seconds = int(budget[:-2]) / 1000 if budget.endswith("ms") else int(budget[:-1])
            for config in self.configs(overlay):
                for hook in config["webhooks"]:
                    with self.subTest(overlay=overlay, webhook=hook["name"]):
                        self.assertGreater(hook["timeoutSeconds"], seconds)
                        self.assertLessEqual(hook["timeoutSeconds"], 30)

    def test_fields_the_contract_asks_for(self):
        service = one(Rendered.objects["base"], "Service", SERVICE)
        fqdn = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?){2,}$")
        for config in self.configs():
            mutating = config["kind"] == "MutatingWebhookConfiguration"
            names = [h["name"] for h in config["webhooks"]]
            self.assertEqual(len(names), len(set(names)))
            for hook in config["webhooks"]:
                with self.subTest(webhook=hook["name"]):
                    self.assertRegex(hook["name"], fqdn)
                    self.assertEqual(hook["admissionReviewVersions"], ["v1"])
                    self.assertEqual(hook["sideEffects"], "None")
                    svc = hook["clientConfig"]["service"]
                    self.assertEqual((svc["name"], svc["namespace"]), (SERVICE, NAMESPACE))
                    self.assertIn(svc["port"], [p["port"] for p in service["spec"]["ports"]])
                    self.assertNotIn("url", hook["clientConfig"])
                    # service.path: each segment a DNS-1123 subdomain (no query).
                    for segment in svc["path"].strip("/").split("/"):
                        self.assertRegex(segment, r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
                    self.assertTrue(svc["path"].startswith("/mutate" if mutating else "/validate"))
                    if mutating:
                        self.assertEqual(hook["reinvocationPolicy"], "IfNeeded")
                    else:
                        self.assertNotIn("reinvocationPolicy", hook)
                    covered = set()
                    for rule in hook["rules"]:
                        self.assertEqual(sorted(rule["operations"]), ["CREATE", "UPDATE"])
                        self.assertEqual(rule["scope"], "Namespaced")
                        for g in rule["apiGroups"]:
                            for v in rule["apiVersions"]:
                                for r in rule["resources"]:
                                    covered.add((g, v, r))
                    self.assertEqual(covered, {(g, v, r) for (g, v, _), r in POD_KINDS.items()})
                    self.assertEqual([c["name"] for c in hook["matchConditions"]],
                                     ["asks-for-a-gpu"])

    def test_one_webhook_per_namespace_mode(self):
        # label value -> the mode whose webhook must take the namespace
        # (None: none); "" is no label at all.
        expected = {"": "policy", "enforce": "enforce", "warn": "warn", "dryrun": "dryrun",
                    "off": None, "Enforce": "policy", "bogus": "policy"}
        for config in self.configs():
            for value, mode in expected.items():
                for namespace in ("ml", "kube-system", NAMESPACE):
                    labels = {"kubernetes.io/metadata.name": namespace}
                    if value:
                        labels["cudagate.io/mode"] = value
                    with self.subTest(config=config["kind"], label=value, namespace=namespace):
                        hooks = [h for h in config["webhooks"]
                                 if selector_matches(h["namespaceSelector"], labels)]
                        if mode is None or namespace != "ml":
                            self.assertEqual(hooks, [])
                            continue
                        self.assertEqual(len(hooks), 1, [h["name"] for h in hooks])
                        path = hooks[0]["clientConfig"]["service"]["path"]
                        last = path.rstrip("/").split("/")[-1]
                        self.assertEqual(last if mode != "policy" else "policy",
                                         mode if last in ("enforce", "warn", "dryrun")
                                         else "policy")
                        fails_closed = mode in ("policy", "enforce")
                        self.assertEqual(hooks[0]["failurePolicy"],
                                         "Fail" if fails_closed else "Ignore")


def documents(path):
    """The objects of a YAML or JSON file; none for one that does not parse."""
    try:
        with open(path) as f:
            return [d for d in yaml.safe_load_all(f) if isinstance(d, dict)]
    except (yaml.YAMLError, UnicodeDecodeError):
        return []


def flatten(objs):
    for o in objs:
        if o.get("kind") == "List":
            yield from flatten(o.get("items") or [])
        else:
            yield o


def gvk(obj):
    group, _, version = obj.get("apiVersion", "").rpartition("/")
    return (group, version, obj.get("kind"))


def pod_spec(obj):
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    if kind == "Pod":
        return spec
    if kind == "CronJob":
        return spec["jobTemplate"]["spec"]["template"]["spec"]
    return spec["template"]["spec"]


def wrap(spec, kind):
    """A pod spec as the pod spec of `kind`."""
    meta = {"name": f"wrapped-{kind.lower()}", "namespace": "ml"}
    template = {"metadata": {"labels": {"app": "x"}}, "spec": copy.deepcopy(spec)}
    if kind == "Pod":
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template["spec"]}
    group = "batch/v1" if kind in ("Job", "CronJob") else "apps/v1"
    if kind == "CronJob":
        return {"apiVersion": group, "kind": kind, "metadata": meta,
                "spec": {"schedule": "@daily", "jobTemplate": {"spec": {"template": template}}}}
    body = {"template": template}
    if kind != "Job":
        body["selector"] = {"matchLabels": {"app": "x"}}
    return {"apiVersion": group, "kind": kind, "metadata": meta, "spec": body}


class CelTest(ManifestTest):
    """matchConditions against the objects of examples/, the test fixtures and
    the captured AdmissionRequests, the binary's own GPU classification as the
    expectation (`cudagate audit --format json`: a container with "gpu": true)."""

    @classmethod
    def requests(cls):
        """(id, AdmissionRequest, expected or None: the binary decides)."""
        found = []
        files = sorted(glob.glob(os.path.join(SOURCE, "examples", "pods", "*.yaml")))
        files += sorted(glob.glob(os.path.join(SOURCE, "tests", "fixtures", "workloads", "*.*")))
        files += sorted(glob.glob(os.path.join(SOURCE, "tests", "fixtures", "audit", "manifests",
                                               "**", "*.*"), recursive=True))
        for path in files:
            for i, obj in enumerate(flatten(documents(path))):
                if gvk(obj) in POD_KINDS:
                    found.append((f"{os.path.relpath(path, SOURCE)}#{i}",
                                  {"operation": "CREATE", "object": obj, "oldObject": None},
                                  None))
        reviews = sorted(glob.glob(os.path.join(SOURCE, "tests", "fixtures", "admission",
                                                "*.json")))
        reviews += sorted(glob.glob(os.path.join(SOURCE, "examples", "reviews", "*.json")))
        reviews += sorted(glob.glob(os.path.join(SOURCE, "tests", "fixtures", "admission",
                                                 "captured", "*.json")))
        for path in reviews:
            if "bad-types" in path:
                continue  # the API server refuses such an object before admission
            with open(path) as f:
                doc = json.load(f)
            request = doc.get("request", doc) if isinstance(doc, dict) else None
            if isinstance(request, dict) and isinstance(request.get("object"), dict) and \
                    gvk(request["object"]) in POD_KINDS:
                found.append((os.path.relpath(path, SOURCE), request, None))
        # DRA: pods asking for a GPU only through a resource claim, as the pods
        # of the captured H100 cluster (tests/fixtures/dra) did (resourceClaimName
        # isolated-gpu; the devices are its gpu.nvidia.com slice's).
        claim_spec = {
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "isolated-gpu"}],
            "containers": [{"name": "cuda", "image": "nvcr.io/nvidia/cuda:12.8.0-base-ubuntu24.04",
                            "resources": {"claims": [{"name": "gpu"}]}}],
        }
        template_spec = copy.deepcopy(claim_spec)
        template_spec["resourceClaims"] = [{"name": "gpu",
                                            "resourceClaimTemplateName": "single-gpu"}]
        init_only = {"initContainers": [{"name": "warm", "image": "x",
                                         "resources": {"limits": {"nvidia.com/mig-1g.5gb": 1}}}],
                     "containers": [{"name": "app", "image": "x"}]}
        requests_only = {"containers": [{"name": "app", "image": "x", "resources": {
            "requests": {"nvidia.com/gpu.shared": 1}}}]}
        cpu = {"containers": [{"name": "app", "image": "x", "resources": {
            "limits": {"cpu": "2", "memory": "1Gi", "example.com/fpga": 1}}}]}
        for kind in ("Pod", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job",
                     "CronJob"):
            for name, spec, want in (("dra-claim", claim_spec, True),
                                     ("dra-template", template_spec, True),
                                     ("init-mig", init_only, True),
                                     ("requests-only", requests_only, True),
                                     ("cpu-and-fpga", cpu, False)):
                found.append((f"{name}-{kind}", {"operation": "CREATE",
                                                 "object": wrap(spec, kind),
                                                 "oldObject": None}, want))
        # Odd objects: nothing to select, nothing to fail on.
        for name, obj in (
                ("pod-without-spec", {"apiVersion": "v1", "kind": "Pod", "metadata": {}}),
                ("pod-without-containers", {"apiVersion": "v1", "kind": "Pod", "spec": {}}),
                ("deployment-without-template", {"apiVersion": "apps/v1", "kind": "Deployment",
                                                 "spec": {}}),
                ("cronjob-without-job-spec", {"apiVersion": "batch/v1", "kind": "CronJob",
                                              "spec": {"jobTemplate": {}}}),
                ("container-without-resources", wrap({"containers": [{"name": "a"}]}, "Pod"))):
            found.append((name, {"operation": "UPDATE", "object": obj, "oldObject": obj}, False))
        return found

    def binary_says_gpu(self, obj, work, index):
        path = os.path.join(work, f"{index}.json")
        with open(path, "w") as f:
            json.dump(obj, f)
        out = run([BINARY, "audit", path, "--offline", "--nodes",
                   os.path.join(SOURCE, "examples", "nodes.yaml"), "--format", "json",
                   "--fail-on", "never"])
        self.assertIn(out.returncode, (0, 2), out.stderr)
        records = json.loads(out.stdout or "[]")
        self.assertEqual(len(records), 1, f"{path}: {out.stderr}")
        if records[0]["verdict"] == "error":
            return True  # a GPU workload whose input is wrong: the webhook denies it
        self.assertIn("containers", records[0], f"{path}: {json.dumps(records[0])}")
        return any(c.get("gpu") for c in records[0]["containers"])

    def test_match_conditions_select_exactly_the_gpu_objects(self):
        requests = self.requests()
        work = tempfile.mkdtemp(dir=Rendered.work)
        expected = {}
        for i, (rid, request, want) in enumerate(requests):
            expected[rid] = want if want is not None else \
                self.binary_says_gpu(request["object"], work, i)
        self.assertGreaterEqual(sum(expected.values()), 20)
        self.assertGreaterEqual(len(expected) - sum(expected.values()), 10)

        conditions = []
        for name, objects in Rendered.objects.items():
            for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
                for hook in one(objects, kind)["webhooks"]:
                    for c in hook["matchConditions"]:
                        conditions.append({"id": f"{name}/{hook['name']}/{c['name']}",
                                           "expression": c["expression"]})
        path = os.path.join(work, "cel.json")
        with open(path, "w") as f:
            json.dump({"conditions": conditions,
                       "requests": [{"id": rid, "request": r} for rid, r, _ in requests]}, f)
        out = run(["node", os.path.join(tools_dir(), "cel.mjs"), path], timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr)
        results = json.loads(out.stdout)
        self.assertEqual(len(results), len(conditions))
        for cid, by_request in results.items():
            for rid, got in by_request.items():
                with self.subTest(condition=cid, request=rid):
                    self.assertIsInstance(got, bool, f"evaluation error: {got}")
                    self.assertEqual(got, expected[rid])

    def test_a_cel_error_is_reported(self):
        # The evaluator is not lenient: an expression reading a missing field
        # is an error (the API server's failurePolicy Fail would refuse the
        # request), which is why the conditions guard every step with has().
        path = os.path.join(Rendered.work, "cel-error.json")
        with open(path, "w") as f:
            json.dump({"conditions": [{"id": "unguarded",
                                       "expression": "object.spec.containers.size() > 0"}],
                       "requests": [{"id": "no-spec", "request": {"object": {"kind": "Pod"}}}]},
                      f)
        out = run(["node", os.path.join(tools_dir(), "cel.mjs"), path])
        self.assertEqual(out.returncode, 0, out.stderr)
        got = json.loads(out.stdout)["unguarded"]["no-spec"]
        self.assertIsInstance(got, str)
        self.assertTrue(got.startswith("error: "), got)


def serve_flags():
    """`cudagate serve --help`: {flag: takes a value}."""
    out = run([BINARY, "serve", "--help"])
    if out.returncode != 0:
        raise AssertionError(out.stderr)
    flags = {}
    for line in out.stdout.splitlines():
        # CLI11: "--name TYPE[=default]  description", or "--name  description"
        # for a flag; the type is one space after the name, in capitals.
        m = re.match(r"^\s+(?:-\w,)?--([a-z0-9-]+)(?: ([A-Z][A-Z0-9_]*)(?=[:={\s]|$))?", line)
        if m:
            flags[m.group(1)] = m.group(2) is not None
    return flags


class BinaryTest(ManifestTest):
    def test_flags_are_ones_serve_accepts(self):
        known = serve_flags()
        self.assertIn("tls-cert", known)
        for overlay in Rendered.in_cluster():
            for flag, value in self.args(overlay).items():
                with self.subTest(overlay=overlay, flag=flag):
                    self.assertIn(flag, known, f"cudagate serve has no --{flag}")
                    self.assertEqual(value is not True, known[flag],
                                     f"--{flag} {'takes' if known[flag] else 'takes no'} value")

    def test_port_paths_and_mounted_files(self):
        for overlay, objects in Rendered.in_cluster().items():
            with self.subTest(overlay=overlay):
                args = self.args(overlay)
                container = self.container(overlay)
                pod = self.deployment(overlay)["spec"]["template"]["spec"]
                port = int(args["listen"].rsplit(":", 1)[1])
                ports = {p["name"]: p["containerPort"] for p in container["ports"]}
                service = one(objects, "Service", SERVICE)
                for p in service["spec"]["ports"]:
                    target = p["targetPort"]
                    self.assertEqual(ports[target] if isinstance(target, str) else target, port)
                for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
                    get = container[probe]["httpGet"]
                    self.assertEqual((get["path"], get["scheme"]), (path, "HTTPS"))
                    self.assertEqual(ports[get["port"]] if isinstance(get["port"], str)
                                     else get["port"], port)
                volumes = {v["name"]: v for v in pod["volumes"]}
                mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
                for m in mounts.values():
                    self.assertTrue(m.get("readOnly"), f"{m['mountPath']} is writable")
                for flag in ("tls-cert", "tls-key", "config"):
                    directory, name = os.path.split(args[flag])
                    self.assertIn(directory, mounts, f"--{flag}: {directory} is not mounted")
                    volume = volumes[mounts[directory]["name"]]
                    files = self.files_of(objects, volume)
                    if files is None and overlay == "base":
                        continue  # the serving Secret comes with an overlay
                    self.assertIn(name, files or set(), f"--{flag}")
                # The matrix override is an optional ConfigMap: absent, the
                # embedded matrix serves; created, its compat-db.json replaces it.
                directory, name = os.path.split(args["compat-db-override"])
                self.assertEqual(name, "compat-db.json")
                self.assertIn(directory, mounts, "--compat-db-override is not mounted")
                volume = volumes[mounts[directory]["name"]]
                self.assertEqual(volume["configMap"],
                                 {"name": "cudagate-compat-db", "optional": True})
                # --in-cluster reads the service account folder: token, CA, namespace.
                self.assertIn("in-cluster", args)
                sa = volumes[mounts["/var/run/secrets/kubernetes.io/serviceaccount"]["name"]]
                self.assertEqual(self.files_of(objects, sa), {"token", "ca.crt", "namespace"})
                image = container["image"]
                self.assertRegex(image, r"^[a-z0-9.-]+(/[a-z0-9._-]+)+:[A-Za-z0-9._-]+$")

    def files_of(self, objects, volume):
        """The file names a volume holds, from the objects that fill it."""
        if "configMap" in volume:
            cm = one(objects, "ConfigMap", volume["configMap"]["name"])
            return set(cm.get("data", {})) | set(cm.get("binaryData", {}))
        if "secret" in volume:
            name = volume["secret"]["secretName"]
            secrets = [o for o in kind_of(objects, "Secret") if o["metadata"]["name"] == name]
            if secrets:
                return set(secrets[0]["data"])
            certs = [c for c in kind_of(objects, "Certificate") if c["spec"]["secretName"] == name]
            if certs:
                return {"tls.crt", "tls.key", "ca.crt"}  # what cert-manager writes
            return None  # nothing in these objects fills it
        if "projected" in volume:
            files = set()
            for s in volume["projected"]["sources"]:
                if "serviceAccountToken" in s:
                    files.add(s["serviceAccountToken"]["path"])
                for src in ("configMap", "secret", "downwardAPI"):
                    for item in (s.get(src) or {}).get("items", []):
                        files.add(item["path"])
            return files
        return set()

    def test_policies_pass_the_binarys_validation(self):
        work = tempfile.mkdtemp(dir=Rendered.work)
        for overlay, objects in Rendered.objects.items():
            with self.subTest(overlay=overlay):
                path = os.path.join(work, f"{overlay}.yaml")
                with open(path, "w") as f:
                    f.write(one(objects, "ConfigMap", "cudagate-policy")["data"]["policy.yaml"])
                out = run([BINARY, "check", "--config", path, "--offline", "--cuda", "12.4",
                           "--driver", "550.54.14", "--gpu", "T4"])
                self.assertEqual(out.returncode, 0, out.stderr)
        bad = os.path.join(work, "bad.yaml")
        with open(bad, "w") as f:
            f.write("apiVersion: cudagate.io/v1alpha1\nkind: Policy\nmode: enforcing\n")
        out = run([BINARY, "check", "--config", bad, "--offline", "--cuda", "12.4",
                   "--driver", "550.54.14", "--gpu", "T4"])
        self.assertEqual(out.returncode, 2)
        self.assertIn("bad.yaml:3", out.stderr)

    def test_the_binary_serves_what_the_manifests_call(self):
        for overlay in ("prometheus", "write-reports"):
            with self.subTest(overlay=overlay):
                self.serve_as_deployed(overlay)

    def serve_as_deployed(self, overlay):
        """Starts cudagate with the overlay's Deployment flags (files where the
        volumes put them, under a temporary root) against the API server double
        (--kubeconfig with the service account's token for --in-cluster), and
        calls every probe, webhook path and the ServiceMonitor's path as the
        kubelet, the API server and Prometheus do. Every call cudagate makes to
        the API server must be one the overlay's RBAC grants."""
        from apiserver_double import ApiServerDouble, rbac_call, realistic_node
        import kube_support

        objects = Rendered.objects[overlay]
        root = tempfile.mkdtemp(dir=Rendered.work)
        os.symlink(Rendered.certs, os.path.join(root, "certs"))
        api = ApiServerDouble(Rendered.certs)
        with open(os.path.join(SOURCE, "examples", "nodes.yaml")) as f:
            for node in yaml.safe_load(f)["items"]:
                api.put(realistic_node(node))
        for name in ("pod-gpu.yaml", "pod-cpu.yaml", "deployment.yaml"):
            for obj in documents(os.path.join(SOURCE, "tests", "fixtures", "workloads", name)):
                api.put_object(obj)
        api.start()
        kubeconfig = kube_support.kubeconfig(root, api.url, ["token: test-token"])

        args = self.args(overlay)
        policy = yaml.safe_load(one(objects, "ConfigMap", "cudagate-policy")["data"]
                                ["policy.yaml"])
        policy["registry"]["enabled"] = False  # no registry here; the review names its CUDA
        files = {args["config"]: yaml.safe_dump(policy).encode()}
        for flag, source in (("tls-cert", "server.crt"), ("tls-key", "server.key")):
            with open(os.path.join(Rendered.certs, source), "rb") as f:
                files[args[flag]] = f.read()
        for path, data in files.items():
            os.makedirs(os.path.dirname(root + path), exist_ok=True)
            with open(root + path, "wb") as f:
                f.write(data)
        port = free_port()
        argv = [BINARY, "serve"]
        for flag, value in args.items():
            if flag == "in-cluster":
                argv.append(f"--kubeconfig={kubeconfig}")
            elif flag == "listen":
                argv.append(f"--listen=127.0.0.1:{port}")
            elif value is True:
                argv.append(f"--{flag}")
            else:
                argv.append(f"--{flag}={root + value if value.startswith('/etc/') else value}")
        env = dict(os.environ)
        env.pop("KUBECONFIG", None)
        log = open(os.path.join(root, "serve.log"), "w+")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            context = ssl.create_default_context(cafile=os.path.join(Rendered.certs, "ca.crt"))
            sni = f"{SERVICE}.{NAMESPACE}.svc"

            def call(method, path, body=None):
                conn = http.client.HTTPSConnection("127.0.0.1", port, context=context,
                                                   timeout=10)
                conn.sock = context.wrap_socket(
                    socket.create_connection(("127.0.0.1", port), timeout=10),
                    server_hostname=sni)
                headers = {"Content-Type": "application/json"} if body else {}
                conn.request(method, path, body=body, headers=headers)
                res = conn.getresponse()
                data = res.read()
                conn.close()
                return res.status, data

            container = self.container(overlay)
            deadline = time.monotonic() + READY_TIMEOUT
            while True:
                self.assertIsNone(proc.poll(), "cudagate exited")
                try:
                    if call("GET", container["readinessProbe"]["httpGet"]["path"])[0] == 200:
                        break
                except OSError:
                    pass
                self.assertLess(time.monotonic(), deadline, "never ready")
                time.sleep(0.05)
            self.assertEqual(call("GET", container["livenessProbe"]["httpGet"]["path"])[0], 200)
            monitors = kind_of(objects, "ServiceMonitor")
            paths = [m["spec"]["endpoints"][0]["path"] for m in monitors] or ["/metrics"]
            for m in monitors:
                self.assertEqual(m["spec"]["endpoints"][0]["tlsConfig"]["serverName"], sni)
            for path in paths:
                status, body = call("GET", path)
                self.assertEqual(status, 200)
                self.assertIn(b"cudagate_admission_requests_total", body)

            with open(os.path.join(SOURCE, "examples", "reviews", "cuda-12.4-pod.json")) as f:
                review = json.load(f)
            policy_mode = policy.get("mode", "enforce")
            seen_modes = set()
            for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
                for hook in one(objects, kind)["webhooks"]:
                    path = hook["clientConfig"]["service"]["path"]
                    last = path.rstrip("/").split("/")[-1]
                    mode = last if last in ("enforce", "warn", "dryrun") else policy_mode
                    with self.subTest(webhook=hook["name"], path=path):
                        review["request"]["uid"] = f"uid-{hook['name']}"
                        status, body = call("POST", path + "?timeout=5s",
                                            json.dumps(review).encode())
                        self.assertEqual(status, 200, body)
                        response = json.loads(body)["response"]
                        self.assertEqual(response["uid"], review["request"]["uid"])
                        if kind.startswith("Validating"):
                            seen_modes.add(mode)
                            self.assertEqual(response["allowed"], mode != "enforce", body)
                            self.assertEqual(bool(response.get("warnings")), mode == "warn", body)
                        else:
                            self.assertTrue(response["allowed"], body)
                            if mode != "enforce":
                                self.assertNotIn("patch", response)
            self.assertEqual(seen_modes, {"enforce", "warn", "dryrun"})

            # The calls the flags make, all of them granted: the inventory's,
            # the background audit's once it has run, the reports' if written.
            granted = RbacTest.granted(self, objects)
            want = {("list", "", "nodes"), ("watch", "", "nodes")}
            if "audit-interval" in args:
                want.add(("list", "", "pods"))
            if "write-reports" in args:
                want.add(("patch", REPORT_API_GROUPS[args.get("report-api", "policyreport")],
                          "policyreports" if args.get("report-api", "policyreport") ==
                          "policyreport" else "reports"))
            deadline = time.monotonic() + READY_TIMEOUT
            while True:
                seen = {rbac_call(r) for r in api.requests_where(lambda r: True)} - {None}
                if want <= seen:
                    break
                self.assertIsNone(proc.poll(), "cudagate exited")
                self.assertLess(time.monotonic(), deadline,
                                f"never made {sorted(want - seen)}; made {sorted(seen)}")
                time.sleep(0.1)
            seen = {(group, resource, verb) for verb, group, resource in seen}
            self.assertEqual(seen - granted, set(), "calls the RBAC does not grant")
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                self.assertEqual(proc.wait(timeout=30), 0)
            finally:
                if proc.poll() is None:
                    proc.kill()
                api.stop()
                log.seek(0)
                tail = log.read()[-3000:]
                log.close()
                if sys.exc_info()[0] is not None:
                    print(tail, file=sys.stderr)


class RbacTest(ManifestTest):
    def api_calls(self):
        out = run([BINARY, "api-calls"])
        self.assertEqual(out.returncode, 0,
                         f"`cudagate api-calls` failed (it lists the binary's API calls): "
                         f"{out.stderr}")
        calls = json.loads(out.stdout)
        self.assertIsInstance(calls, list)
        for c in calls:
            self.assertEqual(set(c) >= {"verb", "group", "resource", "rbac", "when"}, True, c)
        return calls

    def enabled(self, overlay):
        """The occasions of `cudagate api-calls` the Deployment's flags turn on."""
        args = self.args(overlay)
        when = set()
        if "in-cluster" in args or "kubeconfig" in args:
            when.add("inventory")
        if "audit-interval" in args:
            when.add("background-audit")
        if "write-reports" in args:
            when.add("write-reports")
        return when

    def granted(self, objects):
        """(group, resource, verb) the service account is granted, from the
        ClusterRoles and Roles bound to it. Wildcards are not least privilege."""
        subject = {"kind": "ServiceAccount", "name": SERVICE, "namespace": NAMESPACE}
        roles = {(o["kind"], o["metadata"]["name"]): o
                 for o in objects if o["kind"] in ("ClusterRole", "Role")}
        granted = set()
        for binding in objects:
            if binding["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
                continue
            if subject not in binding["subjects"]:
                continue
            ref = binding["roleRef"]
            role = roles.get((ref["kind"], ref["name"]))
            self.assertIsNotNone(role, f"{binding['metadata']['name']} binds a missing role")
            for rule in role.get("rules", []):
                self.assertNotIn("nonResourceURLs", rule)
                self.assertNotIn("resourceNames", rule)
                for g in rule["apiGroups"]:
                    for r in rule["resources"]:
                        for v in rule["verbs"]:
                            self.assertNotIn("*", (g, r, v), f"wildcard in {ref['name']}")
                            granted.add((g, r, v))
        return granted

    def test_rbac_is_exactly_the_api_calls_of_the_flags(self):
        calls = self.api_calls()
        whens = {c["when"] for c in calls}
        self.assertIn("inventory", whens)
        self.assertEqual({c["group"] for c in calls if c["when"] == "write-reports"},
                         set(REPORT_API_GROUPS.values()))
        for overlay, objects in Rendered.in_cluster().items():
            with self.subTest(overlay=overlay):
                enabled = self.enabled(overlay)
                self.assertLessEqual(enabled, whens)
                # --write-reports writes the kind --report-api names, only.
                report_group = REPORT_API_GROUPS[self.args(overlay).get("report-api",
                                                                         "policyreport")]
                wanted = {(c["group"], c["resource"], v) for c in calls for v in c["rbac"]
                          if c["when"] in enabled and
                          (c["when"] != "write-reports" or c["group"] == report_group)}
                self.assertEqual(self.granted(objects), wanted)


def instructions(path):
    """The Containerfile's instructions as (KEYWORD, text), continuations joined."""
    out, pending = [], ""
    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not pending and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            line = pending + line
            pending = ""
            keyword, _, rest = line.strip().partition(" ")
            out.append((keyword.upper(), rest.strip()))
    if pending:
        raise AssertionError(f"{path}: a continuation runs off the end")
    return out


class ContainerfileTest(ManifestTest):
    """No container engine on these machines: the Containerfile is parsed and
    held to the Deployment, and its runtime root filesystem is made by the
    script its build stage runs and tried with chroot."""

    def stages(self):
        path = os.path.join(SOURCE, "Containerfile")
        known = {"FROM", "ARG", "RUN", "WORKDIR", "COPY", "USER", "EXPOSE", "ENTRYPOINT", "CMD",
                 "ENV", "LABEL"}
        stages = []
        for keyword, rest in instructions(path):
            self.assertIn(keyword, known, f"Containerfile: unexpected {keyword}")
            if keyword == "FROM":
                m = re.match(r"^(\S+)\s+AS\s+(\S+)$", rest, re.IGNORECASE)
                self.assertIsNotNone(m, f"FROM {rest}: every stage is named")
                stages.append({"image": m.group(1), "name": m.group(2), "steps": []})
            else:
                self.assertTrue(stages, f"{keyword} before FROM")
                stages[-1]["steps"].append((keyword, rest))
        return stages

    def test_stages_name_what_the_deployment_runs(self):
        stages = self.stages()
        self.assertEqual([s["name"] for s in stages], ["build", "runtime"])
        build, runtime = stages
        self.assertRegex(build["image"], r"^(docker\.io/(library/)?)?debian:12(\.\d+)?$")
        container = self.container("base")
        pod = self.deployment("base")["spec"]["template"]["spec"]
        steps = dict((k, v) for k, v in runtime["steps"])
        entrypoint = json.loads(steps["ENTRYPOINT"])
        self.assertEqual(entrypoint, container["command"])
        user, _, group = steps["USER"].partition(":")
        self.assertEqual(int(user), pod["securityContext"]["runAsUser"])
        self.assertEqual(int(group), pod["securityContext"]["runAsGroup"])
        self.assertNotEqual(int(user), 0)
        port = int(self.args("base")["listen"].rsplit(":", 1)[1])
        self.assertEqual(int(steps["EXPOSE"]), port)
        # The runtime stage holds only what the build stage laid out.
        self.assertEqual([k for k, _ in runtime["steps"] if k in ("RUN", "COPY")], ["COPY"])
        self.assertRegex(steps["COPY"], r"^--from=build\s+/rootfs/?\s+/$")
        # The tag the header says to build is the Deployment's image.
        with open(os.path.join(SOURCE, "Containerfile")) as f:
            header = f.read()
        self.assertIn(f"-t {container['image']} ", header)

    def test_the_build_stage_uses_debian_packages_only(self):
        build = self.stages()[0]
        text = " ".join(rest for k, rest in build["steps"] if k == "RUN")
        self.assertNotRegex(text, r"\b(curl|wget|pip|npm|git clone)\b")
        m = re.search(r"apt-get install -y --no-install-recommends (.*?)(&&|$)", text)
        self.assertIsNotNone(m)
        packages = m.group(1).split()
        self.assertIn("ca-certificates", packages)
        for p in packages:
            # Installed here by scripts/install-deps.sh, on the same Debian 12.
            out = run(["dpkg-query", "-W", "-f=${Status}", p])
            self.assertIn("install ok installed", out.stdout, f"{p} is not a Debian 12 package "
                          "install-deps.sh installs")
        self.assertIn("scripts/container-rootfs.sh", text)
        # podman and buildah read .containerignore, docker .dockerignore.
        with open(os.path.join(SOURCE, ".containerignore")) as f:
            ignored = f.read().split()
        with open(os.path.join(SOURCE, ".dockerignore")) as f:
            self.assertEqual(f.read().split(), ignored)
        for secret in ("certs/dev/", "certs/cluster/", "manifests/overlays/self-signed/generated/",
                       "manifests/overlays/local/generated/", "build/"):
            self.assertIn(secret, ignored)

    def test_the_runtime_root_filesystem_runs_the_binary(self):
        root = os.path.join(tempfile.mkdtemp(dir=Rendered.work), "rootfs")
        out = run(["bash", os.path.join(SOURCE, "scripts", "container-rootfs.sh"), BINARY, root])
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertTrue(os.path.isfile(os.path.join(root, "etc/ssl/certs/ca-certificates.crt")))
        entry = self.container("base")["command"][0]
        self.assertTrue(os.access(root + entry, os.X_OK))
        if os.geteuid() != 0 or shutil.which("chroot") is None:
            self.skipTest("chroot needs root")
        # The image holds a release build (the Containerfile's build stage
        # makes one); a sanitizer runtime needs /proc, which a container has
        # mounted and a bare chroot has not.
        version = json.loads(run([BINARY, "version", "--output", "json"]).stdout)
        if version["sanitizers"]:
            self.skipTest(f"a {'+'.join(version['sanitizers'])} build needs /proc, which a "
                          "chroot lacks; the image runs a release build")
        pod = self.deployment("base")["spec"]["template"]["spec"]["securityContext"]
        user = f"{pod['runAsUser']}:{pod['runAsGroup']}"
        for argv in ([entry, "version"], [entry, "serve", "--help"]):
            out = run(["chroot", f"--userspec={user}", root] + argv)
            self.assertEqual(out.returncode, 0, f"{argv} in the image's root: {out.stderr}")


if __name__ == "__main__":
    sys.exit(harness.main(__name__))

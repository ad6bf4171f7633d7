#!/usr/bin/env python3
"""End-to-end tests of `cudagate serve --kubeconfig`: the node inventory
listed and watched from an API server.

There is no kube-apiserver on the machines these tests run on; they start
apiserver_double.ApiServerDouble, which speaks the API server's protocol for
Nodes over TLS (paginated lists, chunked watch streams, bookmarks, 410 Gone,
401, 429, dropped connections). Its Node objects are the EKS fleet of
tests/fixtures/nodes/fleet.json (GPU Feature Discovery labels in their old
and new forms, taints, status) with the managedFields, conditions and
images a live API server adds. Certificates are made with openssl by
certs/dev-certs.sh; cudagate's kubeconfig points at the double with a CA
file, a token file, client certificate data or an exec plugin.

Every wait is a poll of a condition (/readyz, /metrics, a verdict, the
double's request log) with a deadline.

    python3 kube_watch_test.py --binary build/release/cudagate --source .
"""

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
from kube_support import (CUDA124_ANYWHERE, CUDA124_ON_T4, T4_NODE, TIMEOUT,  # noqa: E402
                          KubeTestCase, Webhook, by_name, json_patch, upgraded, write)
from server_support import poll_until  # noqa: E402

BINARY = None
SOURCE = None


class ListAndWatchTest(KubeTestCase):
    def test_first_list_in_pages_then_ready(self):
        self.api.list_gate.clear()  # hold the list until /readyz has been seen unready
        user, _ = self.token_user()
        webhook = self.webhook(user, wait_ready=False)
        poll_until(lambda: self.lists(), TIMEOUT, "the first list request")
        status, body = webhook.get("/readyz")
        self.assertEqual(status, 503, body)
        self.assertEqual(webhook.metric("cudagate_inventory_nodes", state="total"), 0)
        self.api.list_gate.set()
        webhook.wait_ready()

        pages = self.lists()
        # 13 nodes, at most 4 a page: 4 requests, the first without continue.
        self.assertEqual(len(pages), 4, pages)
        self.assertNotIn("continue", pages[0]["query"])
        self.assertTrue(all("continue" in p["query"] for p in pages[1:]))
        self.assertTrue(all(p["query"].get("limit") == "500" for p in pages))
        self.assertTrue(all(p["token"] == "token-one" for p in pages))
        self.assertEqual(webhook.metric("cudagate_inventory_nodes", state="total"), 13)
        self.assertEqual(webhook.metric("cudagate_inventory_nodes", state="gpu"), 11)
        self.assertGreater(
            webhook.metric("cudagate_inventory_last_sync_timestamp_seconds"), time.time() - 600)
        # The watch resumes from the list's resourceVersion, with bookmarks.
        poll_until(self.watches, TIMEOUT, "a watch request")
        watch = self.watches()[0]["query"]
        self.assertEqual(watch.get("resourceVersion"), str(self.api.rv))
        self.assertEqual(watch.get("allowWatchBookmarks"), "true")

    def test_label_change_changes_the_next_verdict(self):
        user, _ = self.token_user()
        webhook = self.webhook(user)
        self.assertEqual(webhook.verdict(CUDA124_ON_T4), "fail")
        poll_until(self.watches, TIMEOUT, "a watch request")
        self.api.bookmark()
        self.api.put(upgraded(by_name(self.nodes, T4_NODE), "550.90.07", "12.4"))
        webhook.wait_verdict(CUDA124_ON_T4, "pass", "the upgraded node to pass the pod")
        # And back: a downgrade is seen the same way.
        self.api.put(upgraded(by_name(self.nodes, T4_NODE), "535.129.03", "12.2"))
        webhook.wait_verdict(CUDA124_ON_T4, "fail", "the downgraded node to fail the pod")
        self.assertEqual(len(self.lists()), 4, "events, not lists, carried the changes")

    def test_deleted_node_disappears(self):
        user, _ = self.token_user()
        webhook = self.webhook(user)
        poll_until(self.watches, TIMEOUT, "a watch request")
        self.api.delete(T4_NODE)
        poll_until(lambda: webhook.metric("cudagate_inventory_nodes", state="total") == 12,
                   TIMEOUT, "12 nodes")
        self.assertEqual(webhook.verdict(CUDA124_ON_T4), "no-candidates")
        self.api.put(by_name(self.nodes, T4_NODE))
        webhook.wait_verdict(CUDA124_ON_T4, "fail", "the node to come back")

    def test_relist_after_410_gone(self):
        user, _ = self.token_user()
        webhook = self.webhook(user)
        poll_until(self.watches, TIMEOUT, "a watch request")
        # A change no event reports, then compaction: only a new list can
        # tell cudagate about it.
        self.api.put(upgraded(by_name(self.nodes, T4_NODE), "550.90.07", "12.4"), silently=True)
        self.api.compact()
        webhook.wait_verdict(CUDA124_ON_T4, "pass", "the relist to bring the silent change")
        self.assertGreaterEqual(
            webhook.metric("cudagate_inventory_relists_total", reason="expired"), 1)
        self.assertEqual(len([p for p in self.lists() if "continue" not in p["query"]]), 2)

    def test_continue_token_expired_lists_from_the_start(self):
        self.api.continue_gate.clear()
        user, _ = self.token_user()
        webhook = self.webhook(user, wait_ready=False)
        poll_until(lambda: len(self.lists()) == 2, TIMEOUT, "the second page's request")
        self.api.compact()  # the first page's continue token is now too old
        self.api.continue_gate.set()
        webhook.wait_ready()
        pages = self.lists()
        self.assertIn(410, [p.get("status") for p in pages])
        self.assertEqual(len([p for p in pages if "continue" not in p["query"]]), 2)
        self.assertEqual(webhook.metric("cudagate_inventory_nodes", state="total"), 13)

    def test_reconnect_after_a_dropped_stream(self):
        user, _ = self.token_user()
        webhook = self.webhook(user)
        poll_until(self.watches, TIMEOUT, "a watch request")
        self.api.put(upgraded(by_name(self.nodes, T4_NODE), "550.90.07", "12.4"))
        webhook.wait_verdict(CUDA124_ON_T4, "pass", "the upgrade, before the drop")
        self.api.drop_watches()
        poll_until(lambda: len(self.watches()) >= 2, TIMEOUT, "a second watch")
        # Resumed after the last event seen, not from the list's version.
        self.assertEqual(self.watches()[1]["query"]["resourceVersion"], str(self.api.rv))
        self.api.put(upgraded(by_name(self.nodes, T4_NODE), "535.129.03", "12.2"))
        webhook.wait_verdict(CUDA124_ON_T4, "fail", "the change after the reconnect")
        self.assertGreaterEqual(webhook.metric("cudagate_inventory_watch_restarts_total",
                                               reason="closed") or 0, 1)
        self.assertEqual(len(self.lists()), 4, "a dropped watch resumes without listing")

    def test_pin_follows_a_driver_rollout(self):
        user, _ = self.token_user()
        webhook = self.webhook(user)
        poll_until(self.watches, TIMEOUT, "a watch request")
        before = webhook.answer(CUDA124_ANYWHERE, "/mutate")
        self.assertEqual(before["auditAnnotations"]["verdict"], "partial")
        compatible = int(before["auditAnnotations"]["compatible"])
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "train", "namespace": "ml"}, "spec": CUDA124_ANYWHERE}
        pinned = json_patch(pod, json.loads(base64.b64decode(before["patch"])))
        terms = pinned["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        keys = {e["key"] for t in terms for e in t["matchExpressions"]}
        self.assertIn("nvidia.com/cuda.runtime-version.major", keys)
        self.assertNotIn("nvidia.com/cuda.driver-version.full", keys)
        self.assertEqual(webhook.answer(pinned["spec"])["auditAnnotations"]["candidates"],
                         str(compatible))

        # The rollout: two T4 nodes upgraded to 550 (CUDA 12.4), one H100
        # downgraded to 535 (CUDA 12.2).
        for name in ("ip-10-0-2-21.ec2.internal", "ip-10-0-2-22.ec2.internal"):
            self.api.put(upgraded(by_name(self.nodes, name), "550.90.07", "12.4"))
        self.api.put(upgraded(by_name(self.nodes, "ip-10-0-5-51.ec2.internal"),
                              "535.129.03", "12.2"))
        expected = compatible + 2 - 1
        poll_until(lambda: webhook.answer(CUDA124_ANYWHERE)["auditAnnotations"]["compatible"]
                   == str(expected), TIMEOUT, "the rollout to reach the inventory")
        # The pod pinned before the rollout selects exactly the nodes that can run it now.
        after = webhook.answer(pinned["spec"])["auditAnnotations"]
        self.assertEqual(after["verdict"], "pass")
        self.assertEqual(after["candidates"], str(expected))

    def test_429_retry_after_is_honoured(self):
        self.api.fail(429, count=1, retry_after=2, path="/api/v1/nodes")
        user, _ = self.token_user()
        webhook = self.webhook(user)
        first, second = self.lists()[:2]
        self.assertEqual(first.get("status"), 429)
        self.assertGreaterEqual(second["time"] - first["time"], 1.9)
        self.assertEqual(webhook.metric("cudagate_inventory_nodes", state="total"), 13)

    def test_metrics_pass_promtool(self):
        user, _ = self.token_user()
        webhook = self.webhook(user)
        status, text = webhook.get("/metrics")
        self.assertEqual(status, 200)
        for name in ("cudagate_inventory_relists_total", "cudagate_inventory_watch_restarts_total"):
            self.assertIn(f"# TYPE {name} counter", text)
        promtool = shutil.which("promtool")
        if promtool is None:
            self.skipTest("promtool not installed (Debian package prometheus)")
        out = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)


class CredentialsTest(KubeTestCase):
    page_size = 500
    tokens = ("token-one",)
    client_ca = True

    def tearDown(self):
        super().tearDown()
        # Logged at debug level, through refusals and rotations, yet no
        # token and no part of the client key ever shows in the log.
        with open(os.path.join(self.certs, "client.key")) as f:
            key = f.read()
        secrets = ["token-one", "token-two", "not-the-token",
                   base64.b64encode(key.encode()).decode()[:48]]
        secrets += [line for line in key.splitlines() if line and not line.startswith("-----")]
        for webhook in self.webhooks:
            with open(webhook.log_path, errors="replace") as f:
                log = f.read()
            self.assertTrue(log)
            for secret in secrets:
                self.assertNotIn(secret, log)

    def test_wrong_token_is_refused_until_the_file_is_fixed(self):
        user, path = self.token_user("not-the-token")
        webhook = self.webhook(user, wait_ready=False)
        poll_until(lambda: len(self.api.requests_where(lambda r: r.get("status") == 401)) >= 2,
                   TIMEOUT, "cudagate to be refused twice")
        self.assertEqual(webhook.get("/readyz")[0], 503)
        write(path, "token-one\n")
        webhook.wait_ready()
        self.assertEqual(self.lists()[-1]["token"], "token-one")

    def test_token_file_rotation(self):
        user, path = self.token_user("token-one")
        webhook = self.webhook(user)
        poll_until(self.watches, TIMEOUT, "a watch request")
        # The kubelet writes a new token; the old one stops working.
        write(path, "token-two\n")
        self.api.tokens = {"token-two"}
        self.api.drop_watches()
        poll_until(lambda: any(w["token"] == "token-two" for w in self.watches()), TIMEOUT,
                   "a watch with the new token")
        self.api.put(upgraded(by_name(self.nodes, T4_NODE), "550.90.07", "12.4"))
        webhook.wait_verdict(CUDA124_ON_T4, "pass", "the change seen with the new token")

    def test_client_certificate_data(self):
        def data(name):
            with open(os.path.join(self.certs, name), "rb") as f:
                return base64.b64encode(f.read()).decode()
        self.api.tokens = set()  # only the certificate can get in
        user = [f"client-certificate-data: {data('client.crt')}",
                f"client-key-data: {data('client.key')}"]
        webhook = self.webhook(user)
        self.assertEqual(webhook.metric("cudagate_inventory_nodes", state="total"), 13)
        self.assertTrue(all(r["token"] is None for r in self.lists()))

    def test_client_certificate_files(self):
        self.api.tokens = set()
        user = ["client-certificate: certs/client.crt", "client-key: certs/client.key"]
        webhook = self.webhook(user)
        self.assertEqual(webhook.metric("cudagate_inventory_nodes", state="total"), 13)

    def plugin(self, status):
        """An exec plugin that appends the time of each run to plugin-calls
        and prints an ExecCredential with `status`."""
        calls = os.path.join(self.dir, "plugin-calls")
        write(os.path.join(self.dir, "status-plugin"), "\n".join([
            f"#!{sys.executable}",
            "import json, time",
            f"open({calls!r}, 'a').write(f'{{time.monotonic()}}\\n')",
            "print(json.dumps({'kind': 'ExecCredential',",
            "                  'apiVersion': 'client.authentication.k8s.io/v1',",
            f"                  'status': {status!r}}}))",
        ]) + "\n", mode=0o700)
        return calls, ["exec:", "  apiVersion: client.authentication.k8s.io/v1",
                       "  command: ./status-plugin"]

    def test_exec_plugin_with_an_expired_credential_backs_off(self):
        calls, user = self.plugin({"token": "token-one",
                                   "expirationTimestamp": "2020-01-01T00:00:00Z"})
        webhook = self.webhook(user, wait_ready=False)

        def runs():
            with open(calls) as f:
                return [float(t) for t in f.read().split()]
        poll_until(lambda: os.path.exists(calls) and len(runs()) >= 3, TIMEOUT,
                   "three runs of the plugin")
        times = runs()
        # Backoff between runs (0.25-0.5 s, then 0.5-1 s), not a busy loop.
        self.assertGreaterEqual(times[2] - times[0], 0.7, times)
        self.assertEqual(webhook.get("/readyz")[0], 503)
        self.assertEqual(self.lists(), [], "no request with an expired credential")

    def test_exec_plugin(self):
        calls = os.path.join(self.dir, "plugin-calls")
        plugin = write(os.path.join(self.dir, "credential-plugin"), "\n".join([
            f"#!{sys.executable}",
            "import json, os, sys",
            "info = json.loads(os.environ['KUBERNETES_EXEC_INFO'])",
            "assert info['apiVersion'] == 'client.authentication.k8s.io/v1', info",
            f"open({calls!r}, 'a').write(os.environ.get('CLUSTER', '?') + '\\n')",
            "print(json.dumps({'kind': 'ExecCredential',",
            "                  'apiVersion': 'client.authentication.k8s.io/v1',",
            "                  'status': {'token': 'token-one',",
            "                             'expirationTimestamp': '2099-01-01T00:00:00Z'}}))",
        ]) + "\n", mode=0o700)
        user = ["exec:",
                "  apiVersion: client.authentication.k8s.io/v1",
                f"  command: ./{os.path.basename(plugin)}",
                "  args: []",
                "  env:",
                "  - {name: CLUSTER, value: double}",
                "  interactiveMode: Never"]
        webhook = self.webhook(user)
        self.assertEqual(webhook.metric("cudagate_inventory_nodes", state="total"), 13)
        self.assertTrue(all(r["token"] == "token-one" for r in self.lists()))
        with open(calls) as f:
            self.assertEqual(f.read().split(), ["double"], "run once, its token reused")


def can_unshare():
    try:
        return subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                               "mount -t tmpfs tmpfs /run"], capture_output=True,
                              timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class InClusterWebhook(Webhook):
    """`cudagate serve --in-cluster` with the service account folder at its
    standard path, /var/run/secrets/kubernetes.io/serviceaccount, in a mount
    namespace of its own, where it is a link to `sa_dir`."""

    def __init__(self, workdir, certs, sa_dir, api_port):
        super().__init__(workdir, certs, None)
        self.sa_dir = sa_dir
        self.api_port = api_port

    def command(self):
        serve = super().command()
        at = serve.index("--kubeconfig")
        serve[at:at + 2] = ["--in-cluster"]
        script = ("mount -t tmpfs tmpfs /run && mkdir -p /run/secrets/kubernetes.io && "
                  f"ln -s {self.sa_dir} /run/secrets/kubernetes.io/serviceaccount && "
                  'exec "$@"')
        return ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script, "sh",
                *serve]

    def environment(self):
        env = super().environment()
        env.update({"KUBERNETES_SERVICE_HOST": "127.0.0.1",
                    "KUBERNETES_SERVICE_PORT": str(self.api_port)})
        return env


@unittest.skipUnless(shutil.which("unshare") and can_unshare(),
                     "needs unshare with user and mount namespaces")
class InClusterTest(KubeTestCase):
    page_size = 500

    def test_service_account_token_and_rotation(self):
        sa = os.path.join(self.dir, "serviceaccount")
        os.mkdir(sa)
        shutil.copy(os.path.join(self.certs, "ca.crt"), os.path.join(sa, "ca.crt"))
        write(os.path.join(sa, "token"), "token-one")
        webhook = InClusterWebhook(self.dir, self.certs, sa, self.api.port)
        self.webhooks.append(webhook)
        webhook.start()
        self.assertEqual(webhook.metric("cudagate_inventory_nodes", state="total"), 13)
        self.assertTrue(all(r["token"] == "token-one" for r in self.lists()))
        poll_until(self.watches, TIMEOUT, "a watch request")
        # The kubelet rotates the bound token: it writes a new file and the
        # old token stops working.
        write(os.path.join(sa, "token"), "token-two")
        self.api.tokens = {"token-two"}
        self.api.drop_watches()
        poll_until(lambda: any(w["token"] == "token-two" for w in self.watches()), TIMEOUT,
                   "a watch with the rotated token")
        self.api.put(upgraded(by_name(self.nodes, T4_NODE), "550.90.07", "12.4"))
        webhook.wait_verdict(CUDA124_ON_T4, "pass", "the change seen with the rotated token")


class FlagsTest(unittest.TestCase):
    def run_cudagate(self, *args, env=None):
        return subprocess.run([BINARY, "serve", "--tls-cert", "x.crt", "--tls-key", "x.key",
                               *args], capture_output=True, text=True, timeout=60,
                              env=env if env is not None else dict(os.environ))

    def test_nodes_and_kubeconfig_exclude_each_other(self):
        out = self.run_cudagate("--nodes", "n.json", "--kubeconfig", "k")
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("--in-cluster and --kubeconfig", out.stderr)

    def test_in_cluster_outside_a_pod(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
        out = self.run_cudagate("--in-cluster", env=env)
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("KUBERNETES_SERVICE_HOST", out.stderr)

    def test_bad_kubeconfig_names_the_field(self):
        with tempfile.TemporaryDirectory() as d:
            path = write(os.path.join(d, "config"), "apiVersion: v1\ncurrent-context: a\n"
                         "contexts: [{name: a, context: {cluster: c, user: u}}]\n"
                         "clusters: [{name: c, cluster: {server: 'http://example:80'}}]\n")
            out = self.run_cudagate("--kubeconfig", path)
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("clusters[c].cluster.server", out.stderr)


if __name__ == "__main__":
    sys.exit(harness.main(__name__))

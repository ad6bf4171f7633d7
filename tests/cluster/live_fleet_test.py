#!/usr/bin/env python3
"""The live fleet against a real API server: `cudagate serve --kubeconfig`
lists and watches the Nodes of kube-apiserver v1.37 (backed by etcd 3.6),
and its decisions follow what is written through the API.

- Nodes relabelled (a driver upgrade, then a downgrade, as GPU Feature
  Discovery writes them), deleted and added change the next admission: the
  time from the API write to the first changed outcome of a server-side
  dry-run create (kubectl create --dry-run=server's request, which calls the
  webhooks) is printed and held to a generous bound.
- The API server SIGKILLed mid-watch and started again: while it is down
  cudagate stays ready and decides on the last fleet it listed; once it is
  back, a change written through the API reaches the decisions again.
- A gap that no watch can bridge: cudagate's watch refused while nodes are
  relabelled, deleted and added, the revision moved on and etcd compacted
  past everything cudagate saw, the API server restarted so that its watch
  cache starts afresh. Its watch comes back 410 Gone, it lists again, and no
  decision after that is made on the fleet from before the gap.

The same pods in a namespace labelled cudagate.io/mode=off show the
outcome without cudagate.

    python3 live_fleet_test.py --binary build/release/cudagate --source .
"""

import base64
import http.client
import json
import os
import ssl
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))

import harness  # noqa: E402
import kube_cluster as kc  # noqa: E402
from server_support import post, review  # noqa: E402

T4 = "Tesla-T4"
A100 = "NVIDIA-A100-SXM4-80GB"
OLD_DRIVER = ("535.129.03", "12.2")  # a CUDA 12.4 image cannot run on it
NEW_DRIVER = ("550.54.15", "12.4")
POOL = "fleet.example.com/pool"
SERVICE_ACCOUNT = "system:serviceaccount:cudagate-system:cudagate"

# What a fleet change is held to, from the API write to the first changed
# decision. The goal is under a second (a watch event, then at most 100 ms
# of gathering); the bound leaves room for a loaded two-core machine and the
# measured figures are printed.
FOLLOW_BOUND = 10
# After the API server comes back: cudagate's backoff is capped at 30 s (with
# jitter), and a watch cache still starting answers 429 with Retry-After.
RECONNECT_BOUND = 120
FAST_POLL = 0.02


def driver_labels(driver, runtime):
    """GPU Feature Discovery's labels for a node after a driver change (the
    same keys kc.gfd_node writes)."""
    d, r = driver.split("."), runtime.split(".")
    return {"nvidia.com/cuda.driver-version.full": driver,
            "nvidia.com/cuda.driver-version.major": d[0],
            "nvidia.com/cuda.driver-version.minor": d[1],
            "nvidia.com/cuda.driver-version.revision": d[2],
            "nvidia.com/cuda.runtime-version.full": runtime,
            "nvidia.com/cuda.runtime-version.major": r[0],
            "nvidia.com/cuda.runtime-version.minor": r[1]}


def node(name, pool, driver, cc="7.5", product=T4):
    return kc.gfd_node(name, driver[0], cc, product, driver[1], labels={POOL: pool})


def pod(name, pool, namespace):
    """A CUDA 12.4 pod whose candidates are the nodes of `pool`."""
    return kc.gpu_pod(name, namespace, cuda="12.4.1", node_selector={POOL: pool})


def time_until(condition, since, what, timeout):
    """Seconds from `since` (time.monotonic()) until condition() is true,
    polled every FAST_POLL so that sub-second figures mean something."""
    last_error = None
    while True:
        try:
            if condition():
                return time.monotonic() - since
        except Exception as e:  # noqa: BLE001 - reported below if it persists
            last_error = e
        if time.monotonic() - since > timeout:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}"
                                 + (f" (last error: {last_error})" if last_error else ""))
        threading.Event().wait(FAST_POLL)


# --- etcd, through its gRPC gateway -------------------------------------------

def etcd_call(cluster, method, body):
    """One call of etcd's v3 API as JSON; returns (HTTP status, body)."""
    request = urllib.request.Request(f"http://127.0.0.1:{cluster.etcd_port}/v3/{method}",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def etcd_key(key):
    return base64.b64encode(key.encode()).decode()


def etcd_revision(cluster):
    status, body = etcd_call(cluster, "kv/range", {"key": etcd_key("/registry/health")})
    if status != 200:
        raise AssertionError(f"etcd range: {status} {body}")
    return int(body["header"]["revision"])


@kc.needs_cluster
class LiveFleetTest(kc.ClusterTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.cluster.namespace("fleet")
        cls.cluster.namespace("unguarded", {"cudagate.io/mode": "off"})
        cls.gate = cls.cudagate()
        cls.gate.install()
        cls.gate.start()
        cls.figures = []

    @classmethod
    def tearDownClass(cls):
        print("\nfrom the API write to the first changed decision:")
        for what, seconds in cls.figures:
            print(f"  {what:<58} {seconds * 1000:8.0f} ms")
        status = cls.gate.stop()
        if status != 0:
            raise AssertionError(f"cudagate exited with {status}:\n{cls.gate.log_tail()}")

    # --- probes -------------------------------------------------------------

    def admission(self, namespace, manifest):
        """What the API server's admission makes of a create of `manifest`
        with dryRun=All (kubectl create --dry-run=server's request; nothing
        is stored): ("admitted", the pod as it would be stored) or
        ("denied", the message). The webhook dispatchers
        (k8s.io/apiserver/pkg/admission/plugin/webhook/mutating and
        validating, dispatcher.go) call a webhook on a dry run when its
        sideEffects are None, as cudagate's are."""
        try:
            return "admitted", self.cluster.request(
                "POST", f"/api/v1/namespaces/{namespace}/pods", manifest,
                query={"dryRun": "All"})
        except kc.ApiError as e:
            if e.status in (400, 403, 422):
                return "denied", json.loads(e.body).get("message", e.body)
            raise

    def admitted(self, manifest, namespace="fleet"):
        return self.admission(namespace, manifest)[0] == "admitted"

    def denied_by_cudagate(self, manifest, finding, namespace="fleet"):
        # Matched on cudagate's own words: a restarted API server refuses
        # creates while its informer of the webhook configurations has not
        # synced ("not yet ready to handle request",
        # k8s.io/apiserver/pkg/admission/plugin/webhook/generic/webhook.go),
        # which is not a decision.
        outcome, detail = self.admission(namespace, manifest)
        return (outcome == "denied" and 'cudagate.io" denied the request' in detail
                and finding in detail)

    def review(self, manifest):
        """cudagate's own answer on POST /validate for `manifest`: its
        auditAnnotations (verdict, candidates, compatible)."""
        _, body = review(manifest["spec"], namespace=manifest["metadata"]["namespace"],
                         name=manifest["metadata"]["name"])
        conn = http.client.HTTPSConnection(
            "127.0.0.1", self.gate.port, timeout=10,
            context=ssl.create_default_context(cafile=os.path.join(self.gate.certs, "ca.crt")))
        try:
            response, data = post(conn, "/validate", body)
        finally:
            conn.close()
        self.assertEqual(response.status, 200, data)
        return json.loads(data)["response"].get("auditAnnotations", {})

    def follow(self, condition, since, what, bound=FOLLOW_BOUND):
        seconds = time_until(condition, since, what, bound)
        type(self).figures.append((what, seconds))
        print(f"\n  {what}: {seconds * 1000:.0f} ms", end="", flush=True)
        return seconds

    # --- the control plane and cudagate's log ---------------------------------

    def log_since(self, offset):
        with open(self.gate.log_path, encoding="utf-8", errors="replace") as f:
            f.seek(offset)
            return f.read()

    def log_offset(self):
        return os.path.getsize(self.gate.log_path)

    def restart_apiserver(self):
        """scripts/cluster.sh up starts only what is not running: the API
        server on the same etcd (and the scheduler or controller manager,
        should they have exited meanwhile on losing their leader election
        lease, k8s.io/client-go/tools/leaderelection)."""
        self.cluster.up()
        return time.monotonic()

    def counters(self):
        """The samples of the relist and watch restart counters, by name and
        reason."""
        return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
                for line in self.gate.metrics().splitlines()
                if line.startswith(("cudagate_inventory_relists_total{",
                                    "cudagate_inventory_watch_restarts_total{"))}

    # --- the tests ----------------------------------------------------------

    def test_1_nodes_written_through_the_api_change_the_next_decision(self):
        self.cluster.add_nodes([node("rollout-1", "rollout", OLD_DRIVER)])
        train = pod("train", "rollout", "fleet")
        unguarded = pod("train", "rollout", "unguarded")
        old_finding = "driver 535.129.03 supports up to CUDA 12.2 (rollout-1)"
        # Until the node's last write (the not-ready taint off) is watched,
        # the pod has no candidate, which the policy admits with a warning.
        kc.wait_until(lambda: self.denied_by_cudagate(train, old_finding), "the node's verdict")
        self.assertTrue(self.admitted(unguarded, "unguarded"))

        # A driver upgrade as GPU Feature Discovery writes it.
        since = time.monotonic()
        self.cluster.set_labels("rollout-1", driver_labels(*NEW_DRIVER))
        self.follow(lambda: self.admitted(train), since, "driver upgraded: admitted")
        self.assertEqual(self.review(train)["verdict"], "pass")

        since = time.monotonic()
        self.cluster.set_labels("rollout-1", driver_labels(*OLD_DRIVER))
        self.follow(lambda: self.denied_by_cudagate(train, old_finding), since,
                    "driver downgraded: denied")
        self.assertTrue(self.admitted(unguarded, "unguarded"), "without cudagate: admitted")

        # A pool of one node that can run the pod and one that cannot: the
        # pod is pinned to the first. Without it, nothing can run the pod.
        self.cluster.add_nodes([node("shrink-good", "shrink", NEW_DRIVER, "8.0", A100),
                                node("shrink-bad", "shrink", OLD_DRIVER)])
        shrink = pod("train", "shrink", "fleet")
        kc.wait_until(lambda: self.review(shrink)["verdict"] == "partial", "the pool's verdict")
        outcome, pinned = self.admission("fleet", shrink)
        self.assertEqual(outcome, "admitted", pinned)
        self.assertIn("nodeAffinity", json.dumps(pinned["spec"].get("affinity", {})))

        since = time.monotonic()
        self.cluster.delete_node("shrink-good")
        self.follow(lambda: self.denied_by_cudagate(
            shrink, "driver 535.129.03 supports up to CUDA 12.2 (shrink-bad)"), since,
            "node deleted: denied")
        self.assertTrue(self.admitted(pod("train", "shrink", "unguarded"), "unguarded"))

        # A node is added as a Node object, then made Ready and freed of
        # node.kubernetes.io/not-ready (kc.add_nodes): timed from the first
        # write to the first decision that counts it.
        since = time.monotonic()
        self.cluster.add_nodes([node("shrink-new", "shrink", NEW_DRIVER, "8.0", A100)])
        self.follow(lambda: self.admitted(shrink), since, "node added: admitted")
        self.assertEqual(self.review(shrink)["compatible"], "1")

    def test_2_api_server_killed_and_restarted_mid_watch(self):
        self.cluster.add_nodes([node("restart-1", "restart", OLD_DRIVER)])
        train = pod("train", "restart", "fleet")
        finding = "driver 535.129.03 supports up to CUDA 12.2 (restart-1)"
        kc.wait_until(lambda: self.denied_by_cudagate(train, finding), "the new node's verdict")
        # Mid-watch: the audit log holds cudagate's watch of the nodes.
        kc.wait_until(lambda: any(
            e.get("verb") == "watch" and e.get("objectRef", {}).get("resource") == "nodes"
            and e.get("user", {}).get("username") == SERVICE_ACCOUNT
            for e in self.cluster.audit_events()), "cudagate's watch of the nodes")
        before = self.counters()
        offset = self.log_offset()

        kc.kill_apiserver(self.cluster)
        # cudagate has seen the connection go: it backs off and asks again.
        kc.wait_until(lambda: "API server: retrying in" in self.log_since(offset),
                      "cudagate to notice the API server is gone")
        synced = self.gate.metric("cudagate_inventory_last_sync_timestamp_seconds")
        # docs/operations.md: /readyz waits for the first whole list, and a lost
        # connection takes nothing away from it; decisions keep the fleet
        # last listed and watched, and nothing new is published (the
        # inventory's age, last_sync, grows: what the alert on a 15-minute
        # old inventory reads).
        self.assertTrue(self.gate.ready(), "cudagate unready while the API server is down")
        answer = self.review(train)
        self.assertEqual((answer["verdict"], answer["candidates"]), ("fail", "1"), answer)
        self.assertEqual(self.gate.metric("cudagate_inventory_last_sync_timestamp_seconds"),
                         synced)

        restarted = self.restart_apiserver()
        # Nothing changed while it was down: the same fleet, the same denial
        # (and without cudagate, the pod is admitted to a node that cannot
        # run it).
        kc.wait_until(lambda: self.denied_by_cudagate(train, finding),
                      "the restarted API server to call cudagate")
        self.assertTrue(self.admitted(pod("train", "restart", "unguarded"), "unguarded"))
        since = time.monotonic()
        self.cluster.set_labels("restart-1", driver_labels(*NEW_DRIVER))
        self.follow(lambda: self.admitted(train), since,
                    "after the API server's restart: upgrade admitted", RECONNECT_BOUND)
        figure = time.monotonic() - restarted
        print(f"\n  ... {figure:.1f} s after `cluster.sh up` returned", end="", flush=True)

        after = self.counters()
        log = self.log_since(offset)
        print("\n  " + ", ".join(f"{k} {before.get(k, 0):.0f} -> {v:.0f}"
                                 for k, v in after.items()), end="", flush=True)
        # It watched again: resumed where the restarted API server's watch
        # cache (k8s.io/apiserver/pkg/storage/cacher) began, or listed again
        # on 410 Gone when its revision is older than the list that cache
        # made at its start (both are seen, run to run; the next test makes
        # the 410 certain).
        self.assertGreater(sum(after.values()), sum(before.values()), log[-3000:])
        self.assertTrue(self.gate.ready())

    def test_3_after_a_410_gone_no_decision_is_made_on_the_old_fleet(self):
        self.cluster.add_nodes([node("gap-relabelled", "gap-a", OLD_DRIVER),
                                node("gap-deleted", "gap-b", NEW_DRIVER, "8.0", A100),
                                node("gap-kept", "gap-b", OLD_DRIVER)])
        relabelled = pod("relabelled", "gap-a", "fleet")
        shrunk = pod("shrunk", "gap-b", "fleet")
        grown = pod("grown", "gap-c", "fleet")  # no node yet

        def verdicts():
            return tuple(self.review(p)["verdict"] for p in (relabelled, shrunk, grown))
        old_fleet = ("fail", "partial", "no-candidates")
        new_fleet = ("pass", "fail", "pass")
        kc.wait_until(lambda: verdicts() == old_fleet, "the new nodes' verdicts")
        seen_revision = int(self.cluster.get("/api/v1/nodes/gap-deleted")["metadata"]
                            ["resourceVersion"])

        # The gap: cudagate may not list or watch nodes until the binding
        # is back. A watch already open is not cut by that (RBAC is asked
        # when a request starts), so the API server goes down too.
        binding = self.cluster.get(
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/cudagate")
        for key in ("resourceVersion", "uid", "creationTimestamp", "managedFields"):
            binding["metadata"].pop(key, None)

        def restore_binding():
            if not self.cluster.exists(
                    "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/cudagate"):
                self.cluster.request(
                    "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding)
        self.addCleanup(restore_binding)
        self.cluster.delete("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/cudagate")
        offset = self.log_offset()
        kc.kill_apiserver(self.cluster)
        self.addCleanup(self.cluster.up)  # whatever happens, the next test has an API server
        self.restart_apiserver()
        kc.wait_until(lambda: "API server answered 403 a watch of nodes" in
                      self.log_since(offset), "cudagate's watch to be refused")

        # What changes while cudagate cannot see: a driver upgrade, a node
        # gone, a node new.
        self.cluster.set_labels("gap-relabelled", driver_labels(*NEW_DRIVER))
        self.cluster.delete_node("gap-deleted")
        self.cluster.add_nodes([node("gap-new", "gap-c", NEW_DRIVER, "8.0", A100)])
        # A busy cluster's revision moves on between compactions: writes to
        # an object cudagate does not watch put its revision far behind.
        self.cluster.request("POST", "/api/v1/namespaces/default/configmaps",
                             {"metadata": {"name": "churn"}, "data": {}})
        for i in range(100):
            self.cluster.merge_patch("/api/v1/namespaces/default/configmaps/churn",
                                     {"metadata": {"labels": {"write": str(i)}}})
        revision = etcd_revision(self.cluster)
        status, body = etcd_call(self.cluster, "kv/compaction",
                                 {"revision": str(revision), "physical": True})
        self.assertEqual(status, 200, body)
        print(f"\n  nodes last written before the gap at revision {seen_revision}; etcd "
              f"compacted at {revision}", end="", flush=True)
        # etcd no longer holds the revisions from before the gap ...
        status, body = etcd_call(self.cluster, "kv/range",
                                 {"key": etcd_key("/registry/minions/gap-kept"),
                                  "revision": str(seen_revision)})
        self.assertNotEqual(status, 200, body)
        self.assertIn("required revision has been compacted", body.get("message", ""), body)
        # ... and the API server, started again after the compaction, holds
        # none either. Its watch cache (k8s.io/apiserver/pkg/storage/cacher,
        # watchCacheHistory.GetIntervalLocked) keeps only the events after
        # the list it made when it started, here at a revision past the
        # compaction, and answers a watch from before with 410 Gone: an
        # ERROR event "too old resource version" in a 200 stream. (Had it
        # kept running, the gap's node events would still be in its cache,
        # and a watch from before the gap could have been resumed.)
        kc.kill_apiserver(self.cluster)
        self.restart_apiserver()
        watched = self.cluster.kubectl(
            "get", "--raw",
            f"/api/v1/nodes?watch=1&resourceVersion={seen_revision}&timeoutSeconds=10")
        event = json.loads(watched.stdout.splitlines()[0])
        self.assertEqual((event["type"], event["object"]["code"]), ("ERROR", 410), event)
        self.assertIn("too old resource version", event["object"]["message"])

        # Meanwhile cudagate is ready and decides on the fleet it last knew
        # (docs/operations.md: readiness is the first whole list; nothing says a lost
        # watch takes it away), through the real admission too.
        self.assertTrue(self.gate.ready())
        self.assertEqual(verdicts(), old_fleet)
        self.assertTrue(self.denied_by_cudagate(
            relabelled, "driver 535.129.03 supports up to CUDA 12.2 (gap-relabelled)"))
        relists = self.gate.metric("cudagate_inventory_relists_total", reason="expired")

        since = time.monotonic()
        restore_binding()
        self.follow(lambda: verdicts() != old_fleet, since,
                    "after the gap: the first changed decision", RECONNECT_BOUND)
        # The first decision that changed is made on the whole new fleet:
        # a list is published whole, so no decision mixes the two.
        self.assertEqual(verdicts(), new_fleet)
        self.assertTrue(self.admitted(relabelled))
        self.assertTrue(self.denied_by_cudagate(
            shrunk, "driver 535.129.03 supports up to CUDA 12.2 (gap-kept)"))
        self.assertTrue(self.admitted(pod("shrunk", "gap-b", "unguarded"), "unguarded"))

        log = self.log_since(offset)
        self.assertIn("API server: nodes: watch ended by the server: too old resource version",
                      log)
        relisted = log.split("API server: nodes: watch ended by the server: too old", 1)[1]
        self.assertIn("inventory listed from the API server", relisted)
        self.assertGreater(self.gate.metric("cudagate_inventory_relists_total",
                                            reason="expired"), relists)


if __name__ == "__main__":
    sys.exit(harness.main(__name__))

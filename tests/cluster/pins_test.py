#!/usr/bin/env python3
"""Pins placed by the real scheduler: on a mixed fleet of 21 GPU nodes made
through kube-apiserver v1.37 (T4s on driver 535, A100s on 550 and a
half-done rollout of A100s still on 525, H100s on 570, L4s on 550, B200s on
580), cudagate's mutating webhook pins each of 36 GPU pods that only some of
its candidates can run, and kube-scheduler binds every one to a node that
`cudagate check`, run offline on the nodes read back from the API server,
finds compatible. The same pods in a namespace labelled cudagate.io/mode=off
are bound to nodes that cannot run them. A Deployment pinned at apply
follows a driver rollout: once two of the 525 A100s are relabelled 550 (as
GPU Feature Discovery would relabel them), the pods of its next ReplicaSet go
to those nodes, and to none still on 525.

    python3 pins_test.py --binary build/release/cudagate --source .
"""

import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))

import harness  # noqa: E402
import kube_cluster as kc  # noqa: E402

T4 = "Tesla-T4"
A100 = "NVIDIA-A100-SXM4-80GB"
H100 = "NVIDIA-H100-80GB-HBM3"
L4 = "NVIDIA-L4"
B200 = "NVIDIA-B200"
DRIVER_525 = "525.85.12"   # CUDA 12.0
DRIVER_550 = "550.54.15"   # CUDA 12.4
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
MUTATION = "mutation.webhook.admission.k8s.io/"
PINNED = "cudagate.io/pinned"


def fleet():
    """The fleet the pods of the first two tests choose from (label
    pool=fleet): 8 GPUs a node, so that 72 pods fit wherever their pins send
    them."""
    labels = {"pool": "fleet"}
    return (kc.pool("t4", 4, "535.129.03", "7.5", T4, "12.2", gpus=8, labels=labels)
            + kc.pool("a100", 3, DRIVER_550, "8.0", A100, "12.4", gpus=8, labels=labels)
            + kc.pool("a100-r525", 4, DRIVER_525, "8.0", A100, "12.0", gpus=8, labels=labels)
            + kc.pool("h100", 3, "570.124.06", "9.0", H100, "12.8", gpus=8, labels=labels)
            + kc.pool("l4", 4, "550.90.07", "8.9", L4, "12.4", gpus=8, labels=labels)
            + kc.pool("b200", 3, "580.65.06", "10.0", B200, "13.0", gpus=8, labels=labels))


def rollout_pool(name):
    """Two A100s on 550 and four still on 525, 2 GPUs each (label
    pool=NAME): the 550s hold exactly the 4 replicas of the Deployment."""
    labels = {"pool": name}
    return (kc.pool(f"{name}-a100", 2, DRIVER_550, "8.0", A100, "12.4", gpus=2, labels=labels)
            + kc.pool(f"{name}-a100-r525", 4, DRIVER_525, "8.0", A100, "12.0", gpus=2,
                      labels=labels))


# (CUDA_VERSION, TORCH_CUDA_ARCH_LIST, gpu.product selector): each runs on
# some of the fleet and not on the rest, from 3 of 21 nodes to 14.
KINDS = [
    ("12.4.1", None, None),               # the 550s and up (the B200s unknown: no PTX said)
    ("12.8.0", None, None),               # H100, B200
    ("12.2.2", "7.5;8.0", None),          # T4, A100 on 550, L4
    ("12.4.1", "9.0", None),              # H100
    ("12.4.1", "8.9", None),              # L4
    ("12.4.1", "8.0+PTX", None),          # A100 on 550, L4, H100, B200
    ("13.0.0", None, None),               # B200
    ("12.8.0", "10.0", None),             # B200
    ("12.4.1", "8.0", A100),              # the A100s on 550 of the 7 A100s
    ("12.0.1", "8.0;9.0", None),          # every A100, L4, H100
    ("12.6.3", "8.0;8.6;8.9;9.0", None),  # H100 (the 550s stop at CUDA 12.4)
    ("12.2.2", "7.5", None),              # T4
]
COPIES = 3


def fleet_pods(namespace):
    pods = []
    for i, (cuda, archs, product) in enumerate(KINDS):
        selector = {"pool": "fleet"}
        if product:
            selector["nvidia.com/gpu.product"] = product
        for copy in range(COPIES):
            pods.append(kc.gpu_pod(f"kind{i:02d}-{copy}", namespace, cuda=cuda, archs=archs,
                                   node_selector=selector, labels={"app": "fleet"}))
    return pods


def deployment(namespace, pool_name, replicas=4):
    """CUDA 12.4 built for sm_80: the A100s on 550 run it, those on 525 do
    not. maxSurge 100% and maxUnavailable 0: a new template gets a new
    ReplicaSet of all the replicas at once beside the old one, whose pods
    (never Ready, with no kubelet) are not scaled down
    (deployment/rolling.go reconcileOldReplicaSets keeps minAvailable)."""
    spec = kc.gpu_pod("serve", cuda="12.4.1", archs="8.0",
                      node_selector={"pool": pool_name})["spec"]
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "serve", "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "serve"}},
                     "strategy": {"type": "RollingUpdate",
                                  "rollingUpdate": {"maxSurge": "100%", "maxUnavailable": 0}},
                     "template": {"metadata": {"labels": {"app": "serve"}}, "spec": spec}}}


def upgrade_to_550():
    """The labels GPU Feature Discovery writes for driver 550.54.15."""
    return {"nvidia.com/cuda.driver-version.full": DRIVER_550,
            "nvidia.com/cuda.driver-version.major": "550",
            "nvidia.com/cuda.driver-version.minor": "54",
            "nvidia.com/cuda.driver-version.revision": "15",
            "nvidia.com/cuda.runtime-version.full": "12.4",
            "nvidia.com/cuda.runtime-version.major": "12",
            "nvidia.com/cuda.runtime-version.minor": "4"}


@kc.needs_cluster
class PinsTest(kc.ClusterTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.cluster.add_nodes(fleet() + rollout_pool("rollout") + rollout_pool("rollout-off"))
        # No mode label: the policy's mode (enforce, mutate: true), so the
        # webhook default.mutate.cudagate.io answers.
        cls.cluster.namespace("pinned")
        cls.cluster.namespace("unguarded", {"cudagate.io/mode": "off"})
        cls.gate = cls.cudagate()
        cls.gate.install()
        cls.gate.start()

    @classmethod
    def tearDownClass(cls):
        status = cls.gate.stop()
        try:
            if status != 0:
                raise AssertionError(f"cudagate exited with {status}:\n{cls.gate.log_tail()}")
        finally:
            super().tearDownClass()

    # --- cudagate check, offline, on the nodes the API server holds ---------

    def check(self, pods):
        """`cudagate check -o json` of `pods` against the nodes as the API
        server has them now, with the policy the server runs: one decision
        record per pod, by name."""
        directory = os.path.join(self.tmp, "check")
        os.makedirs(directory, exist_ok=True)
        nodes_file = os.path.join(directory, "nodes.json")
        pods_file = os.path.join(directory, "pods.json")
        with open(nodes_file, "w", encoding="utf-8") as f:
            json.dump(self.cluster.get("/api/v1/nodes"), f)
        with open(pods_file, "w", encoding="utf-8") as f:
            json.dump({"apiVersion": "v1", "kind": "List", "items": pods}, f)
        out = subprocess.run([self.binary, "check", "-f", pods_file, "--nodes", nodes_file,
                              "--config", self.gate.policy, "--offline", "-o", "json"],
                             capture_output=True, text=True, timeout=120, check=False)
        # 0 when every pod passes, 1 for any other verdict; 2 is bad input.
        self.assertIn(out.returncode, (0, 1), out.stderr)
        records = json.loads(out.stdout)
        records = records if isinstance(records, list) else [records]
        self.assertEqual(len(records), len(pods))
        return {r["resource"]["name"]: r for r in records}

    @staticmethod
    def nodes_where(record, outcome):
        return {n for g in record["groups"] if g["outcome"] == outcome for n in g["nodes"]}

    @staticmethod
    def unbound(pod):
        """The pod as written, to be judged again: without the node the
        scheduler bound it to, its status or server-set metadata."""
        metadata = {k: v for k, v in pod["metadata"].items()
                    if k in ("name", "namespace", "labels", "annotations")}
        spec = {k: v for k, v in pod["spec"].items() if k != "nodeName"}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}

    # --- the cluster ------------------------------------------------------------

    def pods(self, namespace, app):
        return self.cluster.request("GET", f"/api/v1/namespaces/{namespace}/pods",
                                    query={"labelSelector": f"app={app}"})["items"]

    def bound_pods(self, namespace, app, count, timeout=120):
        def bound():
            pods = self.pods(namespace, app)
            if len(pods) == count and all(p["spec"].get("nodeName") for p in pods):
                return pods
            return None
        return kc.wait_until(bound, f"{count} pods of {namespace}/{app} to be bound", timeout)

    def create(self, objects):
        return self.cluster.kubectl("create", "-f", "-", check=False,
                                    stdin={"apiVersion": "v1", "kind": "List",
                                           "items": objects})

    def mutations(self, namespace, name):
        """The mutating webhooks that changed the create of pod
        namespace/name, as the API server's webhook dispatcher records them
        in the audit log at every level (apiserver/pkg/admission/plugin/
        webhook/mutating/dispatcher.go, mutation.webhook.admission.k8s.io/
        round_R_index_I = {configuration, webhook, mutated})."""
        for event in self.cluster.audit_events():
            ref = event.get("objectRef", {})
            if (event.get("verb") == "create" and event.get("stage") == "ResponseComplete"
                    and ref.get("resource") == "pods" and not ref.get("subresource")
                    and ref.get("namespace") == namespace and ref.get("name") == name):
                return [json.loads(v) for k, v in event.get("annotations", {}).items()
                        if k.startswith(MUTATION)]
        return None

    def replicasets(self, namespace, deployment_name):
        items = self.cluster.get(f"/apis/apps/v1/namespaces/{namespace}/replicasets")["items"]
        return [rs for rs in items
                if any(o.get("kind") == "Deployment" and o.get("name") == deployment_name
                       for o in rs["metadata"].get("ownerReferences", []))]

    def pods_of(self, namespace, replicaset, count, timeout=120):
        """The `count` pods the ReplicaSet owns, once all are bound."""
        def bound():
            pods = [p for p in self.pods(namespace, "serve")
                    if any(o.get("uid") == replicaset["metadata"]["uid"]
                           for o in p["metadata"].get("ownerReferences", []))]
            if len(pods) == count and all(p["spec"].get("nodeName") for p in pods):
                return pods
            return None
        return kc.wait_until(bound, f"{count} bound pods of ReplicaSet "
                             f"{replicaset['metadata']['name']}", timeout)

    # --- many pods, each pinned to the nodes that can run it ------------------

    def test_partial_pods_pinned_and_bound_only_where_they_run(self):
        pods = fleet_pods("pinned")
        self.assertGreaterEqual(len(pods), 30)
        self.assertGreaterEqual(len([n for n in self.cluster.get("/api/v1/nodes")["items"]
                                     if n["metadata"]["labels"].get("pool") == "fleet"]), 20)
        # Every pod, as written, runs on a proper, non-empty subset of its
        # candidates.
        before = self.check(pods)
        for pod in pods:
            record = before[pod["metadata"]["name"]]
            self.assertEqual(record["verdict"], "partial", record)
            self.assertLess(0, record["compatible"], record)
            self.assertLess(record["compatible"], record["candidates"], record)

        created = self.create(pods)
        self.assertEqual(created.returncode, 0, created.stderr)
        # kubectl prints each distinct warning once (kubectl/pkg/cmd/cmd.go
        # sets rest.WarningWriterOptions{Deduplicate: true}), so the copies
        # of a kind share one.
        self.assertIn("Warning: cudagate: pinned to the ", created.stderr)

        bound = {p["metadata"]["name"]: p for p in self.bound_pods("pinned", "fleet", len(pods))}
        for pod in pods:
            name = pod["metadata"]["name"]
            record = before[name]
            stored = bound[name]
            with self.subTest(pod=name):
                # Written without an affinity; stored with the pin
                # default.mutate.cudagate.io patched in.
                self.assertNotIn("affinity", pod["spec"])
                self.assertIn(REQUIRED, stored["spec"]["affinity"]["nodeAffinity"])
                self.assertTrue(stored["metadata"]["annotations"][PINNED].startswith(
                    f"pinned to the {record['compatible']} of {record['candidates']} candidate"
                    " nodes that can run it"), stored["metadata"]["annotations"])
                mutations = kc.wait_until(lambda n=name: self.mutations("pinned", n),
                                          f"the audit event of the create of {name}")
                self.assertIn({"configuration": "cudagate", "webhook": "default.mutate.cudagate.io",
                               "mutated": True}, mutations)
                # kube-scheduler's NodeAffinity filter (framework/plugins/
                # nodeaffinity/node_affinity.go) kept it to the pinned nodes.
                self.assertIn(stored["spec"]["nodeName"],
                              self.nodes_where(record, "compatible"), record)

        # The pin selects exactly the compatible nodes: judged with it, each
        # pod passes on as many candidates as it had compatible ones.
        after = self.check([self.unbound(p) for p in bound.values()])
        for name, record in after.items():
            with self.subTest(pod=name):
                self.assertEqual(record["verdict"], "pass", record)
                self.assertEqual(record["candidates"], before[name]["compatible"], record)
                self.assertEqual(self.nodes_where(record, "compatible"),
                                 self.nodes_where(before[name], "compatible"))
        used = {p["spec"]["nodeName"] for p in bound.values()}
        print(f"\n{len(pods)} pods pinned and bound to {len(used)} distinct compatible nodes",
              file=sys.stderr)

    def test_without_cudagate_the_same_pods_reach_nodes_that_cannot_run_them(self):
        pods = fleet_pods("unguarded")
        verdicts = self.check(pods)
        # The pods' compatible nodes are few beside the rest: 3 to 14 of 21
        # candidates.
        compatible_share = sum(verdicts[p["metadata"]["name"]]["compatible"]
                               / verdicts[p["metadata"]["name"]]["candidates"] for p in pods)
        created = self.create(pods)
        self.assertEqual(created.returncode, 0, created.stderr)
        self.assertNotIn("cudagate", created.stderr)

        bound = self.bound_pods("unguarded", "fleet", len(pods))
        incompatible = []
        for pod in bound:
            name = pod["metadata"]["name"]
            self.assertNotIn("affinity", pod["spec"], name)
            self.assertNotIn(PINNED, pod["metadata"].get("annotations", {}), name)
            if pod["spec"]["nodeName"] in self.nodes_where(verdicts[name], "incompatible"):
                incompatible.append((name, pod["spec"]["nodeName"]))
        print(f"\nwithout cudagate {len(incompatible)} of {len(pods)} pods were bound to nodes"
              f" that cannot run them (expected {len(pods) - compatible_share:.1f} if placed at"
              f" random): {incompatible[:5]} ...", file=sys.stderr)
        # The scheduler spreads them over their candidates, toward the nodes
        # holding fewest pods (NodeResourcesFit's LeastAllocated and
        # BalancedAllocation scores), and most candidates cannot run them.
        self.assertGreater(len(incompatible), 0)

    # --- a driver rollout under a pinned Deployment ------------------------------

    def test_next_replicaset_of_a_pinned_deployment_lands_on_upgraded_nodes(self):
        applied = self.cluster.kubectl("apply", "-f", "-", stdin=deployment("pinned", "rollout"),
                                       check=False)
        self.assertEqual(applied.returncode, 0, applied.stderr)
        self.assertIn("Warning: cudagate: pinned to the 2 of 6 candidate nodes that can run it",
                      applied.stderr)
        template = self.cluster.get("/apis/apps/v1/namespaces/pinned/deployments/serve")[
            "spec"]["template"]
        pin = template["spec"]["affinity"]["nodeAffinity"][REQUIRED]
        self.assertIn(PINNED, template["metadata"]["annotations"])

        # The ReplicaSet controller copies the pinned template into each pod;
        # the four fill the two A100s on 550.
        first = kc.wait_until(lambda: (self.replicasets("pinned", "serve") or [None])[0],
                              "the first ReplicaSet of pinned/serve")
        old = self.pods_of("pinned", first, 4)
        self.assertEqual(sorted(p["spec"]["nodeName"] for p in old),
                         ["rollout-a100-01", "rollout-a100-01",
                          "rollout-a100-02", "rollout-a100-02"])
        for pod in old:
            self.assertEqual(pod["spec"]["affinity"]["nodeAffinity"][REQUIRED], pin)

        # Without cudagate the same Deployment's pods are spread over the
        # pool's six nodes: kube-scheduler scores a node holding a pod below
        # an empty one (NodeResourcesFit's LeastAllocated and
        # BalancedAllocation count a pod without requests at the non-zero
        # defaults, framework/plugins/noderesources/resource_allocation.go),
        # so the four go to four nodes, and only two are on 550.
        applied = self.cluster.kubectl("apply", "-f", "-",
                                       stdin=deployment("unguarded", "rollout-off"), check=False)
        self.assertEqual(applied.returncode, 0, applied.stderr)
        unpinned = [p["spec"]["nodeName"] for p in self.bound_pods("unguarded", "serve", 4)]
        print(f"\nwithout cudagate the Deployment's pods were bound to {sorted(unpinned)}",
              file=sys.stderr)
        self.assertTrue(any(n.startswith("rollout-off-a100-r525-") for n in unpinned), unpinned)

        # The rollout moves on: two of the four 525 A100s are on 550 now.
        upgraded = ["rollout-a100-r525-01", "rollout-a100-r525-02"]
        started = time.monotonic()
        for name in upgraded:
            self.cluster.set_labels(name, upgrade_to_550())

        # A server-side dry run of the template's pod as written (without
        # the pin) shows when cudagate's watched fleet has the new labels.
        probe = kc.gpu_pod("probe", "pinned", cuda="12.4.1", archs="8.0",
                           node_selector={"pool": "rollout"})

        def repinned():
            out = self.cluster.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-",
                                       stdin=probe, check=False)
            if out.returncode != 0:
                return None
            pod = json.loads(out.stdout)
            reason = pod["metadata"].get("annotations", {}).get(PINNED, "")
            return pod if reason.startswith("pinned to the 4 of 6 candidate nodes") else None
        probed = kc.wait_until(repinned, "cudagate to see the upgraded nodes")
        print(f"\ncudagate pinned to the upgraded nodes {time.monotonic() - started:.2f} s after"
              " the relabel", file=sys.stderr)
        # The pin is written on the CUDA and compute capability labels, not
        # on today's drivers: the one written before the rollout is the one
        # written now.
        self.assertEqual(probed["spec"]["affinity"]["nodeAffinity"][REQUIRED], pin)

        # A new template: the Deployment controller makes a second
        # ReplicaSet (deployment/sync.go getNewReplicaSet). cudagate judges
        # the update (the template changed) and its pods as they come, with
        # the template's pin: all their candidates can run them.
        rolled = self.cluster.kubectl(
            "-n", "pinned", "patch", "deployment/serve", "--type=merge", "-p",
            json.dumps({"spec": {"template": {"metadata": {"annotations": {
                "example.com/restarted-for": "driver-550"}}}}}), check=False)
        self.assertEqual(rolled.returncode, 0, rolled.stderr)
        self.assertNotIn("Warning:", rolled.stderr)

        def second():
            sets = [rs for rs in self.replicasets("pinned", "serve")
                    if rs["metadata"]["uid"] != first["metadata"]["uid"]]
            return sets[0] if sets else None
        new = self.pods_of("pinned", kc.wait_until(second, "the second ReplicaSet"), 4)

        # The 550s are full with the old pods, which stay (never Ready, so
        # maxUnavailable 0 keeps them); the pin admits the upgraded nodes and
        # keeps the pods off the two still on 525.
        self.assertEqual(len(self.pods_of("pinned", first, 4)), 4)
        nodes = [p["spec"]["nodeName"] for p in new]
        self.assertEqual(set(nodes), set(upgraded), nodes)
        verdicts = self.check([self.unbound(p) for p in new])
        for pod in new:
            name = pod["metadata"]["name"]
            self.assertEqual(pod["spec"]["affinity"]["nodeAffinity"][REQUIRED], pin)
            self.assertIn(pod["spec"]["nodeName"],
                          self.nodes_where(verdicts[name], "compatible"), verdicts[name])
        # Judged as written, the template's pod now runs on 4 of the 6.
        record = self.check([probe])["probe"]
        self.assertEqual((record["verdict"], record["compatible"], record["candidates"]),
                         ("partial", 4, 6), record)
        self.assertEqual(self.nodes_where(record, "compatible"),
                         {"rollout-a100-01", "rollout-a100-02", *upgraded})


if __name__ == "__main__":
    sys.exit(harness.main(__name__))

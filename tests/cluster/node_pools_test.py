#!/usr/bin/env python3
"""GPU pools at zero through the real control plane: Karpenter's own NodePool
CustomResourceDefinition (karpenter.sh/v1, from its Go module, applied with
its schema and CEL rules), NodePools created, changed and deleted through the
API server, and `cudagate serve --kubeconfig` watching them.

- Decisions follow the NodePools live: with no GPU node and no pool a CUDA
  12.4 pod has no candidates (warned, admitted); a pool whose node image
  runs driver 535 (CUDA 12.2) is its one candidate and the pod is refused;
  the pool's driver annotation moved to 570 admits it; the pool deleted
  leaves it without candidates again. The same pod where cudagate is off is
  admitted at every step.
- A pin an autoscaler can act on: with a T4 pool and an H100 pool (and a node
  of the H100 pool still on driver 535), the pod that needs sm_80 or sm_90
  kernels and CUDA 12.4 is pinned to the H100 pool by the labels the pool
  defines, and to no existing node. The test then does what Karpenter does,
  launching a node of a pool with the pool's labels and taints (and GPU
  Feature Discovery's labels, as they are once it boots): kube-scheduler
  leaves the pinned pod Pending beside a new T4 node, and binds it to the
  first node of the H100 pool. Where cudagate is off, the same pod goes to
  the H100 node still on driver 535, which cannot run it.

    python3 node_pools_test.py --binary build/release/cudagate --source .
"""

import copy
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))

import harness  # noqa: E402
import kube_cluster as kc  # noqa: E402

NODEPOOLS = "/apis/karpenter.sh/v1/nodepools"
GPU_NAME = "karpenter.k8s.aws/instance-gpu-name"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
CUDA = "12.4.1"          # needs a driver of CUDA 12.4 or newer
ARCHS = "8.0;9.0"        # no kernel image for a T4 (7.5)
DRIVER_535 = "535.183.01"   # CUDA 12.2
DRIVER_570 = "570.124.06"   # CUDA 12.8


def node_pool(name, gpu, driver):
    """A NodePool as an operator writes one for Karpenter's AWS provider: one
    GPU kind, the GPU taint, the driver of its node image annotated."""
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
            "metadata": {"name": name,
                         "annotations": {"cudagate.io/driver-version": driver}},
            "spec": {"template": {
                "metadata": {"labels": {"team": "ml"}},
                "spec": {
                    "requirements": [
                        {"key": GPU_NAME, "operator": "In", "values": [gpu]},
                        {"key": "karpenter.sh/capacity-type", "operator": "In",
                         "values": ["on-demand"]}],
                    "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                     "name": "gpu"}}}}}


# What GPU Feature Discovery writes on a node of each kind once it boots.
KINDS = {"t4": ("7.5", "Tesla-T4", "g4dn.xlarge"),
         "h100": ("9.0", "NVIDIA-H100-80GB-HBM3", "p5.48xlarge")}


def launched_node(name, pool, driver):
    """The Node Karpenter launches for `pool` (sigs.k8s.io/karpenter
    pkg/controllers/provisioning: the template's labels, karpenter.sh/nodepool,
    each requirement's single value, and the instance's well-known labels;
    the template's taints), with GPU Feature Discovery's labels as they are
    once it has booted."""
    template = pool["spec"]["template"]
    gpu = template["spec"]["requirements"][0]["values"][0]
    cc, product, instance_type = KINDS[gpu]
    node = kc.gfd_node(name, driver, cc, product, runtime=None, gpus=8, taint=False)
    node["metadata"]["labels"].update(template["metadata"]["labels"])
    node["metadata"]["labels"].update({
        "karpenter.sh/nodepool": pool["metadata"]["name"],
        "node.kubernetes.io/instance-type": instance_type,
        "topology.kubernetes.io/zone": "us-east-1a"})
    for requirement in template["spec"]["requirements"]:
        node["metadata"]["labels"][requirement["key"]] = requirement["values"][0]
    node["spec"]["taints"] = copy.deepcopy(template["spec"]["taints"])
    return node


def pod(name, namespace):
    return kc.gpu_pod(name, namespace, cuda=CUDA, archs=ARCHS)


class NodePoolsTest(kc.ClusterTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        kc.cluster_crds()
        kc.apply_crds(cls.cluster, ["karpenter.sh_nodepools.yaml"])
        cls.cluster.add_nodes([kc.cpu_node("cpu-1")])
        cls.cluster.namespace("guarded")
        cls.cluster.namespace("unguarded", {"cudagate.io/mode": "off"})
        cls.gate = cls.cudagate()
        cls.gate.install()
        cls.gate.start()

    @classmethod
    def tearDownClass(cls):
        status = cls.gate.stop()
        if status != 0:
            raise AssertionError(f"cudagate exited with {status}:\n{cls.gate.log_tail()}")

    def tearDown(self):
        for pool in self.cluster.get(NODEPOOLS).get("items", []):
            self.cluster.delete(f"{NODEPOOLS}/{pool['metadata']['name']}")
        for node in self.cluster.get("/api/v1/nodes")["items"]:
            if node["metadata"]["name"] != "cpu-1":
                self.cluster.delete_node(node["metadata"]["name"])
        for namespace in ("guarded", "unguarded"):
            for item in self.cluster.get(f"/api/v1/namespaces/{namespace}/pods")["items"]:
                self.cluster.request(
                    "DELETE", f"/api/v1/namespaces/{namespace}/pods/{item['metadata']['name']}",
                    query={"gracePeriodSeconds": "0"})

    # --- what the API server answers a create ---------------------------------

    def dry_run(self, namespace):
        """("denied" | "warned" | "admitted", what kubectl printed) of a
        server-side dry-run create of the pod, which calls the webhooks."""
        out = self.cluster.kubectl("create", "--dry-run=server", "-f", "-", check=False,
                                   stdin=pod("train", namespace))
        if out.returncode != 0:
            return "denied", out.stderr
        return ("warned" if "Warning: " in out.stderr else "admitted"), out.stderr

    def becomes(self, outcome, saying=""):
        """Waits until the guarded pod's create is answered `outcome` with
        `saying` in what kubectl prints; that."""
        last = []

        def answered():
            got, text = self.dry_run("guarded")
            last[:] = [got, text]
            return (text or outcome) if got == outcome and saying in text else None
        try:
            return kc.wait_until(answered, f"a create in guarded to be {outcome} ({saying!r})",
                                 timeout=60)
        except AssertionError as e:
            raise AssertionError(f"{e}; the last answer: {last}") from None

    # --- decisions follow the NodePools ----------------------------------------

    def test_decisions_follow_node_pools_created_changed_and_deleted(self):
        text = self.becomes("warned")
        self.assertIn("cudagate: no node can take this pod", text)

        pool = node_pool("gpu-a100", "a100", DRIVER_535)
        self.cluster.request("POST", NODEPOOLS, pool)
        text = self.becomes("denied")
        self.assertIn("NodePool gpu-a100 (0 nodes now)", text)
        self.assertIn(f"driver {DRIVER_535} supports up to CUDA 12.2", text)
        # Without cudagate the pod is admitted, to wait for a node that
        # cannot run it.
        self.assertEqual(self.dry_run("unguarded")[0], "admitted")

        self.cluster.merge_patch(f"{NODEPOOLS}/gpu-a100", {"metadata": {"annotations": {
            "cudagate.io/driver-version": DRIVER_570}}})
        self.becomes("admitted")

        self.cluster.delete(f"{NODEPOOLS}/gpu-a100")
        self.assertIn("cudagate: no node can take this pod", self.becomes("warned"))
        self.assertEqual(self.dry_run("unguarded")[0], "admitted")

    # --- a pin Karpenter can act on --------------------------------------------

    def unschedulable(self, namespace, name):
        def reason():
            item = self.cluster.pod(namespace, name)
            for condition in item.get("status", {}).get("conditions", []):
                if (condition["type"] == "PodScheduled" and condition["status"] == "False"
                        and condition.get("reason") == "Unschedulable"):
                    return condition.get("message", "")
            return None
        return kc.wait_until(reason, f"the scheduler to find no node for {namespace}/{name}")

    def test_pinned_pod_waits_for_a_node_of_the_compatible_pool(self):
        t4 = node_pool("gpu-t4", "t4", DRIVER_570)
        h100 = node_pool("gpu-h100", "h100", DRIVER_570)
        for item in (t4, h100):
            self.cluster.request("POST", NODEPOOLS, item)
        # A node the H100 pool launched before its node image moved to 570.
        self.cluster.add_nodes([launched_node("h100-old", h100, DRIVER_535)])
        # The two pools and the node are its candidates: pinned to the one
        # that can run it, with a warning.
        self.becomes("warned", "pinned to the 1 of 3 candidate nodes that can run it")

        created = self.cluster.kubectl("create", "-f", "-", check=False,
                                       stdin=pod("train", "guarded"))
        self.assertEqual(created.returncode, 0, created.stderr)
        affinity = self.cluster.pod("guarded", "train")["spec"]["affinity"]["nodeAffinity"]
        terms = affinity[REQUIRED]["nodeSelectorTerms"]
        # Only labels the pool defines, which Karpenter reads off the NodePool
        # before it launches anything: no GPU Feature Discovery label.
        keys = {e["key"] for t in terms for e in t.get("matchExpressions", [])}
        keys |= {f["key"] for t in terms for f in t.get("matchFields", [])}
        self.assertFalse([k for k in keys if k.startswith("nvidia.com/")], terms)
        self.assertIn({"key": "karpenter.sh/nodepool", "operator": "In", "values": ["gpu-h100"]},
                      [e for t in terms for e in t.get("matchExpressions", [])], terms)
        # The node on the old driver is no place for it.
        self.assertIn("h100-old", str(terms))
        self.unschedulable("guarded", "train")

        # Where cudagate is off the same pod goes to the node on driver 535,
        # which cannot run it.
        created = self.cluster.kubectl("create", "-f", "-", check=False,
                                       stdin=pod("train", "unguarded"))
        self.assertEqual(created.returncode, 0, created.stderr)
        self.assertNotIn("affinity", self.cluster.pod("unguarded", "train")["spec"])
        self.assertEqual(self.cluster.node_of("unguarded", "train"), "h100-old")

        # The T4 pool launches a node (there is no sm_75 kernel in the
        # image): a second pod pinned the same way, tried by the scheduler
        # on every node now, finds none. kube-scheduler's FitError counts
        # the nodes it tried ("0/3 nodes are available: ...").
        self.cluster.add_nodes([launched_node("gpu-t4-1", t4, DRIVER_570)])
        created = self.cluster.kubectl("create", "-f", "-", check=False,
                                       stdin=pod("train-2", "guarded"))
        self.assertEqual(created.returncode, 0, created.stderr)
        self.assertTrue(self.unschedulable("guarded", "train-2").startswith("0/3 nodes"))
        self.assertFalse(self.cluster.pod("guarded", "train")["spec"].get("nodeName"))

        # The H100 pool launches one: the pinned pods are bound to it.
        self.cluster.add_nodes([launched_node("gpu-h100-1", h100, DRIVER_570)])
        self.assertEqual(self.cluster.node_of("guarded", "train"), "gpu-h100-1")
        self.assertEqual(self.cluster.node_of("guarded", "train-2"), "gpu-h100-1")


if __name__ == "__main__":
    sys.exit(harness.main(__name__))

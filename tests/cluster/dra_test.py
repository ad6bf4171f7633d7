#!/usr/bin/env python3
"""Dynamic Resource Allocation through the real control plane: a mixed fleet
of GPU nodes whose devices are published as ResourceSlices of NVIDIA's DRA
driver (gpu.nvidia.com, attributes shaped as the capture from a real
H100 cluster in tests/fixtures/dra), a DeviceClass as NVIDIA's chart writes
it, and pods that claim one GPU each through a ResourceClaimTemplate.
kube-controller-manager's resourceclaim controller makes each pod's
ResourceClaim; kube-scheduler v1.37's DynamicResources plugin allocates it
and binds the pod. Nothing runs: there is no kubelet.

- `cudagate check -o claims`, run on the fleet as `kubectl get
  nodes,resourceslices` reads it back, writes a template whose CEL selector
  the scheduler's allocator honours: every device it allocates runs the
  workload (by this file's own table of the fleet and by `cudagate check`
  on that one device), and the pods beyond the compatible devices stay
  unschedulable although incompatible devices are free.
- Without the selector (the same pods and the same template as it was
  before `check -o claims`, in a namespace where cudagate is off) every pod
  is allocated a device, and more pods than there are compatible devices
  means some of them get a device that cannot run them.
- `cudagate serve` with its webhooks installed judges DRA pods from the
  slices and templates it watches: a claim that may be given an
  incompatible device is pinned to nodes whose every device runs it, one
  that can only be given incompatible devices is refused (enforce) or
  warned about (warn), and one with cudagate's selector is admitted as is.
  The products NVIDIA's driver names in its slices (NVML's names) are ones
  cudagate's matrix knows.

    python3 dra_test.py --binary build/release/cudagate --source .
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))

import harness  # noqa: E402
import kube_cluster as kc  # noqa: E402

RESOURCE = "/apis/resource.k8s.io/v1"
DRIVER = "gpu.nvidia.com"

# The workload: CUDA 12.4 (needs a driver of CUDA 12.4 or newer: 550.54.14
# and up), kernels compiled for sm_80 and sm_90 and no PTX. An sm_80 cubin
# runs on any 8.x device (same major, minor at or above 8.0), an sm_90 one
# on 9.0; a 7.5 device has no kernel image.
CUDA = "12.4.1"
ARCHS = "8.0;9.0"

# Kinds of device: driverVersion (semantic, as NVIDIA's driver publishes
# it), cudaDriverVersion, cudaComputeCapability, productName, architecture,
# and whether the workload runs on it, with why.
KINDS = {
    "h100": ("580.105.8", "13.0.0", "9.0.0", "NVIDIA H100 80GB HBM3", "Hopper",
             (True, "driver for CUDA 13.0, sm_90 kernels")),
    "a100": ("550.54.15", "12.4.0", "8.0.0", "NVIDIA A100-SXM4-80GB", "Ampere",
             (True, "driver for CUDA 12.4, sm_80 kernels")),
    "l4": ("550.54.15", "12.4.0", "8.9.0", "NVIDIA L4", "Ada Lovelace",
           (True, "driver for CUDA 12.4, sm_80 kernels run on 8.9")),
    "a100-535": ("535.129.3", "12.2.0", "8.0.0", "NVIDIA A100-SXM4-80GB", "Ampere",
                 (False, "driver 535 supports up to CUDA 12.2")),
    "t4": ("550.54.15", "12.4.0", "7.5.0", "Tesla T4", "Turing",
           (False, "no kernel image for 7.5")),
}

# Node -> the kinds of its devices, in device order. Compatible: 5 devices
# (two H100, two A100 on 550, the L4 beside a T4); incompatible: 9.
FLEET = {
    "dra-h100-1": ["h100", "h100"],
    "dra-a100-1": ["a100", "a100"],
    "dra-mixed-1": ["l4", "t4"],
    "dra-a100-535-1": ["a100-535", "a100-535"],
    "dra-a100-535-2": ["a100-535", "a100-535"],
    "dra-t4-1": ["t4", "t4"],
    "dra-t4-2": ["t4", "t4"],
}
COMPATIBLE = {(node, f"gpu-{i}") for node, kinds in FLEET.items()
              for i, kind in enumerate(kinds) if KINDS[kind][5][0]}
ALL_DEVICES = {(node, f"gpu-{i}") for node, kinds in FLEET.items() for i in range(len(kinds))}
# Two pods more than there are compatible devices, fewer than there are
# devices: with every device free, all of them fit, and at least two of them
# cannot be given a compatible device.
PODS = len(COMPATIBLE) + 2

# The nodes of which every device runs the workload: a node-level pin can
# name only these (the mixed node's T4 could be given to a plain claim).
WHOLLY_COMPATIBLE = sorted(n for n, kinds in FLEET.items() if all(KINDS[k][5][0] for k in kinds))


def device(index, kind, node):
    driver, cuda, cc, product, architecture, _ = KINDS[kind]
    return {"name": f"gpu-{index}",
            "attributes": {
                "type": {"string": "gpu"},
                "architecture": {"string": architecture},
                "brand": {"string": "Nvidia"},
                "addressingMode": {"string": "HMM"},
                "cudaComputeCapability": {"version": cc},
                "cudaDriverVersion": {"version": cuda},
                "driverVersion": {"version": driver},
                "productName": {"string": product},
                "uuid": {"string": f"GPU-{node}-{index}"},
                "resource.kubernetes.io/pciBusID": {"string": f"0000:{0x53 + index:02x}:00.0"},
            },
            "capacity": {"memory": {"value": "81559Mi"}}}


def resource_slice(node, kinds):
    """The slice NVIDIA's driver publishes for a node: one pool named after
    the node, one slice in it."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{DRIVER}"},
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [device(i, kind, node) for i, kind in enumerate(kinds)]}}


# NVIDIA's DRA driver chart's DeviceClass for whole GPUs.
DEVICE_CLASS = {
    "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
    "metadata": {"name": DRIVER},
    "spec": {"selectors": [{"cel": {"expression":
        f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == 'gpu'"}}]},
}


def claim_template(name, namespace, expression=None):
    """A template asking for one device of the class, with a CEL selector
    when given."""
    exactly = {"deviceClassName": DRIVER}
    if expression:
        exactly["selectors"] = [{"cel": {"expression": expression}}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}}


def dra_pod(name, namespace, template="one-gpu"):
    """The workload's pod: its CUDA version and arch list in its env, as
    NVIDIA's and PyTorch's images say them, and its GPU as a claim made
    from `template` (no nvidia.com/gpu limit)."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{
                "name": "train", "image": "registry.example.com/ml/train:v1",
                "env": [{"name": "CUDA_VERSION", "value": CUDA},
                        {"name": "TORCH_CUDA_ARCH_LIST", "value": ARCHS}],
                "resources": {"claims": [{"name": "gpu"}]}}],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}]}}


def version(text):
    return tuple(int(part) for part in text.split("."))


def runs_workload(attributes):
    """This file's own judgement of a device from its slice attributes,
    independent of cudagate: the driver's CUDA at or above the image's, and
    a cubin of the device's major at or below its compute capability."""
    cuda_ok = version(attributes["cudaDriverVersion"]["version"]) >= version(CUDA)[:2] + (0,)
    cc = version(attributes["cudaComputeCapability"]["version"])
    arch_ok = any(cc[0] == a[0] and cc[1] >= a[1]
                  for a in (version(x) for x in ARCHS.split(";")))
    return cuda_ok and arch_ok


@kc.needs_cluster
class DraAllocationTest(kc.ClusterTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.cluster.add_nodes([kc.cpu_node(name) for name in FLEET])
        for node, kinds in FLEET.items():
            cls.cluster.request("POST", f"{RESOURCE}/resourceslices", resource_slice(node, kinds))
        cls.cluster.request("POST", f"{RESOURCE}/deviceclasses", DEVICE_CLASS)
        # selected: cudagate's selector template; enforced: the policy's mode.
        cls.cluster.namespace("selected")
        cls.cluster.namespace("enforced")
        cls.cluster.namespace("warned", {"cudagate.io/mode": "warn"})
        cls.cluster.namespace("unguarded", {"cudagate.io/mode": "off"})

        # The fleet as `cudagate check --nodes` takes it: what the API server
        # gives back, not what this file sent.
        cls.work = os.path.join(cls.tmp, "work")
        os.makedirs(cls.work)
        fleet = cls.cluster.kubectl("get", "nodes,resourceslices", "-o", "json").stdout
        cls.fleet = json.loads(fleet)
        cls.fleet_path = cls.write("fleet.json", cls.fleet)
        cls.manifest_path = cls.write("workload.json", {
            "apiVersion": "v1", "kind": "List",
            "items": [claim_template("one-gpu", "selected"), dra_pod("train", "selected")]})
        out = cls.cudagate_cli("check", "--offline", "-f", cls.manifest_path,
                               "--nodes", cls.fleet_path, "-o", "claims")
        if out.returncode != 0:
            raise AssertionError(f"cudagate check -o claims: {out.returncode}\n{out.stderr}")
        cls.claims_output = json.loads(out.stdout)
        cls.cluster.kubectl("apply", "-f", "-", stdin=cls.claims_output)

        # The same template as before `check -o claims`, and one that can
        # only be given a T4, where cudagate is off and where it judges.
        t4_only = f'device.attributes["{DRIVER}"].productName == "Tesla T4"'
        for namespace in ("enforced", "warned", "unguarded"):
            cls.cluster.kubectl("apply", "-f", "-", stdin={
                "apiVersion": "v1", "kind": "List",
                "items": [claim_template("one-gpu", namespace),
                          claim_template("t4-only", namespace, t4_only)]})

        # Started after the slices and templates exist: /readyz waits for the
        # first whole list of each, so no pod below names a template that
        # cudagate has not seen.
        cls.gate = cls.cudagate()
        cls.gate.install()
        cls.gate.start()

    @classmethod
    def tearDownClass(cls):
        status = cls.gate.stop()
        if status != 0:
            raise AssertionError(f"cudagate exited with {status}:\n{cls.gate.log_tail()}")

    @classmethod
    def write(cls, name, document):
        path = os.path.join(cls.work, name)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(document, f)
        return path

    @classmethod
    def cudagate_cli(cls, *args):
        return subprocess.run([cls.binary, *args], capture_output=True, text=True, timeout=120,
                              check=False)

    # --- the cluster's DRA state ------------------------------------------------

    def setUp(self):
        # Each test starts with every device free, and leaves it so: the
        # allocator's choices below are counted against the whole fleet.
        self.assertEqual(self.allocated(), {})

    def allocated(self):
        """(pool, device) -> namespace/claim of every allocated device."""
        taken = {}
        for claim in self.cluster.get(f"{RESOURCE}/resourceclaims")["items"]:
            allocation = claim.get("status", {}).get("allocation") or {}
            for result in allocation.get("devices", {}).get("results", []):
                meta = claim["metadata"]
                taken[(result["pool"], result["device"])] = f"{meta['namespace']}/{meta['name']}"
        return taken

    def create(self, pod):
        return self.cluster.kubectl("create", "-f", "-", stdin=pod, check=False)

    def create_pods(self, namespace, count, template="one-gpu"):
        names = [f"train-{i}" for i in range(count)]
        self.addCleanup(self.release, namespace)
        for name in names:
            created = self.create(dra_pod(name, namespace, template))
            self.assertEqual(created.returncode, 0, created.stderr)
            # A pod cudagate passes is admitted without a word.
            self.assertNotIn("Warning", created.stderr)
        return names

    def release(self, namespace):
        """Deletes the namespace's pods at once (no kubelet would finish a
        graceful deletion) and waits until their claims are gone: the
        resourceclaim controller (k8s.io/kubernetes/pkg/controller/
        resourceclaim) drops a gone pod from the claim's reservedFor, clears
        the allocation and takes off its finalizer, and the garbage collector
        deletes the claim the pod owned."""
        for pod in self.cluster.get(f"/api/v1/namespaces/{namespace}/pods")["items"]:
            self.cluster.request("DELETE",
                                 f"/api/v1/namespaces/{namespace}/pods/{pod['metadata']['name']}",
                                 query={"gracePeriodSeconds": "0"})
        kc.wait_until(lambda: not self.cluster.get(
            f"{RESOURCE}/namespaces/{namespace}/resourceclaims")["items"],
            f"the ResourceClaims of {namespace} to be deleted", timeout=120)

    def outcome(self, namespace, name):
        """("bound", node), ("unschedulable", message) or None while the
        scheduler has not decided."""
        pod = self.cluster.pod(namespace, name)
        if pod["spec"].get("nodeName"):
            return ("bound", pod["spec"]["nodeName"])
        for condition in pod.get("status", {}).get("conditions", []):
            if (condition["type"] == "PodScheduled" and condition["status"] == "False"
                    and condition.get("reason") == "Unschedulable"):
                return ("unschedulable", condition.get("message", ""))
        return None

    def allocation(self, namespace, name):
        """(node, pool, device) of the pod's claim, as the scheduler wrote it
        into the ResourceClaim's status before binding."""
        def claim_name():
            statuses = self.cluster.pod(namespace, name).get("status", {}).get(
                "resourceClaimStatuses", [])
            return next((s.get("resourceClaimName") for s in statuses if s["name"] == "gpu"), None)
        claim = self.cluster.get(
            f"{RESOURCE}/namespaces/{namespace}/resourceclaims/"
            f"{kc.wait_until(claim_name, f'the claim of {namespace}/{name}')}")
        results = claim["status"]["allocation"]["devices"]["results"]
        self.assertEqual(len(results), 1, results)
        self.assertEqual(results[0]["driver"], DRIVER)
        reserved = [r["name"] for r in claim["status"].get("reservedFor", [])]
        self.assertEqual(reserved, [name])
        return self.cluster.pod(namespace, name)["spec"]["nodeName"], results[0]["pool"], \
            results[0]["device"]

    def slice_device(self, pool, name):
        for item in self.fleet["items"]:
            if item["kind"] == "ResourceSlice" and item["spec"]["pool"]["name"] == pool:
                for d in item["spec"]["devices"]:
                    if d["name"] == name:
                        return item, d
        raise AssertionError(f"no device {pool}/{name} in the fleet")

    def cudagate_on_device(self, pool, name):
        """`cudagate check`'s decision on the workload if its node held only
        this one device: the device's kind judged alone."""
        slice_, dev = self.slice_device(pool, name)
        node = next(i for i in self.fleet["items"]
                    if i["kind"] == "Node" and i["metadata"]["name"] == slice_["spec"]["nodeName"])
        alone = dict(slice_, spec=dict(slice_["spec"], devices=[dev]))
        path = self.write(f"device-{pool}-{name}.json",
                          {"apiVersion": "v1", "kind": "List", "items": [node, alone]})
        out = self.cudagate_cli("check", "--offline", "-f", self.manifest_path, "--nodes", path,
                                "-o", "json")
        self.assertIn(out.returncode, (0, 1), out.stderr)
        decision = json.loads(out.stdout)
        return decision[0] if isinstance(decision, list) else decision

    def judge(self, namespace, names):
        """Each bound pod's device with this file's verdict and cudagate's."""
        rows = []
        for name in names:
            node, pool, dev = self.allocation(namespace, name)
            self.assertEqual(pool, node, "one pool per node, named after it")
            kind = FLEET[pool][int(dev.split("-")[1])]
            _, attributes = self.slice_device(pool, dev)
            ours = runs_workload(attributes["attributes"])
            # The table and the attributes the API server kept agree.
            self.assertEqual(ours, KINDS[kind][5][0], (pool, dev))
            decision = self.cudagate_on_device(pool, dev)
            findings = [f["message"] for g in decision["groups"] for f in g.get("findings", [])]
            rows.append({"pod": name, "node": node, "device": dev, "kind": kind,
                         "ours": ours, "cudagate": decision["verdict"], "findings": findings})
            print(f"  {namespace}/{name}: {node}/{dev} {KINDS[kind][3]}: "
                  f"{'runs' if ours else 'cannot run'} ({KINDS[kind][5][1]}); "
                  f"cudagate: {decision['verdict']} {findings}")
        return rows

    # --- the tests ----------------------------------------------------------------

    def test_check_writes_a_selector_of_the_workloads_cuda_and_archs(self):
        items = self.claims_output["items"]
        self.assertEqual([(i["kind"], i["metadata"]["namespace"], i["metadata"]["name"])
                          for i in items], [("ResourceClaimTemplate", "selected", "one-gpu")])
        exactly = items[0]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
        self.assertEqual(exactly["deviceClassName"], DRIVER)
        expression = exactly["selectors"][-1]["cel"]["expression"]
        self.assertIn(f'device.attributes["{DRIVER}"].cudaDriverVersion.compareTo('
                      'semver("12.4.0")) >= 0', expression)
        self.assertIn("cudaComputeCapability", expression)
        # The API server's CEL compiler accepted it (apply above), and the
        # stored template is the one cudagate wrote.
        stored = self.cluster.get(f"{RESOURCE}/namespaces/selected/resourceclaimtemplates/one-gpu")
        self.assertEqual(stored["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"],
                         exactly["selectors"])

    def test_with_cudagates_selector_the_allocator_gives_only_compatible_devices(self):
        names = self.create_pods("selected", PODS)

        # k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources
        # (Filter) asks k8s.io/dynamic-resource-allocation/structured's
        # allocator for a device of the class whose selectors all hold on
        # each node; with none, Filter fails the node with "cannot allocate
        # all claims" and the pod stays Unschedulable.
        def settled():
            outcomes = {n: self.outcome("selected", n) for n in names}
            bound = [n for n, o in outcomes.items() if o and o[0] == "bound"]
            unschedulable = {n: o[1] for n, o in outcomes.items()
                             if o and o[0] == "unschedulable"}
            if len(bound) == len(COMPATIBLE) and len(unschedulable) == PODS - len(COMPATIBLE):
                return bound, unschedulable
            return None
        bound, unschedulable = kc.wait_until(settled, "every compatible device to be allocated "
                                             "and the rest of the pods to be unschedulable",
                                             timeout=180)
        for name, message in unschedulable.items():
            self.assertIn("cannot allocate all claims", message, name)

        rows = self.judge("selected", bound)
        self.assertEqual([r for r in rows if not r["ours"]], [])
        self.assertEqual([r for r in rows if r["cudagate"] != "pass"], [])
        # Every compatible device, the mixed node's L4 among them, and no
        # other: the allocator left the nine incompatible devices free
        # rather than give one to the two pods it could not place.
        taken = set(self.allocated())
        self.assertEqual(taken, COMPATIBLE)
        self.assertIn(("dra-mixed-1", "gpu-0"), taken)
        self.assertNotIn(("dra-mixed-1", "gpu-1"), taken)
        print(f"  {len(ALL_DEVICES - taken)} incompatible devices free, "
              f"{len(unschedulable)} pods unschedulable")

        # cudagate's webhook passed these pods unchanged: their placement is
        # the allocator's doing alone.
        for name in names:
            self.assertNotIn("affinity", self.cluster.pod("selected", name)["spec"])

    def test_without_the_selector_the_allocator_gives_out_incompatible_devices(self):
        # The same pods and the same template as cudagate read before it
        # added the selector, where cudagate is off. The allocator
        # (k8s.io/dynamic-resource-allocation/structured) takes any free
        # device the DeviceClass's selector admits; which node the scheduler
        # picks among those with one is its scoring's and, on ties, chance's.
        names = self.create_pods("unguarded", PODS)
        for name in names:
            kc.wait_until(lambda n=name: (self.outcome("unguarded", n) or ("",))[0] == "bound",
                          f"the scheduler to bind unguarded/{name}", timeout=180)
        rows = self.judge("unguarded", names)
        wrong = [r for r in rows if not r["ours"]]
        # Fourteen devices, five of them compatible, seven pods all placed:
        # at least two landed on a device that cannot run them (nine of the
        # fourteen are such devices, so about four and a half on average).
        self.assertGreaterEqual(len(wrong), PODS - len(COMPATIBLE), rows)
        print(f"  {len(wrong)} of {PODS} pods were given a device that cannot run them")
        # cudagate, asked about each such device, says why.
        for row in wrong:
            self.assertEqual(row["cudagate"], "fail", row)
            expected = ("needs CUDA 12.4; driver 535.129.03 supports up to CUDA 12.2"
                        if row["kind"] == "a100-535" else
                        "no kernel image for compute capability 7.5 (Tesla T4)")
            self.assertTrue(any(expected in f for f in row["findings"]), row)
        for row in rows:
            if row["ours"]:
                self.assertEqual(row["cudagate"], "pass", row)

    def test_serve_pins_a_plain_claim_to_nodes_whose_every_device_runs_it(self):
        self.addCleanup(self.release, "enforced")
        created = self.create(dra_pod("train", "enforced"))
        self.assertEqual(created.returncode, 0, created.stderr)
        # The mutating webhook's answer for a pod that some candidates can
        # run: a nodeAffinity, which the scheduler's NodeAffinity plugin
        # applies before DynamicResources allocates on the nodes left. The
        # slices are the node facts and no label says them, so it names the
        # nodes.
        affinity = self.cluster.pod("enforced", "train")["spec"].get("affinity", {})
        terms = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"]
        named = sorted(v for t in terms for part in ("matchFields", "matchExpressions")
                       for e in t.get(part, []) for v in e.get("values", []))
        self.assertEqual(named, WHOLLY_COMPATIBLE, affinity)
        node = self.cluster.node_of("enforced", "train", timeout=120)
        self.assertIn(node, WHOLLY_COMPATIBLE)
        (row,) = self.judge("enforced", ["train"])
        self.assertTrue(row["ours"], row)
        self.assertEqual(row["cudagate"], "pass", row)

    def test_serve_knows_the_products_the_dra_driver_names(self):
        # NVIDIA's DRA driver publishes NVML's product name ("NVIDIA H100
        # 80GB HBM3", as in the captured slices); GPU Feature Discovery
        # labels the same GPU with spaces made dashes, the form the matrix
        # lists ("NVIDIA-H100-80GB-HBM3"). Every product of this fleet is in
        # the matrix, so none may count as unknown: an unknown product
        # leaves the GPU's brand unknown, and NVIDIA_REQUIRE_CUDA's brand
        # conditions with it.
        kc.wait_until(lambda: self.gate.metric("cudagate_inventory_nodes", state="gpu")
                      == len(FLEET), "cudagate to count every node of the fleet as a GPU node")
        unknown = [line for line in self.gate.metrics().splitlines()
                   if line.startswith('cudagate_compat_db_unknown_nodes{kind="product"')
                   and not line.endswith(" 0")]
        self.assertEqual(unknown, [], self.gate.log_tail())

    def test_serve_refuses_a_claim_that_can_only_get_incompatible_devices(self):
        self.addCleanup(self.release, "warned")
        self.addCleanup(self.release, "unguarded")
        message = "no kernel image for compute capability 7.5 (Tesla T4)"
        # The denial text is the API server's webhook dispatcher's
        # (k8s.io/apiserver/pkg/admission/plugin/webhook/errors), around
        # cudagate's message; the mutating webhook is called first.
        refused = self.create(dra_pod("train", "enforced", "t4-only"))
        self.assertNotEqual(refused.returncode, 0, refused.stdout)
        self.assertIn('admission webhook "default.mutate.cudagate.io" denied the request',
                      refused.stderr)
        self.assertIn(message, refused.stderr)
        self.assertFalse(self.cluster.exists("/api/v1/namespaces/enforced/pods/train"))

        warned = self.create(dra_pod("train", "warned", "t4-only"))
        self.assertEqual(warned.returncode, 0, warned.stderr)
        self.assertIn("Warning: ", warned.stderr)
        self.assertIn(message, warned.stderr)

        # Without cudagate the same pod is created and given a T4.
        created = self.create(dra_pod("train", "unguarded", "t4-only"))
        self.assertEqual(created.returncode, 0, created.stderr)
        self.cluster.node_of("unguarded", "train", timeout=120)
        (row,) = self.judge("unguarded", ["train"])
        self.assertEqual(row["kind"], "t4", row)
        self.assertFalse(row["ours"])
        self.assertEqual(row["cudagate"], "fail", row)


if __name__ == "__main__":
    sys.exit(harness.main(__name__))

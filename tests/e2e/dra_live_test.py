#!/usr/bin/env python3
"""End-to-end tests of `cudagate serve --kubeconfig` with Dynamic Resource
Allocation: ResourceSlices listed and watched as node facts, and
ResourceClaimTemplates and ResourceClaims listed and watched as what pods
ask for.

There is no kube-apiserver on the machines these tests run on; they start
apiserver_double.ApiServerDouble, which serves resource.k8s.io as the API
server does (list pages without kind and apiVersion on items, chunked
watch streams, 404 for a version the cluster does not serve). Its objects
are those of tests/fixtures/dra/fleet.yaml and pods.yaml: the H100 node
and ResourceSlices of a real EKS capture (NVIDIA DRA driver, Kubernetes
1.35), A100 nodes whose slices say cudaDriverVersion 12.2, a node with an
L4 and a T4, a v1beta1 slice of a 1.32 cluster; beside them, for mixed
clusters, the device-plugin nodes of tests/fixtures/nodes/fleet.json.

Every wait is a poll of a condition (/readyz, a verdict, the double's
request log, the log) with a deadline.

    python3 dra_live_test.py --binary build/release/cudagate --source .
"""

import base64
import copy
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
import kube_support  # noqa: E402
from double_case import DoubleTestCase  # noqa: E402
from dra_support import DraWebhook, claim_objects, dra_fleet, dra_review_pod  # noqa: E402
from kube_support import TIMEOUT, kubeconfig, write  # noqa: E402
from server_support import poll_until  # noqa: E402

BINARY = None
SOURCE = None

A100_NODES = ("dra-a100-0", "dra-a100-1")


def rollout(slice_, driver, cuda):
    """`slice_` republished by the DRA driver after a driver upgrade: a new
    pool generation whose devices say the new driverVersion and
    cudaDriverVersion."""
    slice_ = copy.deepcopy(slice_)
    slice_["spec"]["pool"]["generation"] += 1
    for device in slice_["spec"]["devices"]:
        attributes = device.get("basic", device)["attributes"]
        attributes["driverVersion"] = {"version": driver}
        attributes["cudaDriverVersion"] = {"version": cuda}
    return slice_


class DraTestCase(DoubleTestCase):
    prefix = "cudagate-dra-"
    dra_versions = ("v1",)

    def double_options(self):
        return dict(tokens=("token-one",), page_size=3, dra_versions=self.dra_versions)

    def setUp(self):
        super().setUp()
        self.nodes, self.slices = dra_fleet()

    def put_fleet(self, names=None):
        for node in self.nodes:
            if names is None or node["metadata"]["name"] in names:
                self.api.put(node)
        for slice_ in self.slices:
            if names is None or slice_["spec"]["nodeName"] in names:
                if slice_["apiVersion"].endswith("/v1"):
                    self.api.put_object(slice_)

    def put_claims(self):
        for obj in claim_objects():
            self.api.put_object(obj)

    def webhook(self):
        write(os.path.join(self.dir, "token"), "token-one\n")
        config = kubeconfig(self.dir, self.api.url, ["tokenFile: token"])
        webhook = DraWebhook(self.dir, self.certs, config)
        self.webhooks.append(webhook)
        return webhook.start()

    def slice_of(self, node):
        return next(s for s in self.slices
                    if s["spec"]["nodeName"] == node and s["spec"]["driver"] == "gpu.nvidia.com")


class DraLiveTest(DraTestCase):
    def test_denied_where_every_slice_says_cuda_12_2(self):
        self.put_fleet(A100_NODES)
        self.put_claims()
        webhook = self.webhook()
        response = webhook.answer_pod(*dra_review_pod())
        self.assertFalse(response["allowed"], response)
        self.assertEqual(response["auditAnnotations"]["verdict"], "fail")
        message = response["status"]["message"]
        self.assertIn("12.4", message)
        self.assertIn("12.2", message)
        # Slices, templates and claims were listed, and watched, at v1.
        for resource in ("resourceslices", "resourceclaimtemplates", "resourceclaims"):
            path = f"/apis/resource.k8s.io/v1/{resource}"
            poll_until(lambda: self.api.requests_where(
                lambda r, p=path: r["path"] == p and r["query"].get("watch") == "1"),
                TIMEOUT, f"a watch of {resource}")

    def test_pinned_on_a_mixed_fleet(self):
        self.put_fleet()
        self.put_claims()
        webhook = self.webhook()
        response = webhook.answer_pod(*dra_review_pod(), path="/mutate")
        self.assertTrue(response["allowed"], response)
        self.assertEqual(response.get("patchType"), "JSONPatch", response)
        patch = json.loads(base64.b64decode(response["patch"]))
        pod, annotations = dra_review_pod()
        pinned = kube_support.json_patch(
            {"metadata": {"name": "train", "namespace": "ml", "annotations": annotations},
             "spec": pod}, patch)["spec"]
        terms = pinned["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        allowed = set()
        for term in terms:
            for expr in term.get("matchExpressions", []) + term.get("matchFields", []):
                if expr["operator"] == "In":
                    allowed |= set(expr["values"])
        self.assertTrue(allowed, terms)
        self.assertFalse(allowed & set(A100_NODES), terms)
        self.assertIn("ip-10-0-171-111.ec2.internal", allowed)

    def test_a_driver_rollout_in_the_slices_changes_the_next_verdict(self):
        self.put_fleet(A100_NODES)
        self.put_claims()
        webhook = self.webhook()
        pod = dra_review_pod()
        self.assertEqual(webhook.dra_verdict(pod), "fail")
        for node in A100_NODES:
            self.api.put_object(rollout(self.slice_of(node), "550.54.15", "12.4.0"))
        webhook.wait_dra_verdict(pod, "pass", "the rollout seen in the watched slices")
        # A Node event after it keeps the node's devices.
        node = copy.deepcopy(next(n for n in self.nodes if n["metadata"]["name"] == A100_NODES[0]))
        node["metadata"]["labels"]["example.com/rack"] = "r7"
        self.api.put(node)
        poll_until(lambda: self.api.requests_where(lambda r: r["path"] == "/api/v1/nodes"),
                   TIMEOUT, "the node watch")
        self.assertEqual(webhook.dra_verdict(pod), "pass")
        # The slices deleted: no node has the devices the claim asks for.
        for node in A100_NODES:
            self.api.remove_object("ResourceSlice", "", self.slice_of(node)["metadata"]["name"])
        poll_until(lambda: webhook.dra_verdict(pod) != "pass", TIMEOUT,
                   "the deleted slices seen")

    def test_a_missing_claim_is_unknown_and_admitted_with_a_warning(self):
        self.put_fleet(A100_NODES)
        self.put_claims()
        webhook = self.webhook()
        response = webhook.answer_pod(*dra_review_pod("no-such-template"))
        self.assertTrue(response["allowed"], response)
        self.assertEqual(response["auditAnnotations"]["verdict"], "unknown")
        warnings = " ".join(response.get("warnings", []))
        self.assertIn("no-such-template", warnings)

    def test_a_template_created_after_start_becomes_known(self):
        self.put_fleet(A100_NODES)
        webhook = self.webhook()
        pod = dra_review_pod("late-gpu")
        self.assertEqual(webhook.dra_verdict(pod), "unknown")
        template = copy.deepcopy(claim_objects()[0])
        template["metadata"]["name"] = "late-gpu"
        self.api.put_object(template)
        webhook.wait_dra_verdict(pod, "fail", "the new template seen by the watch")
        self.api.remove_object("ResourceClaimTemplate", "ml", "late-gpu")
        webhook.wait_dra_verdict(pod, "unknown", "the deleted template forgotten")

    def test_claims_made_for_pods_are_left_out(self):
        self.put_fleet(A100_NODES)
        made = copy.deepcopy(claim_objects()[2])  # a ResourceClaim
        made["metadata"].update({
            "name": "train-gpu-x7k2p",
            "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "train",
                                 "uid": "0d1e2f", "controller": True,
                                 "blockOwnerDeletion": True}]})
        self.api.put_object(made)
        webhook = self.webhook()
        pod = dra_review_pod("train-gpu-x7k2p", by_name=True)
        self.assertEqual(webhook.dra_verdict(pod), "unknown")
        self.api.put_object(claim_objects()[2])
        webhook.wait_dra_verdict(dra_review_pod("isolated-gpu", by_name=True), "fail",
                                 "a claim by name, known")

    def test_device_plugin_and_dra_nodes_side_by_side(self):
        self.put_fleet()
        self.put_claims()
        for node in kube_support.fleet():
            self.api.put(node)
        webhook = self.webhook()
        # The device-plugin pod is judged on the T4 node's labels (driver 535: CUDA 12.2).
        self.assertEqual(webhook.verdict(kube_support.CUDA124_ON_T4), "fail")
        # The DRA pod only on the nodes with devices of its class: some can run
        # it (polled: the slices' patch may land just after readiness).
        poll_until(lambda: webhook.dra_verdict(dra_review_pod()) in ("partial", "pass"), TIMEOUT,
                   "the DRA pod judged on the device nodes")
        response = webhook.answer_pod(*dra_review_pod(), path="/mutate")
        self.assertTrue(response["allowed"], response)
        self.assertIn(response["auditAnnotations"]["verdict"], ("partial", "pass"), response)
        # A DRA pod limited to the A100s' product is denied though GPU
        # Feature Discovery labels an A100 with the same product elsewhere.
        template = copy.deepcopy(claim_objects()[1])
        template["metadata"]["name"] = "a100"
        template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"][0]["cel"][
            "expression"] = 'device.attributes["gpu.nvidia.com"].productName == ' \
                            '"NVIDIA A100-SXM4-40GB"'
        self.api.put_object(template)
        webhook.wait_dra_verdict(dra_review_pod("a100"), "fail", "the A100 template judged")


class ForbiddenTest(DraTestCase):
    def test_a_forbidden_list_does_not_hold_readiness(self):
        # A ClusterRole of an older release: no resource.k8s.io.
        self.put_fleet(A100_NODES)
        self.put_claims()
        self.api.fail(403, count=3, path="/apis/resource.k8s.io/v1/resourceslices")
        webhook = self.webhook()  # ready though the slices are refused
        self.assertTrue(webhook.log_has("forbids listing resourceslices"), webhook.log_tail())
        # Retried: once allowed, the slices count.
        webhook.wait_dra_verdict(dra_review_pod(), "fail", "the slices listed once allowed")


class WithoutDraTest(DraTestCase):
    dra_versions = ()

    def test_a_cluster_without_dra_runs_without(self):
        for node in kube_support.fleet():
            self.api.put(node)
        webhook = self.webhook()
        self.assertEqual(webhook.verdict(kube_support.CUDA124_ON_T4), "fail")
        self.assertEqual(webhook.dra_verdict(dra_review_pod()), "unknown")
        for resource in ("resourceslices", "resourceclaimtemplates", "resourceclaims"):
            for version in ("v1", "v1beta2", "v1beta1"):
                path = f"/apis/resource.k8s.io/{version}/{resource}"
                self.assertTrue(self.api.requests_where(
                    lambda r, p=path: r["path"] == p and r["status"] == 404), path)
        self.assertTrue(webhook.log_has("running without them"))


class V1beta1Test(DraTestCase):
    dra_versions = ("v1beta1",)

    def test_v1beta1_slices_and_templates(self):
        beta = next(s for s in self.slices if s["apiVersion"] == "resource.k8s.io/v1beta1")
        node = next(n for n in self.nodes if n["metadata"]["name"] == beta["spec"]["nodeName"])
        self.api.put(node)
        self.api.put_object(beta)
        # A v1beta1 template: deviceClassName on the request itself.
        self.api.put_object({
            "apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one-gpu", "namespace": "ml"},
            "spec": {"spec": {"devices": {"requests": [
                {"name": "gpu", "deviceClassName": "gpu.nvidia.com"}]}}}})
        webhook = self.webhook()
        # The H100 of the v1beta1 slice: driver 570, CUDA 12.8.
        self.assertEqual(webhook.dra_verdict(dra_review_pod()), "pass")
        self.assertEqual(webhook.dra_verdict(dra_review_pod(cuda="12.9")), "fail")
        self.assertTrue(webhook.log_has("reading resource.k8s.io/v1beta1"), webhook.log_tail())
        self.assertTrue(self.api.requests_where(
            lambda r: r["path"] == "/apis/resource.k8s.io/v1beta1/resourceslices"
            and r["query"].get("watch") == "1"))


if __name__ == "__main__":
    sys.exit(harness.main(__name__))

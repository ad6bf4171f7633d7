"""What the tests of Dynamic Resource Allocation against the API server
double share: the nodes and ResourceSlices of tests/fixtures/dra/fleet.yaml,
the ResourceClaimTemplates and ResourceClaims of tests/fixtures/dra/pods.yaml,
pods that ask for a GPU through a claim, and `DraWebhook` (a
`cudagate serve --kubeconfig` that answers reviews of such pods).

Used by dra_live_test.py and bench/load/dra_claims.py. BINARY and SOURCE are set
by harness.share_paths.
"""

import json
import os

import server_support
import yaml
from apiserver_double import realistic_node
from kube_support import TIMEOUT, Webhook
from server_support import poll_until

BINARY = None
SOURCE = None


def fixture(*path):
    with open(os.path.join(SOURCE, "tests", "fixtures", *path)) as f:
        return list(yaml.safe_load_all(f))


def dra_fleet():
    """(nodes, slices) of tests/fixtures/dra/fleet.yaml."""
    items = fixture("dra", "fleet.yaml")[0]["items"]
    nodes = [realistic_node(o) for o in items if o["kind"] == "Node"]
    slices = [o for o in items if o["kind"] == "ResourceSlice"]
    return nodes, slices


def claim_objects():
    """The ResourceClaimTemplates and ResourceClaims of tests/fixtures/dra/pods.yaml."""
    return [o for o in fixture("dra", "pods.yaml")
            if o and o["kind"] in ("ResourceClaimTemplate", "ResourceClaim")]


def dra_pod(claim="one-gpu", by_name=False):
    """A pod spec that asks for its GPU through a claim of `claim`."""
    ref = {"name": "gpu"}
    ref["resourceClaimName" if by_name else "resourceClaimTemplateName"] = claim
    return {"containers": [{"name": "train", "image": "registry.example.com/ml/train:cu124",
                            "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [ref]}


def dra_review_pod(claim="one-gpu", cuda="12.4", **kw):
    return dra_pod(claim, **kw), {"cudagate.io/cuda-version": cuda,
                                        "cudagate.io/arch-list": "8.0 8.6 8.9 9.0"}


class DraWebhook(Webhook):
    def answer_pod(self, pod_spec, annotations, path="/validate"):
        import uuid
        uid = str(uuid.uuid4())
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "train", "namespace": "ml", "annotations": annotations},
               "spec": pod_spec}
        gvk = {"group": "", "version": "v1", "kind": "Pod"}
        gvr = {"group": "", "version": "v1", "resource": "pods"}
        body = json.dumps({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
                           "request": {"uid": uid, "kind": gvk, "resource": gvr,
                                       "requestKind": gvk, "requestResource": gvr,
                                       "name": "train", "namespace": "ml",
                                       "operation": "CREATE",
                                       "userInfo": {"username": "kubernetes-admin"},
                                       "object": pod, "oldObject": None, "dryRun": False}})
        conn = self.connect()
        try:
            res, data = server_support.post(conn, path, body.encode())
        finally:
            conn.close()
        if res.status != 200:
            raise AssertionError(f"{path} answered {res.status}: {data!r}")
        return json.loads(data)["response"]

    def dra_verdict(self, pod):
        return self.answer_pod(*pod).get("auditAnnotations", {}).get("verdict")

    def wait_dra_verdict(self, pod, expected, what):
        try:
            poll_until(lambda: self.dra_verdict(pod) == expected, TIMEOUT, what)
        except AssertionError as e:
            raise AssertionError(f"{e}: last answer {self.answer_pod(*pod)}\n"
                                 f"{self.log_tail()}") from None

    def log_has(self, text):
        with open(self.log_path, "rb") as f:
            return text in f.read().decode(errors="replace")

#!/usr/bin/env python3
"""End-to-end tests of the compatibility matrix a running server uses.

A fleet whose driver is of a branch newer than the embedded matrix knows
is judged `unknown` (a floor, never a denial), and the server says which
values it does not know, in its log and in cudagate_compat_db_unknown_nodes.
A newer matrix given as --compat-db-override (a file that may be absent, as
a ConfigMap volume that is optional) replaces the embedded one when it
appears, is re-read when it changes, is refused whole when it is invalid,
and gives way to the embedded one again when it is removed, all without a
restart: for a --nodes file, and for a fleet listed and watched from the API
server (the double of apiserver_double.py: no kube-apiserver runs where these
tests do), whose nodes' facts are derived again with the new matrix.

    python3 compat_db_reload_test.py --binary build/dev/cudagate --source .
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import harness
import kube_support as kw
import server_support as st

# An H100 node on a driver of branch 640, which the embedded matrix does not
# know, labelled without GPU Feature Discovery's runtime labels: its CUDA
# comes from the matrix.
H100_640 = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "gpu-h100-640",
        "labels": {
            "kubernetes.io/hostname": "gpu-h100-640",
            "cudagate.io/driver-version": "640.10.01",
            "cudagate.io/gpu-product": "H100",
        },
    },
    "status": {"allocatable": {"nvidia.com/gpu": "8"}},
}


# A V100 whose labels claim a driver of R590: Volta's last branch is R580,
# so the labels cannot all be true.
V100_590 = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "gpu-v100-590",
        "labels": {
            "kubernetes.io/hostname": "gpu-v100-590",
            "cudagate.io/driver-version": "590.48.01",
            "nvidia.com/gpu.product": "Tesla-V100-SXM2-16GB",
        },
    },
    "status": {"allocatable": {"nvidia.com/gpu": "8"}},
}


def pod(cuda):
    return {"containers": [{"name": "train", "image": "registry.example.com/ml/train:v1",
                            "env": [{"name": "CUDA_VERSION", "value": cuda}],
                            "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
            "nodeSelector": {"kubernetes.io/hostname": "gpu-h100-640"}}


class MatrixTest(unittest.TestCase):
    def setUp(self):
        harness.share_paths()
        self.tmp = tempfile.mkdtemp(prefix="cudagate-compat-db-test-")
        self.certs = os.path.join(self.tmp, "certs")
        st.make_certs(self.certs)
        nodes = os.path.join(self.tmp, "nodes.json")
        with open(nodes, "w") as f:
            json.dump(st.node_list(H100_640, V100_590), f)
        config = os.path.join(self.tmp, "policy.yaml")
        with open(config, "w") as f:
            f.write("apiVersion: cudagate.io/v1alpha1\nkind: Policy\nmode: enforce\n"
                    "unknownNode: warn\n")
        self.override = os.path.join(self.tmp, "matrix", "compat-db.json")
        self.server = st.Server(self.tmp, self.certs, "--compat-db-override", self.override,
                                nodes=nodes, config=config).start()

    def tearDown(self):
        status = self.server.stop()
        tail = self.server.log_tail()
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.assertEqual(status, 0, tail)

    def embedded(self):
        out = subprocess.run([harness.BINARY, "db", "show", "-o", "json"], capture_output=True,
                             text=True, check=True, timeout=60)
        return json.loads(out.stdout)

    def write_override(self, matrix):
        os.makedirs(os.path.dirname(self.override), exist_ok=True)
        tmp = self.override + ".tmp"
        with open(tmp, "w") as f:
            f.write(matrix if isinstance(matrix, str) else json.dumps(matrix))
        os.replace(tmp, self.override)  # as a ConfigMap volume update swaps it

    def metric(self, name, **labels):
        return st.metric_value(self.server.metrics()[2], name, **labels) or 0

    def answer(self, cuda):
        uid, body = st.review(pod(cuda), namespace="ml", name="train")
        conn = self.server.connect()
        try:
            res, data = st.post(conn, "/validate", body)
            response = json.loads(data)["response"]
            self.assertEqual(response["uid"], uid)
            return response
        finally:
            conn.close()

    def test_a_newer_branch_is_a_floor_until_a_newer_matrix_arrives(self):
        revision = self.embedded_revision()
        self.assertEqual(self.metric("cudagate_compat_db_info", revision=revision,
                                     as_of="2026-12-04"), 1)
        self.assertEqual(self.metric("cudagate_compat_db_unknown_nodes", kind="driver_branch",
                                     value="640"), 1)
        with open(self.server.log_path, encoding="utf-8") as f:
            log = f.read()
        self.assertIn("driver branch 640", log)
        self.assertIn("update cudagate or give --compat-db", log)
        self.assertEqual(self.metric("cudagate_inventory_inconsistent_nodes"), 1)
        self.assertIn("driver 590.48.01 is newer than R580, the last driver branch for volta GPUs",
                      log)

        # The floor: what R620's CUDA 13.5 runs passes, more is unknown and admitted.
        self.assertTrue(self.answer("13.5")["allowed"])
        newer = self.answer("13.6")
        self.assertTrue(newer["allowed"], newer)
        self.assertIn("branch 640", " ".join(newer.get("warnings", [])))
        self.assertGreaterEqual(self.metric("cudagate_compat_db_gap_admissions_total",
                                            rule="cuda-driver"), 1)

        # A newer matrix that knows R640 (CUDA 13.6): the same pod passes, a
        # CUDA 13.7 one is denied, and the node is no gap any more.
        matrix = self.embedded()
        matrix["asOf"] = "2027-01-15"
        matrix["driverBranches"].append({"branch": 640, "cuda": "13.6", "source": "test"})
        self.write_override(matrix)
        st.poll_until(lambda: self.metric("cudagate_compat_db_info", as_of="2027-01-15") == 1,
                      20, "the override matrix in use")
        self.assertEqual(self.metric("cudagate_compat_db_info", revision=revision,
                                     as_of="2026-12-04"), 0)
        self.assertEqual(self.metric("cudagate_compat_db_unknown_nodes", kind="driver_branch",
                                     value="640"), 0)
        self.assertEqual(self.metric("cudagate_file_reloads_total", file="compat-db",
                                     result="success"), 1)
        self.assertTrue(self.answer("13.6")["allowed"])
        denied = self.answer("13.7")
        self.assertFalse(denied["allowed"])
        self.assertIn("driver 640.10.01 supports up to CUDA 13.6", denied["status"]["message"])

        # An invalid matrix is refused whole: the previous one stays.
        self.write_override('{"schemaVersion": 1, "cudaReleases": 3}')
        st.poll_until(lambda: self.metric("cudagate_file_reloads_total", file="compat-db",
                                          result="error") >= 1, 20, "the bad matrix noticed")
        self.assertTrue(self.answer("13.6")["allowed"])
        self.assertFalse(self.answer("13.7")["allowed"])

        # Removed: the embedded matrix again.
        os.remove(self.override)
        st.poll_until(lambda: self.metric("cudagate_compat_db_info", revision=revision,
                                          as_of="2026-12-04") == 1, 20, "the embedded matrix back")
        self.assertTrue(self.answer("13.7")["allowed"], "unknown again, so admitted")

    def embedded_revision(self):
        out = subprocess.run([harness.BINARY, "version", "-o", "json"], capture_output=True,
                             text=True, check=True, timeout=60)
        return json.loads(out.stdout)["compatDb"]["revision"]



def matrix_knowing_640(as_of):
    """The embedded matrix with branch 640 (CUDA 13.6) and the date `as_of`."""
    out = subprocess.run([harness.BINARY, "db", "show", "-o", "json"], capture_output=True,
                         text=True, check=True, timeout=60)
    matrix = json.loads(out.stdout)
    matrix["asOf"] = as_of
    matrix["driverBranches"].append({"branch": 640, "cuda": "13.6", "source": "test"})
    return matrix


class OverrideWebhook(kw.Webhook):
    def __init__(self, override, *args):
        super().__init__(*args)
        self.override = override

    def command(self):
        return super().command() + ["--compat-db-override", self.override]


class LiveFleetTest(kw.KubeTestCase):
    def test_the_watched_fleet_is_judged_again_with_a_new_matrix(self):
        self.api.put(H100_640)
        override = os.path.join(self.dir, "compat-db.json")
        user, _ = self.token_user()
        webhook = OverrideWebhook(override, self.dir, self.certs,
                                  kw.kubeconfig(self.dir, self.api.url, user))
        self.webhooks.append(webhook)
        webhook.start()
        self.assertEqual(webhook.metric("cudagate_compat_db_unknown_nodes", kind="driver_branch",
                                        value="640"), 1)
        self.assertEqual(webhook.verdict(pod("13.6")), "unknown")

        tmp = override + ".tmp"
        with open(tmp, "w") as f:
            json.dump(matrix_knowing_640("2027-01-15"), f)
        os.replace(tmp, override)
        webhook.wait_verdict(pod("13.6"), "pass", "the node judged with the new matrix")
        self.assertEqual(webhook.verdict(pod("13.7")), "fail")
        self.assertEqual(webhook.metric("cudagate_compat_db_unknown_nodes", kind="driver_branch",
                                        value="640"), 0)
        self.assertEqual(webhook.metric("cudagate_compat_db_info", as_of="2027-01-15"), 1)

        # The watch goes on with the new matrix: a node moved to branch 641,
        # which it does not know either, is a floor again.
        moved = json.loads(json.dumps(H100_640))
        moved["metadata"]["labels"]["cudagate.io/driver-version"] = "641.20.01"
        kw.poll_until(self.watches, kw.TIMEOUT, "a watch request")
        self.api.put(moved)
        webhook.wait_verdict(pod("13.7"), "unknown", "the relabelled node to be a floor again")
        self.assertEqual(webhook.metric("cudagate_compat_db_unknown_nodes", kind="driver_branch",
                                        value="641"), 1)

if __name__ == "__main__":
    sys.exit(harness.main(__name__))

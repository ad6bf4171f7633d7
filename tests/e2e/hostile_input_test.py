#!/usr/bin/env python3
"""End-to-end tests of `cudagate serve` against request content chosen to make
it grow: what a request says may show in the answer, the log and the metrics,
and none of them may grow with it.

The API server validates an object's name only after the mutating webhooks
have run, so `/mutate` can be sent a name of any length; each review here is
shaped as the captures in tests/fixtures/admission/captured are and posted
over TLS.

    python3 hostile_input_test.py --binary build/release/cudagate --source .
"""

import json
import os
import sys
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
import server_support  # noqa: E402
from server_support import CUDA124_POD, ServerTestCase, post, review  # noqa: E402

BINARY = None
SOURCE = None


def setUpModule():
    server_support.BINARY = BINARY
    server_support.SOURCE = SOURCE


def gpu_pod(image, arch_list=None):
    pod = json.loads(json.dumps(CUDA124_POD))
    container = pod["containers"][0]
    container["image"] = image
    if arch_list is not None:
        container.setdefault("env", []).append({"name": "TORCH_CUDA_ARCH_LIST",
                                                "value": arch_list})
    return pod


class HostileInputTest(ServerTestCase):
    def send(self, path, body):
        conn = self.server.connect(timeout=30)
        try:
            res, data = post(conn, path, body)
            self.assertEqual(res.status, 200, data[:300])
            return json.loads(data)["response"]
        finally:
            conn.close()

    def log_lines(self):
        with open(self.server.log_path, "rb") as f:
            return f.read().decode(errors="replace").splitlines()

    def test_a_huge_name_kind_and_arch_list_stay_out_of_answers_and_logs(self):
        huge_name = "n" * 300_000
        uid, body = review(gpu_pod("registry.example.com/" + "x" * 200_000 + ":1",
                                   "8.0;" + "y" * 200_000),
                           namespace="ns-" + "s" * 100_000, name=huge_name)
        odd_kind = json.loads(body)
        odd_kind["request"]["object"]["kind"] = "Pod" + "k" * 50_000
        for path, request in (("/validate", body), ("/mutate", body),
                              ("/validate", json.dumps(odd_kind).encode())):
            with self.subTest(path=path):
                before = len(self.log_lines())
                response = self.send(path, request)
                self.assertEqual(response["uid"], uid)
                if request is body:
                    # Denied for the arch list, named with the cut value.
                    self.assertFalse(response["allowed"])
                    self.assertIn("TORCH_CUDA_ARCH_LIST", response["status"]["message"])
                answer = json.dumps(response)
                self.assertLess(len(answer), 8192, answer[:400])
                self.assertNotIn("n" * 400, answer)
                server_support.poll_until(lambda: len(self.log_lines()) > before, 30,
                                          "the admission's log line")
                for line in self.log_lines()[before:]:
                    self.assertLess(len(line), 16384, line[:400])
                    self.assertNotIn("n" * 1100, line)

    def test_metrics_series_do_not_follow_request_content(self):
        def series():
            return {line.split(" ")[0] for line in self.server.metrics()[2].splitlines()
                    if line and not line.startswith("#")}

        # Every outcome once: deny, pass, skip (no GPU), bad input.
        kinds = [gpu_pod("registry.example.com/ml/a:1"),
                 gpu_pod("registry.example.com/ml/a:1", "8.0;9.0"),
                 {"containers": [{"name": "web", "image": "nginx"}]},
                 gpu_pod("registry.example.com/ml/a:1", "not-an-arch")]
        for pod in kinds:
            self.send("/validate", review(pod)[1])
            self.send("/mutate", review(pod)[1])
        warm = series()
        marks = []
        for n in range(120):
            mark = uuid.uuid4().hex
            marks.append(mark)
            pod = kinds[n % len(kinds)]
            pod = json.loads(json.dumps(pod))
            pod["containers"][0]["image"] = f"registry-{mark}.example.com/ml/{mark}:{mark}"
            self.send("/validate" if n % 2 else "/mutate",
                      review(pod, namespace=f"ns-{mark}", name=f"pod-{mark}")[1])
        after = series()
        self.assertEqual(after, warm, sorted(after ^ warm))
        text = self.server.metrics()[2]
        for mark in marks:
            self.assertNotIn(mark, text)


if __name__ == "__main__":
    sys.exit(harness.main(__name__))

#!/usr/bin/env python3
"""The HTML audit report rendered in headless Chromium.

Runs the real binary and Debian's chromium (scripts/install-deps.sh installs it):
    python3 html_report_test.py --binary PATH --source REPO
Each report is loaded from a file: Chromium must log no console message (the
page's Content-Security-Policy turns any load from elsewhere into one, which
the first test shows), its screenshot must not be blank and must show the
matrix's colours, and the DOM Chromium built must have one row per workload
and one column per node group: for the fixture audit, and for 500 workloads
against 30 node groups.
"""

import json
import os
import sys

import harness
import html_report_support
from html_report_support import CELL_COLOURS, HtmlReportTestCase, console_messages, run_chromium

BINARY = ""
SOURCE = ""


def setUpModule():
    html_report_support.BINARY = BINARY


def gpu_node(name, driver, cc, product):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {
                "cudagate.io/driver-version": driver, "cudagate.io/compute-capability": cc,
                "cudagate.io/gpu-product": product, "pool": f"{product}-{driver}"}},
            "status": {"allocatable": {"nvidia.com/gpu": "8", "cpu": "64"}}}


DRIVERS = ["470.82.01", "525.85.12", "535.129.03", "550.54.15", "570.124.06", "580.65.06"]
PRODUCTS = [("Tesla-V100", "7.0"), ("Tesla-T4", "7.5"), ("A100", "8.0"), ("L4", "8.9"),
            ("H100", "9.0")]
IMAGES = ["pytorch/pytorch:2.1.2-cuda11.8-cudnn8-runtime",
          "pytorch/pytorch:2.2.2-cuda12.1-cudnn8-runtime",
          "pytorch/pytorch:2.4.1-cuda12.4-cudnn9-runtime",
          "nvcr.io/nvidia/cuda:12.8.0-runtime-ubuntu22.04"]


def large_inputs(directory, workloads=500):
    """30 node groups (5 products x 6 drivers, 3 nodes each) and `workloads` pods."""
    nodes = []
    for product, cc in PRODUCTS:
        for driver in DRIVERS:
            for i in range(3):
                nodes.append(gpu_node(f"{product.lower()}-{driver}-{i}", driver, cc, product))
    with open(os.path.join(directory, "nodes.json"), "w") as f:
        json.dump({"apiVersion": "v1", "kind": "NodeList", "items": nodes}, f)
    pods = []
    for i in range(workloads):
        spec = {"containers": [{"name": "main", "image": IMAGES[i % len(IMAGES)],
                                "resources": {"limits": {"nvidia.com/gpu": 1}}}]}
        if i % 5 == 0:
            product, _ = PRODUCTS[i % len(PRODUCTS)]
            spec["nodeSelector"] = {"cudagate.io/gpu-product": product}
        pods.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": f"job-{i:03d}", "namespace": f"team-{i % 9}"},
                     "spec": spec})
    with open(os.path.join(directory, "pods.json"), "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": pods}, f)


class ConsoleCheck(HtmlReportTestCase):
    def test_a_load_from_elsewhere_is_a_console_message(self):
        # What the other tests' "no console message" rules out: the page's policy
        # reports any reference to another origin.
        page = os.path.join(self.tmp, "bad.html")
        with open(page, "w") as f:
            f.write("<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" "
                    "content=\"default-src 'none'; style-src 'unsafe-inline'\"></head>"
                    "<body><img src=\"https://example.invalid/x.png\"></body></html>")
        result = run_chromium(page, "--dump-dom", workdir=self.tmp)
        self.assertTrue(any("Content Security Policy" in m
                            for m in console_messages(result.stderr)), result.stderr[-2000:])


class FixtureReport(HtmlReportTestCase):
    def test_renders_the_matrix(self):
        audit = os.path.join(SOURCE, "tests", "fixtures", "audit")
        page = self.report(["manifests", "--nodes", "../cli/nodes.json"], cwd=audit)
        image, dom = self.render(page, 1280, 900)
        self.assertEqual(dom.rows, ["partial", "skip", "pass", "partial", "skip", "pass", "fail",
                                    "partial", "error"])
        self.assertEqual(dom.groups, 4)
        self.assertEqual(sum(dom.cells.values()), 9 * 4)
        self.assertEqual(dom.cells.get("incompatible"), 4)
        self.assertEqual(dom.articles, 5)
        self.assert_not_blank(image, CELL_COLOURS)


class LargeReport(HtmlReportTestCase):
    def test_500_workloads_against_30_node_groups(self):
        large_inputs(self.tmp)
        page = self.report([os.path.join(self.tmp, "pods.json"), "--nodes",
                            os.path.join(self.tmp, "nodes.json")])
        image, dom = self.render(page, 1600, 1000)
        self.assertEqual(len(dom.rows), 500)
        self.assertEqual(dom.groups, 30)
        self.assertEqual(sum(dom.cells.values()), 500 * 30)
        for outcome in ("compatible", "incompatible", "none"):
            self.assertGreater(dom.cells.get(outcome, 0), 0, outcome)
        self.assert_not_blank(image, CELL_COLOURS)
        self.assertLess(os.path.getsize(page), 8 * 1024 * 1024)


if __name__ == "__main__":
    sys.exit(harness.main(__name__))

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

import html.parser
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

import harness

BINARY = ""
SOURCE = ""

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                  "--no-first-run", "--disable-extensions", "--enable-logging=stderr", "--v=0"]


def chromium():
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        raise AssertionError("chromium is not installed: run scripts/install-deps.sh")
    return path


def run_chromium(page, *args, workdir):
    profile = tempfile.mkdtemp(dir=workdir)
    result = subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args,
                             "file://" + os.path.abspath(page)],
                            capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise AssertionError(f"chromium exit {result.returncode}:\n{result.stderr[-3000:]}")
    return result


def console_messages(stderr):
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def decode_png(data):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB or RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, height, colour = 8, b"", 0, 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6), f"PNG depth {depth} colour type {colour}"
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    channels = 4 if colour == 6 else 3
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                predictor = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + predictor) & 0xFF
        rows.append([tuple(line[x * channels:x * channels + 3]) for x in range(width)])
        previous = line
    return width, height, rows


class MatrixParser(html.parser.HTMLParser):
    """Counts what the report's markup contract names in the DOM Chromium dumped."""

    def __init__(self):
        super().__init__()
        self.rows, self.groups, self.cells, self.articles = [], 0, {}, 0
        self.in_matrix = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "table" and a.get("id") == "matrix":
            self.in_matrix = True
        if not self.in_matrix:
            if tag == "article":
                self.articles += 1
            return
        if tag == "tr" and "workload" in classes:
            self.rows.append(a.get("data-verdict"))
        elif tag == "th" and "group" in classes:
            self.groups += 1
        elif tag == "td" and "cell" in classes:
            for c in classes:
                if c != "cell":
                    self.cells[c] = self.cells.get(c, 0) + 1
            if not a.get("title"):
                raise AssertionError("a matrix cell without a hover reason")

    def handle_endtag(self, tag):
        if tag == "table":
            self.in_matrix = False


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


class HtmlReportTestCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="cudagate-html-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def report(self, args, cwd=None):
        result = subprocess.run([BINARY, "audit", "--offline", *args, "--format", "html"], capture_output=True,
                                text=True, timeout=300, cwd=cwd,
                                env=dict(os.environ, SOURCE_DATE_EPOCH="1764584444"))
        self.assertIn(result.returncode, (0, 1), result.stderr)
        path = os.path.join(self.tmp, "report.html")
        with open(path, "w") as f:
            f.write(result.stdout)
        return path

    def render(self, page, width, height):
        png = os.path.join(self.tmp, "shot.png")
        shot = run_chromium(page, f"--window-size={width},{height}", f"--screenshot={png}",
                            workdir=self.tmp)
        self.assertEqual(console_messages(shot.stderr), [])
        with open(png, "rb") as f:
            image = decode_png(f.read())
        dom = run_chromium(page, "--dump-dom", workdir=self.tmp)
        self.assertEqual(console_messages(dom.stderr), [])
        parser = MatrixParser()
        parser.feed(dom.stdout)
        return image, parser

    def assert_not_blank(self, image, colours):
        width, height, rows = image
        self.assertGreater(width, 0)
        pixels = [p for row in rows[::4] for p in row[::4]]
        background = max(set(pixels), key=pixels.count)
        drawn = sum(1 for p in pixels if p != background)
        self.assertGreater(drawn / len(pixels), 0.05, "the screenshot is nearly blank")
        present = set(pixels)
        for name, rgb in colours.items():
            near = any(all(abs(a - b) <= 6 for a, b in zip(rgb, p)) for p in present)
            self.assertTrue(near, f"no {name} pixel {rgb} in the screenshot")


CELL_COLOURS = {"compatible cell": (0xc8, 0xe6, 0xc9), "incompatible cell": (0xff, 0xcd, 0xd2),
                "not-a-candidate cell": (0xec, 0xef, 0xf1)}


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

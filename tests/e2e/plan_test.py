#!/usr/bin/env python3
"""End-to-end tests of `cudagate plan`: the fixture fleet and workloads of
tests/fixtures/plan (its README lists them) under each kind of change.

Runs the real binary:  python3 plan_test.py --binary PATH --source REPO
Golden files under tests/fixtures/plan/golden are regenerated on purpose
only, with CUDAGATE_UPDATE_GOLDEN=1, and read by eye before they are
committed. JUnit output is read with xml.etree; the HTML page is loaded in
headless Chromium with the helpers of html_report_support.py.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

import harness
import html_report_support

BINARY = ""
SOURCE = ""
EPOCH = "1764584444"

H100 = ["--remove-nodes", "pool=a100", "--add-nodes", "h100-pool.yaml"]


def plan_dir(*parts):
    return os.path.join(SOURCE, "tests", "fixtures", "plan", *parts)


def plan(*args, cwd=None):
    """`cudagate plan` of the fixture workloads from tests/fixtures/plan, so places are relative."""
    env = dict(os.environ, SOURCE_DATE_EPOCH=EPOCH, NO_COLOR="1")
    return subprocess.run([BINARY, "plan", "--offline", "-f", "workloads", "--nodes", "nodes.yaml",
                           *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd or plan_dir(), env=env)


def changes(result):
    """{workload name: change} of a JSON plan."""
    data = json.loads(result.stdout)
    return {w["after"]["resource"]["name"]: w["change"] for w in data["workloads"]}


class Golden(unittest.TestCase):
    CASES = {
        "t4-570.txt": (["--set-driver", "pool=t4=570.124.06"], 0),
        "a100-580.txt": (["--set-driver", "pool in (a100)=580.65.06"], 0),
        "h100-order.txt": (H100 + ["--order"], 1),
        "h100-order.json": (H100 + ["--order", "--format", "json"], 1),
        "h100.junit.xml": (H100 + ["--format", "junit"], 1),
        "h100.html": (H100 + ["--order", "--format", "html"], 1),
    }

    def test_every_case_matches_its_golden_file(self):
        for name, (args, status) in self.CASES.items():
            with self.subTest(name):
                result = plan(*args)
                self.assertEqual(result.returncode, status, result.stderr)
                self.assertEqual(result.stderr, "")
                path = plan_dir("golden", name)
                if os.environ.get("CUDAGATE_UPDATE_GOLDEN") == "1":
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    with open(path, "w") as f:
                        f.write(result.stdout)
                with open(path) as f:
                    self.assertEqual(result.stdout, f.read())


class Changes(unittest.TestCase):
    def test_t4_to_570_heals_cuda_12_4_images(self):
        result = plan("--set-driver", "pool=t4=570.124.06", "--format", "json")
        self.assertEqual(result.returncode, 0, result.stderr)
        c = changes(result)
        self.assertEqual(c["serve-cuda124"], "heals")
        self.assertNotIn("breaks", c.values())
        data = json.loads(result.stdout)
        t4 = data["nodeGroups"][0]
        self.assertEqual(t4["change"], "changed")
        self.assertEqual((t4["before"]["maxCuda"], t4["after"]["maxCuda"]), ("12.2", "12.8"))
        self.assertEqual(t4["after"]["driver"], "570.124.06")

    def test_an_a100_pool_on_a_new_driver_major_breaks_nothing(self):
        result = plan("--set-driver", "pool=a100=580.65.06", "--format", "json")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(set(changes(result).values()), {"unchanged"})
        a100 = json.loads(result.stdout)["nodeGroups"][0]
        self.assertEqual(a100["after"]["maxCuda"], "13.0")
        self.assertEqual(a100["runsBefore"], a100["runsAfter"])


class Breaks(unittest.TestCase):
    def test_h100_replacement_breaks_the_sm80_build_and_exits_1(self):
        result = plan(*H100, "--format", "json")
        self.assertEqual(result.returncode, 1, result.stderr)
        c = changes(result)
        self.assertEqual(c["trainer-sm80"], "breaks")
        self.assertEqual(c["a100-cuda124"], "unchanged")
        data = json.loads(result.stdout)
        self.assertEqual(data["workloads"][0]["change"], "breaks")  # breaks first
        after = [w for w in data["workloads"] if w["change"] == "breaks"][0]["after"]
        self.assertEqual(after["verdict"], "fail")
        self.assertEqual(after["groups"][0]["findings"][0]["rule"], "gpu-arch")

    def test_removing_the_last_compatible_group_leaves_no_candidates(self):
        result = plan("--remove-nodes", "pool=l4", "--format", "json")
        self.assertEqual(result.returncode, 1, result.stderr)
        data = json.loads(result.stdout)
        w = [w for w in data["workloads"] if w["after"]["resource"]["name"] == "l4-inference"][0]
        self.assertEqual((w["before"]["verdict"], w["after"]["verdict"], w["change"]),
                         ("pass", "no-candidates", "breaks"))

    def test_order_moves_the_h100s_first_and_names_the_arch_list_to_build(self):
        result = plan(*H100, "--set-driver", "pool=t4=570.124.06", "--order", "--format", "json")
        self.assertEqual(result.returncode, 1, result.stderr)
        order = json.loads(result.stdout)["order"]
        self.assertEqual([m["change"] for m in order["first"]], ["added", "changed"])
        self.assertEqual(len(order["blocked"]), 1)
        blocked = order["blocked"][0]
        self.assertEqual(blocked["change"], "removed")
        self.assertEqual(blocked["breaks"], ["Deployment ml/trainer-sm80"])
        self.assertIn('TORCH_CUDA_ARCH_LIST="8.0;9.0"', blocked["rebuild"][0]["fix"])

    def test_a_rebuilt_arch_list_unblocks_the_move(self):
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copytree(plan_dir(), os.path.join(tmp, "plan"))
            trainer = os.path.join(tmp, "plan", "workloads", "trainer-sm80.yaml")
            with open(trainer) as f:
                text = f.read()
            self.assertIn("value: '8.0'", text)
            with open(trainer, "w") as f:
                f.write(text.replace("value: '8.0'", "value: '8.0;9.0'"))
            result = plan(*H100, "--order", "--format", "json", cwd=os.path.join(tmp, "plan"))
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            order = json.loads(result.stdout)["order"]
            self.assertEqual(order["blocked"], [])
            self.assertEqual([m["change"] for m in order["first"]], ["added", "removed"])

    def test_set_image_judges_the_new_image(self):
        result = plan("--set-image",
                      "inference/Deployment/serve-cuda124:main=pytorch/pytorch:2.1.2-cuda12.1-cudnn8-runtime",
                      "--format", "json")
        self.assertEqual(result.returncode, 0, result.stderr)
        data = json.loads(result.stdout)
        w = data["workloads"][0]
        self.assertEqual((w["change"], w["imageChanged"]), ("heals", True))
        self.assertEqual(w["after"]["containers"][0]["cuda"]["value"], "12.1")


class Junit(unittest.TestCase):
    def test_a_failure_per_workload_that_breaks(self):
        result = plan(*H100, "--remove-nodes", "pool=l4", "--format", "junit")
        self.assertEqual(result.returncode, 1, result.stderr)
        root = ET.fromstring(result.stdout)
        self.assertEqual(root.get("name"), "cudagate plan")
        self.assertEqual(root.get("failures"), "2")
        failed = sorted(case.get("name") for case in root.iter("testcase")
                        if case.find("failure") is not None)
        self.assertEqual(failed, ["Deployment inference/l4-inference", "Deployment ml/trainer-sm80"])
        self.assertEqual(int(root.get("tests")), 6)


class Usage(unittest.TestCase):
    def assert_usage(self, args, message):
        result = plan(*args)
        self.assertEqual(result.returncode, 2, result.stdout)
        self.assertEqual(result.stdout, "")
        self.assertIn(message, result.stderr)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)

    def test_bad_changes_are_usage_errors_naming_the_flag(self):
        self.assert_usage([], "nothing to plan")
        self.assert_usage(["--set-driver", "pool=t5=570.124.06"],
                          '--set-driver "pool=t5=570.124.06": selects no node')
        self.assert_usage(["--set-driver", "pool in t4=570.124.06"],
                          "expected '(' to open the set of values")
        self.assert_usage(["--set-driver", "pool=t4=5x"], "expected a driver version")
        self.assert_usage(["--remove-nodes", "pool="], '--remove-nodes "pool=": selects no node')
        self.assert_usage(["--set-image", "Deployment/nope=x:1"], "matches no workload")
        self.assert_usage(["--set-image", "trainer=x:1"], "[NAMESPACE/]KIND/NAME")
        self.assert_usage(["--add-nodes", "nodes.yaml"], "already in the inventory")
        self.assert_usage(["--add-nodes", "missing.yaml"], "missing.yaml: cannot read")


class Html(html_report_support.HtmlReportTestCase):
    def test_the_before_after_matrix_renders(self):
        result = plan(*H100, "--set-driver", "pool=t4=570.124.06", "--order", "--format", "html")
        self.assertEqual(result.returncode, 1, result.stderr)
        page = os.path.join(self.tmp, "plan.html")
        with open(page, "w") as f:
            f.write(result.stdout)
        parser = PlanMatrixParser()
        image, dom = self.render_with(page, parser)
        self.assertEqual(dom.rows[0], "breaks")
        self.assertEqual(sorted(dom.rows),
                         ["breaks", "heals", "unchanged", "unchanged", "unchanged", "unchanged"])
        self.assertEqual(dom.groups, 4)  # T4 changed, A100 removed, H100 added, L4 unchanged
        outcomes = ("compatible", "incompatible", "unknown", "none")
        self.assertEqual(sum(dom.cells.get(o, 0) for o in outcomes), 6 * 4)
        self.assertGreater(dom.cells.get("breaks", 0), 0)
        self.assertGreater(dom.cells.get("heals", 0), 0)
        self.assertTrue(dom.order)
        self.assert_not_blank(image, html_report_support.CELL_COLOURS)

    def render_with(self, page, parser):
        png = os.path.join(self.tmp, "shot.png")
        shot = html_report_support.run_chromium(page, "--window-size=1400,900",
                                                f"--screenshot={png}", workdir=self.tmp)
        self.assertEqual(html_report_support.console_messages(shot.stderr), [])
        with open(png, "rb") as f:
            image = html_report_support.decode_png(f.read())
        dom = html_report_support.run_chromium(page, "--dump-dom", workdir=self.tmp)
        self.assertEqual(html_report_support.console_messages(dom.stderr), [])
        parser.feed(dom.stdout)
        return image, parser


class PlanMatrixParser(html_report_support.MatrixParser):
    """The audit matrix's contract, with rows by change and the order section."""

    def __init__(self):
        super().__init__()
        self.order = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section" and a.get("id") == "order":
            self.order = True
        if tag == "tr" and "workload" in (a.get("class") or "").split():
            self.rows.append(a.get("data-change"))
            return
        super().handle_starttag(tag, attrs)


if __name__ == "__main__":
    sys.exit(harness.main(__name__))

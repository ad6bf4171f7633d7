#!/usr/bin/env python3
"""End-to-end tests of the cudagate command line: check, db and version.

Runs the real binary:  python3 cli_test.py --binary PATH --source REPO
Fixtures: tests/fixtures/cli (see its README.md for the node table and the
verdict each workload file gets).
"""

import argparse
import json
import os
import pty
import re
import subprocess
import sys
import tempfile
import unittest

BINARY = ""
SOURCE = ""

SOURCES = {"annotation", "env", "catalog", "registry", "inference", "flag", "unknown"}
VERDICTS = {"pass", "partial", "fail", "unknown", "no-candidates", "skip"}


def fixture(name):
    return os.path.join(SOURCE, "tests", "fixtures", "cli", name)


def example(name):
    return os.path.join(SOURCE, "examples", name)


def cudagate(*args, stdin=None, env=None):
    # `check` reads image configs from public registries unless --offline;
    # these tests judge what the pods and the references say, whatever the
    # machine can reach (registry_test.py covers the registry).
    if args and args[0] == "check":
        args = ("check", "--offline", *args[1:])
    return subprocess.run([BINARY, *args], input=stdin, capture_output=True, text=True,
                          timeout=120, env=env)


class CliTestCase(unittest.TestCase):
    def assert_exit(self, result, code):
        self.assertEqual(result.returncode, code,
                         f"exit {result.returncode}, expected {code}\n"
                         f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}")

    def assert_usage_error(self, result, *fragments):
        """Exit 2 with exactly one stderr line `cudagate: error: ...` holding each fragment."""
        self.assert_exit(result, 2)
        lines = result.stderr.splitlines()
        self.assertEqual(len(lines), 1, f"expected one line on stderr, got:\n{result.stderr}")
        self.assertTrue(lines[0].startswith("cudagate: error: "), lines[0])
        for fragment in fragments:
            self.assertIn(fragment, lines[0])
        return lines[0]

    def check_json(self, *args, code, stdin=None):
        result = cudagate("check", *args, "--output", "json", stdin=stdin)
        self.assert_exit(result, code)
        self.assertEqual(result.stderr, "")
        return json.loads(result.stdout)

    def group_of(self, decision, node):
        for group in decision["groups"]:
            if node in group["nodes"]:
                return group
        self.fail(f"no group lists node {node}: {json.dumps(decision['groups'], indent=1)}")

    def rules_of(self, group):
        return {finding["rule"] for finding in group["findings"]}


class CheckSpecExamples(CliTestCase):
    """The three commands docs/contract.md §1 says must work."""

    def test_ngc_pytorch_on_t4_driver_535_passes_through_forward_compatibility(self):
        # nvcr.io/nvidia/pytorch:24.01-py3 is built on CUDA 12.3.2 and needs
        # driver 545 natively; driver 535.129.03 reports CUDA 12.2. Its release
        # notes allow R535 from 535.86 on data-center GPUs through forward
        # compatibility, and a T4 is a data-center GPU, so the pod runs:
        # pass, exit 0. (On a GeForce card the same driver would fail.)
        decision = self.check_json("--image", "nvcr.io/nvidia/pytorch:24.01-py3",
                                   "--driver", "535.129.03", "--gpu", "T4", code=0)
        self.assertEqual(decision["verdict"], "pass")
        self.assertEqual(decision["candidates"], 1)
        self.assertEqual(decision["compatible"], 1)
        container = decision["containers"][0]
        self.assertEqual(container["name"], "main")
        self.assertEqual(container["image"], "nvcr.io/nvidia/pytorch:24.01-py3")
        self.assertEqual(container["cuda"], {"value": "12.3", "source": "inference"})
        group = self.group_of(decision, "flag-node")
        self.assertTrue(group["compatible"])
        self.assertEqual(group["driver"], "535.129.03")
        self.assertEqual(group["maxCuda"], "12.2")
        self.assertEqual(group["computeCapability"], "7.5")

    def test_ngc_pytorch_text_output(self):
        result = cudagate("check", "--image", "nvcr.io/nvidia/pytorch:24.01-py3",
                          "--driver", "535.129.03", "--gpu", "T4")
        self.assert_exit(result, 0)
        first = result.stdout.splitlines()[0]
        self.assertTrue(first.startswith("PASS  Pod default/check: 1 of 1 candidate nodes"), first)
        self.assertIn("flag-node", result.stdout)
        self.assertIn("(inference)", result.stdout)
        self.assertNotIn("\x1b[", result.stdout, "colour on a pipe")

    def test_flags_against_an_inventory(self):
        # CUDA 12.4 with SASS for 8.0 and 9.0 only: the T4s (7.5, driver 535 =
        # CUDA 12.2) fail both rules, the A100 on driver 525 (CUDA 12.0) fails
        # cuda-driver, the A100 on 550 and the H100 on 570 run it: partial.
        decision = self.check_json("--cuda", "12.4", "--arch-list", "8.0;9.0",
                                   "--nodes", fixture("nodes.json"), code=1)
        self.assertEqual(decision["verdict"], "partial")
        self.assertEqual(decision["candidates"], 5)
        self.assertEqual(decision["compatible"], 2)
        container = decision["containers"][0]
        self.assertEqual(container["cuda"], {"value": "12.4", "source": "flag"})
        self.assertEqual(container["archs"]["source"], "flag")
        self.assertEqual(container["archs"]["value"], "8.0;9.0")
        t4 = self.group_of(decision, "gpu-t4-1")
        self.assertFalse(t4["compatible"])
        self.assertEqual(t4["count"], 2)
        self.assertIn("gpu-t4-2", t4["nodes"])
        self.assertEqual(self.rules_of(t4), {"cuda-driver", "gpu-arch"})
        old_a100 = self.group_of(decision, "gpu-a100-2")
        self.assertFalse(old_a100["compatible"])
        self.assertEqual(self.rules_of(old_a100), {"cuda-driver"})
        finding = old_a100["findings"][0]
        self.assertIn("12.4", finding["message"])
        self.assertIn("525.85.12", finding["message"])
        self.assertIn("550.54.14", finding["fix"])  # the CUDA 12.4 GA minimum driver
        self.assertTrue(self.group_of(decision, "gpu-a100-1")["compatible"])
        self.assertTrue(self.group_of(decision, "gpu-h100-1")["compatible"])
        for group in decision["groups"]:
            self.assertNotIn("cpu-1", group["nodes"])

    def test_flags_against_an_inventory_text(self):
        result = cudagate("check", "--cuda", "12.4", "--arch-list", "8.0;9.0",
                          "--nodes", fixture("nodes.json"))
        self.assert_exit(result, 1)
        lines = result.stdout.splitlines()
        self.assertTrue(lines[0].startswith("PARTIAL  Pod default/check: 2 of 5 candidate nodes"),
                        lines[0])
        self.assertRegex(result.stdout, r"cuda\s+12\.4\s+\(flag\)")
        self.assertRegex(result.stdout, r"archs\s+8\.0;9\.0\s+\(flag\)")
        self.assertIn("incompatible  2 nodes: gpu-t4-1, gpu-t4-2", result.stdout)
        self.assertIn("driver 535.129.03, max CUDA 12.2, compute capability 7.5", result.stdout)
        self.assertIn("[cuda-driver] main:", result.stdout)
        self.assertIn("[gpu-arch] main:", result.stdout)
        self.assertGreaterEqual(result.stdout.count("fix: "), 3)
        # The verdict comes before everything else, incompatible groups before compatible ones.
        self.assertLess(result.stdout.index("incompatible"), result.stdout.index("  compatible"))

    def test_pod_file_against_an_inventory(self):
        # CUDA 12.4 pinned to the T4 nodes (driver 535 = CUDA 12.2): fail.
        decision = self.check_json("-f", fixture("pod.yaml"), "--nodes", fixture("nodes.json"),
                                   code=1)
        self.assertEqual(decision["verdict"], "fail")
        self.assertEqual(decision["resource"],
                         {"apiVersion": "v1", "kind": "Pod", "namespace": "ml", "name": "trainer"})
        self.assertEqual(decision["candidates"], 2)
        self.assertEqual(decision["compatible"], 0)
        self.assertEqual(decision["containers"][0]["cuda"], {"value": "12.4", "source": "inference"})
        group = self.group_of(decision, "gpu-t4-1")
        self.assertEqual(self.rules_of(group), {"cuda-driver"})

    def test_pod_file_text(self):
        result = cudagate("check", "-f", fixture("pod.yaml"), "--nodes", fixture("nodes.json"))
        self.assert_exit(result, 1)
        self.assertTrue(result.stdout.startswith("FAIL  Pod ml/trainer: 0 of 2 candidate nodes"),
                        result.stdout)


class CheckDecisionRecord(CliTestCase):
    """--output json prints the decision record of docs/contract.md §7.1."""

    def test_fixed_fields(self):
        decision = self.check_json("--cuda", "12.4", "--arch-list", "8.0;9.0",
                                   "--nodes", fixture("nodes.json"), code=1)
        self.assertEqual(decision["apiVersion"], "cudagate.io/v1alpha1")
        self.assertEqual(decision["kind"], "Decision")
        self.assertEqual(set(decision["resource"]), {"apiVersion", "kind", "namespace", "name"})
        self.assertEqual(decision["resource"]["name"], "check")
        self.assertEqual(decision["resource"]["namespace"], "default")
        self.assertIn(decision["verdict"], VERDICTS)
        self.assertIsInstance(decision["candidates"], int)
        self.assertIsInstance(decision["compatible"], int)
        for container in decision["containers"]:
            for key in ("name", "image", "gpu"):
                self.assertIn(key, container)
            for key in ("cuda", "archs", "require"):
                self.assertIn(key, container)
                self.assertIn(container[key]["source"], SOURCES)
                self.assertIn("value", container[key])
        self.assertGreater(len(decision["groups"]), 0)
        counted = 0
        for group in decision["groups"]:
            for key in ("count", "nodes", "driver", "maxCuda", "computeCapability", "product",
                        "compatible", "findings"):
                self.assertIn(key, group)
            self.assertLessEqual(len(group["nodes"]), 20)
            counted += group["count"]
            for finding in group["findings"]:
                self.assertEqual(set(finding) & {"rule", "container", "message", "fix"},
                                 {"rule", "container", "message", "fix"})
                self.assertIn(finding["rule"], {"cuda-driver", "gpu-arch", "gpu-feature"})
                self.assertEqual(finding["container"], "main")
                self.assertTrue(finding["message"])
        self.assertEqual(counted, decision["candidates"])

    def test_min_compute_capability_flag_fails_on_t4(self):
        # BF16 needs compute capability 8.0; a T4 is 7.5. CUDA 12.1 alone fits driver 550.
        decision = self.check_json("--cuda", "12.1", "--min-compute-capability", "8.0",
                                   "--driver", "550.54.15", "--gpu", "T4", code=1)
        self.assertEqual(decision["verdict"], "fail")
        self.assertEqual(self.rules_of(self.group_of(decision, "flag-node")), {"gpu-feature"})

    def test_gpu_name_as_gfd_label_value(self):
        decision = self.check_json("--cuda", "12.2", "--driver", "535.129.03", "--gpu", "Tesla-T4",
                                   code=0)
        self.assertEqual(decision["verdict"], "pass")
        self.assertEqual(self.group_of(decision, "flag-node")["computeCapability"], "7.5")

    def test_driver_only_node(self):
        # Without --gpu the node's compute capability is unknown, the CUDA rule still decides.
        decision = self.check_json("--cuda", "12.4", "--driver", "535.129.03", code=1)
        self.assertEqual(decision["verdict"], "fail")
        self.assertIn("cuda-driver", self.rules_of(self.group_of(decision, "flag-node")))


class CheckWorkloadFiles(CliTestCase):
    def test_deployment(self):
        # CUDA 12.1 runs on every driver but 525 (CUDA 12.0): partial.
        decision = self.check_json("-f", fixture("deployment.yaml"), "--nodes",
                                   fixture("nodes.json"), code=1)
        self.assertEqual(decision["resource"]["kind"], "Deployment")
        self.assertEqual(decision["resource"]["apiVersion"], "apps/v1")
        self.assertEqual(decision["resource"]["name"], "inference")
        self.assertEqual(decision["verdict"], "partial")
        self.assertEqual(decision["candidates"], 5)
        self.assertEqual(decision["compatible"], 4)
        self.assertFalse(self.group_of(decision, "gpu-a100-2")["compatible"])

    def test_pass_exits_zero(self):
        decision = self.check_json("-f", fixture("pod-pass.yaml"), "--nodes",
                                   fixture("nodes.json"), code=0)
        self.assertEqual(decision["verdict"], "pass")
        self.assertEqual(decision["compatible"], 5)

    def test_multi_document_file(self):
        decisions = self.check_json("-f", fixture("multi.yaml"), "--nodes", fixture("nodes.json"),
                                    code=1)
        self.assertIsInstance(decisions, list)
        self.assertEqual([(d["resource"]["kind"], d["resource"]["name"], d["verdict"])
                          for d in decisions],
                         [("Pod", "notebook", "pass"), ("Deployment", "inference", "partial"),
                          ("Pod", "web", "skip")])

    def test_multi_document_text_summary(self):
        result = cudagate("check", "-f", fixture("multi.yaml"), "--nodes", fixture("nodes.json"))
        self.assert_exit(result, 1)
        self.assertTrue(result.stdout.startswith("PASS  Pod research/notebook"), result.stdout)
        self.assertIn("\nPARTIAL  Deployment serving/inference", result.stdout)
        self.assertIn("\nSKIP  Pod serving/web", result.stdout)
        self.assertIn("3 workloads: 1 pass, 1 partial, 1 skip", result.stdout)

    def test_only_pass_and_skip_exit_zero(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "two.yaml")
            with open(fixture("multi.yaml")) as f:
                docs = f.read().split("\n---\n")
            with open(path, "w") as f:
                f.write(docs[0] + "\n---\n" + docs[3])
            decisions = self.check_json("-f", path, "--nodes", fixture("nodes.json"), code=0)
            self.assertEqual([d["verdict"] for d in decisions], ["pass", "skip"])

    def test_stdin(self):
        with open(fixture("pod-pass.yaml")) as f:
            manifest = f.read()
        decision = self.check_json("-f", "-", "--nodes", fixture("nodes.json"), code=0,
                                   stdin=manifest)
        self.assertEqual(decision["resource"]["name"], "notebook")

    def test_repeated_files(self):
        decisions = self.check_json("-f", fixture("pod.yaml"), "-f", fixture("pod-pass.yaml"),
                                    "--nodes", fixture("nodes.json"), code=1)
        self.assertEqual([d["verdict"] for d in decisions], ["fail", "pass"])

    def test_json_list(self):
        decisions = self.check_json("-f", fixture("pods-list.json"), "--nodes",
                                    fixture("nodes.json"), code=0)
        self.assertEqual([(d["resource"]["kind"], d["verdict"]) for d in decisions],
                         [("Pod", "pass"), ("StatefulSet", "skip")])

    def test_unknown_image(self):
        # Nothing says which CUDA release ubuntu:22.04 carries: unknown, exit 1, and a hint.
        result = cudagate("check", "--image", "ubuntu:22.04", "--driver", "550.54.15",
                          "--gpu", "T4")
        self.assert_exit(result, 1)
        self.assertTrue(result.stdout.startswith("UNKNOWN  Pod default/check"), result.stdout)
        self.assertRegex(result.stdout, r"cuda\s+unknown")
        self.assertIn("note: nothing is known about the image", result.stdout)

    def test_yaml_inventory_of_the_examples(self):
        # examples/: what the README demo shows. Each file's comment states its verdict.
        expected = {"notebook.yaml": ("pass", 0), "finetune-t4.yaml": ("fail", 1),
                    "train-sm90.yaml": ("partial", 1), "inference-deployment.yaml": ("partial", 1)}
        for name, (verdict, code) in expected.items():
            with self.subTest(name=name):
                decision = self.check_json("-f", example(os.path.join("pods", name)),
                                           "--nodes", example("nodes.yaml"),
                                           "--config", example("policy.yaml"), code=code)
                self.assertEqual(decision["verdict"], verdict)
                for group in decision["groups"]:
                    # cordoned, and no pod tolerates it; cpu-01 has no GPU
                    self.assertNotIn("gpu-a100-04", group["nodes"])
                    self.assertNotIn("cpu-01", group["nodes"])


class CheckBadInput(CliTestCase):
    def test_unreadable_nodes_file(self):
        missing = os.path.join(tempfile.gettempdir(), "cudagate-no-such-dir", "nodes.json")
        result = cudagate("check", "--cuda", "12.4", "--nodes", missing)
        line = self.assert_usage_error(result)
        self.assertEqual(line, f"cudagate: error: {missing}: cannot read: No such file or directory")

    def test_unreadable_workload_file(self):
        result = cudagate("check", "-f", "no-such-pod.yaml", "--nodes", fixture("nodes.json"))
        line = self.assert_usage_error(result)
        self.assertEqual(line,
                         "cudagate: error: no-such-pod.yaml: cannot read: No such file or directory")

    def test_directory_is_not_a_file(self):
        result = cudagate("check", "-f", fixture(""), "--nodes", fixture("nodes.json"))
        self.assert_usage_error(result, "cannot read: Is a directory")

    def test_invalid_yaml(self):
        result = cudagate("check", "-f", fixture("invalid.yaml"), "--nodes", fixture("nodes.json"))
        line = self.assert_usage_error(result, "invalid.yaml")
        self.assertRegex(line, r"invalid\.yaml:\d+")  # the line of the error

    def test_invalid_json(self):
        result = cudagate("check", "--cuda", "12.4", "--nodes", fixture("invalid.json"))
        self.assert_usage_error(result, "invalid.json")

    def test_pod_without_containers(self):
        result = cudagate("check", "-f", fixture("no-containers.yaml"), "--nodes",
                          fixture("nodes.json"))
        self.assert_usage_error(result, "no-containers.yaml", "spec.containers")

    def test_bad_annotation_names_file_workload_and_annotation(self):
        line = self.assert_usage_error(
            cudagate("check", "-f", fixture("bad-annotation.yaml"), "--nodes",
                     fixture("nodes.json")),
            "bad-annotation.yaml", "Pod ml/bad", "cudagate.io/cuda-version", '"12.x"')
        self.assertLess(line.index("bad-annotation.yaml"), line.index("cudagate.io/cuda-version"))

    def test_file_without_workloads(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
            f.write("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
            f.flush()
            result = cudagate("check", "-f", f.name, "--nodes", fixture("nodes.json"))
            self.assert_usage_error(result, f.name, "found none")

    def test_cuda_version_with_a_letter(self):
        result = cudagate("check", "--cuda", "12.x", "--nodes", fixture("nodes.json"))
        line = self.assert_usage_error(result)
        self.assertEqual(
            line,
            'cudagate: error: --cuda: expected a CUDA version like 12.4 or 12.4.1, got "12.x"')

    def test_unknown_arch_name(self):
        result = cudagate("check", "--cuda", "12.4", "--arch-list", "8.0;Amprere",
                          "--nodes", fixture("nodes.json"))
        self.assert_usage_error(result, "--arch-list", "Amprere")

    def test_malformed_arch_entry(self):
        result = cudagate("check", "--arch-list", "8.0;9.x", "--driver", "550.54.15")
        self.assert_usage_error(result, "--arch-list", "9.x")

    def test_bad_min_compute_capability(self):
        result = cudagate("check", "--cuda", "12.4", "--min-compute-capability", "eight",
                          "--driver", "550.54.15")
        self.assert_usage_error(result, "--min-compute-capability", '"eight"')

    def test_unknown_gpu(self):
        result = cudagate("check", "--cuda", "12.4", "--driver", "550.54.15", "--gpu", "Z100")
        line = self.assert_usage_error(result, "--gpu", '"Z100"')
        # A few known names to choose from, taken from the compat-db.
        self.assertRegex(line, r"such as [A-Za-z0-9]+, [A-Za-z0-9]+")

    def test_bad_driver(self):
        result = cudagate("check", "--cuda", "12.4", "--driver", "latest")
        self.assert_usage_error(result, "--driver", '"latest"')

    def test_bad_image_reference(self):
        result = cudagate("check", "--image", "Not An Image", "--driver", "550.54.15")
        self.assert_usage_error(result, "--image")

    def test_inventory_required_without_node_flags(self):
        result = cudagate("check", "--cuda", "12.4")
        self.assert_usage_error(result, "--nodes")

    def test_nodes_and_node_flags_exclude_each_other(self):
        result = cudagate("check", "--cuda", "12.4", "--driver", "550.54.15",
                          "--nodes", fixture("nodes.json"))
        self.assert_usage_error(result, "--nodes", "--driver")

    def test_nothing_to_check(self):
        result = cudagate("check", "--driver", "550.54.15")
        self.assert_usage_error(result, "nothing to check")

    def test_image_and_file_exclude_each_other(self):
        result = cudagate("check", "--image", "nvidia/cuda:12.4.1-base-ubuntu22.04",
                          "-f", fixture("pod.yaml"), "--nodes", fixture("nodes.json"))
        self.assert_usage_error(result, "--image", "-f")

    def test_stdin_read_once(self):
        result = cudagate("check", "-f", "-", "--nodes", "-", stdin="")
        self.assert_usage_error(result, "stdin")

    def test_bad_output_format(self):
        result = cudagate("check", "--cuda", "12.4", "--driver", "550.54.15", "--output", "yaml")
        self.assert_usage_error(result, "--output")

    def test_unknown_flag(self):
        result = cudagate("check", "--cuda", "12.4", "--driver", "550.54.15", "--frobnicate")
        self.assert_usage_error(result, "--frobnicate")

    def test_policy_with_unknown_field(self):
        result = cudagate("check", "--cuda", "12.4", "--driver", "550.54.15",
                          "--config", fixture("bad-policy.yaml"))
        self.assert_usage_error(result, "bad-policy.yaml", "archMatching")

    def test_unreadable_policy(self):
        result = cudagate("check", "--cuda", "12.4", "--driver", "550.54.15",
                          "--config", "no-such-policy.yaml")
        line = self.assert_usage_error(result)
        self.assertEqual(
            line, "cudagate: error: no-such-policy.yaml: cannot read: No such file or directory")

    def test_bad_log_level(self):
        result = cudagate("check", "--cuda", "12.4", "--driver", "550.54.15",
                          "--log-level", "loud")
        self.assert_usage_error(result, "--log-level")


class Usage(CliTestCase):
    def test_no_subcommand(self):
        self.assert_usage_error(cudagate())

    def test_unknown_subcommand(self):
        self.assert_usage_error(cudagate("frobnicate"), '"frobnicate"', "check")
        self.assert_usage_error(cudagate("db", "frobnicate"), "cudagate db", '"frobnicate"',
                                "lint")

    def test_help_exits_zero(self):
        for args in (["--help"], ["check", "--help"], ["db", "show", "--help"],
                     ["db", "lint", "--help"], ["version", "--help"]):
            with self.subTest(args=args):
                result = cudagate(*args)
                self.assert_exit(result, 0)
                self.assertIn("Usage", result.stdout)

    def test_common_flags_on_every_subcommand(self):
        for args in (["check"], ["db", "show"], ["db", "lint"], ["version"]):
            with self.subTest(args=args):
                out = cudagate(*args, "--help").stdout
                for flag in ("--config", "--nodes", "--compat-db", "--log-level", "--log-format"):
                    self.assertIn(flag, out)

    def test_colour_only_on_a_terminal(self):
        args = ("check", "--cuda", "12.4", "--arch-list", "8.0;9.0", "--nodes",
                fixture("nodes.json"))

        def on_a_terminal(extra_env):
            controller, terminal = pty.openpty()
            env = {key: value for key, value in os.environ.items() if key != "NO_COLOR"}
            env.update(TERM="xterm", **extra_env)
            process = subprocess.Popen([BINARY, *args], stdout=terminal, stderr=subprocess.PIPE,
                                       env=env)
            os.close(terminal)
            output = b""
            while True:
                try:
                    chunk = os.read(controller, 65536)
                except OSError:  # EIO: the terminal's last writer closed it
                    break
                if not chunk:
                    break
                output += chunk
            os.close(controller)
            self.assertEqual(process.wait(timeout=120), 1)
            process.stderr.close()
            return output.decode()

        coloured = on_a_terminal({})
        self.assertIn("\x1b[", coloured)
        self.assertIn("PARTIAL", coloured)
        self.assertNotIn("\x1b[", on_a_terminal({"NO_COLOR": "1"}))
        self.assertNotIn("\x1b[", cudagate(*args).stdout)

    def test_json_logs(self):
        result = cudagate("check", "--cuda", "12.4", "--driver", "550.54.15", "--gpu", "A100",
                          "--log-level", "debug", "--log-format", "json")
        self.assert_exit(result, 0)
        self.assertTrue(result.stderr, "no log line at level debug")
        for line in result.stderr.splitlines():
            record = json.loads(line)
            self.assertIn("level", record)
            self.assertIn("time", record)


class Db(CliTestCase):
    def show_json(self, *args):
        result = cudagate("db", "show", "--output", "json", *args)
        self.assert_exit(result, 0)
        return json.loads(result.stdout)

    def test_show_text(self):
        result = cudagate("db", "show")
        self.assert_exit(result, 0)
        out = result.stdout
        self.assertTrue(out.startswith("compat-db revision "), out[:200])
        for title in ("CUDA releases", "Minor version compatibility", "Driver branches",
                      "Compute capabilities each CUDA release can target", "GPU products",
                      "Cloud accelerator labels", "Named architectures", "Tegra capabilities",
                      "nvidia/cuda images", "NGC framework releases", "Image inference rules"):
            self.assertIn(title, out)
        self.assertRegex(out, r"\n  12\.4\.1 +12\.4 Update 1 +550\.54\.15 ")
        self.assertRegex(out, r"\n  R535 +12\.2 ")
        self.assertRegex(out, r"\n  T4 +7\.5 +turing ")
        self.assertRegex(out, r"\n  24\.01 +12\.3\.2 ")
        self.assertIn("sources:", out)

    def test_show_json_has_every_section(self):
        db = self.show_json()
        self.assertEqual(db["schemaVersion"], 1)
        for section in ("cudaReleases", "minorVersionCompat", "driverBranches", "cudaTargets",
                        "products", "cloudAccelerators", "architectures", "tegraCapabilities",
                        "cudaImages", "ngcReleases", "imageRules"):
            self.assertIsInstance(db[section], list)
            self.assertGreater(len(db[section]), 0, section)
            for entry in db[section]:
                self.assertTrue(entry["source"], f"{section} entry without source")

    def test_lint_of_show_output_and_round_trip(self):
        db = self.show_json()
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "x.json")
            with open(path, "w") as f:
                json.dump(db, f)
            result = cudagate("db", "lint", path)
            self.assert_exit(result, 0)
            self.assertRegex(result.stdout,
                             rf"^{re.escape(path)}: ok \(\d+ CUDA releases, .*\d+ products, ")
            # The override reproduces the same matrix...
            self.assertEqual(self.show_json("--compat-db", path), db)
            # ...and the same decisions.
            args = ("--cuda", "12.4", "--arch-list", "8.0;9.0", "--nodes", fixture("nodes.json"))
            self.assertEqual(self.check_json(*args, "--compat-db", path, code=1),
                             self.check_json(*args, code=1))

    def test_lint_of_the_source_files(self):
        files = sorted(os.path.join(SOURCE, "compat-db", f)
                       for f in os.listdir(os.path.join(SOURCE, "compat-db"))
                       if f.endswith(".json"))
        result = cudagate("db", "lint", *files)
        self.assert_exit(result, 0)
        self.assertIn(": ok (", result.stdout)

    def test_lint_names_the_broken_entry_and_field(self):
        db = self.show_json()
        db["products"][2]["computeCapability"] = "eight"
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "broken.json")
            with open(path, "w") as f:
                json.dump(db, f)
            line = self.assert_usage_error(cudagate("db", "lint", path), path, "products[2]",
                                           "computeCapability")
            self.assertIn('"eight"', line)
            # The same file given as --compat-db is refused the same way.
            self.assert_usage_error(cudagate("db", "show", "--compat-db", path), "products[2]")
            self.assert_usage_error(
                cudagate("check", "--cuda", "12.4", "--driver", "550.54.15", "--compat-db", path),
                "products[2]")

    def test_lint_missing_section(self):
        db = self.show_json()
        del db["ngcReleases"]
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "partial.json")
            with open(path, "w") as f:
                json.dump(db, f)
            self.assert_usage_error(cudagate("db", "lint", path), "ngcReleases")

    def test_lint_invalid_json(self):
        self.assert_usage_error(cudagate("db", "lint", fixture("invalid.json")), "invalid.json")

    def test_lint_unreadable(self):
        line = self.assert_usage_error(cudagate("db", "lint", "no-such-db.json"))
        self.assertEqual(line,
                         "cudagate: error: no-such-db.json: cannot read: No such file or directory")

    def test_lint_needs_a_file(self):
        self.assert_usage_error(cudagate("db", "lint"))


class Version(CliTestCase):
    def project_version(self):
        with open(os.path.join(SOURCE, "CMakeLists.txt")) as f:
            return re.search(r"project\(cudagate VERSION ([0-9.]+)", f.read()).group(1)

    def test_text(self):
        result = cudagate("version")
        self.assert_exit(result, 0)
        lines = result.stdout.splitlines()
        self.assertEqual(lines[0], f"cudagate {self.project_version()}")
        self.assertTrue(any(line.startswith("build:") for line in lines))
        self.assertTrue(any(re.match(r"compat-db: \S+ \(embedded\)", line) for line in lines),
                        result.stdout)

    def test_json(self):
        result = cudagate("version", "--output", "json")
        self.assert_exit(result, 0)
        info = json.loads(result.stdout)
        self.assertEqual(info["version"], self.project_version())
        self.assertTrue(info["buildType"])
        self.assertTrue(info["compatDb"]["revision"])
        self.assertEqual(info["compatDb"]["source"], "embedded")

    def test_revision_follows_the_matrix(self):
        embedded = json.loads(cudagate("version", "--output", "json").stdout)
        db = json.loads(cudagate("db", "show", "--output", "json").stdout)
        db["products"][0]["source"] += " (edited)"
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "edited.json")
            with open(path, "w") as f:
                json.dump(db, f)
            result = cudagate("version", "--output", "json", "--compat-db", path)
            self.assert_exit(result, 0)
            info = json.loads(result.stdout)
            self.assertEqual(info["compatDb"]["source"], path)
            self.assertNotEqual(info["compatDb"]["revision"], embedded["compatDb"]["revision"])



class CheckAsOfTheMatrixDate(CliTestCase):
    """What a user of December 2026 asks, and what the matrix cannot know yet."""

    def test_cuda_13_5_runs_on_r620(self):
        # R620 carries CUDA 13.5: no false denial.
        decision = self.check_json("--cuda", "13.5", "--driver", "620.70.06", "--gpu", "H100",
                                   code=0)
        self.assertEqual(decision["verdict"], "pass")

    def test_rubin_targets_are_known(self):
        decision = self.check_json("--cuda", "13.4", "--arch-list", "10.7", "--driver",
                                   "615.71.09", "--gpu", "VR200", code=0)
        self.assertEqual(decision["verdict"], "pass")

    def test_ngc_26_09_is_known(self):
        decision = self.check_json("--image", "nvcr.io/nvidia/pytorch:26.09-py3", "--driver",
                                   "615.71.09", "--gpu", "H100", code=0)
        container = decision["containers"][0]
        self.assertEqual((container["cuda"]["value"], container["cuda"]["source"]),
                         ("13.4", "inference"))

    def test_pytorch_images_get_their_arch_list(self):
        decision = self.check_json("--image", "pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime",
                                   "--driver", "570.124.06", "--gpu", "T4", code=0)
        self.assertEqual(decision["containers"][0]["archs"]["value"],
                         "7.0;7.5;8.0;8.6;9.0;10.0;12.0")

    def test_what_the_matrix_does_not_know_is_unknown(self):
        # A driver branch past R620 and a capability past 10.7: unknown, with
        # the matrix's revision and date, and how to get a newer one.
        version = json.loads(cudagate("version", "--output", "json").stdout)["compatDb"]
        matrix = (f"the compatibility matrix (revision {version['revision']}, "
                  f"{version['asOf']})")
        decision = self.check_json("--cuda", "13.6", "--arch-list", "9.0;10.9", "--driver",
                                   "640.10.01", "--gpu", "H100", code=1)
        self.assertEqual(decision["verdict"], "unknown")
        findings = decision["groups"][0]["findings"]
        messages = {f["rule"]: f["message"] for f in findings}
        self.assertIn(f"branch 640, which {matrix} does not know: it supports at least CUDA "
                      "13.5 (inferred)", messages["cuda-driver"])
        self.assertIn(f"CUDA arch \"10.9\" in --arch-list: {matrix} does not know",
                      messages["gpu-arch"])
        self.assertTrue(all(f["fix"] == "update cudagate or give --compat-db" for f in findings))

    def test_version_and_db_show_print_the_date_and_newest_entries(self):
        info = json.loads(cudagate("version", "--output", "json").stdout)["compatDb"]
        self.assertRegex(info["asOf"], r"^\d{4}-\d{2}-\d{2}$")
        self.assertEqual(info["newest"]["driver branch"], "620 (CUDA 13.5)")
        self.assertEqual(info["newest"]["CUDA release"], "13.5 GA (13.5.0)")
        text = cudagate("version").stdout
        self.assertIn(f"as of:     {info['asOf']}", text)
        self.assertIn("newest driver branch: 620 (CUDA 13.5)", text)
        shown = cudagate("db", "show")
        self.assert_exit(shown, 0)
        self.assertIn(f"as of {info['asOf']}", shown.stdout.splitlines()[0])
        self.assertIn("newest compute capability: 12.1", shown.stdout)
        self.assertIn("The last driver branch of each GPU architecture", shown.stdout)

def main():
    global BINARY, SOURCE
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--binary", required=True, help="the cudagate executable")
    parser.add_argument("--source", required=True, help="the repository root")
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("tests", nargs="*", help="test names (Class or Class.test_name)")
    args = parser.parse_args()
    BINARY = os.path.abspath(args.binary)
    SOURCE = os.path.abspath(args.source)
    if not os.access(BINARY, os.X_OK):
        print(f"cli_test: {BINARY} is not an executable", file=sys.stderr)
        return 2
    loader = unittest.TestLoader()
    module = sys.modules[__name__]
    suite = (loader.loadTestsFromNames(args.tests, module) if args.tests
             else loader.loadTestsFromModule(module))
    result = unittest.TextTestRunner(verbosity=2 if args.verbose else 1).run(suite)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    print(f"{result.testsRun - failed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

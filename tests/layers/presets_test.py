#!/usr/bin/env python3
"""Each build preset that names its targets builds what its test preset runs.

A test preset that runs tests by label (`filter.include.label`, a regular
expression) runs no test of a target its build preset left out: a unit-test
executable that was not built leaves ctest only a placeholder without labels,
which the filter drops, so the stage passes with fewer tests and says nothing.
This test holds each preset's label filter against its build targets: a
layer's label needs that layer's `<layer>_tests` executable, `bench` needs
`cudagate_bench`, the tests of the binary (`e2e`, `threads`, `cluster`,
`gpu`) need `cudagate`, and `e2e` and `threads` the C++ tests' `e2e_tests` too.

    python3 tests/layers/presets_test.py SOURCE_DIR
"""

import json
import os
import re
import sys
import unittest

# Labels whose tests run the cudagate binary; bench's run cudagate_bench.
BINARY_LABELS = ("e2e", "threads", "cluster", "gpu")


def unit_labels(root):
    """The layer labels: each tests/<layer>/ folder with a *_test.cpp in it or
    in a room below it (tests/policy/rules/). tests/e2e/ is not a layer: its
    C++ tests are e2e_tests, which runs the binary."""
    tests = os.path.join(root, "tests")
    labels = []
    for name in sorted(os.listdir(tests)):
        folder = os.path.join(tests, name)
        if name == "e2e" or not os.path.isdir(folder):
            continue
        if any(f.endswith("_test.cpp") for _, _, files in os.walk(folder) for f in files):
            labels.append(name)
    return labels


def missing_targets(presets, layers):
    """'<preset>: label L needs target T' for each target a filter needs and its build lacks."""
    builds = {b["name"]: b for b in presets.get("buildPresets", [])}
    problems = []
    for test in presets.get("testPresets", []):
        pattern = test.get("filter", {}).get("include", {}).get("label")
        build = builds.get(test["name"])
        if pattern is None or build is None or "targets" not in build:
            continue  # every test runs, or the build builds every target
        targets = set(build["targets"])
        needs = [(layer, layer.replace("-", "_") + "_tests") for layer in layers]
        needs.append(("bench", "cudagate_bench"))
        needs.extend((label, "cudagate") for label in BINARY_LABELS)
        needs.extend((label, "e2e_tests") for label in ("e2e", "threads"))
        for label, target in sorted(needs):
            if re.search(pattern, label) and target not in targets:
                problems.append(f"{test['name']}: label {label} needs target {target}")
    return problems


class Presets(unittest.TestCase):
    root = "."

    def test_each_filtered_stage_builds_what_it_runs(self):
        with open(os.path.join(self.root, "CMakePresets.json"), encoding="utf-8") as f:
            presets = json.load(f)
        self.assertEqual(missing_targets(presets, unit_labels(self.root)), [])

    def test_a_target_left_out_is_reported(self):
        presets = {
            "buildPresets": [{"name": "tsan", "targets": ["cudagate", "kube_tests", "e2e_tests"]}],
            "testPresets": [{"name": "tsan", "filter": {"include": {"label": "^(kube|server|threads)$"}}}],
        }
        self.assertEqual(missing_targets(presets, ["kube", "policy", "server"]),
                         ["tsan: label server needs target server_tests"])
        presets["buildPresets"][0]["targets"].append("server_tests")
        self.assertEqual(missing_targets(presets, ["kube", "policy", "server"]), [])

    def test_the_release_filter_runs_no_unit_test(self):
        with open(os.path.join(self.root, "CMakePresets.json"), encoding="utf-8") as f:
            presets = json.load(f)
        release = next(t for t in presets["testPresets"] if t["name"] == "release")
        pattern = release["filter"]["include"]["label"]
        self.assertEqual([layer for layer in unit_labels(self.root) if re.search(pattern, layer)], [])
        for label in ("e2e", "cluster", "layers", "bench"):
            self.assertRegex(label, pattern)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: presets_test.py SOURCE_DIR")
    Presets.root = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)

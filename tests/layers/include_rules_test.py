#!/usr/bin/env python3
"""The layers' dependencies go one way, and this test is where that is written.

Every source of a layer folder may include the project headers of the layers
it stands on, the libraries its CMake target links, and the standard library;
the pure layers (everything below server/) no I/O, thread or clock headers and
no clock reads. policy/ is a layer of rooms (ROOMS): a room's sources include
the rooms below it and never one above, and the layers above policy/ include
any room. The rules are the tables below, written once; each #include line of
every .h and .cpp is held against them.

    python3 tests/layers/include_rules_test.py SOURCE_DIR
"""

import os
import re
import sys
import tempfile
import unittest

# policy/'s rooms, bottom first: each may include itself, the layers below
# policy/ and the rooms it lists.
ROOMS = {
    # What an image declares: references, arch lists, NVIDIA_REQUIRE_*.
    "policy/image": set(),
    # Kubernetes objects and their readers.
    "policy/objects": set(),
    # The fleet as candidate sets.
    "policy/inventory": {"policy/objects"},
    # The policy file.
    "policy/config": {"policy/image", "policy/objects"},
    # The rules, a container's metadata, evaluate() and the decision.
    "policy/rules": {"policy/image", "policy/objects", "policy/inventory", "policy/config"},
    # Fleet changes and the rollout plan.
    "policy/plan": {"policy/image", "policy/objects", "policy/inventory", "policy/config",
                    "policy/rules"},
}

# Dependency order, bottom first. A layer may include itself and what it lists
# ("policy" stands for every room of it).
PROJECT = {
    "types": set(),
    "compat-db": {"types"},
    # What CUDA code a file holds: ELF sections, fatbins, cubins.
    "scan": {"types"},
    "policy": {"types", "compat-db"},
    "admission": {"types", "compat-db", "policy"},
    "report": {"types", "compat-db", "policy", "scan"},
    # The one HTTPS client: endpoints, TLS trust, connections, the pool.
    "https": {"types"},
    "kube": {"types", "compat-db", "policy", "https"},
    "registry": {"types", "compat-db", "policy", "https"},
    # The files cudagate is given, read for the server and the commands alike.
    "inputs": {"types", "compat-db", "policy", "admission", "scan"},
    "server": {"types", "compat-db", "scan", "policy", "admission", "report", "https", "kube",
               "registry", "inputs"},
    "cli": {"types", "compat-db", "scan", "policy", "admission", "report", "https", "kube",
            "registry", "inputs", "server"},
}

# Libraries each layer may include; the same as its CMake target links.
LIBRARIES = {
    "types": set(),
    "compat-db": {"nlohmann_json"},
    "scan": {"zlib", "zstd"},
    "policy": {"nlohmann_json", "yaml-cpp"},
    "admission": {"nlohmann_json", "simdjson", "simd"},
    "report": {"nlohmann_json"},
    "https": {"boost", "openssl", "posix"},
    "kube": {"nlohmann_json", "yaml-cpp", "boost", "openssl", "spdlog", "posix"},
    "registry": {"nlohmann_json", "boost", "openssl", "spdlog", "posix"},
    "inputs": {"nlohmann_json", "simdjson", "simd", "spdlog", "posix"},
    "server": {"nlohmann_json", "simdjson", "simd", "boost", "openssl", "spdlog", "posix"},
    "cli": {"nlohmann_json", "simdjson", "simd", "boost", "openssl", "spdlog", "posix", "CLI11",
            "yaml-cpp"},
}

PURE = {"types", "compat-db", "scan", "policy", "admission", "report"}

# Standard headers that mean threads, files, consoles or clocks: none of them
# in a pure layer. (<chrono> stays allowed: durations are values; reading a
# clock is caught below.)
IMPURE_STANDARD = {
    "thread", "mutex", "shared_mutex", "condition_variable", "future", "stop_token",
    "semaphore", "latch", "barrier", "fstream", "filesystem", "iostream", "cstdio", "ctime",
}
CLOCK_READ = re.compile(r"\b(system_clock|steady_clock|high_resolution_clock)::now\b|\btime\s*\(")

# Folders that are not layers: what each may include.
TEST_SUPPORT = {"tests"}
OTHER = {
    # Benchmarks and fuzzers drive the layers below the command line.
    "bench": (set(PROJECT) - {"cli"} | {"bench"}, LIBRARIES["server"] | {"benchmark"}),
    "tests/fuzz": (set(PROJECT) - {"cli"}, LIBRARIES["server"]),
}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def library_of(header):
    """The library an <angle> include belongs to, "std" for the standard one, or None."""
    first = header.split("/", 1)[0]
    if header.startswith("nlohmann/"):
        return "nlohmann_json"
    if header.startswith("yaml-cpp/"):
        return "yaml-cpp"
    if header == "simdjson.h":
        return "simdjson"
    if header == "zlib.h":
        return "zlib"
    if header == "zstd.h":
        return "zstd"
    if header.endswith("intrin.h"):
        return "simd"
    if first == "boost":
        return "boost"
    if first == "openssl":
        return "openssl"
    if first == "spdlog":
        return "spdlog"
    if first == "CLI":
        return "CLI11"
    if first in ("gtest", "gmock"):
        return "googletest"
    if first == "benchmark":
        return "benchmark"
    if first in ("sys", "netinet", "arpa") or header in ("unistd.h", "fcntl.h", "malloc.h",
                                                          "poll.h", "signal.h", "errno.h",
                                                          "spawn.h"):
        return "posix"
    if "/" not in header and "." not in header:
        return "std"
    return None


def unit_of(parts):
    """The layer, or policy/'s room, that a path's parts fall in."""
    room = "/".join(parts[:2])
    return room if room in ROOMS else parts[0]


def allowed(key):
    """What the layer or room `key` may include: units, each a layer or a room."""
    if key in ROOMS:
        below = PROJECT["policy"]
        return below | ROOMS[key] | {key}
    listed = PROJECT[key] | {key}
    return (listed - {"policy"}) | set(ROOMS) if "policy" in listed else listed


def layer_of(relative):
    """The layer, room or other folder key a source belongs to, and whether it is a test."""
    parts = relative.split(os.sep)
    if parts[0] in PROJECT:
        return unit_of(parts), False
    if parts[0] == "tests" and len(parts) > 2:
        if parts[1] in PROJECT:
            # A test of a room may build its cases from every room of the
            # layer (an inventory from nodes read, a decision from a policy).
            return parts[1], True
        if parts[1] == "fuzz":
            return "tests/fuzz", False
    if parts[0] == "bench":
        return "bench", False
    return None, False


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def violations(root):
    """Every broken rule under `root`, as "file:line: what" strings."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in ("build", ".git") and not d.startswith("."))
        for name in sorted(files):
            if not name.endswith((".h", ".cpp")):
                continue
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, root)
            key, is_test = layer_of(relative)
            if key is None:
                continue
            layer = key.split("/", 1)[0] if key in ROOMS else key
            if key in PROJECT or key in ROOMS:
                project = allowed(key)
                libraries = set(LIBRARIES[layer])
                if is_test:
                    # Tests also use their support headers and gtest, and
                    # no more of the layers than their sources may.
                    project |= TEST_SUPPORT
                    libraries |= {"googletest"}
            else:
                project, libraries = OTHER[key]
                project = (project - {"policy"}) | set(ROOMS) | TEST_SUPPORT
                libraries = libraries | {"googletest"}
            pure = layer in PURE and not is_test
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for number, line in enumerate(text.split("\n"), start=1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                kind, header = m.groups()
                where = f"{relative}:{number}"
                if kind == '"':
                    top = unit_of(header.split("/"))
                    if "/" not in header:
                        found.append(f"{where}: \"{header}\": include project headers by their "
                                     "path from the source root")
                    elif top not in project:
                        found.append(f"{where}: {key} may not include \"{header}\" "
                                     f"({top} is not below it)")
                    elif not os.path.exists(os.path.join(root, header)):
                        found.append(f"{where}: \"{header}\" does not exist")
                    continue
                library = library_of(header)
                if library is None:
                    found.append(f"{where}: <{header}> belongs to no library these rules know")
                elif library == "std":
                    if pure and header in IMPURE_STANDARD:
                        found.append(f"{where}: {key} is pure and may not include <{header}>")
                elif library not in libraries:
                    found.append(f"{where}: {key} may not include <{header}> ({library} is not "
                                 "linked by its target)")
            if pure:
                for number, line in enumerate(strip_comments(text).split("\n"), start=1):
                    if CLOCK_READ.search(line):
                        found.append(f"{relative}:{number}: {key} is pure and may not read a clock")
    return found


class IncludeRules(unittest.TestCase):
    root = None

    def test_every_source_follows_the_rules(self):
        problems = violations(self.root)
        self.assertEqual(problems, [], "\n" + "\n".join(problems))

    def test_every_layer_has_sources(self):
        for layer in (set(PROJECT) - {"policy"}) | set(ROOMS):
            with self.subTest(layer=layer):
                names = os.listdir(os.path.join(self.root, layer))
                self.assertTrue(any(n.endswith((".h", ".cpp")) for n in names))

    def test_rules_catch_each_kind_of_break(self):
        with tempfile.TemporaryDirectory() as tree:
            def write(relative, text):
                path = os.path.join(tree, relative)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)

            write("types/version.h", "#pragma once\n")
            write("server/tls_server.h", "#pragma once\n")
            write("cli/common.h", "#pragma once\n")
            write("admission/handler.cpp",
                  '#include "types/version.h"\n'        # fine
                  '#include "server/tls_server.h"\n'    # above
                  '#include <boost/asio.hpp>\n'         # a library it does not link
                  '#include <thread>\n'                 # impure
                  'auto t = std::chrono::steady_clock::now();\n'
                  '// std::chrono::system_clock::now() in a comment is fine\n')
            write("report/table.cpp", '#include "admission/handler.h"\n')  # beside
            write("policy/objects/x.cpp", '#include "policy/objects/missing.h"\n#include "x.h"\n'
                                          '#include <weird/lib.h>\n')
            write("policy/rules/rule.h", "#pragma once\n")
            write("policy/inventory/set.h", "#pragma once\n")
            write("policy/inventory/y.cpp", '#include "policy/rules/rule.h"\n'  # a room above
                                            '#include "policy/inventory/set.h"\n')  # fine
            write("policy/plan/z.cpp", '#include "policy/rules/rule.h"\n')  # fine
            write("server/ok.cpp", '#include "cli/common.h"\n#include <thread>\n')
            write("kube/api.h", "#pragma once\n")
            write("https/pool.cpp", '#include "kube/api.h"\n'   # the client knows no caller
                                    '#include <boost/asio.hpp>\n')  # fine
            write("cli/main.cpp", '#include "server/tls_server.h"\n#include <CLI/CLI.hpp>\n')
            write("tests/support/fixtures.h", "#pragma once\n")
            write("tests/policy/x_test.cpp",
                  '#include "tests/support/fixtures.h"\n'  # fine
                  '#include <gtest/gtest.h>\n'              # fine
                  '#include "report/table.h"\n')            # a test no freer than its layer
            got = violations(tree)
            expected = [
                "admission/handler.cpp:2: admission may not include \"server/tls_server.h\"",
                "admission/handler.cpp:3: admission may not include <boost/asio.hpp>",
                "admission/handler.cpp:4: admission is pure and may not include <thread>",
                "admission/handler.cpp:5: admission is pure and may not read a clock",
                "https/pool.cpp:1: https may not include \"kube/api.h\"",
                "policy/inventory/y.cpp:1: policy/inventory may not include \"policy/rules/rule.h\"",
                "policy/objects/x.cpp:1: \"policy/objects/missing.h\" does not exist",
                "policy/objects/x.cpp:2: \"x.h\": include project headers by their path",
                "policy/objects/x.cpp:3: <weird/lib.h> belongs to no library",
                "report/table.cpp:1: report may not include \"admission/handler.h\"",
                "server/ok.cpp:1: server may not include \"cli/common.h\"",
                "tests/policy/x_test.cpp:3: policy may not include \"report/table.h\"",
            ]
            self.assertEqual(len(got), len(expected), "\n".join(got))
            for line, want in zip(sorted(got), expected):
                self.assertTrue(line.startswith(want), f"{line!r} does not start with {want!r}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: include_rules_test.py SOURCE_DIR")
    IncludeRules.root = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)

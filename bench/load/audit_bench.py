#!/usr/bin/env python3
"""Time and peak memory of `cudagate audit` over a large fleet, offline.

    bench/load/audit_bench.py BINARY [--nodes 10000] [--workloads 10000] [--runs 3]
                                [--bench-dir DIR]

Writes gen.py's fleet of --nodes nodes and --workloads workloads (one
`kubectl get pods,deployments -A -o json` List) into a temporary directory:
the pods of gen.py's reviews (a GPU training pod that fits its pool, one
whose CUDA 12.8 is too new for its T4 pool, a CPU pod), each with its own
name, namespace (one of 50) and image tag, every fifth wrapped in a
Deployment. Then runs `cudagate audit --offline` --runs times per format,
output to /dev/null, and prints the median wall time and the largest peak
RSS of the process (getrusage of the child). gen.py is the load harness's,
in BENCH_DIR or --bench-dir. It measures one machine at one moment: compare
builds side by side, not with numbers taken elsewhere.
"""

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from startup import BENCH_DIR, bench_dir_or_exit

FORMATS = ["json", "table", "policyreport", "openreports", "junit", "html"]


def pod_of(review_path):
    with open(review_path) as f:
        pod = json.load(f)["request"]["object"]
    pod["metadata"].pop("managedFields", None)
    return pod


def workloads(directory, count):
    templates = [pod_of(os.path.join(directory, name))
                 for name in ("gpu-pod-nomf.json", "gpu-pod-deny.json", "cpu-pod.json")]
    items = []
    for i in range(count):
        pod = copy.deepcopy(templates[i % len(templates)])
        namespace = f"team-{i % 50:02d}"
        pod["metadata"] = {"name": f"w-{i:05d}", "namespace": namespace}
        for c in pod["spec"]["containers"]:
            c["image"] = c["image"].rsplit(":", 1)[0] + f":build-{i % 400}"
        if i % 5 == 4:
            items.append({"apiVersion": "apps/v1", "kind": "Deployment",
                          "metadata": {"name": f"w-{i:05d}", "namespace": namespace},
                          "spec": {"replicas": 2,
                                   "selector": {"matchLabels": {"app": f"w-{i:05d}"}},
                                   "template": {"metadata": {"labels": {"app": f"w-{i:05d}"}},
                                                "spec": pod["spec"]}}})
        else:
            items.append(pod)
    return {"apiVersion": "v1", "kind": "List", "items": items}


def run_once(binary, args):
    """Wall seconds and peak RSS (KiB) of one run, from wait4's rusage of that process."""
    start = time.monotonic()
    with open(os.devnull, "w") as null, tempfile.TemporaryFile() as err:
        process = subprocess.Popen([binary, *args], stdout=null, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.monotonic() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode not in (0, 1):
            err.seek(0)
            sys.exit(f"audit_bench: {' '.join(args)} exited {process.returncode}: "
                     f"{err.read().decode(errors='replace')}")
    return elapsed, usage.ru_maxrss


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--workloads", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--bench-dir", default=BENCH_DIR,
                    help="the load harness folder, where gen.py is (default: $BENCH_DIR)")
    a = ap.parse_args()
    bench_dir_or_exit(a.bench_dir)
    with tempfile.TemporaryDirectory(prefix="cudagate-audit-bench-") as tmp:
        subprocess.run([sys.executable, os.path.join(a.bench_dir, "gen.py"), "--out", tmp,
                        "--nodes", str(a.nodes)], check=True, capture_output=True)
        path = os.path.join(tmp, "workloads.json")
        with open(path, "w") as f:
            json.dump(workloads(tmp, a.workloads), f)
        nodes = os.path.join(tmp, "nodes.json")
        print(f"{a.workloads} workloads ({os.path.getsize(path) / 1e6:.1f} MB) against "
              f"{a.nodes} nodes ({os.path.getsize(nodes) / 1e6:.1f} MB), {a.runs} runs each")
        print(f"{'format':<14}{'median s':>10}{'peak RSS MiB':>14}")
        for fmt in FORMATS:
            times, peak = [], 0
            for _ in range(a.runs):
                elapsed, peak_kib = run_once(a.binary, ["audit", "--offline", path, "--nodes", nodes,
                                                        "--offline", "--format", fmt])
                times.append(elapsed)
                peak = max(peak, peak_kib)
            print(f"{fmt:<14}{statistics.median(times):>10.2f}{peak / 1024:>14.0f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Peak memory and time to ready of `cudagate serve --kubeconfig` with a
large fleet listed from an API server, the time a 1,000-node driver
rollout takes to reach its decisions, and (--load) /validate latency under
wrk with and without such a rollout streaming in.

There is no kube-apiserver here: the fleet is served by the test double
of tests/e2e/apiserver_double.py (TLS, a bearer token, pages of 500,
a chunked watch stream). Its nodes are tests/fixtures/nodes/fleet.json's
13 EKS nodes repeated under new names, with managedFields and status as a
live server sends them.

    python3 bench/load/watch_rss.py --binary build/release/cudagate --nodes 10000 50000
    python3 bench/load/watch_rss.py --binary build/release/cudagate --nodes 10000 --load

--load runs the load harness's post.lua (its folder in BENCH_DIR or
--bench-dir; wrk -t1 -c32 -d10s, the 13 KB gpu-pod review of bench/data)
once quiet and once while 1,000 MODIFIED events are sent over its 10
seconds.
"""

import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE, "tests", "e2e"))

import kube_support  # noqa: E402
import server_support  # noqa: E402
from apiserver_double import ApiServerDouble, realistic_node  # noqa: E402
from server_support import poll_until  # noqa: E402
from startup import BENCH_DIR, bench_dir_or_exit  # noqa: E402


def peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def relabel(api, names, driver_major, runtime_minor, spread_s=0.0):
    """MODIFIED events: `names` given another driver major and CUDA minor."""
    for name in names:
        node = copy.deepcopy(api.nodes[name][1])
        labels = node["metadata"]["labels"]
        if "nvidia.com/cuda.driver.major" not in labels:
            continue
        labels.update({"nvidia.com/cuda.driver.major": driver_major,
                       "nvidia.com/cuda.driver-version.major": driver_major,
                       "nvidia.com/cuda.runtime.minor": runtime_minor,
                       "nvidia.com/cuda.runtime-version.minor": runtime_minor})
        api.put(node)
        if spread_s:
            time.sleep(spread_s / len(names))


def wrk(bench, port, seconds=10):
    out = subprocess.run(["wrk", "-t1", "-c32", f"-d{seconds}s", "-s",
                          os.path.join(bench, "post.lua"), f"https://127.0.0.1:{port}/validate",
                          "--", os.path.join(SOURCE, "bench", "data", "gpu-pod.json")],
                         capture_output=True, text=True, timeout=seconds + 60)
    line = next(x for x in out.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def measure(binary, count, workdir, certs, bench=None):
    with open(os.path.join(SOURCE, "tests", "fixtures", "nodes", "fleet.json")) as f:
        templates = [realistic_node(n) for n in json.load(f)["items"]]
    api = ApiServerDouble(certs, tokens=("bench-token",), page_size=500)
    for i in range(count):
        node = copy.deepcopy(templates[i % len(templates)])
        name = f"node-{i:05d}.ec2.internal"
        node["metadata"]["name"] = name
        node["metadata"]["labels"]["kubernetes.io/hostname"] = name
        api.put(node)
    api.start()
    config = os.path.join(workdir, "kubeconfig")
    with open(config, "w") as f:
        f.write(f"""apiVersion: v1
kind: Config
current-context: bench
contexts: [{{name: bench, context: {{cluster: double, user: bench}}}}]
clusters: [{{name: double, cluster: {{server: '{api.url}', certificate-authority: {certs}/ca.crt}}}}]
users: [{{name: bench, user: {{token: bench-token}}}}]
""")
    kube_support.BINARY = binary
    kube_support.TIMEOUT = 600
    webhook = kube_support.Webhook(workdir, certs, config, log_level="warn", threads=1)
    start = time.monotonic()
    try:
        webhook.start(wait_ready=True)
        ready = time.monotonic() - start
        rss_ready = peak_rss_mib(webhook.proc.pid)

        # The rollout: 1,000 nodes relabelled with driver 570 (CUDA 12.8).
        names = sorted(api.nodes)[:1000]
        rollout_start = time.monotonic()
        relabel(api, names, "570", "8")
        sent = time.monotonic() - rollout_start
        sent_at = time.time()
        # Applied once an inventory was published after the last event was sent.
        poll_until(lambda: (webhook.metric("cudagate_inventory_last_sync_timestamp_seconds")
                            or 0) >= sent_at, 600, "the rollout to be applied")
        applied = time.monotonic() - rollout_start
        rss_after = peak_rss_mib(webhook.proc.pid)
        loads = None
        if bench:
            quiet = wrk(bench, webhook.port)
            rollout = threading.Thread(target=relabel, args=(api, names, "575", "9", 8.0))
            rollout.start()
            streaming = wrk(bench, webhook.port)
            rollout.join()
            loads = (quiet, streaming)
        return ready, rss_ready, sent, applied, rss_after, loads
    finally:
        webhook.stop()
        api.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--nodes", type=int, nargs="+", default=[10000, 50000])
    parser.add_argument("--load", action="store_true", help="also measure /validate under wrk")
    parser.add_argument("--bench-dir", default=BENCH_DIR,
                        help="with --load, the load harness folder, where post.lua is "
                             "(default: $BENCH_DIR)")
    args = parser.parse_args()
    bench = bench_dir_or_exit(args.bench_dir, "post.lua") if args.load else None
    server_support.SOURCE = SOURCE
    workdir = tempfile.mkdtemp(prefix="cudagate-watch-rss-")
    try:
        certs = os.path.join(workdir, "certs")
        server_support.make_certs(certs)
        print("| nodes | ready s | peak RSS at ready MiB | rollout sent s | applied s | peak RSS after MiB |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: |")
        loads = []
        for count in args.nodes:
            ready, rss, sent, applied, rss_after, load = measure(args.binary, count, workdir, certs,
                                                                 bench)
            print(f"| {count:,} | {ready:.2f} | {rss:.1f} | {sent:.2f} | {applied:.2f} | {rss_after:.1f} |",
                  flush=True)
            if load:
                loads.append((count, load))
        if loads:
            print()
            print("| nodes | during | req/s | p50 ms | p99 ms | errors |")
            print("| ---: | --- | ---: | ---: | ---: | ---: |")
            for count, (quiet, streaming) in loads:
                for what, r in (("quiet", quiet), ("1,000 events streaming", streaming)):
                    errors = sum(r[k] for k in r if k.startswith("err_"))
                    print(f"| {count:,} | {what} | {r['rps']:,.0f} | {r['p50_us'] / 1000:.2f} | "
                          f"{r['p99_us'] / 1000:.2f} | {errors} |")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()

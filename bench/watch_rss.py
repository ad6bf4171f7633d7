#!/usr/bin/env python3
"""Peak memory and time to ready of `cudagate serve --kubeconfig` with a
large fleet listed from an API server, and the time a 1,000-node driver
rollout takes to reach its decisions.

There is no kube-apiserver here: the fleet is served by the test double
of tests/e2e/apiserver_double.py (TLS, a bearer token, pages of 500,
a chunked watch stream). Its nodes are tests/fixtures/nodes/fleet.json's
13 EKS nodes repeated under new names, with managedFields and status as a
live server sends them.

    python3 bench/watch_rss.py --binary build/release/cudagate --nodes 10000 50000
"""

import argparse
import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(SOURCE, "tests", "e2e"))

import server_test  # noqa: E402
from apiserver_double import ApiServerDouble, realistic_node  # noqa: E402
from harness import free_port  # noqa: E402
from server_test import client_context, metric_value  # noqa: E402


def peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def get(port, certs, path):
    import http.client
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=client_context(certs), timeout=30)
    try:
        conn.request("GET", path)
        res = conn.getresponse()
        return res.status, res.read().decode()
    finally:
        conn.close()


def measure(binary, count, workdir, certs):
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
    port = free_port()
    log = open(os.path.join(workdir, f"cudagate-{count}.log"), "wb")
    start = time.monotonic()
    proc = subprocess.Popen([binary, "serve", "--listen", f"127.0.0.1:{port}",
                             "--tls-cert", f"{certs}/server.crt", "--tls-key", f"{certs}/server.key",
                             "--kubeconfig", config, "--threads", "1", "--log-level", "warn"],
                            stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            try:
                if get(port, certs, "/readyz")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.01)
        ready = time.monotonic() - start
        rss_ready = peak_rss_mib(proc.pid)

        # The rollout: 1,000 nodes relabelled with driver 570 (CUDA 12.8).
        names = sorted(api.nodes)[:1000]
        rollout_start = time.monotonic()
        for name in names:
            node = copy.deepcopy(api.nodes[name][1])
            labels = node["metadata"]["labels"]
            if "nvidia.com/cuda.driver.major" not in labels:
                continue
            labels.update({"nvidia.com/cuda.driver.major": "570",
                           "nvidia.com/cuda.driver-version.major": "570",
                           "nvidia.com/cuda.runtime.major": "12",
                           "nvidia.com/cuda.runtime.minor": "8",
                           "nvidia.com/cuda.runtime-version.minor": "8"})
            api.put(node)
        sent = time.monotonic() - rollout_start
        sent_at = time.time()
        # Applied once an inventory was published after the last event was sent.
        while time.monotonic() < deadline:
            text = get(port, certs, "/metrics")[1]
            if (metric_value(text, "cudagate_inventory_last_sync_timestamp_seconds") or 0) >= sent_at:
                break
            time.sleep(0.01)
        applied = time.monotonic() - rollout_start
        rss_after = peak_rss_mib(proc.pid)
        return ready, rss_ready, sent, applied, rss_after
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        log.close()
        api.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--nodes", type=int, nargs="+", default=[10000, 50000])
    args = parser.parse_args()
    server_test.SOURCE = SOURCE
    workdir = tempfile.mkdtemp(prefix="cudagate-watch-rss-")
    try:
        certs = os.path.join(workdir, "certs")
        server_test.make_certs(certs)
        print("| nodes | ready s | peak RSS at ready MiB | rollout sent s | applied s | peak RSS after MiB |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: |")
        for count in args.nodes:
            ready, rss, sent, applied, rss_after = measure(args.binary, count, workdir, certs)
            print(f"| {count:,} | {ready:.2f} | {rss:.1f} | {sent:.2f} | {applied:.2f} | {rss_after:.1f} |",
                  flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()

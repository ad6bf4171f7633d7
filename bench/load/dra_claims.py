#!/usr/bin/env python3
"""What watching ResourceClaimTemplates costs, against what getting them
when first needed would: the measurement behind `cudagate serve`'s choice
to list and watch them (docs/dra.md, Dynamic Resource Allocation in a live
cluster).

(a) Memory: resident memory of `cudagate serve --kubeconfig` once ready,
    with N ResourceClaimTemplates in the cluster and with none; the
    difference is the catalog (and the lists read into it).
(b) Latency: a GET of one ResourceClaimTemplate from the API server, as an
    admission that found no template in a cache would have to make, on a
    new TLS connection and on a kept-alive one; beside it the /validate
    latency of a DRA pod judged with the watched catalog.

There is no kube-apiserver here: the templates are served by the test
double of tests/e2e/apiserver_double.py (TLS, a bearer token, pages of
500), shaped as tests/fixtures/dra/pods.yaml's. A real API server answers
a GET in about the same time as the double or slower (authentication,
authorization, admission of the read, etcd or the watch cache), and across
a network, so (b) is a lower bound.

    python3 bench/load/dra_claims.py --binary build/release/cudagate --templates 10000
"""

import argparse
import copy
import http.client
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE, "tests", "e2e"))

import dra_support  # noqa: E402
import kube_support  # noqa: E402
import server_support  # noqa: E402
from apiserver_double import ApiServerDouble  # noqa: E402


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def templates(count):
    """`count` templates in 100 namespaces, half with a CEL selector."""
    base = [o for o in dra_support.claim_objects() if o["kind"] == "ResourceClaimTemplate"]
    for i in range(count):
        t = copy.deepcopy(base[i % len(base)])
        t["metadata"]["name"] = f"gpu-{i:05d}"
        t["metadata"]["namespace"] = f"team-{i % 100:02d}"
        t["metadata"]["uid"] = f"5c0ffee0-0000-4000-8000-{i:012d}"
        t["metadata"]["creationTimestamp"] = "2026-03-10T03:29:20Z"
        yield t


def percentiles(samples):
    samples = sorted(samples)
    return {"p50_ms": round(statistics.median(samples) * 1000, 3),
            "p99_ms": round(samples[int(len(samples) * 0.99) - 1] * 1000, 3)}


def run(binary, count, workdir, certs):
    api = ApiServerDouble(certs, tokens=("token-one",), page_size=500)
    nodes, slices = dra_support.dra_fleet()
    for node in nodes:
        api.put(node)
    for s in slices:
        if s["apiVersion"].endswith("/v1"):
            api.put_object(s)
    for t in templates(count):
        api.put_object(t)
    api.start()
    os.makedirs(workdir, exist_ok=True)
    if not os.path.exists(os.path.join(workdir, "certs")):
        os.symlink(certs, os.path.join(workdir, "certs"))
    kube_support.write(os.path.join(workdir, "token"), "token-one\n")
    config = kube_support.kubeconfig(workdir, api.url, ["tokenFile: token"])
    webhook = dra_support.DraWebhook(workdir, certs, config, log_level="warn")
    start = time.monotonic()
    webhook.start()
    ready_s = time.monotonic() - start
    out = {"templates": count, "ready_s": round(ready_s, 2)}
    pod = dra_support.dra_review_pod("gpu-00000" if count else "one-gpu")
    time.sleep(1)  # let the allocator settle after the lists
    out["rss_mib"] = round(rss_mib(webhook.proc.pid), 1)
    samples = []
    for _ in range(300):
        t0 = time.perf_counter()
        webhook.answer_pod(*pod)
        samples.append(time.perf_counter() - t0)
    out["validate"] = percentiles(samples)
    if count:
        path = "/apis/resource.k8s.io/v1/namespaces/team-00/resourceclaimtemplates/gpu-00000"
        ctx = server_support.client_context(certs)
        headers = {"Authorization": "Bearer token-one", "Accept": "application/json"}
        fresh, kept = [], []
        for _ in range(300):
            t0 = time.perf_counter()
            conn = http.client.HTTPSConnection("127.0.0.1", api.port, context=ctx, timeout=10)
            conn.request("GET", path, headers=headers)
            res = conn.getresponse()
            res.read()
            conn.close()
            fresh.append(time.perf_counter() - t0)
            assert res.status == 200, res.status
        conn = http.client.HTTPSConnection("127.0.0.1", api.port, context=ctx, timeout=10)
        for _ in range(300):
            t0 = time.perf_counter()
            conn.request("GET", path, headers=headers)
            res = conn.getresponse()
            res.read()
            kept.append(time.perf_counter() - t0)
        conn.close()
        out["get_new_connection"] = percentiles(fresh)
        out["get_kept_alive"] = percentiles(kept)
    webhook.stop()
    api.stop()
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--templates", type=int, default=10000)
    args = parser.parse_args()
    kube_support.BINARY = os.path.abspath(args.binary)
    kube_support.SOURCE = SOURCE
    dra_support.SOURCE = SOURCE
    server_support.SOURCE = SOURCE
    shared = tempfile.mkdtemp(prefix="cudagate-dra-bench-")
    try:
        certs = os.path.join(shared, "certs")
        server_support.make_certs(certs)
        results = [run(args.binary, n, os.path.join(shared, str(n)), certs)
                   for n in (0, args.templates)]
        print(json.dumps(results, indent=2))
        print(f"catalog of {args.templates} templates: "
              f"{results[1]['rss_mib'] - results[0]['rss_mib']:+.1f} MiB resident")
    finally:
        shutil.rmtree(shared, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Start-up time and peak memory of `cudagate serve` with a large inventory.

    bench/load/startup.py BINARY [--nodes 10000] [--starts 5] [--images 10000]
                            [--bench-dir DIR]

The load harness (gen.py, run.sh, post.lua, peer-go) is not part of the
repository: name its folder with BENCH_DIR or --bench-dir.

Writes gen.py's fleet of --nodes nodes, certificate and reviews into a
temporary directory, then:
  - starts the server --starts times and reports how long each took from
    the process start to the first 200 from /readyz (polled every 2 ms over
    TLS), and the median;
  - in the last start, sends --images gpu-pod reviews over one keep-alive
    connection, each naming another image, so that every cache of image
    facts fills and starts over, and reports the server's peak RSS (VmHWM)
    after them.

The server runs with registry lookups off (`registry.enabled: false`):
an image no one has asked for would otherwise wait up to registry.timeout
for its registry, which this bench does not provide, and the memory of the
registry's cache is bench/load/registry_bench.py's to measure.

Every review must be answered 200 with an AdmissionReview; the script
fails otherwise. It measures one machine at one moment: compare builds
side by side, not with numbers taken elsewhere.
"""

import argparse
import http.client
import json
import os
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time

# The load harness's folder, from the environment; the scripts of this folder
# take it from here, and --bench-dir overrides it.
BENCH_DIR = os.environ.get("BENCH_DIR", "")


def bench_dir_or_exit(path, *needs, option="--bench-dir"):
    """`path`, the load harness's folder (BENCH_DIR or `option`), or exit with
    a message that says how to name it when it is empty or lacks one of the
    files `needs` (gen.py when none is named)."""
    script = os.path.basename(sys.argv[0]) or "startup.py"
    how = f"set BENCH_DIR to the folder with gen.py, run.sh and peer-go, or pass {option}"
    if not path:
        sys.exit(f"{script}: the load harness folder is not known: {how}")
    for name in needs or ("gen.py",):
        if not os.path.exists(os.path.join(path, name)):
            sys.exit(f"{script}: no {os.path.join(path, name)}: {how}")
    return path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tls_context(ca):
    ctx = ssl.create_default_context(cafile=ca)
    ctx.check_hostname = False
    return ctx


def start(binary, data, port):
    return subprocess.Popen(
        [binary, "serve", "--listen", f"127.0.0.1:{port}",
         "--tls-cert", os.path.join(data, "server.crt"),
         "--tls-key", os.path.join(data, "server.key"),
         "--nodes", os.path.join(data, "nodes.json"), "--config", os.path.join(data, "policy.yaml"),
         "--threads", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_ready(process, port, ctx, t0, limit_s=30.0):
    """Milliseconds from t0 to the first 200 from /readyz."""
    while True:
        if process.poll() is not None:
            sys.exit(f"startup.py: the server exited with {process.returncode} before it was ready")
        try:
            conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=2)
            conn.request("GET", "/readyz")
            response = conn.getresponse()
            response.read()
            if response.status == 200:
                return (time.monotonic() - t0) * 1000, conn
            conn.close()
        except OSError:
            pass
        if time.monotonic() - t0 > limit_s:
            sys.exit(f"startup.py: not ready after {limit_s} s")
        time.sleep(0.002)


def peak_rss_mb(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def send_reviews(conn, body, images):
    template = json.loads(body)
    containers = template["request"]["object"]["spec"]["containers"]
    base = containers[0]["image"]
    for i in range(images):
        containers[0]["image"] = f"{base}-{i}"
        conn.request("POST", "/validate", body=json.dumps(template),
                     headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        answer = response.read()
        if response.status != 200 or json.loads(answer).get("kind") != "AdmissionReview":
            sys.exit(f"startup.py: review {i} answered {response.status}: {answer[:200]!r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--starts", type=int, default=5)
    ap.add_argument("--images", type=int, default=10000)
    ap.add_argument("--bench-dir", default=BENCH_DIR,
                    help="the load harness folder, where gen.py is (default: $BENCH_DIR)")
    args = ap.parse_args()
    if args.nodes < 1 or args.starts < 1 or args.images < 0:
        ap.error("--nodes and --starts must be at least 1, --images at least 0")
    gen = os.path.join(bench_dir_or_exit(args.bench_dir), "gen.py")

    with tempfile.TemporaryDirectory(prefix="cudagate-startup.") as data:
        subprocess.run([sys.executable, gen, "--out", data, "--nodes", str(args.nodes)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(os.path.join(data, "policy.yaml"), "w") as f:
            f.write("apiVersion: cudagate.io/v1alpha1\nkind: Policy\nregistry:\n  enabled: false\n")
        ctx = tls_context(os.path.join(data, "ca.crt"))
        with open(os.path.join(data, "gpu-pod.json")) as f:
            body = f.read()
        ready = []
        rss = None
        for run in range(args.starts):
            port = free_port()
            t0 = time.monotonic()
            process = start(args.binary, data, port)
            try:
                ms, conn = wait_ready(process, port, ctx, t0)
                ready.append(ms)
                if run == args.starts - 1:
                    send_reviews(conn, body, args.images)
                    rss = peak_rss_mb(process.pid)
                conn.close()
            finally:
                process.terminate()
                process.wait()
        print(f"start-up with {args.nodes} nodes: ready in "
              f"{', '.join('%.0f' % t for t in ready)} ms (median {statistics.median(ready):.0f})")
        print(f"peak RSS after {args.images} reviews with distinct images: {rss:.1f} MiB")


if __name__ == "__main__":
    main()

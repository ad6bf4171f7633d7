#!/usr/bin/env python3
"""Instructions retired per request by each server process: cudagate's
/validate of a review against nginx's fixed answer, in one run.

    bench/load/instructions.py BINARY [--nodes 1000 10000] [--conns 32]
                          [--requests 50] [--body gpu-pod]
                          [--counter auto|perf|callgrind]
                          [--bench-dir DIR] [--out DIR]

Unlike req/s, the count does not move with the machine's load or clock, so
it can be compared across machines and across runs on a busy one. Each
server runs alone (cudagate with --threads 1, nginx with one worker and no
master, the configuration of the load harness's run.sh otherwise) on
gen.py's certificate, fleet and bodies; gen.py and run.sh are the load
harness's (BENCH_DIR or --bench-dir). A client opens --conns keep-alive TLS
connections and sends one review on each, unmeasured (the handshakes and
first-use work stay out); then, counted, each connection sends --requests
reviews more, one after the other, the connections side by side as wrk
drives them; every answer must be a 200. The count covers exactly those
conns x requests answers and the events between them, no handshake and
no close.

The counter is `perf stat -e instructions:u,instructions:k -p PID` where
the machine has hardware counters (user space, and the kernel's share
where perf_event_paranoid allows it), else callgrind (user space only;
the server runs some 50 times slower under it, which changes nothing in
what it counts but makes batches of ready connections as large as they
get). Callgrind's CPU is valgrind's: OpenSSL may take another AES path
than on the bare machine, alike for both servers.

Prints one line per server and the ratios; with --out, writes
instructions.tsv there. Not part of CI.
"""

import argparse
import asyncio
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time

from startup import BENCH_DIR, bench_dir_or_exit, free_port


def perf_counts_instructions():
    """True where perf can count this user's instructions (not in most VMs)."""
    try:
        out = subprocess.run(["perf", "stat", "-x,", "-e", "instructions:u", "true"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return any(line.split(",")[0].strip().isdigit() for line in out.stderr.splitlines())


def nginx_config(work, port, uid):
    """run.sh's nginx reference, in one process so that one PID is counted."""
    d = os.path.join(work, f"nginx-{port}")
    os.makedirs(os.path.join(d, "tmp"), exist_ok=True)
    answer = ('{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",'
              '"response":{"uid":"%s","allowed":true}}' % uid)
    conf = f"""daemon off;
master_process off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {d}/tmp/body;
  proxy_temp_path {d}/tmp/proxy;
  fastcgi_temp_path {d}/tmp/fastcgi;
  uwsgi_temp_path {d}/tmp/uwsgi;
  scgi_temp_path {d}/tmp/scgi;
  keepalive_requests 100000000;
  keepalive_timeout 120s;
  client_max_body_size 4m;
  client_body_buffer_size 64k;
  server {{
    listen 127.0.0.1:{port} ssl;
    ssl_certificate {work}/server.crt;
    ssl_certificate_key {work}/server.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    location = /validate {{
      default_type application/json;
      return 200 '{answer}';
    }}
    location / {{ return 404; }}
  }}
}}
"""
    path = os.path.join(d, "nginx.conf")
    with open(path, "w") as f:
        f.write(conf)
    return ["nginx", "-p", d, "-e", os.path.join(d, "error.log"), "-c", path]


async def exchange(reader, writer, request):
    """One request on a keep-alive connection; the answer's status."""
    writer.write(request)
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    await reader.readexactly(length)
    return status


class Load:
    """--conns keep-alive connections that each send reviews back to back."""

    def __init__(self, port, ctx, body):
        self.port, self.ctx = port, ctx
        self.request = (b"POST /validate HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)) + body
        self.conns = []

    async def open(self, count):
        for _ in range(count):
            self.conns.append(await asyncio.open_connection("127.0.0.1", self.port, ssl=self.ctx,
                                                            server_hostname="127.0.0.1"))

    async def run(self, each):
        async def one(reader, writer):
            for _ in range(each):
                status = await exchange(reader, writer, self.request)
                if status != 200:
                    raise RuntimeError(f"answer {status}")
        await asyncio.gather(*(one(r, w) for r, w in self.conns))

    def close(self):
        for _, writer in self.conns:
            writer.close()


class Counter:
    def __init__(self, kind, work, name):
        self.kind, self.work, self.name = kind, work, name
        self.out = os.path.join(work, f"callgrind-{name}.out")
        self.perf = None

    def wrap(self, argv):
        if self.kind == "callgrind":
            return ["valgrind", "--tool=callgrind", "--instr-atstart=no",
                    f"--callgrind-out-file={self.out}"] + argv
        return argv

    def start(self, pid):
        if self.kind == "callgrind":
            subprocess.run(["callgrind_control", "-z", str(pid)], capture_output=True, check=True)
            subprocess.run(["callgrind_control", "-i", "on", str(pid)], capture_output=True, check=True)
        else:
            self.perf_out = os.path.join(self.work, f"perf-{self.name}.csv")
            self.perf = subprocess.Popen(["perf", "stat", "-x,", "-o", self.perf_out, "-e",
                                          "instructions:u,instructions:k", "-p", str(pid)])
            time.sleep(0.5)  # perf attaches to every thread before the load starts

    def stop(self, pid):
        """(user, kernel or None) instructions since start."""
        if self.kind == "callgrind":
            subprocess.run(["callgrind_control", "-i", "off", str(pid)], capture_output=True, check=True)
            subprocess.run(["callgrind_control", "-d", str(pid)], capture_output=True, check=True)
            total = 0
            directory, base = os.path.split(self.out)
            for name in os.listdir(directory):
                if name.startswith(os.path.basename(base)):
                    with open(os.path.join(directory, name)) as f:
                        counts = [int(line.split()[1]) for line in f if line.startswith(("summary:", "totals:"))]
                    total += max(counts, default=0)
            return total, None
        self.perf.send_signal(signal.SIGINT)
        self.perf.wait()
        counts = {}
        with open(self.perf_out) as f:
            for line in f:
                fields = line.strip().split(",")
                if len(fields) > 2 and fields[0].isdigit():
                    counts[fields[2]] = int(fields[0])
        if not counts.get("instructions:u"):
            sys.exit(f"instructions.py: perf counted no instructions of {self.name} (see {self.perf_out}); "
                     "try --counter callgrind")
        return counts["instructions:u"], counts.get("instructions:k")


def measure(name, argv, counter, port, ctx, body, conns, each, ready):
    proc = subprocess.Popen(counter.wrap(argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 600
        while not ready(port):
            if proc.poll() is not None:
                sys.exit(f"instructions.py: {name} exited with {proc.returncode} at start")
            if time.monotonic() > deadline:
                sys.exit(f"instructions.py: {name} not ready after 600 s")
            time.sleep(0.2)
        load = Load(port, ctx, body)

        async def session():
            await load.open(conns)
            await load.run(1)
            counter.start(proc.pid)
            await load.run(each)
            result = counter.stop(proc.pid)
            load.close()
            return result
        user, kernel = asyncio.run(session())
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    n = conns * each
    return user / n, (kernel / n if kernel is not None else None)


def answers(ctx, path, body=None):
    def probe(port):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
                with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                    method = b"POST" if body is not None else b"GET"
                    payload = body or b""
                    s.sendall(b"%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n"
                              b"Connection: close\r\n\r\n" % (method, path, len(payload)) + payload)
                    return s.recv(64).startswith(b"HTTP/1.1 200")
        except (OSError, ssl.SSLError):
            return False
    return probe


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000])
    parser.add_argument("--conns", type=int, default=32)
    parser.add_argument("--requests", type=int, default=50, help="counted requests on each connection")
    parser.add_argument("--body", default="gpu-pod")
    parser.add_argument("--counter", choices=("auto", "perf", "callgrind"), default="auto")
    parser.add_argument("--bench-dir", default=BENCH_DIR,
                        help="the load harness folder, where gen.py is (default: $BENCH_DIR)")
    parser.add_argument("--out")
    parser.add_argument("--keep", action="store_true", help="keep the inputs and callgrind's profiles (printed)")
    args = parser.parse_args()
    bench_dir_or_exit(args.bench_dir)
    kind = args.counter
    if kind == "auto":
        kind = "perf" if perf_counts_instructions() else "callgrind"
    work = tempfile.mkdtemp(prefix="cudagate-instructions-")
    rows = []
    for i, n in enumerate(args.nodes):
        data = os.path.join(work, f"nodes-{n}")
        subprocess.run([sys.executable, os.path.join(args.bench_dir, "gen.py"), "--out", data, "--nodes", str(n)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(os.path.join(data, f"{args.body}.json"), "rb") as f:
            body = f.read()
        ctx = ssl.create_default_context(cafile=os.path.join(data, "ca.crt"))
        ctx.check_hostname = False
        port = free_port()
        argv = [os.path.abspath(args.binary), "serve", "--listen", f"127.0.0.1:{port}",
                "--tls-cert", os.path.join(data, "server.crt"), "--tls-key", os.path.join(data, "server.key"),
                "--nodes", os.path.join(data, "nodes.json"), "--threads", "1"]
        name = "cudagate" if i == 0 else f"cudagate-{n}"
        rows.append((name, n) + measure(name, argv, Counter(kind, work, name), port, ctx, body,
                                        args.conns, args.requests, answers(ctx, b"/readyz")))
        if i == 0:
            uid = json.loads(body)["request"]["uid"]
            port = free_port()
            rows.append(("nginx", None) + measure("nginx", nginx_config(data, port, uid), Counter(kind, work, "nginx"),
                                                  port, ctx, body, args.conns, args.requests,
                                                  answers(ctx, b"/validate", body)))
    nginx = next(r for r in rows if r[0] == "nginx")
    print(f"instructions per request ({kind}, {args.conns} connections x {args.requests} counted requests, "
          f"body {args.body} {len(body)} bytes):")
    print("%-16s %14s %14s %10s" % ("server", "user", "kernel", "/ nginx"))
    for name, _, user, kernel in rows:
        print("%-16s %14.0f %14s %10.2f" % (name, user, "-" if kernel is None else "%.0f" % kernel, user / nginx[2]))
    if args.out:
        with open(os.path.join(args.out, "instructions.tsv"), "w") as f:
            f.write("server\tnodes\tcounter\tuser_per_request\tkernel_per_request\n")
            for name, n, user, kernel in rows:
                f.write(f"{name}\t{n or ''}\t{kind}\t{user:.0f}\t{'' if kernel is None else '%.0f' % kernel}\n")
    if args.keep:
        print(f"inputs and profiles: {work}")
    else:
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()

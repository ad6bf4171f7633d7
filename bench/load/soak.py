#!/usr/bin/env python3
"""The soak (`make soak`): `cudagate serve` under a steady mixed load while
faults are injected, then connection abuse, then SIGTERM under load.

1. Peak: wrk at full speed for 10 s (one thread, 32 keep-alive connections)
   over a mix of AdmissionReviews: a pass, a deny, a pin (/mutate), an image
   never seen before (looked up in the registry: a cold lookup), and a pod
   that asks for no GPU.
2. Soak: the same mix paced to --load (80%) of that peak for --seconds
   (600), each request due at its time whatever the latencies before it
   (bench/load/soak.lua); the row fails below --load less 5 points, which a
   server only reaches when it cannot keep up. RSS and open file descriptors
   are sampled every second. During it, in order: the serving certificate
   is re-issued, the policy file is replaced by a valid and then by an
   invalid one, the certificate is re-issued again, the registry stops and
   comes back, a node's driver changes through the watch, and the watch is
   cut and answered with 410 Gone so that cudagate lists again. After each,
   a probe request waits until the decision follows the change.
3. Abuse: --idle connections opened and left silent; 300 slowloris clients
   sending a header byte a second; a flood of TLS handshakes closed at once.
   During each, a well-behaved client keeps sending reviews; afterwards the
   server must serve again within its header timeout.
4. SIGTERM while 8 clients send reviews, each on a new connection: every
   request on a connection whose handshake completed must be answered.

The nodes come from the API server double of the end-to-end tests
(tests/e2e/apiserver_double.py, the fixture fleet), the images from Debian's
docker-registry with images pushed by skopeo (tests/e2e/registry_support.py).
It prints one table; exit 1 if any row fails. Not part of CI: it needs
minutes and a quiet machine.

    bench/load/soak.py --binary build/release/cudagate [--seconds 600] [--load 0.8]
"""

import argparse
import http.client
import json
import os
import resource
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))

import kube_support as kw  # noqa: E402
import registry_support as rs  # noqa: E402
import server_support as st  # noqa: E402
from apiserver_double import ApiServerDouble  # noqa: E402
from harness import free_port  # noqa: E402

CONNECTIONS = 32
TOKEN = "soak-token"
EXCLUDED = "soak-excluded"


def gpu_pod(env=None, image="registry.example.com/ml/train:v1", pinned_to=None):
    container = {"name": "train", "image": image,
                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    if env:
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    pod = {"containers": [container], "tolerations": [{"operator": "Exists"}]}
    if pinned_to:
        pod["nodeSelector"] = {"kubernetes.io/hostname": pinned_to}
    return pod


class Cudagate:
    def __init__(self, binary, work, certs, kubeconfig, policy):
        self.binary, self.work, self.certs = binary, work, certs
        self.port = free_port()
        self.log_path = os.path.join(work, "cudagate.log")
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [binary, "serve", "--listen", f"127.0.0.1:{self.port}",
             "--tls-cert", os.path.join(certs, "server.crt"),
             "--tls-key", os.path.join(certs, "server.key"),
             "--kubeconfig", kubeconfig, "--config", policy, "--threads", "1",
             "--log-level", "warn", "--log-format", "json"], stdout=log, stderr=log)
        log.close()
        st.poll_until(lambda: self.get("/readyz") == 200, 60, "cudagate to become ready")

    def context(self):
        return ssl.create_default_context(cafile=os.path.join(self.certs, "ca.crt"))

    def connect(self, timeout=10):
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context(),
                                           timeout=timeout)

    def get(self, path):
        conn = self.connect()
        try:
            conn.request("GET", path)
            res = conn.getresponse()
            res.read()
            return res.status
        finally:
            conn.close()

    def review(self, path, body, timeout=10):
        conn = self.connect(timeout)
        try:
            res, data = st.post(conn, path, body)
            if res.status != 200:
                raise AssertionError(f"HTTP {res.status}")
            return json.loads(data)["response"]
        finally:
            conn.close()

    def metrics(self):
        conn = self.connect()
        try:
            conn.request("GET", "/metrics")
            return conn.getresponse().read().decode()
        finally:
            conn.close()

    def peer_certificate(self):
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as raw:
            with self.context().wrap_socket(raw, server_hostname="127.0.0.1") as s:
                return s.getpeercert(binary_form=True)

    def rss_and_fds(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        return rss * 1024, len(os.listdir(f"/proc/{self.proc.pid}/fd"))


def wrk(url, seconds, rate, bodies):
    args = ["wrk", "-t1", f"-c{CONNECTIONS}", f"-d{seconds}s", "--latency", "--timeout", "10s",
            "-s", os.path.join(ROOT, "bench", "load", "soak.lua"), url, "--", str(rate)]
    for path, file in bodies:
        args += [file, path]
    out = subprocess.run(args, capture_output=True, text=True, timeout=seconds + 120)
    line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise SystemExit("soak: wrk printed no result:\n" + out.stdout + out.stderr)
    return json.loads(line[len("RESULT "):])


def verdict(response):
    return response.get("auditAnnotations", {}).get("verdict")


class Soak:
    def __init__(self, args):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="cudagate-soak-")
        self.rows = []  # (what, result, ok)
        st.SOURCE = kw.SOURCE = ROOT
        self.certs = os.path.join(self.work, "certs")
        st.make_certs(self.certs)

        self.nodes = kw.fleet()
        self.api = ApiServerDouble(self.certs, tokens=(TOKEN,))
        for node in self.nodes:
            self.api.put(node)
        self.api.start()
        kw.write(os.path.join(self.work, "token"), TOKEN + "\n")
        kubeconfig = kw.kubeconfig(self.work, self.api.url, ["tokenFile: token"])

        self.registry = rs.Registry(self.work).start()
        config = rs.image_config({"CUDA_VERSION": "12.4.1", "NVIDIA_REQUIRE_CUDA": "cuda>=12.4"})
        for tag in ["12.4"] + [f"probe-{n}" for n in range(4)]:
            layout = os.path.join(self.work, "layouts", tag)
            rs.oci_layout(layout, tag, [config])
            rs.push(layout, tag, f"{self.registry.host}/ml/cuda:{tag}")

        self.policy_path = os.path.join(self.work, "policy.yaml")
        self.write_policy([])
        self.server = Cudagate(args.binary, self.work, self.certs, kubeconfig, self.policy_path)

    def write_policy(self, excluded, text=None):
        text = text or ("apiVersion: cudagate.io/v1alpha1\nkind: Policy\n"
                        f"excludeNamespaces: {json.dumps(excluded)}\n"
                        "registry:\n  timeout: 1s\n"
                        f"  insecure: [{json.dumps(self.registry.host)}]\n")
        tmp = self.policy_path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self.policy_path)  # as a ConfigMap volume update does

    def body_files(self):
        mix = [("/validate", gpu_pod({"CUDA_VERSION": "12.0.1"})),                      # pass
               ("/validate", gpu_pod({"CUDA_VERSION": "12.4.1"}, pinned_to=kw.T4_NODE)),  # deny
               ("/mutate", gpu_pod({"CUDA_VERSION": "12.4.1"})),                          # pin
               ("/validate", gpu_pod(image=f"{self.registry.host}/ml/cold:COLD-TAG")),    # cold
               ("/validate", {"containers": [{"name": "web", "image": "nginx:1.27"}]})]   # no GPU
        files = []
        for n, (path, pod) in enumerate(mix):
            file = os.path.join(self.work, f"body-{n}.json")
            with open(file, "wb") as f:
                f.write(st.review(pod, namespace="ml", name=f"soak-{n}")[1])
            files.append((path, file))
        return files

    def row(self, what, result, ok):
        self.rows.append((what, result, ok))
        print(f"soak: {what}: {result} ({'ok' if ok else 'FAILED'})", file=sys.stderr)

    # --- the faults, each followed by a probe of the decision -------------------------

    def wait(self, what, condition, timeout=30):
        start = time.monotonic()
        try:
            st.poll_until(condition, timeout, what)
            self.row(what, f"followed in {time.monotonic() - start:.1f} s", True)
        except AssertionError as e:
            self.row(what, str(e), False)

    def probe(self, pod, path="/validate", namespace="ml"):
        return self.server.review(path, st.review(pod, namespace=namespace, name="probe")[1])

    def rotate_certificate(self):
        subprocess.run(["bash", os.path.join(ROOT, "certs", "dev-certs.sh"), "--out", self.certs,
                        "--renew"], check=True, capture_output=True, timeout=60)
        new = subprocess.run(["openssl", "x509", "-in", os.path.join(self.certs, "server.crt"),
                              "-outform", "DER"], check=True, capture_output=True).stdout
        self.wait("certificate re-issued: new handshakes see it",
                  lambda: self.server.peer_certificate() == new)

    def faults(self):
        deny_pod = gpu_pod({"CUDA_VERSION": "12.4.1"}, pinned_to=kw.T4_NODE)
        steps = [
            (0.15, self.rotate_certificate),
            (0.25, lambda: (self.write_policy([EXCLUDED]), self.wait(
                "valid policy replaced: an excluded namespace is admitted",
                lambda: self.probe(deny_pod, namespace=EXCLUDED)["allowed"]))),
            (0.32, lambda: (self.write_policy(None, "kind: Policy\nexcludeNamespaces: 7\n"),
                            self.wait("invalid policy: refused, the last good one kept",
                                      lambda: st.metric_value(self.server.metrics(),
                                                              "cudagate_file_reloads_total",
                                                              file="config", result="error")
                                      and self.probe(deny_pod, namespace=EXCLUDED)["allowed"]))),
            (0.40, self.rotate_certificate),
            (0.48, lambda: (self.registry.stop(), self.wait(
                "registry unreachable: a new image is unknown, not denied",
                lambda: verdict(self.probe(gpu_pod(
                    image=f"{self.registry.host}/ml/cuda:probe-1", pinned_to=kw.T4_NODE)))
                == "unknown"))),
            (0.56, lambda: (self.registry.start(port=self.registry.port), self.wait(
                "registry back: a new image is read from it and denied",
                lambda: not self.probe(gpu_pod(image=f"{self.registry.host}/ml/cuda:probe-2",
                                               pinned_to=kw.T4_NODE))["allowed"]))),
            (0.64, lambda: (self.api.put(kw.upgraded(kw.by_name(self.nodes, kw.T4_NODE),
                                                     "550.90.07", "12.4")), self.wait(
                "node upgraded through the watch: the pod it blocked passes",
                lambda: self.probe(deny_pod)["allowed"]))),
            (0.72, lambda: (self.api.drop_watches(),
                            self.api.put(kw.by_name(self.nodes, kw.T4_NODE), silently=True),
                            self.api.compact(), self.wait(
                "watch cut, 410 Gone, relisted: the downgrade is seen",
                lambda: not self.probe(deny_pod)["allowed"]))),
        ]
        start = time.monotonic()
        for at, step in steps:
            delay = start + at * self.args.seconds - time.monotonic()
            if delay > 0:
                self.stop_sampling.wait(delay)
            step()

    def sample(self):
        while not self.stop_sampling.wait(1.0):
            self.samples.append((time.monotonic(), *self.server.rss_and_fds()))

    # --- the phases ------------------------------------------------------------------

    def soak(self):
        bodies = self.body_files()
        url = f"https://127.0.0.1:{self.server.port}"
        peak = wrk(url, 10, 0, bodies)
        target = peak["rps"] * self.args.load

        self.samples = []
        self.stop_sampling = threading.Event()
        sampler = threading.Thread(target=self.sample, daemon=True)
        faults = threading.Thread(target=self.faults, daemon=True)
        sampler.start()
        faults.start()
        result = wrk(url, self.args.seconds, f"{target:.1f}", bodies)
        faults.join()
        self.stop_sampling.set()
        sampler.join()

        failed = (result["err_connect"] + result["err_read"] + result["err_write"]
                  + result["err_status"] + result["err_timeout"])
        self.row("load held", f"{result['rps']:.0f} req/s = {result['rps'] / peak['rps']:.0%} of "
                 f"peak {peak['rps']:.0f} for {self.args.seconds} s, p50 "
                 f"{result['p50_us'] / 1000:.2f} ms, p99 {result['p99_us'] / 1000:.2f} ms",
                 result["rps"] >= (self.args.load - 0.05) * peak["rps"])
        self.row("requests failed during the soak",
                 f"{failed} of {result['requests']} (connect {result['err_connect']}, read "
                 f"{result['err_read']}, write {result['err_write']}, status "
                 f"{result['err_status']}, timeout {result['err_timeout']})", failed == 0)

        t0 = self.samples[0][0]
        after = [s for s in self.samples if s[0] - t0 >= 0.2 * self.args.seconds]
        if len(after) >= 10:
            head = after[:max(5, len(after) // 10)]
            tail = after[-max(5, len(after) // 10):]
            rss0, rss1 = (statistics.median(s[1] for s in w) for w in (head, tail))
            fd0, fd1 = (statistics.median(s[2] for s in w) for w in (head, tail))
            self.row("RSS after warm-up", f"{rss0 / 2**20:.1f} MiB -> {rss1 / 2**20:.1f} MiB "
                     f"({(rss1 - rss0) / rss0:+.1%})", abs(rss1 - rss0) <= 0.05 * rss0)
            # Registry and API server connections come and go; a leak only grows.
            self.row("open file descriptors", f"{fd0:.0f} -> {fd1:.0f}", fd1 <= fd0 + 2)

    def served_while(self, what, abuse, seconds):
        """Runs `abuse(stop)` in threads for `seconds` while a well-behaved
        client sends reviews; rows for both and for the recovery."""
        stop = threading.Event()
        threads = [threading.Thread(target=abuse, args=(stop,), daemon=True)
                   for _ in range(getattr(abuse, "threads", 1))]
        for t in threads:
            t.start()
        body = st.review(gpu_pod({"CUDA_VERSION": "12.0.1"}))[1]
        ok = tried = 0
        max_fds = 0
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            tried += 1
            try:
                self.server.review("/validate", body, timeout=5)
                ok += 1
            except (OSError, ssl.SSLError, http.client.HTTPException, AssertionError):
                pass
            max_fds = max(max_fds, self.server.rss_and_fds()[1])
            time.sleep(0.1)
        stop.set()
        for t in threads:
            t.join(60)
        self.row(f"{what}: well-behaved reviews answered", f"{ok} of {tried}, server fds at most "
                 f"{max_fds}", ok >= 0.9 * tried and max_fds <= 1024 + 64)
        start = time.monotonic()
        try:
            st.poll_until(lambda: self.server.review("/validate", body)["allowed"], 30,
                          "the server to serve again")
            self.row(f"{what}: recovered", f"in {time.monotonic() - start:.1f} s", True)
        except AssertionError as e:
            self.row(f"{what}: recovered", str(e), False)

    def abuse(self):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        idle = min(self.args.idle, hard - 256)

        def idle_connections(stop):
            held = []
            for _ in range(idle):
                try:
                    held.append(socket.create_connection(("127.0.0.1", self.server.port), 5))
                except OSError:
                    break
            stop.wait()
            for s in held:
                s.close()
        self.served_while(f"{idle} idle connections", idle_connections, 20)

        def slowloris(stop):
            held = []
            for _ in range(300):
                try:
                    raw = socket.create_connection(("127.0.0.1", self.server.port), 5)
                    s = self.server.context().wrap_socket(raw, server_hostname="127.0.0.1")
                    s.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\n")
                    held.append(s)
                except (OSError, ssl.SSLError):
                    pass
            while not stop.wait(1.0):
                for s in list(held):
                    try:
                        s.sendall(b"X")
                    except (OSError, ssl.SSLError):
                        held.remove(s)
            for s in held:
                s.close()
        self.served_while("300 slowloris clients", slowloris, 20)

        def handshakes(stop):
            ctx = self.server.context()
            while not stop.is_set():
                try:
                    raw = socket.create_connection(("127.0.0.1", self.server.port), 5)
                    ctx.wrap_socket(raw, server_hostname="127.0.0.1").close()
                except (OSError, ssl.SSLError):
                    pass
        handshakes.threads = 4
        self.served_while("handshake flood (4 clients)", handshakes, 15)

    def sigterm(self):
        body = st.review(gpu_pod({"CUDA_VERSION": "12.4.1"}))[1]
        accepted = answered = 0
        lock = threading.Lock()
        stop = threading.Event()

        def client():
            nonlocal accepted, answered
            while not stop.is_set():
                try:
                    conn = self.server.connect(timeout=30)
                    conn.connect()  # TCP and the TLS handshake: the server accepted it
                except (OSError, ssl.SSLError):
                    continue
                with lock:
                    accepted += 1
                try:
                    res, _ = st.post(conn, "/validate", body)
                    if res.status == 200:
                        with lock:
                            answered += 1
                except (OSError, ssl.SSLError, http.client.HTTPException):
                    pass
                finally:
                    conn.close()

        threads = [threading.Thread(target=client, daemon=True) for _ in range(8)]
        for t in threads:
            t.start()
        time.sleep(3)  # load for a while before the signal
        self.server.proc.send_signal(signal.SIGTERM)
        status = self.server.proc.wait(timeout=60)
        stop.set()
        for t in threads:
            t.join(60)
        self.row("SIGTERM under load: accepted requests answered",
                 f"{answered} of {accepted}, exit status {status}",
                 answered == accepted and status == 0)

    def run(self):
        try:
            self.soak()
            self.abuse()
            self.sigterm()
        finally:
            if self.server.proc.poll() is None:
                self.server.proc.kill()
            self.api.stop()
            self.registry.stop()
        width = max(len(r[0]) for r in self.rows)
        print(f"| {'check':<{width}} | result | |\n| {'-' * width} | --- | --- |")
        for what, result, ok in self.rows:
            print(f"| {what:<{width}} | {result} | {'ok' if ok else 'FAILED'} |")
        if all(ok for _, _, ok in self.rows):
            shutil.rmtree(self.work, ignore_errors=True)
            return 0
        print(f"soak: logs kept in {self.work}", file=sys.stderr)
        return 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "release", "cudagate"))
    parser.add_argument("--seconds", type=int, default=600, help="length of the soak")
    parser.add_argument("--load", type=float, default=0.8, help="fraction of peak throughput")
    parser.add_argument("--idle", type=int, default=10000, help="idle connections to open")
    args = parser.parse_args()
    kw.BINARY = st.BINARY = os.path.abspath(args.binary)
    return Soak(args).run()


if __name__ == "__main__":
    sys.exit(main())

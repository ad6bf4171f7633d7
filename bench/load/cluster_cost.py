#!/usr/bin/env python3
"""What a webhook costs a user: pod creates through a real kube-apiserver
(scripts/cluster.sh's control plane, v1.37), measured without a webhook,
with cudagate and with peer-go (the load harness's peer-go, a typical stdlib
Go webhook) registered, side by side on one control plane.

Configurations:

  no webhook           no admission webhook registered
  cudagate validate    cudagate's ValidatingWebhookConfiguration alone: one
                       call per create, the same work as peer-go's /validate
                       (the like-for-like comparison)
  cudagate installed   both of cudagate's configurations, as the local overlay
                       installs them: /mutate, then /validate (two calls per
                       create; what a cluster running cudagate pays)
  peer-go validate     cudagate's ValidatingWebhookConfiguration with every
                       webhook's URL pointed at peer-go's /validate (its only
                       path) and its serving certificate, so the API server
                       treats both alike (same rules, matchConditions,
                       namespaceSelector, timeout, failurePolicy, CA)

Each run: `--threads` client threads, each on its own keep-alive HTTPS
connection to the API server as admin (system:masters, exempt from API
Priority and Fairness, so no queueing of the client's own making), POST
`--warmup` GPU pods, wait for one another, then POST `--creates` more, timing
each create from sending the request to reading the whole response. The pods
are the same in every run: one container asking for an nvidia.com/gpu with
CUDA_VERSION 12.4.1 in its env, compatible with every node, so every
webhook admits it and every create returns 201. They name a scheduler that
does not exist, so kube-scheduler leaves them alone and its binding work is
not in the figures (a create's latency ends before scheduling starts). After
a run the pods are deleted (a deletecollection; unbound pods go at once) and
the next run waits until none is left.

The configurations run in `--rounds` rounds, each round in a rotated order,
and the table gives each figure's median over the rounds, so that a machine
whose speed drifts slows every configuration alike. Before each run every
webhook configuration is deleted and a dry-run create of a pod no node can
run (CUDA 13.0) must succeed, proving the API server calls no webhook; then
the run's configurations are registered and the same dry run must be denied
by the webhook expected (for cudagate installed, by its mutating webhook,
and a real create must move its /validate counter, which leaves dry runs
out), so no run measures a half-registered state.

"webhook calls ms/create" is the time the API server spent in webhook
calls per create, as its own metric times them (the webhook's answer,
the round trip and the wait for a core; two calls for cudagate installed).
The CPU columns are the CPU time (user + system, from /proc) the webhook
process and the API server with etcd spent during the timed creates,
divided by their number: on a machine where the clients, the API server,
etcd and the webhook share the cores, latency inflates with load, and the
CPU figures say where the time went.

    python3 bench/load/cluster_cost.py                 # 3 rounds, 8 threads x 125 creates
    python3 bench/load/cluster_cost.py --quick         # a smoke run: 1 round, 8 x 20
    python3 bench/load/cluster_cost.py --rounds 5 --creates 250

Needs build/cluster/bin (scripts/cluster-build.sh), build/release/cudagate,
peer-go's source (BENCH_DIR/peer-go, or --peer-go-source) and Go
(scripts/cluster-env.sh's, the one the cluster build uses; peer-go is
built into build/bench/). Not part of CI: the figures depend on the machine
and its load. Exit status 1 if any create failed.
"""

import argparse
import http.client
import json
import math
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "cluster"))

import kube_cluster as kc  # noqa: E402
from startup import BENCH_DIR, bench_dir_or_exit  # noqa: E402

NAMESPACE = "bench"
# No scheduler has this name: the pods stay unbound and the scheduler idle.
SCHEDULER = "cluster-cost-unscheduled"
CUDA = "12.4.1"
# Above every node's maximum (driver 570: CUDA 12.8): cudagate and peer-go
# both deny it, which tells whose webhook the API server calls.
PROBE_CUDA = "13.0.0"

NONE, CG_VALIDATE, CG_INSTALLED, PEER = ("no webhook", "cudagate validate",
                                         "cudagate installed", "peer-go validate")
CONFIGS = (NONE, CG_VALIDATE, CG_INSTALLED, PEER)


def fleet():
    """40 GPU nodes in three pools, labelled as GPU Feature Discovery does,
    with GFD's older nvidia.com/cuda.runtime.* labels beside the current
    cuda.runtime-version.* ones: peer-go reads only the older scheme."""
    def pool(prefix, count, driver, cc, product, runtime):
        major, minor = runtime.split(".")
        older = {"nvidia.com/cuda.runtime.major": major, "nvidia.com/cuda.runtime.minor": minor}
        return kc.pool(prefix, count, driver, cc, product, runtime, labels=older)
    return (pool("gpu-a100", 16, "550.54.15", "8.0", "NVIDIA-A100-SXM4-80GB", "12.4")
            + pool("gpu-h100", 16, "570.86.15", "9.0", "NVIDIA-H100-80GB-HBM3", "12.8")
            + pool("gpu-l4", 8, "550.90.07", "8.9", "NVIDIA-L4", "12.4"))


def bench_pod(name, cuda=CUDA):
    pod = kc.gpu_pod(name, NAMESPACE, cuda=cuda)
    pod["spec"]["schedulerName"] = SCHEDULER
    return pod


# --- processes ----------------------------------------------------------------

def cpu_seconds(pid):
    """User + system CPU time of a process so far (/proc/PID/stat fields 14
    and 15, in clock ticks)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy():
    """(busy, total) jiffies of all CPUs, from /proc/stat."""
    with open("/proc/stat", encoding="ascii") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


def webhook_calls(cluster):
    """(count, seconds) of the webhook calls the API server has timed: the
    sum over webhooks of apiserver_admission_webhook_admission_duration_seconds
    (k8s.io/apiserver/pkg/admission/metrics, observed around each call by the
    webhook dispatchers of k8s.io/apiserver/pkg/admission/plugin/webhook)."""
    conn = http.client.HTTPSConnection("127.0.0.1", cluster.apiserver_port,
                                       context=cluster._context(), timeout=60)
    try:
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
    finally:
        conn.close()
    count = seconds = 0.0
    for line in text.splitlines():
        if line.startswith("apiserver_admission_webhook_admission_duration_seconds_count{"):
            count += float(line.rsplit(" ", 1)[1])
        elif line.startswith("apiserver_admission_webhook_admission_duration_seconds_sum{"):
            seconds += float(line.rsplit(" ", 1)[1])
    return count, seconds


def build_peer_go(source, output):
    """peer-go built with the Go of scripts/cluster-env.sh (its caches under
    build/cluster), into `output`; again only where a source file is newer."""
    sources = [os.path.join(source, f) for f in os.listdir(source)
               if f.endswith(".go") or f == "go.mod"]
    if os.path.exists(output) and all(os.path.getmtime(s) <= os.path.getmtime(output)
                                      for s in sources):
        return output
    os.makedirs(os.path.dirname(output), exist_ok=True)
    subprocess.run(["bash", "-c", 'source "$1/scripts/cluster-env.sh" && cd "$2" && '
                    'go build -trimpath -o "$3" .', "build", ROOT, source, output],
                   check=True, timeout=600)
    return output


class PeerGo:
    """peer-go serving /validate on a free loopback port with cudagate's
    serving certificate (the same CA in the webhook configuration), its
    inventory the cluster's nodes as `kubectl get nodes -o json` gives them."""

    def __init__(self, binary, directory, certs, nodes_path):
        self.port = kc.free_port_block(1)
        self.log_path = os.path.join(directory, "peer-go.log")
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [binary, "-listen", f"127.0.0.1:{self.port}",
                 "-cert", os.path.join(certs, "server.crt"),
                 "-key", os.path.join(certs, "server.key"), "-nodes", nodes_path],
                stdout=log, stderr=log)
        kc.wait_until(lambda: "listening on" in self.log(), "peer-go to listen")
        kc.wait_until(self.answers, "peer-go to answer /healthz")

    def log(self):
        if self.proc.poll() is not None:
            raise kc.Fatal(f"peer-go exited with {self.proc.returncode}")
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def answers(self):
        with socket.create_connection(("127.0.0.1", self.port), timeout=5):
            return True

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# --- the webhook configurations -------------------------------------------------

class Webhooks:
    """Which webhook configurations the API server has, and the proof that it
    uses them."""

    def __init__(self, cluster, gate, peer):
        self.cluster, self.gate, self.peer = cluster, gate, peer
        validating = [d for d in gate.webhook_documents
                      if "kind: ValidatingWebhookConfiguration" in d]
        document = json.loads(cluster.kubectl("create", "--dry-run=client", "-o", "json",
                                              "-f", "-", stdin=validating[0]).stdout)
        document["metadata"] = {"name": "peer-go"}
        for webhook in document["webhooks"]:
            webhook["name"] = webhook["name"].replace(".cudagate.io", ".peer-go.bench")
            webhook["clientConfig"]["url"] = f"https://127.0.0.1:{peer.port}/validate"
        self.peer_document = document

    def clear(self):
        self.gate.unregister()
        self.cluster.kubectl("delete", "validatingwebhookconfiguration", "peer-go",
                             "--ignore-not-found")
        # The API server reads webhook configurations through an informer:
        # until the probe is created, some deletion has not reached it.
        kc.wait_until(lambda: self.probe() == (201, ""), "no webhook to be called")

    def register(self, config):
        self.clear()
        if config == NONE:
            return
        if config == PEER:
            self.cluster.kubectl("apply", "--server-side", "-f", "-",
                                 stdin=json.dumps(self.peer_document))
            kc.wait_until(lambda: self.denied_by("default.validate.peer-go.bench"),
                          "peer-go's webhook to be called")
        elif config == CG_VALIDATE:
            self.gate.register(kinds=("Validating",))
            kc.wait_until(lambda: self.denied_by("default.validate.cudagate.io"),
                          "cudagate's validating webhook to be called")
        else:
            self.gate.register()
            kc.wait_until(lambda: self.denied_by("default.mutate.cudagate.io"),
                          "cudagate's mutating webhook to be called")

            # cudagate leaves dry-run reviews out of its counters: this probe
            # is a real create, deleted again.
            def validate_called():
                before = self.gate.metric("cudagate_admission_requests_total",
                                          endpoint="validate")
                path = f"/api/v1/namespaces/{NAMESPACE}/pods"
                created = self.cluster.request("POST", path, bench_pod("probe-validate"))
                self.cluster.delete(f"{path}/probe-validate")
                self.installed_pod = created
                return self.gate.metric("cudagate_admission_requests_total",
                                        endpoint="validate") > before
            kc.wait_until(validate_called, "cudagate's validating webhook to be called")

    def probe(self, cuda=PROBE_CUDA):
        """A dry-run create (nothing is stored; webhooks with sideEffects
        None are called): (201, "") or (status, the denial)."""
        try:
            self.cluster.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods",
                                 bench_pod("probe", cuda), query={"dryRun": "All"})
            return 201, ""
        except kc.ApiError as e:
            return e.status, e.body

    def denied_by(self, webhook):
        status, body = self.probe()
        if status == 201:
            return False
        message = json.loads(body).get("message", "")
        return f'admission webhook "{webhook}" denied' in message


# --- one run ------------------------------------------------------------------

def percentile(values, p):
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p * len(ordered)) - 1)]


def run(cluster, threads, warmup, creates, webhook_pid):
    """Creates threads x (warmup + creates) pods; the timed part's figures."""
    bodies = [[json.dumps(bench_pod(f"p-{t:02d}-{i:04d}")).encode()
               for i in range(warmup + creates)] for t in range(threads)]
    path = f"/api/v1/namespaces/{NAMESPACE}/pods"
    start = threading.Barrier(threads + 1)
    done = threading.Barrier(threads + 1)
    latencies = [[] for _ in range(threads)]
    errors = []

    def client(t):
        conn = http.client.HTTPSConnection("127.0.0.1", cluster.apiserver_port,
                                           context=cluster._context(), timeout=60)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        try:
            for i, body in enumerate(bodies[t]):
                if i == warmup:
                    start.wait()
                began = time.perf_counter()
                conn.request("POST", path, body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
                elapsed = time.perf_counter() - began
                if response.status != 201:
                    errors.append(f"HTTP {response.status}: {data[:300].decode(errors='replace')}")
                elif i >= warmup:
                    latencies[t].append(elapsed)
        except Exception as e:  # noqa: BLE001 - reported with the run
            errors.append(repr(e))
            start.abort()
        finally:
            conn.close()
            try:
                done.wait()
            except threading.BrokenBarrierError:
                pass

    workers = [threading.Thread(target=client, args=(t,), daemon=True) for t in range(threads)]
    for w in workers:
        w.start()
    pids = {"apiserver": [cluster.pid("kube-apiserver"), cluster.pid("etcd")],
            "webhook": [webhook_pid] if webhook_pid else []}
    try:
        start.wait()
    except threading.BrokenBarrierError:
        pass
    calls0 = webhook_calls(cluster)
    cpu0 = {k: sum(cpu_seconds(p) for p in v) for k, v in pids.items()}
    busy0 = machine_busy()
    began = time.perf_counter()
    try:
        done.wait()
    except threading.BrokenBarrierError:
        pass
    wall = time.perf_counter() - began
    cpu1 = {k: sum(cpu_seconds(p) for p in v) for k, v in pids.items()}
    busy1 = machine_busy()
    calls1 = webhook_calls(cluster)
    for w in workers:
        w.join()
    calls = calls1[0] - calls0[0]
    timed = [x for per_thread in latencies for x in per_thread]
    count = max(1, len(timed))
    return {
        "creates": len(timed), "errors": errors,
        "rate": len(timed) / wall if wall > 0 else 0.0,
        "p50": percentile(timed, 0.50) * 1000 if timed else float("nan"),
        "p99": percentile(timed, 0.99) * 1000 if timed else float("nan"),
        "webhook_cpu": (cpu1["webhook"] - cpu0["webhook"]) * 1000 / count,
        "apiserver_cpu": (cpu1["apiserver"] - cpu0["apiserver"]) * 1000 / count,
        # Per create (two calls for cudagate installed).
        "call_ms": (calls1[1] - calls0[1]) * 1000 / count if calls else float("nan"),
        "busy": 100.0 * (busy1[0] - busy0[0]) / max(1, busy1[1] - busy0[1]),
    }


def delete_pods(cluster):
    cluster.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods")
    kc.wait_until(lambda: not cluster.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods",
                                              query={"limit": "1"})["items"],
                  "the run's pods to be deleted", timeout=300)


# --- the report -----------------------------------------------------------------

def fmt(value, digits=1):
    return "n/a" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def report(results, args):
    med = {c: {k: statistics.median(r[k] for r in results[c])
               for k in ("rate", "p50", "p99", "call_ms", "webhook_cpu", "apiserver_cpu",
                         "busy")}
           for c in CONFIGS}
    base = med[NONE]["p99"]
    added = {c: med[c]["p99"] - base for c in CONFIGS}
    rows = [("configuration", "creates/s", "p50 ms", "p99 ms", "added p99 ms", "added p99 %",
             "webhook calls ms/create", "webhook CPU ms/create", "apiserver+etcd CPU ms/create",
             "CPU busy %")]
    for c in CONFIGS:
        m = med[c]
        rows.append((c, fmt(m["rate"]), fmt(m["p50"]), fmt(m["p99"]),
                     "-" if c == NONE else fmt(added[c]),
                     "-" if c == NONE else fmt(100 * added[c] / base) + "%",
                     "-" if c == NONE else fmt(m["call_ms"], 2),
                     "-" if c == NONE else fmt(m["webhook_cpu"], 2),
                     fmt(m["apiserver_cpu"], 2), fmt(m["busy"], 0)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths)) + " |"
             for row in rows]
    lines.insert(1, "| " + " | ".join("-" * w for w in widths) + " |")
    print()
    print(f"Medians of {args.rounds} round(s); {args.threads} threads x {args.creates} timed "
          f"creates per run after {args.warmup} each to warm up; {os.cpu_count()} CPUs.")
    print("\n".join(lines))
    print()
    peer_added = added[PEER]
    for c in (CG_VALIDATE, CG_INSTALLED):
        pct = 100 * added[c] / base
        ratio = added[c] / peer_added if peer_added > 0 else float("nan")
        print(f"{c}: adds {fmt(added[c])} ms ({fmt(pct)}%) to the p99 of a create; "
              f"{fmt(ratio, 2)} of what peer-go adds ({fmt(peer_added)} ms). "
              f"Goal (at most 10%, at most 0.20 of peer-go's): "
              f"{'met' if pct <= 10 else 'not met'} / "
              + ("n/a (peer-go's added p99 is not above zero)" if math.isnan(ratio)
                 else "met" if ratio <= 0.2 else "not met"))
    print()
    print("Per run (round: creates/s, p50 ms, p99 ms, p99 added to the same round's "
          "no-webhook p99):")
    base_of = {r["round"]: r["p99"] for r in results[NONE]}
    for c in CONFIGS:
        cells = [f"{r['round']}: {r['rate']:.0f}/s {r['p50']:.1f} {r['p99']:.1f}"
                 + ("" if c == NONE else f" {r['p99'] - base_of[r['round']]:+.1f}")
                 for r in results[c]]
        print(f"  {c:<20} " + "; ".join(cells))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "release", "cudagate"))
    ap.add_argument("--peer-go-source",
                    default=os.path.join(BENCH_DIR, "peer-go") if BENCH_DIR else "",
                    help="peer-go's source folder (default: $BENCH_DIR/peer-go)")
    ap.add_argument("--peer-go-binary", default=os.path.join(ROOT, "build", "bench", "peer-go"))
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--creates", type=int, default=125, help="timed creates per thread and run")
    ap.add_argument("--warmup", type=int, default=15, help="untimed creates per thread and run")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true",
                    help="a smoke run: 1 round of 20 timed creates per thread")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (logs)")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.creates, args.warmup = 1, 20, 5
    bench_dir_or_exit(args.peer_go_source, "go.mod", option="--peer-go-source")
    if not kc.built():
        sys.exit("cluster_cost: build/cluster/bin is not built (scripts/cluster-build.sh)")
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"cluster_cost: no cudagate binary at {args.binary}")

    began = time.monotonic()
    peer_binary = build_peer_go(args.peer_go_source, args.peer_go_binary)
    tmp = tempfile.mkdtemp(prefix="cudagate-cluster-cost-")
    cluster = kc.Cluster(os.path.join(tmp, "cluster"))
    gate = peer = None
    failed = False
    try:
        cluster.up()
        cluster.add_nodes(fleet())
        cluster.namespace(NAMESPACE)
        nodes_path = os.path.join(tmp, "nodes.json")
        with open(nodes_path, "w", encoding="utf-8") as f:
            f.write(cluster.kubectl("get", "nodes", "-o", "json").stdout)
        gate_dir = os.path.join(tmp, "cudagate")
        os.makedirs(gate_dir)
        # The Deployment's logging (manifests/base/deployment.yaml).
        gate = kc.Cudagate(cluster, args.binary, gate_dir, extra_args=["--log-format", "json"])
        gate.install(register_webhooks=False)
        gate.start()
        peer = PeerGo(peer_binary, tmp, gate.certs, nodes_path)
        webhooks = Webhooks(cluster, gate, peer)
        pids = {NONE: None, CG_VALIDATE: gate.proc.pid, CG_INSTALLED: gate.proc.pid,
                PEER: peer.proc.pid}
        results = {c: [] for c in CONFIGS}
        print(f"control plane up, {len(fleet())} nodes, in {time.monotonic() - began:.0f} s",
              flush=True)
        for r in range(args.rounds):
            order = CONFIGS[r % len(CONFIGS):] + CONFIGS[:r % len(CONFIGS)]
            for config in order:
                webhooks.register(config)
                result = run(cluster, args.threads, args.warmup, args.creates, pids[config])
                result["round"] = r + 1
                results[config].append(result)
                print(f"round {r + 1} {config:<20} {result['rate']:6.1f} creates/s  "
                      f"p50 {result['p50']:6.1f} ms  p99 {result['p99']:6.1f} ms  "
                      f"CPU busy {result['busy']:.0f}%"
                      + (f"  {len(result['errors'])} FAILED: {result['errors'][0]}"
                         if result["errors"] else ""), flush=True)
                failed = failed or bool(result["errors"])
                delete_pods(cluster)
        webhooks.clear()
        report(results, args)
        pod = getattr(webhooks, "installed_pod", None)
        if pod is not None:
            # What /mutate made of the bench pod (the API server applied its
            # patch, if any, before storing it).
            annotations = pod["metadata"].get("annotations", {})
            affinity = pod["spec"].get("affinity")
            print(f"\ncudagate installed: the stored pod's cudagate annotations "
                  f"{ {k: v for k, v in annotations.items() if 'cudagate' in k} }, "
                  f"node affinity {'injected' if affinity else 'none'}")
        print(f"\nwall time {time.monotonic() - began:.0f} s")
    finally:
        if peer is not None:
            peer.stop()
        if gate is not None:
            gate.stop()
        cluster.down()
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# The load comparison: cudagate's /validate against the peers of the load
# harness in BENCH_DIR (peer-go, a typical Go webhook, and nginx answering a
# fixed body, the upper bound of TLS + HTTP/1.1 on the machine), on one pinned
# server core, with the 13 KB gpu-pod review; then start-up time and peak
# memory with 10,000 nodes (bench/load/startup.py).
#
# Every inventory size runs in the same rounds: one run.sh call alternates
# cudagate and peer-go at 1,000 nodes, both again at 10,000, and nginx
# (A B C D E, A B C D E, ...). A machine whose speed drifts over minutes
# then slows every server of a round alike, and the 10,000-node figures are
# compared with the 1,000-node ones and with nginx measured beside them,
# not minutes apart.
#
#   BENCH_DIR=DIR bench/load/compare.sh         build the release binary, run, print the tables
#   NODES_LIST="1000" bench/load/compare.sh        one inventory size only
#
#   STARTUP_NODES=0 bench/load/compare.sh          without the start-up measure
#   INSTRUCTIONS=0 bench/load/compare.sh           without the instruction count
#
# BENCH_DIR must be set: the folder of the load harness (gen.py, run.sh,
# post.lua and peer-go), which the repository does not carry.
#
# After the timed rounds, bench/load/instructions.py counts the instructions
# each server process retires per request (cudagate at every inventory size,
# nginx's fixed answer), with perf where the machine has hardware counters,
# else under callgrind; the tables print them beside req/s with the ratio
# to nginx, the figure that does not move with the machine's load.
#
# Settings passed through to run.sh: DURATION WARMUP CONNS THREADS ROUNDS BODY
# PIN WRK_CPU SERVER_CPU BIN (see run.sh -h). Needs the bench packages:
# scripts/install-deps.sh --bench. Results: $OUT_ROOT (run.sh's files).
# Nothing here is part of CI: the numbers depend on the machine and its load.
set -euo pipefail
cd "$(dirname "$0")/../.."

BENCH_DIR=${BENCH_DIR:-}
NODES_LIST=${NODES_LIST:-"1000 10000"}
STARTUP_NODES=${STARTUP_NODES:-10000}
OUT_ROOT=${OUT_ROOT:-/tmp/cudagate-bench/compare-$(date +%Y%m%d-%H%M%S)}
export ROUNDS=${ROUNDS:-3} BODY=${BODY:-gpu-pod}

[ -n "$BENCH_DIR" ] || {
  echo "compare.sh: the load harness folder is not known: set BENCH_DIR to the folder with gen.py, run.sh and peer-go" >&2
  exit 2
}
[ -x "$BENCH_DIR/run.sh" ] || {
  echo "compare.sh: no $BENCH_DIR/run.sh: set BENCH_DIR to the folder with gen.py, run.sh and peer-go" >&2
  exit 2
}
INSTRUCTIONS=${INSTRUCTIONS:-1}
counter_tools=""
if [ "$INSTRUCTIONS" != 0 ]; then
  # callgrind where perf cannot count this user's instructions (most VMs).
  if perf stat -x, -e instructions:u true 2>&1 | grep -q '^[0-9]'; then
    counter_tools=perf
  else
    counter_tools="valgrind callgrind_control"
  fi
fi
for tool in wrk nginx go taskset curl $counter_tools; do
  command -v "$tool" >/dev/null || {
    echo "compare.sh: $tool not found; run scripts/install-deps.sh --bench" >&2
    exit 2
  }
done

echo "==> building the release binary" >&2
cmake --preset release >/dev/null
cmake --build --preset release --target cudagate -j "$(nproc)" >/dev/null
binary=$(pwd)/build/release/cudagate
read -r -a sizes <<<"$NODES_LIST"
[ ${#sizes[@]} -ge 1 ] || {
  echo "compare.sh: NODES_LIST is empty" >&2
  exit 2
}
base=${sizes[0]}
peer_bin=${BIN:-/tmp/cudagate-bench/bin}/peer-go
mkdir -p "$OUT_ROOT/bin"

# The first size is run.sh's own inventory ({NODES}); every other size gets
# its inventory from the same generator, and its servers a name of their own
# (run.sh names a server after its program): cudagate-10000, peer-go-10000.
servers=("$binary serve --listen 127.0.0.1:{PORT} --tls-cert {CERT} --tls-key {KEY} --nodes {NODES} --threads 1" peer-go)
for n in "${sizes[@]:1}"; do
  echo "==> generating $n nodes" >&2
  python3 "$BENCH_DIR/gen.py" --out "$OUT_ROOT/nodes-$n" --nodes "$n" >/dev/null
  nodes_file=$OUT_ROOT/nodes-$n/nodes.json
  ln -sf "$binary" "$OUT_ROOT/bin/cudagate-$n"
  ln -sf "$peer_bin" "$OUT_ROOT/bin/peer-go-$n"
  servers+=("$OUT_ROOT/bin/cudagate-$n serve --listen 127.0.0.1:{PORT} --tls-cert {CERT} --tls-key {KEY} --nodes $nodes_file --threads 1")
  servers+=("$OUT_ROOT/bin/peer-go-$n -listen 127.0.0.1:{PORT} -cert {CERT} -key {KEY} -nodes $nodes_file")
done
servers+=(nginx)

echo "==> ${sizes[*]} nodes, ${#servers[@]} servers in each round" >&2
NODES=$base OUT="$OUT_ROOT" "$BENCH_DIR/run.sh" "${servers[@]}" >/dev/null

if [ "$INSTRUCTIONS" != 0 ]; then
  echo "==> counting instructions per request" >&2
  python3 bench/load/instructions.py "$binary" --nodes "${sizes[@]}" --body "$BODY" \
    --bench-dir "$BENCH_DIR" --out "$OUT_ROOT" >"$OUT_ROOT/instructions.txt"
fi

python3 - "$OUT_ROOT" "${sizes[@]}" <<'PY'
import csv, os, statistics, sys
root, sizes = sys.argv[1], sys.argv[2:]
rows = list(csv.DictReader(open(os.path.join(root, "runs.tsv")), delimiter="\t"))
instr = {}
if os.path.exists(os.path.join(root, "instructions.tsv")):
    for r in csv.DictReader(open(os.path.join(root, "instructions.tsv")), delimiter="\t"):
        instr[r["server"]] = (float(r["user_per_request"]), r["counter"])
def instr_text(key):
    return "%9.0f" % instr[key][0] if key in instr else "%9s" % "-"
def name(server, n):
    return server if n == sizes[0] else "%s-%s" % (server, n)
med = {}
for key in dict.fromkeys(r["server"] for r in rows):
    rs = [r for r in rows if r["server"] == key]
    m = lambda k: statistics.median(float(r[k]) for r in rs)
    med[key] = dict(rps=m("rps"), p50=m("p50_us") / 1000, p99=m("p99_us") / 1000,
                    cpu=m("server_cpu_pct"),
                    errors=sum(int(r["errors"]) + int(r["non2xx"]) for r in rs),
                    rounds=[float(r["rps"]) for r in rs])
print(open(os.path.join(root, "summary.txt")).read().split("\nmedians")[0])
for n in sizes:
    print("\n%s nodes (nginx has no inventory), medians of %d rounds:" % (n, len(med["nginx"]["rounds"])))
    print("%-10s %9s %8s %8s %8s %7s %10s %9s   %s" % ("server", "req/s", "p50 ms", "p99 ms", "srv cpu", "errors",
                                                   "cpu us/req", "instr/req", "req/s per round"))
    for key, label in ((name("cudagate", n), "cudagate"), (name("peer-go", n), "peer-go"), ("nginx", "nginx")):
        r = med[key]
        # The server's CPU time (user and kernel) per answer, which counts
        # the kernel's part that the instruction count leaves out.
        print("%-10s %9.0f %8.2f %8.2f %7.0f%% %7d %10.1f %s   %s" % (label, r["rps"], r["p50"], r["p99"], r["cpu"],
                                                                   r["errors"], r["cpu"] / 100 / r["rps"] * 1e6,
                                                                   instr_text(key) if label != "peer-go" else "%9s" % "-",
                                                             ", ".join("%.0f" % x for x in r["rounds"])))
    c = med[name("cudagate", n)]["rps"]
    line = "cudagate / peer-go: %.1fx   cudagate / nginx: %.2f (req/s)" % (c / med[name("peer-go", n)]["rps"],
                                                                       c / med["nginx"]["rps"])
    per = lambda r: r["cpu"] / r["rps"]
    line += ", %.2f (CPU time per request)" % (per(med[name("cudagate", n)]) / per(med["nginx"]))
    if name("cudagate", n) in instr and "nginx" in instr:
        line += ", %.2f (instructions per request, %s, user space)" % (
            instr[name("cudagate", n)][0] / instr["nginx"][0], instr["nginx"][1])
    print(line)
for n in sizes[1:]:
    a, b = med["cudagate"], med[name("cudagate", n)]
    paired = statistics.median(y / x for x, y in zip(a["rounds"], b["rounds"]))
    print("\ncudagate at %s nodes / at %s nodes (req/s): %.3f of the medians, %.3f the median of the rounds' ratios"
          % (n, sizes[0], b["rps"] / a["rps"], paired))
if os.path.exists(os.path.join(root, "instructions.txt")):
    print("\n" + open(os.path.join(root, "instructions.txt")).read().rstrip())
print("\nresults: %s" % root)
PY

if [ "$STARTUP_NODES" != 0 ]; then
  echo
  python3 bench/load/startup.py "$binary" --nodes "$STARTUP_NODES" --bench-dir "$BENCH_DIR"
fi

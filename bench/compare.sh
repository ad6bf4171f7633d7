#!/usr/bin/env bash
# The load comparison: cudagate's /validate against the peers of
# ../shared/bench (peer-go, a typical Go webhook, and nginx answering a fixed
# body, the upper bound of TLS + HTTP/1.1 on the machine), on one pinned
# server core, with the 13 KB gpu-pod review, A B C A B C over 3 rounds,
# at 1,000 nodes and again at 10,000; then start-up time and peak memory with
# 10,000 nodes (bench/startup.py).
#
#   bench/compare.sh                 build the release binary, run, print the tables
#   NODES_LIST="1000" bench/compare.sh        one inventory size only
#   BENCH_DIR=/path/to/shared/bench bench/compare.sh
#
#   STARTUP_NODES=0 bench/compare.sh          without the start-up measure
#
# Settings passed through to run.sh: DURATION WARMUP CONNS THREADS ROUNDS BODY
# PIN WRK_CPU SERVER_CPU (see run.sh -h). Needs the bench packages:
# scripts/install-deps.sh --bench. Results: $OUT_ROOT/<nodes>/ (run.sh's files).
# Nothing here is part of CI: the numbers depend on the machine and its load.
set -euo pipefail
cd "$(dirname "$0")/.."

BENCH_DIR=${BENCH_DIR:-$(cd .. && pwd)/shared/bench}
NODES_LIST=${NODES_LIST:-"1000 10000"}
STARTUP_NODES=${STARTUP_NODES:-10000}
OUT_ROOT=${OUT_ROOT:-/tmp/cudagate-bench/compare-$(date +%Y%m%d-%H%M%S)}
export ROUNDS=${ROUNDS:-3} BODY=${BODY:-gpu-pod}

[ -x "$BENCH_DIR/run.sh" ] || {
  echo "compare.sh: no $BENCH_DIR/run.sh (set BENCH_DIR)" >&2
  exit 2
}
for tool in wrk nginx go taskset curl; do
  command -v "$tool" >/dev/null || {
    echo "compare.sh: $tool not found; run scripts/install-deps.sh --bench" >&2
    exit 2
  }
done

echo "==> building the release binary" >&2
cmake --preset release >/dev/null
cmake --build --preset release --target cudagate -j "$(nproc)" >/dev/null
binary=$(pwd)/build/release/server/cudagate
server="$binary serve --listen 127.0.0.1:{PORT} --tls-cert {CERT} --tls-key {KEY} --nodes {NODES} --threads 1"

for nodes in $NODES_LIST; do
  echo "==> $nodes nodes" >&2
  NODES=$nodes OUT="$OUT_ROOT/$nodes" "$BENCH_DIR/run.sh" "$server" peer-go nginx >/dev/null
done

python3 - "$OUT_ROOT" $NODES_LIST <<'PY'
import csv, os, statistics, sys
root, sizes = sys.argv[1], sys.argv[2:]
med = {}
for n in sizes:
    rows = list(csv.DictReader(open(os.path.join(root, n, "runs.tsv")), delimiter="\t"))
    for name in dict.fromkeys(r["server"] for r in rows):
        rs = [r for r in rows if r["server"] == name]
        m = lambda k: statistics.median(float(r[k]) for r in rs)
        med[(n, name)] = dict(rps=m("rps"), p50=m("p50_us") / 1000, p99=m("p99_us") / 1000,
                              cpu=m("server_cpu_pct"),
                              errors=sum(int(r["errors"]) + int(r["non2xx"]) for r in rs),
                              rounds=", ".join("%.0f" % float(r["rps"]) for r in rs))
print(open(os.path.join(root, sizes[0], "summary.txt")).read().split("\nmedians")[0])
for n in sizes:
    print("\n%s nodes, medians of %d rounds:" % (n, len(med[(n, "cudagate")]["rounds"].split(","))))
    print("%-10s %9s %8s %8s %8s %7s   %s" % ("server", "req/s", "p50 ms", "p99 ms", "srv cpu", "errors", "req/s per round"))
    for name in ("cudagate", "peer-go", "nginx"):
        r = med[(n, name)]
        print("%-10s %9.0f %8.2f %8.2f %7.0f%% %7d   %s" % (name, r["rps"], r["p50"], r["p99"], r["cpu"], r["errors"], r["rounds"]))
    c = med[(n, "cudagate")]["rps"]
    print("cudagate / peer-go: %.1fx   cudagate / nginx: %.2f" % (c / med[(n, "peer-go")]["rps"], c / med[(n, "nginx")]["rps"]))
if len(sizes) > 1:
    a, b = med[(sizes[0], "cudagate")]["rps"], med[(sizes[-1], "cudagate")]["rps"]
    print("\ncudagate at %s nodes / at %s nodes (req/s): %.3f" % (sizes[-1], sizes[0], b / a))
print("\nresults: %s" % root)
PY

if [ "$STARTUP_NODES" != 0 ]; then
  echo
  python3 bench/startup.py "$binary" --nodes "$STARTUP_NODES" --bench-dir "$BENCH_DIR"
fi

#!/usr/bin/env bash
# Fuzzes every parser for longer than CI does (`make fuzz`): builds the
# libFuzzer targets (clang, ASan + UBSan; the `fuzz` preset), runs each one
# from its seed corpus for FUZZ_RUNS executions or FUZZ_SECONDS, whichever
# comes first, and prints one table: target, executions, seconds, executions
# per second, the corpus it grew, and what it found.
#
#   scripts/fuzz.sh                      every target, 10 million runs each (at most 1 h)
#   scripts/fuzz.sh nodes_fuzz ...       some targets
#   FUZZ_RUNS=1000000 FUZZ_SECONDS=300 scripts/fuzz.sh
#
# A crash, leak or timeout leaves its input in build/fuzz/findings/<target>/
# and makes the script exit 1. Copy that input into tests/fuzz/corpus/<target>/
# once it is fixed: ctest's fuzz.<target> replays the corpus on every run, so
# the input stays a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${FUZZ_RUNS:-10000000}
seconds=${FUZZ_SECONDS:-3600}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(find tests/fuzz -maxdepth 1 -name '*_fuzz.cpp' -printf '%f\n' | sed 's/\.cpp$//' | sort)
fi

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$(nproc)" --target "${targets[@]}"

out=build/fuzz
printf '%-26s %12s %8s %10s %8s %s\n' target executions seconds 'exec/s' corpus found
status=0
for t in "${targets[@]}"; do
  work="$out/corpus-$t"
  findings="$out/findings/$t"
  log="$out/fuzz-$t.log"
  mkdir -p "$work" "$findings"
  start=$(date +%s)
  rc=0
  ASAN_OPTIONS=detect_leaks=1 "$out/tests/fuzz/$t" -runs="$runs" -max_total_time="$seconds" \
    -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 -artifact_prefix="$findings/" \
    "$work" "tests/fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  elapsed=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  found=$(find "$findings" -type f | wc -l)
  [ "$rc" -ne 0 ] && status=1
  verdict="none"
  [ "$found" -gt 0 ] || [ "$rc" -ne 0 ] && verdict="$found input(s), exit $rc: see $log"
  printf '%-26s %12s %8s %10s %8s %s\n' "$t" "${execs:-?}" "$elapsed" \
    "$(( ${execs:-0} / (elapsed > 0 ? elapsed : 1) ))" "$(find "$work" -type f | wc -l)" "$verdict"
done
exit "$status"

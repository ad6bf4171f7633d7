#!/usr/bin/env bash
# Runs every cudagate test: installs the dependencies, checks the formatting,
# builds the Kubernetes components (scripts/cluster-build.sh) that the cluster
# tests run, builds the release binary and runs the tests of the binary against
# it (end-to-end, then the cluster tests, label `cluster`), builds every target
# in Debug with AddressSanitizer + UBSan and runs the whole ctest suite but the
# cluster tests there, builds the server with ThreadSanitizer and runs the tests
# of what its threads share, then builds the libFuzzer targets with clang and
# fuzzes each parser for a bounded time. Exits non-zero on the first failure.
# The release test preset's label filter and build preset's targets say what
# the release stage builds and runs (CMakePresets.json).
#
#   scripts/test.sh                 everything
#   scripts/test.sh release         one configuration (release | dev | tsan | fuzz)
set -euo pipefail
cd "$(dirname "$0")/.."

# --torch: PyTorch's own arch-list parser, which one test compares with ours.
# --cluster: Go for the Kubernetes components.
# --cuda-tools: NVIDIA's nvcc and cuobjdump, the oracle of the scan tests.
scripts/install-deps.sh --torch --cluster --cuda-tools

echo "==> format: clang-format --dry-run"
git ls-files '*.cpp' '*.h' '*.cu' | xargs clang-format --dry-run -Werror

jobs=$(nproc)

# clang-tidy (.clang-tidy, warnings as errors) over the C++ sources the newest
# commit changed, and the sources beside the headers it changed, with the
# release build's compile commands. The whole tree is `make tidy`: about 35
# minutes on two cores, too long for every CI run.
tidy_changed() {
  if ! git rev-parse -q --verify HEAD~1 >/dev/null; then
    echo "==> tidy: the newest commit has no parent here; skipped (make tidy checks the tree)"
    return
  fi
  local tracked file
  tracked=$(git ls-files '*.cpp')
  mapfile -t files < <(
    git diff --name-only --diff-filter=d HEAD~1 HEAD -- '*.cpp' '*.h' | while read -r file; do
      file=${file%.h}
      file=${file%.cpp}.cpp
      grep -qxF "$file" <<<"$tracked" && echo "$file"
    done | grep -v '^tests/fuzz/' | sort -u)
  echo "==> tidy: ${#files[@]} sources the newest commit changed"
  [ ${#files[@]} -eq 0 ] && return
  printf '%s\n' "${files[@]}" |
    xargs -P "$jobs" -n 2 clang-tidy -p build/release --quiet --extra-arg=-Wno-unknown-warning-option
}

configs=("$@")
[ ${#configs[@]} -eq 0 ] && configs=(release dev tsan fuzz)

# Each stage's build and test time, printed at the end: CI has a time limit.
timings=()

# The real control plane the release build's cluster tests start: built from
# Kubernetes' own modules, a link when the caches under build/cluster are warm.
if [[ " ${configs[*]} " == *" release "* ]]; then
  echo "==> cluster: build the Kubernetes components"
  started=$(date +%s)
  scripts/cluster-build.sh
  timings+=("cluster components: built in $(($(date +%s) - started)) s")
fi
for preset in "${configs[@]}"; do
  echo "==> ${preset}: configure and build"
  started=$(date +%s)
  cmake --preset "$preset" >/dev/null
  if [ "$preset" = fuzz ]; then
    mapfile -t fuzzers < <(find tests/fuzz -maxdepth 1 -name '*_fuzz.cpp' -printf '%f\n' | sed 's/\.cpp$//' | sort)
    cmake --build --preset fuzz -j "$jobs" --target "${fuzzers[@]}"
    built=$(date +%s)
    echo "==> fuzz: ${#fuzzers[@]} targets"
    ctest --test-dir build/fuzz -R '^fuzz\.' -j "$jobs" --output-on-failure
  else
    cmake --build --preset "$preset" -j "$jobs"
    built=$(date +%s)
    echo "==> ${preset}: test"
    ctest --preset "$preset" -j "$jobs" -LE '^cluster$'
  fi
  tested=$(date +%s)
  timings+=("${preset}: built in $((built - started)) s, tested in $((tested - built)) s")
  if [ "$preset" = release ]; then
    # Each cluster test starts a control plane of its own.
    echo "==> cluster: test against the real control plane"
    ctest --preset release -j "$jobs" -L '^cluster$'
    timings+=("cluster: tested in $(($(date +%s) - tested)) s")
    tested=$(date +%s)
  fi
  if [ "$preset" = release ]; then
    tidy_changed
    timings+=("tidy: $(($(date +%s) - tested)) s")
  fi
done
echo "==> stages"
printf '    %s\n' "${timings[@]}"

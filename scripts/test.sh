#!/usr/bin/env bash
# Runs every cudagate test: installs the dependencies, checks the formatting,
# builds twice (release, and Debug with AddressSanitizer + UBSan) and runs the
# whole ctest suite in both, then builds the libFuzzer targets with clang and
# fuzzes each parser for a bounded time. Exits non-zero on the first failure.
#
#   scripts/test.sh                 everything
#   scripts/test.sh release         one configuration (release | dev | fuzz)
set -euo pipefail
cd "$(dirname "$0")/.."

# --torch: PyTorch's own arch-list parser, which one test compares with ours.
scripts/install-deps.sh --torch

echo "==> format: clang-format --dry-run"
git ls-files '*.cpp' '*.h' '*.cu' | xargs clang-format --dry-run -Werror

jobs=$(nproc)
configs=("$@")
[ ${#configs[@]} -eq 0 ] && configs=(release dev fuzz)

for preset in "${configs[@]}"; do
  echo "==> ${preset}: configure and build"
  cmake --preset "$preset" >/dev/null
  if [ "$preset" = fuzz ]; then
    mapfile -t fuzzers < <(find tests/fuzz -maxdepth 1 -name '*_fuzz.cpp' -printf '%f\n' | sed 's/\.cpp$//' | sort)
    cmake --build --preset fuzz -j "$jobs" --target "${fuzzers[@]}"
    echo "==> fuzz: ${#fuzzers[@]} targets"
    ctest --test-dir build/fuzz -R '^fuzz\.' -j "$jobs" --output-on-failure
  else
    cmake --build --preset "$preset" -j "$jobs"
    echo "==> ${preset}: test"
    ctest --preset "$preset" -j "$jobs"
  fi
done

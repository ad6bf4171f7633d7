# Entry points; the build itself is CMake (CMakePresets.json).
#   make test    every test: scripts/test.sh (release, dev with sanitizers, tsan, fuzz)
#   make bench   the Google Benchmark suite of bench/micro (release build), then
#                the load comparison against the load harness's peers
#                (bench/load/compare.sh; BENCH_DIR names the harness's folder)
#   make fuzz    every libFuzzer target for 10 million runs (scripts/fuzz.sh;
#                FUZZ_RUNS and FUZZ_SECONDS change that), one table of results
#   make soak    10 minutes of mixed load at 80% of peak with faults injected,
#                connection abuse and SIGTERM under load (bench/load/soak.py)
#   make tsan    the server and its tests under ThreadSanitizer (tsan preset:
#                the kube, registry and server unit tests, the threaded e2e tests)
#   make tidy    clang-tidy with .clang-tidy over every source but the fuzzers
.PHONY: test bench bench-micro bench-compare fuzz soak tsan tidy

test:
	scripts/test.sh

fuzz:
	scripts/fuzz.sh

soak:
	cmake --preset release >/dev/null
	cmake --build --preset release --target cudagate -j "$$(nproc)"
	bench/load/soak.py --binary build/release/cudagate

bench: bench-micro bench-compare

bench-micro:
	cmake --preset release >/dev/null
	cmake --build --preset release --target cudagate_bench -j "$$(nproc)"
	build/release/bench/micro/cudagate_bench

bench-compare:
	bench/load/compare.sh

tsan:
	cmake --preset tsan >/dev/null
	cmake --build --preset tsan -j "$$(nproc)"
	ctest --preset tsan -j "$$(nproc)"

tidy:
	cmake --preset release >/dev/null
	git ls-files '*.cpp' | grep -v '^tests/fuzz/' | \
	  xargs -P "$$(nproc)" -n 4 clang-tidy -p build/release --quiet --extra-arg=-Wno-unknown-warning-option

# Entry points; the build itself is CMake (CMakePresets.json).
#   make test    every test: scripts/test.sh (release, dev with sanitizers, fuzz)
#   make bench   the Google Benchmark suite (release build), then the load
#                comparison against ../shared/bench's peers (bench/compare.sh)
#   make fuzz    every libFuzzer target for 10 million runs (scripts/fuzz.sh;
#                FUZZ_RUNS and FUZZ_SECONDS change that), one table of results
#   make soak    10 minutes of mixed load at 80% of peak with faults injected,
#                connection abuse and SIGTERM under load (bench/soak.py)
.PHONY: test bench bench-micro bench-compare fuzz soak

test:
	scripts/test.sh

fuzz:
	scripts/fuzz.sh

soak:
	cmake --preset release >/dev/null
	cmake --build --preset release --target cudagate -j "$$(nproc)"
	bench/soak.py --binary build/release/cudagate

bench: bench-micro bench-compare

bench-micro:
	cmake --preset release >/dev/null
	cmake --build --preset release --target cudagate_bench -j "$$(nproc)"
	build/release/bench/cudagate_bench

bench-compare:
	bench/compare.sh

# Entry points; the build itself is CMake (CMakePresets.json).
#   make test    every test: scripts/test.sh (release, dev with sanitizers, fuzz)
#   make bench   the Google Benchmark suite (release build), then the load
#                comparison against ../shared/bench's peers (bench/compare.sh)
.PHONY: test bench bench-micro bench-compare

test:
	scripts/test.sh

bench: bench-micro bench-compare

bench-micro:
	cmake --preset release >/dev/null
	cmake --build --preset release --target cudagate_bench -j "$$(nproc)"
	build/release/bench/cudagate_bench

bench-compare:
	bench/compare.sh

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
#                the https, kube, registry, inputs and server unit tests, the threaded e2e tests)
#   make tidy    clang-tidy with .clang-tidy over every source but the fuzzers
# The quick loop (docs/testing.md), for whoever changes one layer:
#   make unit LAYER=policy [FILTER='GpuArchRule.*']
#                one layer's unit tests (ASan+UBSan, the dev preset), built
#                alone: no other layer's tests, no binary
#   make e2e TEST=server_test
#                one end-to-end file against the release binary
.PHONY: test bench bench-micro bench-compare fuzz soak tsan tidy unit e2e

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

unit:
	@test -n "$(LAYER)" || { echo "usage: make unit LAYER=policy [FILTER='GpuArchRule.*']"; exit 2; }
	cmake --preset dev >/dev/null
	cmake --build --preset dev --target $(subst -,_,$(LAYER))_tests
	build/dev/tests/$(subst -,_,$(LAYER))_tests --gtest_filter='$(or $(FILTER),*)'

e2e:
	@test -n "$(TEST)" || { echo "usage: make e2e TEST=server_test"; exit 2; }
	cmake --preset release >/dev/null
	cmake --build --preset release --target cudagate
	python3 tests/e2e/$(TEST).py --binary build/release/cudagate --source .

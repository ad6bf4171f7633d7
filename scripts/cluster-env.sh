# Sourced by the cluster scripts: Go's module and build caches in fixed
# folders under build/cluster, so that a second build only links, and the
# machine's own Go (a Debian golang-go installed for the benchmarks must not
# shadow it).
repo=${repo:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
# CUDAGATE_GO_CACHE puts both elsewhere: CI keeps them out of its clone,
# which is new each run.
export GOMODCACHE="${CUDAGATE_GO_CACHE:-$repo/build/cluster}/gomod"
export GOCACHE="${CUDAGATE_GO_CACHE:-$repo/build/cluster}/gocache"
export GOFLAGS=-mod=mod
export GOTOOLCHAIN=local
# scripts/install-deps.sh --cluster puts a toolchain under build/cluster/go
# where the machine has no Go 1.26.
if [ -x "$repo/build/cluster/go/bin/go" ]; then
  export PATH="$repo/build/cluster/go/bin:$PATH"
elif [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi

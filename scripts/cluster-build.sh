#!/usr/bin/env bash
# Builds the Kubernetes components the cluster tests run, from Kubernetes'
# own modules at the release tests/cluster/components/go.mod pins, into
# build/cluster/bin: kube-apiserver, kube-scheduler, kube-controller-manager,
# kubectl, and etcd (tests/cluster/etcd). Prints each build's time. The
# caches under build/cluster make a second run a link.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/cluster-env.sh
source "$repo/scripts/cluster-env.sh"
bin="$repo/build/cluster/bin"
mkdir -p "$bin"
release=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" { print $3 }' \
  "$repo/tests/cluster/components/go.mod")
# What `kube-apiserver --version` and `kubectl version` print.
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$release"

# One go build for the four commands of Kubernetes' module: the go command
# schedules their packages as one graph, so that one command's link runs
# beside another's compiles instead of after them.
build() {
  local directory=$1 output=$2 started
  shift 2
  started=$(date +%s)
  (cd "$directory" && go build -trimpath -ldflags "$ldflags" -o "$output" "$@")
  echo "cluster: $* built in $(($(date +%s) - started)) s"
}
build "$repo/tests/cluster/components" "$bin/" k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kubectl
build "$repo/tests/cluster/etcd" "$bin/etcd" .

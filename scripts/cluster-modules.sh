#!/usr/bin/env bash
# Writes tests/cluster/components/go.mod for a Kubernetes release: the
# release itself, and one replace line for each staging module
# (k8s.io/api, k8s.io/apiserver, ...) that the release's own go.mod requires
# at v0.0.0 (its replaces point into its repository's staging/ folder, which
# a module consumer does not have), each at the matching v0.x.y. Then
# `go mod tidy` records every dependency in go.sum.
#
# tests/cluster/etcd/go.mod pins go.etcd.io/etcd/server/v3 the same way.
#
#   scripts/cluster-modules.sh v1.37.2 v3.6.17
set -euo pipefail
release=${1:?usage: scripts/cluster-modules.sh KUBERNETES_RELEASE ETCD_RELEASE (v1.37.2 v3.6.17)}
etcd=${2:?usage: scripts/cluster-modules.sh KUBERNETES_RELEASE ETCD_RELEASE (v1.37.2 v3.6.17)}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/cluster-env.sh
source "$repo/scripts/cluster-env.sh"
staging=v0.${release#v1.}
module="$repo/tests/cluster/components"

release_gomod=$(cd "$module" && go mod download -json "k8s.io/kubernetes@$release" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["GoMod"])')
{
  echo "module cudagate/tests/cluster/components"
  echo
  echo "go $(go env GOVERSION | sed 's/^go//')"
  echo
  echo "require k8s.io/kubernetes $release"
  echo
  awk -v version="$staging" '
    /^require[ \t]*\(/ { inside = 1; next }
    inside && /^\)/ { inside = 0; next }
    inside && $2 == "v0.0.0" { printf "replace %s => %s %s\n", $1, $1, version }
  ' "$release_gomod"
} > "$module/go.mod"
(cd "$module" && go mod tidy)
echo "tests/cluster/components/go.mod: k8s.io/kubernetes $release, staging modules at $staging"

etcd_module="$repo/tests/cluster/etcd"
printf 'module cudagate/tests/cluster/etcd\n\ngo %s\n' "$(go env GOVERSION | sed 's/^go//')" \
  > "$etcd_module/go.mod"
(cd "$etcd_module" && go get "go.etcd.io/etcd/server/v3@$etcd" && go mod tidy)
echo "tests/cluster/etcd/go.mod: go.etcd.io/etcd/server/v3 $etcd"

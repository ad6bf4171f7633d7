#!/usr/bin/env bash
# Copies the CustomResourceDefinitions that manifests/overlays need from other
# projects into build/cluster/crds, each from that project's own Go module at
# a pinned version (the Go module proxy, into the module cache of
# scripts/cluster-env.sh), unchanged:
#
#   cert-manager        Certificate, Issuer, ... (overlays cert-manager and up)
#   prometheus-operator ServiceMonitor, PrometheusRule (overlay prometheus)
#   kyverno             wgpolicyk8s.io/v1alpha2 PolicyReport, ClusterPolicyReport
#                       as Kyverno installs them (overlay write-reports); the
#                       wg-policy-prototypes module they come from is not served
#                       by the proxy, Kyverno's module carries the same CRDs
#   openreports         openreports.io/v1alpha1 Report, ClusterReport
#                       (serve --report-api openreports)
#   karpenter           karpenter.sh/v1 NodePool (the node pools serve watches;
#                       v1.13.0, the newest release whose module builds with
#                       the Go toolchain scripts/install-deps.sh installs)
#
# Idempotent: a module already in the cache is not downloaded again and a CRD
# already copied unchanged is left alone. Prints one line per CRD with the
# module and version it came from. Exit status 69 when a module cannot be
# downloaded (no proxy), 1 on any other error.
#
#   scripts/cluster-crds.sh            # into build/cluster/crds
#   scripts/cluster-crds.sh DIR        # into DIR
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/cluster-env.sh
source "$repo/scripts/cluster-env.sh"
out=${1:-$repo/build/cluster/crds}
mkdir -p "$out"

# module@version, then the CRD files inside the module.
crds=(
  "github.com/cert-manager/cert-manager@v1.21.2"
  "  deploy/crds/cert-manager.io_certificates.yaml"
  "  deploy/crds/cert-manager.io_certificaterequests.yaml"
  "  deploy/crds/cert-manager.io_issuers.yaml"
  "  deploy/crds/cert-manager.io_clusterissuers.yaml"
  "  deploy/crds/acme.cert-manager.io_orders.yaml"
  "  deploy/crds/acme.cert-manager.io_challenges.yaml"
  "github.com/prometheus-operator/prometheus-operator@v0.85.0"
  "  example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml"
  "  example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml"
  "github.com/kyverno/kyverno@v1.19.1"
  "  config/crds/policyreport/wgpolicyk8s.io_policyreports.yaml"
  "  config/crds/policyreport/wgpolicyk8s.io_clusterpolicyreports.yaml"
  "github.com/openreports/reports-api@v0.2.1"
  "  config/crd/openreports.io_reports.yaml"
  "  config/crd/openreports.io_clusterreports.yaml"
  "sigs.k8s.io/karpenter@v1.13.0"
  "  pkg/apis/crds/karpenter.sh_nodepools.yaml"
)

# Outside any module, so that no go.mod is read or written.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

dir=""
module=""
for entry in "${crds[@]}"; do
  if [[ $entry != " "* ]]; then
    module=$entry
    if ! json=$(cd "$work" && GOFLAGS= go mod download -json "$module" 2>"$work/err"); then
      echo "cluster-crds.sh: cannot download $module: $(cat "$work/err") ${json:-}" >&2
      exit 69
    fi
    dir=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])' <<<"$json")
    continue
  fi
  file=${entry# *}
  file=${file# }
  source_file="$dir/$file"
  [ -f "$source_file" ] || { echo "cluster-crds.sh: $module has no $file" >&2; exit 1; }
  target="$out/$(basename "$file")"
  if cmp -s "$source_file" "$target"; then
    echo "cluster-crds: $(basename "$file") from $module (already there)"
  else
    cp "$source_file" "$target.tmp"
    chmod 0644 "$target.tmp"
    mv "$target.tmp" "$target"
    echo "cluster-crds: $(basename "$file") from $module"
  fi
done

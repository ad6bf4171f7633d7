//go:build tools

// The Kubernetes control plane the cluster tests run against, built from
// Kubernetes' own modules at the release go.mod pins (scripts/cluster-build.sh).
// The build tag keeps this file out of every build: it only names the
// programs so that `go mod tidy` records what they need.
package components

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)

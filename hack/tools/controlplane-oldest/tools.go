//go:build tools

// Package controlplaneoldest pins the control-plane commands of the oldest Kubernetes that
// Stagehand supports (docs/install.md), which hack/build-controlplane.sh builds with
// KUBE_VERSION=oldest for make test-oldest.
package controlplaneoldest

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)

//go:build tools

// Package tools pins Helm, which make verify (helm lint, the chart against deploy/) and
// the e2e suite (helm install and upgrade on the local cluster) build from here.
package tools

import _ "helm.sh/helm/v3/cmd/helm"

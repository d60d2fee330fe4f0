// Package framework is the e2e suite's harness: it connects to a cluster (a kubeconfig
// given in E2E_KUBECONFIG, such as a kind cluster, or else a local control plane that it
// starts), installs the CRDs, gives every test its own namespace, and offers
// Given/When/Then helpers that wait on watches and explain a timeout with the objects and
// events involved.
package framework

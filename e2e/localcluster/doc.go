// Package localcluster runs a real Kubernetes control plane on loopback for tests and demos:
// etcd, kube-apiserver, kube-controller-manager and kube-scheduler, built from the Go module
// proxy by hack/build-controlplane.sh, plus the node agent (package nodeagent) that plays the
// kubelet. With Options.Registry it also runs a container registry: Debian's docker-registry
// behind an auth proxy that protects the repositories under private/. Everything it creates
// lives in one folder (see docs/localcluster.md).
//
// Tests start it once per test binary, in TestMain:
//
//	c, err := localcluster.Start(ctx, localcluster.Options{Dir: dir})
//	...
//	defer c.Stop()
//
// The stagehand-localcluster command wraps the same code for `up`, `down` and `env`.
package localcluster

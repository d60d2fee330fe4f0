// Package client holds the generated clientset, listers and informers of the
// stagehand.dev API (k8s.io/code-generator; regenerate with make generate).
package client

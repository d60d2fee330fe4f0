package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// machine describes the machine and the cluster the run measured.
func machine(env *framework.Env) Machine {
	m := Machine{NProc: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, LocalCluster: env.Local()}
	if v, err := env.Kube.Discovery().ServerVersion(); err == nil {
		m.KubeVersion = v.GitVersion
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				if _, v, ok := strings.Cut(l, ":"); ok {
					m.CPU = strings.TrimSpace(v)
				}
				break
			}
		}
	}
	return m
}

// waitForController waits until the controller pod is ready (setup: a poll is fine here).
func waitForController(ctx context.Context, env *framework.Env) error {
	if !env.Local() {
		return nil
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		pods, err := env.Kube.CoreV1().Pods(framework.ControllerNamespace).List(ctx, metav1.ListOptions{LabelSelector: framework.ControllerSelector})
		if err == nil {
			for i := range pods.Items {
				if p := &pods.Items[i]; p.DeletionTimestamp == nil && framework.PodReady(p) {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("no ready controller pod in %s after 2m", framework.ControllerNamespace)
}

// podCapacity is how many pods the cluster's nodes allow in all (0: unknown).
func podCapacity(ctx context.Context, env *framework.Env) (int64, error) {
	nodes, err := env.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	var n int64
	for _, node := range nodes.Items {
		if q, ok := node.Status.Allocatable[corev1.ResourcePods]; ok {
			n += q.Value()
		}
	}
	return n, nil
}

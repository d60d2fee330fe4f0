package framework

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// terminatingGrace is how long the suite's end waits for pods that are still being
// deleted (the last tests' namespaces) before it calls them stuck.
const terminatingGrace = 90 * time.Second

// StuckTerminating returns the pods of the cluster that are still Terminating after
// waiting up to wait, each with its finalizers; empty when none is. A pod must never stay
// Terminating because of Stagehand (its defer finalizer, docs/defer.md), nor for any other
// reason at the end of a suite.
func (e *Env) StuckTerminating(ctx context.Context, wait time.Duration) ([]string, error) {
	deadline := time.Now().Add(wait)
	for {
		pods, err := e.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing pods: %w", err)
		}
		var stuck []string
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				continue
			}
			stuck = append(stuck, fmt.Sprintf("%s/%s (deleted %s ago, finalizers [%s])", p.Namespace, p.Name,
				time.Since(p.DeletionTimestamp.Time).Round(time.Second), strings.Join(p.Finalizers, " ")))
		}
		if len(stuck) == 0 || time.Now().After(deadline) {
			slices.Sort(stuck)
			return stuck, nil
		}
		select {
		case <-ctx.Done():
			return stuck, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// checkNoneTerminating fails the suite (returns 1) when a pod stays Terminating.
func checkNoneTerminating(env *Env, name string) int {
	stuck, err := env.StuckTerminating(context.Background(), terminatingGrace)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: checking for pods stuck Terminating: %v\n", name, err)
		return 1
	}
	if len(stuck) > 0 {
		fmt.Fprintf(os.Stderr, "%s: FAIL: %d pods are still Terminating %s after the last test:\n  %s\n",
			name, len(stuck), terminatingGrace, strings.Join(stuck, "\n  "))
		return 1
	}
	fmt.Fprintf(os.Stderr, "%s: no pod is left Terminating\n", name)
	return 0
}

package framework

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// CordonAllBut marks every node but keep unschedulable (keep "" cordons them all), and
// makes them all schedulable again when the test ends, whatever happens.
func (e *Env) CordonAllBut(t *testing.T, keep string) {
	t.Helper()
	t.Cleanup(func() { e.UncordonAll(t) })
	for _, n := range e.nodeNames(t) {
		if n != keep {
			e.setUnschedulable(t, n, true)
		}
	}
}

// UncordonAll marks every node schedulable again.
func (e *Env) UncordonAll(t *testing.T) {
	t.Helper()
	for _, n := range e.nodeNames(t) {
		e.setUnschedulable(t, n, false)
	}
}

func (e *Env) nodeNames(t *testing.T) []string {
	t.Helper()
	nodes, err := e.Kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing nodes: %v", err)
	}
	names := make([]string, 0, len(nodes.Items))
	for _, n := range nodes.Items {
		names = append(names, n.Name)
	}
	return names
}

// setUnschedulable cordons (on) or uncordons node; a node deleted meanwhile is no error.
func (e *Env) setUnschedulable(t *testing.T, node string, on bool) {
	t.Helper()
	patch := []byte(`{"spec":{"unschedulable":false}}`)
	if on {
		patch = []byte(`{"spec":{"unschedulable":true}}`)
	}
	_, err := e.Kube.CoreV1().Nodes().Patch(context.Background(), node, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("cordoning %s (%t): %v", node, on, err)
	}
}

package nodeagent

import (
	"context"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestNodeGateWaitsWhileShutAndEndsTheRunOnShut(t *testing.T) {
	g := newNodeGate()
	assert.False(t, g.running(), "a new gate is shut until Run registers the node")
	assert.False(t, g.whileUp(func() { t.Error("ran while shut") }))

	waited := make(chan context.Context, 1)
	go func() {
		ctx, ok := g.wait(t.Context())
		assert.True(t, ok)
		waited <- ctx
	}()
	select {
	case <-waited:
		t.Fatal("wait returned while the gate was shut")
	case <-time.After(100 * time.Millisecond):
	}
	require.True(t, g.open(t.Context()))
	assert.False(t, g.open(t.Context()), "opening an open gate does nothing")
	var run context.Context
	select {
	case run = <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("wait did not return once the gate opened")
	}
	require.NoError(t, run.Err())
	assert.True(t, g.whileUp(func() {}))

	// shut waits for a whileUp under way, and ends the run's context.
	inside, release := make(chan struct{}), make(chan struct{})
	go g.whileUp(func() { close(inside); <-release })
	<-inside
	shut := make(chan bool, 1)
	go func() { shut <- g.shut() }()
	select {
	case <-shut:
		t.Fatal("shut returned while a whileUp ran")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	assert.True(t, <-shut)
	assert.Error(t, run.Err(), "the run's context ends when the gate shuts")
	assert.False(t, g.shut(), "shutting a shut gate does nothing")
	assert.False(t, g.running())

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, ok := g.wait(ctx)
	assert.False(t, ok, "wait gives up when its context ends")
}

// A container of a stopped node does not start until the node runs again, and a lost
// node's simulated container ends as if SIGKILLed and does not start again on its own.
func TestContainerStartsOnlyWhileItsNodeRuns(t *testing.T) {
	a := &Agent{client: fake.NewClientset(), log: logrus.NewEntry(logrus.New()), cfg: Config{Dir: t.TempDir()}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "ns", UID: "uid"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, Containers: []corev1.Container{{
			Name: "app", Image: "app:1", // simulated: no command, no mapped image
		}}},
	}
	gate := newNodeGate()
	w := newPodWorker(a, pod, gate)
	c := w.ctrs[0]
	ctx, cancel := context.WithCancel(t.Context())
	type result struct {
		code int32
		ran  bool
	}
	results := make(chan result, 2)
	runOnce := func() {
		code, ran := w.runOnce(ctx, c)
		results <- result{code, ran}
	}
	go runOnce()
	defer cancel()
	state := func() corev1.ContainerState {
		w.mu.Lock()
		defer w.mu.Unlock()
		return *c.status.State.DeepCopy()
	}

	time.Sleep(200 * time.Millisecond)
	assert.Nil(t, state().Running, "the container started while its node was stopped")
	gate.open(ctx)
	require.Eventually(t, func() bool { return state().Running != nil }, 5*time.Second, 10*time.Millisecond,
		"the container starts once its node runs")

	gate.shut()
	assert.Equal(t, 1, w.kill())
	select {
	case r := <-results:
		assert.Equal(t, result{exitCodeKilled, true}, r)
	case <-time.After(5 * time.Second):
		t.Fatal("the killed simulated container did not end")
	}
	assert.Equal(t, exitCodeKilled, state().Terminated.ExitCode)

	go runOnce() // as the restart loop would
	time.Sleep(200 * time.Millisecond)
	assert.Nil(t, state().Running, "the container restarted on a lost node")
	gate.open(ctx)
	require.Eventually(t, func() bool { return state().Running != nil }, 5*time.Second, 10*time.Millisecond,
		"the container starts again once its node runs")
	w.mu.Lock()
	assert.Equal(t, int32(1), c.status.RestartCount)
	w.mu.Unlock()
}

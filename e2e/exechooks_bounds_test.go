//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// manyContainerPods creates n pods of m containers (c0, c1, ...), each a host process that
// sleeps, and waits until every container runs.
func manyContainerPods(t *testing.T, ns, app string, n, m int) {
	t.Helper()
	for i := range n {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", app, i), Labels: map[string]string{"app": app}},
			Spec:       corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](1)},
		}
		for j := range m {
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: fmt.Sprintf("c%d", j),
				Image: "example.com/exec-target:1", Command: []string{"sleep", "3600"}})
		}
		_, err := env.Kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	env.WaitForPods(t, ns, "app="+app, 2*time.Minute, "every container running", func(pods []*corev1.Pod) bool {
		running := 0
		for _, p := range pods {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.State.Running != nil {
					running++
				}
			}
		}
		return running == n*m
	})
}

// The deployer creates a HookAction and its ExecutionHook back to back. Fifty such pairs
// all run: a hook never fails ActionNotFound because the controller's cache had not yet
// seen its action.
func TestExecutionHookActionCreatedJustBefore(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	execPods(t, ns, "web", 1)
	const pairs, writers = 50, 10 // concurrent writers load the watches, as busy deployers do
	var wg sync.WaitGroup
	errs := make(chan error, pairs)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < pairs; i += writers {
				name := fmt.Sprintf("pair-%d", i)
				a := &stagehandv1.HookAction{ObjectMeta: metav1.ObjectMeta{Name: name},
					Action: stagehandv1.Action{Exec: &stagehandv1.ExecAction{Command: []string{"true"}}}}
				if _, err := env.Stagehand.StagehandV1alpha1().HookActions(ns).Create(context.Background(), a, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
				if _, err := env.Stagehand.StagehandV1alpha1().ExecutionHooks(ns).Create(context.Background(),
					selectorHook(name, name, "web", "a"), metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for i := range pairs {
		h := waitHook(t, ns, fmt.Sprintf("pair-%d", i), "finished", finished)
		assert.Equal(t, stagehandv1.ExecutionHookComplete, h.Status.Phase, "%s: %+v", h.Name, h.Status.Error)
	}
}

// A hook over 200 containers (20 pods × 10) whose command prints 1 KiB ends Complete
// with a written status whose outputs were cut to their share of the status budget
// (keeping their end), so that the status stays small whatever the number of containers.
func TestExecutionHookStatusIsBoundedOverManyContainers(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	const pods, containers = 20, 10
	manyContainerPods(t, ns, "many", pods, containers)
	// 1 KiB on one line: 1023 zeros and an "x".
	hookAction(t, ns, "kib", 300, `printf '%01023dx\n' 0`)
	hook := selectorHook("kib", "kib", "many")
	hook.Spec.Parallelism = ptr.To[int32](25)
	_, err := env.Stagehand.StagehandV1alpha1().ExecutionHooks(ns).Create(context.Background(), hook, metav1.CreateOptions{})
	require.NoError(t, err)

	h := waitHook(t, ns, "kib", "finished", finished)
	require.Equal(t, stagehandv1.ExecutionHookComplete, h.Status.Phase, "%+v", h.Status.Error)
	require.Len(t, h.Status.HookStatuses, pods*containers)
	assert.Equal(t, "200/200", h.Status.Summary)
	output, _ := stagehandv1.EntryTextBounds(pods * containers)
	require.Less(t, output, 1024, "200 entries' share is below the command's output")
	for _, e := range h.Status.HookStatuses {
		assert.Equal(t, output, len(e.Output), "%s/%s: cut to its share", e.PodName, e.ContainerName)
		assert.True(t, strings.HasSuffix(e.Output, "0x"), "%s/%s: the end is kept", e.PodName, e.ContainerName)
	}
	b, err := json.Marshal(h.Status)
	require.NoError(t, err)
	t.Logf("status: %d bytes", len(b))
	assert.Less(t, len(b), stagehandv1.ExecutionHookStatusTextBudget+pods*containers*700, "within the documented bound")
}

// With parallelism 2, four containers and a command that takes 3 s of a 5 s timeout,
// the two that wait for a slot still run to their end: each container's timeout counts
// from its own first attempt, not from the hook's start. Never more than 2 run at once.
func TestExecutionHookDeadlineIsPerContainer(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	execPods(t, ns, "queue", 2)
	hookAction(t, ns, "slow", 5, `s=$(date +%s%N); sleep 3; echo "$s $(date +%s%N)"`)
	hook := selectorHook("slow", "slow", "queue")
	hook.Spec.Parallelism = ptr.To[int32](2)
	_, err := env.Stagehand.StagehandV1alpha1().ExecutionHooks(ns).Create(context.Background(), hook, metav1.CreateOptions{})
	require.NoError(t, err)

	h := waitHook(t, ns, "slow", "finished", finished)
	require.Equal(t, stagehandv1.ExecutionHookComplete, h.Status.Phase, "%+v", h.Status.HookStatuses)
	require.Len(t, h.Status.HookStatuses, 4)
	type span struct{ start, end int64 }
	var spans []span
	for _, e := range h.Status.HookStatuses {
		assert.Equal(t, ptr.To(true), e.Succeed, "%s/%s: %+v", e.PodName, e.ContainerName, e.Error)
		assert.Equal(t, int32(1), e.Attempts, "%s/%s", e.PodName, e.ContainerName)
		if assert.NotNil(t, e.Deadline, "%s/%s", e.PodName, e.ContainerName) {
			assert.False(t, e.Deadline.Time.Before(e.Timestamp.Add(5*time.Second)), "%s/%s: from its first attempt", e.PodName, e.ContainerName)
		}
		s, end := nanos(t, e.Output)
		spans = append(spans, span{s, end})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	for _, s := range spans {
		running := 0
		for _, o := range spans {
			if o.start <= s.start && s.start < o.end {
				running++
			}
		}
		assert.LessOrEqual(t, running, 2, "commands running at %d: %+v", s.start, spans)
	}
	assert.GreaterOrEqual(t, spans[3].end-spans[0].start, int64(6*time.Second),
		"two rounds of 3 s ran, more than a hook-wide 5 s deadline would have allowed")
}

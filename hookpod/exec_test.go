package hookpod_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"

	stagehandfake "github.com/stagehand-dev/stagehand/api/client/clientset/versioned/fake"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/hookpod"
)

func execHook(pods v1alpha1.ExecHookPods) *v1alpha1.LifecycleHook {
	return &v1alpha1.LifecycleHook{FailurePolicy: v1alpha1.LifecycleHookFailurePolicyAbort,
		Exec: &v1alpha1.ExecHook{ContainerName: "app", Command: []string{"flush"}, Pods: pods}}
}

// finishHooks plays the ExecutionHook controller: each hook the deployer creates ends with
// the status that status gives for its name.
func finishHooks(t *testing.T, sh *stagehandfake.Clientset, status func(name string) v1alpha1.ExecutionHookStatus) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := sh.StagehandV1alpha1().ExecutionHooks("ns").Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	go func() {
		for ev := range w.ResultChan() {
			h, ok := ev.Object.(*v1alpha1.ExecutionHook)
			if !ok || h.Status.Phase != "" {
				continue
			}
			// The fake's watch does not replay from a resourceVersion: an update between the
			// deployer's list and its watch would be lost, so the outcome is written a few
			// times, each write an event of its own.
			h = h.DeepCopy()
			h.Status = status(h.Name)
			for range 5 {
				time.Sleep(100 * time.Millisecond)
				written, err := sh.StagehandV1alpha1().ExecutionHooks("ns").UpdateStatus(ctx, h, metav1.UpdateOptions{})
				if err != nil {
					return
				}
				h = written
			}
		}
	}()
}

// An exec hook's attempt is an ExecutionHook owned by the revision, selecting the chosen
// pods' container; its failure aborts the rollout with the failed container and its output.
func TestExecHookFailureAbortsWithTheContainerAndItsOutput(t *testing.T) {
	sh := stagehandfake.NewSimpleClientset()
	finishHooks(t, sh, func(string) v1alpha1.ExecutionHookStatus {
		return v1alpha1.ExecutionHookStatus{Phase: v1alpha1.ExecutionHookFailed, HookStatuses: []v1alpha1.ContainerExecutionHookStatus{
			{PodName: "web-3-abc", ContainerName: "app", Succeed: new(false), Attempts: 2, Output: "flushing\nboom",
				Error: &v1alpha1.HookError{ErrorType: v1alpha1.HookErrorError, Message: "the command exited with code 4"}}}}
	})
	r := hookpod.NewRunner(core{fake.NewClientset().CoreV1()}, revision("web-3"), hookpod.Options{Out: &lines{}, Stagehand: sh})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	err := r.Run(ctx, "post", execHook(v1alpha1.ExecHookPodsNew))
	var abort *hookpod.AbortError
	require.ErrorAs(t, err, &abort, "%v", err)
	msg := err.Error()
	assert.Contains(t, msg, "exec hook web-3-hook-post failed")
	assert.Contains(t, msg, "web-3-abc/app Error: the command exited with code 4")
	assert.Contains(t, msg, "boom")
	outcomes := r.Outcomes()
	require.Len(t, outcomes, 1, "the failed hook is reported once, for the controller's metrics")
	assert.Equal(t, "post", outcomes[0].Stage)
	assert.Equal(t, v1alpha1.HookResultFailed, outcomes[0].Result)
	assert.Positive(t, outcomes[0].Seconds, "from the attempt's start to its failure")

	h, err := sh.StagehandV1alpha1().ExecutionHooks("ns").Get(ctx, "web-3-hook-post", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "rs-uid", string(h.OwnerReferences[0].UID), "owned by the revision")
	assert.Equal(t, []string{"app"}, h.Spec.PodSelection.PodContainerSelector.ContainerList)
	sel, err := metav1.LabelSelectorAsSelector(h.Spec.PodSelection.PodContainerSelector.PodSelector)
	require.NoError(t, err)
	app := labels.Set{v1alpha1.ConfigLabel: "web", v1alpha1.RevisionLabel: "3"}
	assert.True(t, sel.Matches(app), "New selects the revision's pods")
	assert.False(t, sel.Matches(labels.Set{v1alpha1.ConfigLabel: "web", v1alpha1.RevisionLabel: "2"}), "not the old ones")
	assert.False(t, sel.Matches(labels.Set{v1alpha1.ConfigLabel: "web", v1alpha1.RevisionLabel: "3", v1alpha1.HookStageLabel: "post"}), "never a hook pod")
	a, err := sh.StagehandV1alpha1().HookActions("ns").Get(ctx, "web-3-hook-post", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"flush"}, a.Action.Exec.Command)
}

// Old pods on a first rollout: the hook selects nothing and is skipped, recorded NotRun
// and never Succeeded (DESIGN.md §4 invariant 11).
func TestExecHookWithoutPodsIsRecordedNotRun(t *testing.T) {
	sh := stagehandfake.NewSimpleClientset()
	finishHooks(t, sh, func(string) v1alpha1.ExecutionHookStatus {
		return v1alpha1.ExecutionHookStatus{Phase: v1alpha1.ExecutionHookFailed,
			Error: &v1alpha1.HookError{ErrorType: v1alpha1.HookErrorNoPods, Message: "selects no running pod"}}
	})
	out := &lines{}
	r := hookpod.NewRunner(core{fake.NewClientset().CoreV1()}, revision("web-3"), hookpod.Options{Out: out, Stagehand: sh})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, r.Run(ctx, "pre", execHook(v1alpha1.ExecHookPodsOld)), "the rollout goes on")
	assert.Contains(t, out.all, "--> pre hook web-3-hook-pre: not run: no running pod to run in (pods: Old, container app)")
	assert.NotContains(t, out.all, "succeeded")
	outcomes := r.Outcomes()
	require.Len(t, outcomes, 1)
	assert.Equal(t, v1alpha1.HookResultNotRun, outcomes[0].Result)
	why, ok := r.NotRunReason("pre")
	assert.True(t, ok)
	assert.Contains(t, why, "exec hook web-3-hook-pre did not run")
	_, ok = r.NotRunReason("post")
	assert.False(t, ok)
}

// A deployer without a stagehand.dev client refuses an exec hook as invalid.
func TestExecHookNeedsAStagehandClient(t *testing.T) {
	r := hookpod.NewRunner(core{fake.NewClientset().CoreV1()}, revision("web-3"), hookpod.Options{Out: &lines{}})
	var invalid *hookpod.InvalidHookError
	require.ErrorAs(t, r.Run(context.Background(), "post", execHook(v1alpha1.ExecHookPodsNew)), &invalid)
}

// A HookAction that someone else created under the name of the revision's exec hook is
// never adopted: the rollout stops at once with what to do, and nothing runs it. One the
// revision created itself (a deployer run again) is adopted.
func TestExecHookRefusesAForeignHookActionAndAdoptsItsOwn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	foreign := &v1alpha1.HookAction{ObjectMeta: metav1.ObjectMeta{Name: "web-3-hook-post", Namespace: "ns"},
		Action: v1alpha1.Action{Exec: &v1alpha1.ExecAction{Command: []string{"steal"}}}}
	sh := stagehandfake.NewSimpleClientset(foreign)
	r := hookpod.NewRunner(core{fake.NewClientset().CoreV1()}, revision("web-3"), hookpod.Options{Out: &lines{}, Stagehand: sh})

	err := r.Run(ctx, "post", execHook(v1alpha1.ExecHookPodsNew))
	var invalid *hookpod.InvalidHookError
	require.ErrorAs(t, err, &invalid, "%v", err)
	assert.Contains(t, err.Error(), "a HookAction named web-3-hook-post already exists and was not created by revision web-3")
	assert.Contains(t, err.Error(), "delete or rename it, then retry the rollout")
	hooks, err := sh.StagehandV1alpha1().ExecutionHooks("ns").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, hooks.Items, "no ExecutionHook runs the foreign action")

	// Its own action, from an earlier run of the deployer: adopted, and the hook runs.
	own := foreign.DeepCopy()
	own.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-3", UID: "rs-uid"}}
	own.Action.Exec.Command = []string{"flush"}
	sh = stagehandfake.NewSimpleClientset(own)
	finishHooks(t, sh, func(string) v1alpha1.ExecutionHookStatus {
		return v1alpha1.ExecutionHookStatus{Phase: v1alpha1.ExecutionHookComplete}
	})
	r = hookpod.NewRunner(core{fake.NewClientset().CoreV1()}, revision("web-3"), hookpod.Options{Out: &lines{}, Stagehand: sh})
	assert.NoError(t, r.Run(ctx, "post", execHook(v1alpha1.ExecHookPodsNew)))
	outcomes := r.Outcomes()
	require.Len(t, outcomes, 1)
	assert.Equal(t, v1alpha1.HookOutcome{Stage: "post", Result: v1alpha1.HookResultSucceeded, Seconds: outcomes[0].Seconds}, outcomes[0])
}

// A failed hook with failurePolicy Ignore is reported as Ignored; the rollout goes on.
func TestExecHookIgnoredIsReported(t *testing.T) {
	sh := stagehandfake.NewSimpleClientset()
	finishHooks(t, sh, func(string) v1alpha1.ExecutionHookStatus {
		return v1alpha1.ExecutionHookStatus{Phase: v1alpha1.ExecutionHookFailed, HookStatuses: []v1alpha1.ContainerExecutionHookStatus{
			{PodName: "web-3-abc", ContainerName: "app", Succeed: new(false), Attempts: 1,
				Error: &v1alpha1.HookError{ErrorType: v1alpha1.HookErrorError, Message: "the command exited with code 1"}}}}
	})
	r := hookpod.NewRunner(core{fake.NewClientset().CoreV1()}, revision("web-3"), hookpod.Options{Out: &lines{}, Stagehand: sh})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hook := execHook(v1alpha1.ExecHookPodsNew)
	hook.FailurePolicy = v1alpha1.LifecycleHookFailurePolicyIgnore
	require.NoError(t, r.Run(ctx, v1alpha1.StepStage(2), hook))
	outcomes := r.Outcomes()
	require.Len(t, outcomes, 1)
	assert.Equal(t, "step-2", outcomes[0].Stage, "the stage as run; the controller bounds it")
	assert.Equal(t, v1alpha1.HookResultIgnored, outcomes[0].Result)
}

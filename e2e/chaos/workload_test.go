//go:build e2e

package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// dcName is the name of the run's i-th DC.
func dcName(i int) string { return fmt.Sprintf("dc-%02d", i) }

// execDC is the DC whose post hook is an exec hook in its new pods: each run appends a
// line to a file named after the pod in the run's exec folder, so that the runs can be
// counted against the attempts the ExecutionHook records.
const execDC = 5

// workload is the run's i-th DC: every even one has a pre and a post hook pod (and a mid
// hook when it is Recreate), every third one is Recreate, dc-01 is a Custom strategy
// (the example strategy image), dc-03 has an AfterTermination DeferPolicy and dc-05 an
// exec post hook that writes into execDir.
func workload(i int, sz size, execDir string) *stagehandv1.DeploymentConfig {
	strategy := stagehandv1.DeploymentStrategyTypeRolling
	switch {
	case i == 1:
		strategy = stagehandv1.DeploymentStrategyTypeCustom
	case i%3 == 0:
		strategy = stagehandv1.DeploymentStrategyTypeRecreate
	}
	dc := framework.NewDeploymentConfig(dcName(i), 2, strategy)
	timeout := ptr.To(sz.RolloutTimeoutSeconds)
	var pre, mid, post *stagehandv1.LifecycleHook
	if i%2 == 0 {
		pre = framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "sleep 1")
		post = framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyIgnore, "true")
	}
	switch strategy {
	case stagehandv1.DeploymentStrategyTypeCustom:
		dc.Spec.Strategy.CustomParams = &stagehandv1.CustomDeploymentStrategyParams{Image: framework.ExampleStrategyImage()}
	case stagehandv1.DeploymentStrategyTypeRecreate:
		if pre != nil {
			mid = framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "true")
		}
		dc.Spec.Strategy.RecreateParams = &stagehandv1.RecreateDeploymentStrategyParams{TimeoutSeconds: timeout, Pre: pre, Mid: mid, Post: post}
	default:
		dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{TimeoutSeconds: timeout, Pre: pre, Post: post}
	}
	if i == execDC {
		c := &dc.Spec.Template.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}})
		seconds := int64(60)
		dc.Spec.Strategy.RollingParams.Post = &stagehandv1.LifecycleHook{FailurePolicy: stagehandv1.LifecycleHookFailurePolicyIgnore,
			Exec: &stagehandv1.ExecHook{ContainerName: "app", Pods: stagehandv1.ExecHookPodsNew, TimeoutSeconds: &seconds,
				Command: []string{"/bin/sh", "-c", `echo run >> "` + execDir + `/$POD_NAME"`}}}
	}
	return dc
}

// execRunsOverAttempts lists the pods in which the exec hook ran more often than the
// ExecutionHooks recorded attempts (a run that was never recorded: twice for one attempt).
func execRunsOverAttempts(ctx context.Context, ns, execDir string) []string {
	hooks, err := env.Stagehand.StagehandV1alpha1().ExecutionHooks(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return []string{"listing ExecutionHooks: " + err.Error()}
	}
	attempts := map[string]int32{}
	for _, h := range hooks.Items {
		for _, st := range h.Status.HookStatuses {
			attempts[st.PodName] += st.Attempts
		}
	}
	entries, err := os.ReadDir(execDir)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(execDir, e.Name()))
		if err != nil {
			out = append(out, err.Error())
			continue
		}
		if runs := int32(strings.Count(string(data), "run\n")); runs > attempts[e.Name()] {
			out = append(out, fmt.Sprintf("pod %s: the exec hook ran %d times, %d attempts recorded", e.Name(), runs, attempts[e.Name()]))
		}
	}
	return out
}

// timeoutOf is the bound of a revision of dc-NN: its strategy's timeout (600 s for the
// Custom strategy, which has none of its own).
func timeoutOf(sz size) func(revision string) time.Duration {
	return func(revision string) time.Duration {
		if strings.HasPrefix(revision, dcName(1)+"-") {
			return 600 * time.Second
		}
		return time.Duration(sz.RolloutTimeoutSeconds) * time.Second
	}
}

// createWorkload creates the DCs and dc-03's DeferPolicy.
func createWorkload(t *testing.T, ctx context.Context, ns string, sz size, execDir string) {
	t.Helper()
	policy := &stagehandv1.DeferPolicy{ObjectMeta: metav1.ObjectMeta{Name: dcName(3)}, Spec: stagehandv1.DeferPolicySpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": dcName(3)}},
		Steps: []stagehandv1.DeferStep{{Name: "hand-over", Image: framework.TestImages().Shell,
			Command: []string{"/bin/sh", "-c", "echo handing over"}}},
	}}
	_, err := env.Stagehand.StagehandV1alpha1().DeferPolicies(ns).Create(ctx, policy, metav1.CreateOptions{})
	require.NoError(t, err)
	for i := range sz.DCs {
		_, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Create(ctx, workload(i, sz, execDir), metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

// rollout changes dc's template to version, retrying through conflicts and outages.
func rollout(ctx context.Context, ns, dc string, version int) error {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		err := func() error {
			got, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Get(ctx, dc, metav1.GetOptions{})
			if err != nil {
				return err
			}
			framework.SetVersion(got, version)
			_, err = env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Update(ctx, got, metav1.UpdateOptions{})
			return err
		}()
		if err == nil || apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// settled waits until every DC's latest revision is terminal and its spec observed, and,
// where that revision is Complete, its pods are all available. It returns what is still
// unsettled at the deadline.
func settled(ctx context.Context, ns string, sz size, timeout time.Duration) []string {
	deadline := time.Now().Add(timeout)
	for {
		var open []string
		for i := range sz.DCs {
			if why := unsettled(ctx, ns, dcName(i)); why != "" {
				open = append(open, why)
			}
		}
		if len(open) == 0 || time.Now().After(deadline) {
			return open
		}
		time.Sleep(2 * time.Second)
	}
}

func unsettled(ctx context.Context, ns, name string) string {
	dc, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return name + ": " + err.Error()
	}
	if dc.Status.ObservedGeneration != dc.Generation || !dc.Status.Phase.IsTerminal() {
		return fmt.Sprintf("%s: revision %d %s (observed generation %d of %d)", name, dc.Status.LatestVersion,
			dc.Status.Phase, dc.Status.ObservedGeneration, dc.Generation)
	}
	if dc.Status.Phase == stagehandv1.RevisionPhaseComplete && dc.Status.AvailableReplicas < *dc.Spec.Replicas {
		return fmt.Sprintf("%s: revision %d Complete with %d of %d pods available", name, dc.Status.LatestVersion,
			dc.Status.AvailableReplicas, *dc.Spec.Replicas)
	}
	return ""
}

// underAvailable lists the DCs whose latest revision is Complete with fewer available
// pods than desired (checked once the run settled).
func underAvailable(ctx context.Context, ns string, sz size) []string {
	var out []string
	for i := range sz.DCs {
		dc, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Get(ctx, dcName(i), metav1.GetOptions{})
		if err == nil && dc.Status.Phase == stagehandv1.RevisionPhaseComplete && dc.Status.AvailableReplicas < *dc.Spec.Replicas {
			out = append(out, fmt.Sprintf("%s revision %d: %d of %d available", dc.Name, dc.Status.LatestVersion,
				dc.Status.AvailableReplicas, *dc.Spec.Replicas))
		}
	}
	return out
}

//go:build e2e

package chaos

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// dcName is the name of the run's i-th DC.
func dcName(i int) string { return fmt.Sprintf("dc-%02d", i) }

// workload is the run's i-th DC: every even one has a pre and a post hook (and a mid
// hook when it is Recreate), every third one is Recreate, dc-01 is a Custom strategy
// (the example strategy image) and dc-03 has an AfterTermination DeferPolicy.
func workload(i int, sz size) *stagehandv1.DeploymentConfig {
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
		pre = shellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "sleep 1")
		post = shellHook(stagehandv1.LifecycleHookFailurePolicyIgnore, "true")
	}
	switch strategy {
	case stagehandv1.DeploymentStrategyTypeCustom:
		dc.Spec.Strategy.CustomParams = &stagehandv1.CustomDeploymentStrategyParams{Image: exampleStrategyImage()}
	case stagehandv1.DeploymentStrategyTypeRecreate:
		if pre != nil {
			mid = shellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "true")
		}
		dc.Spec.Strategy.RecreateParams = &stagehandv1.RecreateDeploymentStrategyParams{TimeoutSeconds: timeout, Pre: pre, Mid: mid, Post: post}
	default:
		dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{TimeoutSeconds: timeout, Pre: pre, Post: post}
	}
	return dc
}

func shellHook(policy stagehandv1.LifecycleHookFailurePolicy, script string) *stagehandv1.LifecycleHook {
	return &stagehandv1.LifecycleHook{FailurePolicy: policy,
		ExecNewPod: &stagehandv1.ExecNewPodHook{ContainerName: "app", Command: []string{"/bin/sh", "-c", script}}}
}

func exampleStrategyImage() string {
	return "stagehand/example-strategy:" + strings.TrimPrefix(framework.TestImages().TestApp, "stagehand/testapp:")
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
func createWorkload(t *testing.T, ctx context.Context, ns string, sz size) {
	t.Helper()
	policy := &stagehandv1.DeferPolicy{ObjectMeta: metav1.ObjectMeta{Name: dcName(3)}, Spec: stagehandv1.DeferPolicySpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": dcName(3)}},
		Steps: []stagehandv1.DeferStep{{Name: "hand-over", Image: framework.TestImages().Shell,
			Command: []string{"/bin/sh", "-c", "echo handing over"}}},
	}}
	_, err := env.Stagehand.StagehandV1alpha1().DeferPolicies(ns).Create(ctx, policy, metav1.CreateOptions{})
	require.NoError(t, err)
	for i := range sz.DCs {
		_, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Create(ctx, workload(i, sz), metav1.CreateOptions{})
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

package deployer

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/strategies"
)

// RunHook runs hook at stage (pre, mid, post, or a stage name of a custom flow: it
// becomes the stagehand.dev/hook label and part of the pod name <rs>-hook-<stage>) with
// its failure policy, as the built-in strategies do. A nil hook prints "--> <stage> hook:
// none". It returns nil when the hook succeeded (now, or in an earlier run of this
// revision) or was ignored; a *strategies.HookFailedError (exit code 3) when it stops the
// rollout.
func (d *Deployer) RunHook(ctx context.Context, stage string, hook *v1alpha1.LifecycleHook) error {
	return d.Hooks.Run(ctx, stage, hook)
}

// DeleteSucceededHookPods deletes the pods of the revision's hooks that succeeded. Execute
// calls it once a flow completed the whole rollout (not when it stopped at --until, so
// that a later run skips the hooks that already ran). A failure is only logged.
func (d *Deployer) DeleteSucceededHookPods(ctx context.Context) {
	if d.HookPods == nil {
		return
	}
	if err := d.HookPods.DeleteSucceeded(ctx); err != nil {
		d.Log.WithError(err).Warn("the succeeded hook pods stay until the revision is pruned")
	}
}

// PodDeadline is when the deployer's own activeDeadlineSeconds runs out: the start time
// of its pod (<revision>-deploy) plus the pod's activeDeadlineSeconds. It is zero when
// there is no such pod, or it has no deadline or start time yet: a deployer that runs
// outside its pod (a test, a custom flow run by hand) then counts the strategy's
// activeDeadlineSeconds from its own start (see New).
func PodDeadline(ctx context.Context, client kubernetes.Interface, namespace, revision string) time.Time {
	pod, err := client.CoreV1().Pods(namespace).Get(ctx, v1alpha1.DeployerPodName(revision), metav1.GetOptions{})
	if err == nil && pod.Spec.ActiveDeadlineSeconds != nil && pod.Status.StartTime != nil {
		return pod.Status.StartTime.Add(time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second)
	}
	return time.Time{}
}

// checkUntil refuses, before anything is scaled, an --until that the strategy cannot
// reach.
func (d *Deployer) checkUntil() error {
	if d.Until.Stage == strategies.StageMid && d.Inputs.Config.Spec.Strategy.Type != v1alpha1.DeploymentStrategyTypeRecreate {
		return strategies.Invalidf("--until=mid: only the Recreate strategy has a mid hook, and %s uses %s; use pre or a percentage",
			d.Inputs.To.Name, d.Inputs.Config.Spec.Strategy.Type)
	}
	return nil
}

package revision

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// FailureHookStartSlack is what the failure-hook runner pod gets beyond the hook's own
// bound, to be scheduled and to start; the controller gives up on it after both.
const FailureHookStartSlack = 60 * time.Second

// FailureHookPending reports whether revision rs owes its failure hook a run, or waits for
// one that runs: it is Failed, its config snapshot has a failed hook, it was not
// superseded (unless failedOnSupersede says so), and the hook has not finished.
func FailureHookPending(rs *appsv1.ReplicaSet) bool {
	if Phase(rs) != v1alpha1.RevisionPhaseFailed {
		return false
	}
	if state, _ := v1alpha1.FailureHookStateOf(rs); state.Finished() {
		return false
	}
	spec, err := Snapshot(rs)
	if err != nil || v1alpha1.FailureHookOf(spec) == nil {
		return false
	}
	return !Superseded(rs) || v1alpha1.FailedOnSupersede(spec)
}

// FailureHookTimeout is the failure hook's own bound: an exec hook's timeoutSeconds
// (default 300), or the strategy's timeoutSeconds (default 600) for an execNewPod hook,
// retries included. The runner pod's activeDeadlineSeconds is this plus
// FailureHookStartSlack, and the rollback never waits longer.
func FailureHookTimeout(spec *v1alpha1.DeploymentConfigSpec) time.Duration {
	hook := v1alpha1.FailureHookOf(spec)
	if hook != nil && hook.Exec != nil {
		if hook.Exec.TimeoutSeconds != nil {
			return time.Duration(*hook.Exec.TimeoutSeconds) * time.Second
		}
		return v1alpha1.DefaultActionTimeoutSeconds * time.Second
	}
	s := *spec.Strategy.DeepCopy()
	v1alpha1.SetStrategyDefaults(&s)
	return time.Duration(v1alpha1.StrategyTimeoutSeconds(&s)) * time.Second
}

// IsFailureHookRunnerOf reports whether pod is revision rs's failure-hook runner: its
// name, its label and its owner.
func IsFailureHookRunnerOf(rs *appsv1.ReplicaSet, pod *corev1.Pod) bool {
	return pod.Name == v1alpha1.FailureHookRunnerName(rs.Name) && pod.Labels[v1alpha1.FailureHookForLabel] == rs.Name && Owns(rs, pod)
}

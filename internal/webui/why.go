package webui

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// why says in words what the DC's latest rollout waits for, from what the controller and
// the deployer already wrote: the revision's phase, waiting reason and step, its deployer
// pod, its hook pods. "" when nothing waits (the rollout is complete).
func why(c *config) string {
	dc := c.dc
	latest := revision.Find(c.revs, dc.Status.LatestVersion)
	switch {
	case dc.Status.Frozen != "":
		return fmt.Sprintf("frozen at %s (onFailure: Freeze): fix forward with a new template, or run `kubectl stagehand rollout undo dc/%s`", dc.Status.Frozen, dc.Name)
	case latest == nil && dc.Spec.Paused:
		return fmt.Sprintf("paused before its first revision: run `kubectl stagehand rollout resume dc/%s`", dc.Name)
	case latest == nil:
		return "no revision yet: waiting for a trigger (ConfigChange, or an image)"
	}
	name := fmt.Sprintf("dc/%s", dc.Name)
	switch phase := revision.Phase(latest); phase {
	case v1alpha1.RevisionPhaseNew:
		if reason, message := revision.Waiting(latest); reason != "" {
			return "waiting for " + waitingWords(reason) + ": " + message
		}
		return "revision created: the deployer pod is being created"
	case v1alpha1.RevisionPhasePending:
		return "deployer pod Pending: " + pendingWords(deployerOf(c, latest))
	case v1alpha1.RevisionPhaseRunning:
		if step, ok := v1alpha1.StepOf(latest); ok && step.State == v1alpha1.StepPaused {
			if step.Until != nil {
				return fmt.Sprintf("paused at step %d of %d until %s, or run `kubectl stagehand rollout promote %s`", step.Step, step.Total, step.Until.UTC().Format("15:04:05 UTC"), name)
			}
			return fmt.Sprintf("paused at step %d of %d: run `kubectl stagehand rollout promote %s` (or resume)", step.Step, step.Total, name)
		}
		if hook := runningHook(c, latest); hook != "" {
			return hook
		}
		if step, ok := v1alpha1.StepOf(latest); ok {
			return step.String()
		}
		return fmt.Sprintf("rolling out: %d of %d pods updated, %d ready", dc.Status.UpdatedReplicas, revision.ConfigReplicas(dc), dc.Status.ReadyReplicas)
	case v1alpha1.RevisionPhaseFailed:
		if revision.FailureHookPending(latest) {
			return "revision " + latest.Name + " failed: its failed hook runs before the rollback"
		}
		text := "revision " + latest.Name + " failed"
		if reason := revision.StatusReasonText(latest); reason != "" {
			text += ": " + reason
		}
		if serving := revision.NewestComplete(c.revs); serving != nil {
			text += "; rolled back to " + serving.Name
		}
		return text
	}
	if dc.Spec.Paused {
		return fmt.Sprintf("paused: new templates wait; run `kubectl stagehand rollout resume %s`", name)
	}
	return ""
}

// waitingWords turns a waiting reason (an exceeded quota, a ServiceAccount not seen yet)
// into words: "quota" for the quota reasons.
func waitingWords(reason string) string {
	if strings.Contains(strings.ToLower(reason), "quota") {
		return "quota"
	}
	return reason
}

// pendingWords says why the deployer pod does not run: no node fits, an image it cannot
// pull, or its phase.
func pendingWords(p *corev1.Pod) string {
	if p == nil {
		return "not seen yet"
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
			if cond.Reason == corev1.PodReasonUnschedulable {
				return "no node fits (" + cond.Message + ")"
			}
			return cond.Reason + ": " + cond.Message
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return w.Reason + ": " + w.Message
		}
	}
	return string(p.Status.Phase)
}

func deployerOf(c *config, rs *appsv1.ReplicaSet) *corev1.Pod {
	for _, p := range c.pods {
		if p.Labels[v1alpha1.DeployerPodForLabel] == rs.Name {
			return p
		}
	}
	return nil
}

// runningHook is "pre hook running (attempt 2 of 3)" for the newest hook pod of rs that
// has not finished, or "".
func runningHook(c *config, rs *appsv1.ReplicaSet) string {
	var stage string
	attempt := 0
	for _, p := range c.pods {
		s := p.Labels[v1alpha1.HookStageLabel]
		if s == "" || p.Labels[v1alpha1.RevisionLabel] != rs.Labels[v1alpha1.RevisionLabel] ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if a := attemptOf(rs.Name, s, p.Name); a > attempt {
			stage, attempt = s, a
		}
	}
	if attempt == 0 {
		return ""
	}
	verb := "running"
	if attempt > 1 {
		verb = "retrying"
	}
	text := fmt.Sprintf("%s hook %s (attempt %d", stage, verb, attempt)
	if max := maxAttempts(rs, stage); max > 0 {
		text += fmt.Sprintf(" of %d", max)
	}
	return text + ")"
}

// maxAttempts is the attempts the revision's hook at stage may make, from its config
// snapshot; 0 when unknown.
func maxAttempts(rs *appsv1.ReplicaSet, stage string) int32 {
	spec, err := revision.Snapshot(rs)
	if err != nil {
		return 0
	}
	var hooks map[string]*v1alpha1.LifecycleHook
	if p := spec.Strategy.RollingParams; p != nil {
		hooks = map[string]*v1alpha1.LifecycleHook{"pre": p.Pre, "post": p.Post, "failed": p.Failed}
	} else if p := spec.Strategy.RecreateParams; p != nil {
		hooks = map[string]*v1alpha1.LifecycleHook{"pre": p.Pre, "mid": p.Mid, "post": p.Post, "failed": p.Failed}
	}
	h := hooks[stage]
	if h == nil || h.FailurePolicy != v1alpha1.LifecycleHookFailurePolicyRetry {
		return 1
	}
	if h.Retry == nil || h.Retry.MaxAttempts == 0 {
		return 3
	}
	return h.Retry.MaxAttempts
}

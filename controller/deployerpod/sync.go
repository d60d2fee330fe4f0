package deployerpod

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/phase"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
	"github.com/stagehand-dev/stagehand/internal/revisions"
)

// syncRevision brings one revision's deployer pod and phase forward.
//
// Invariant 2 (at most one deployer pod per revision, ever) rests on three things: the
// pod's name is deterministic, so a second Create is AlreadyExists; a pod is only created
// for a revision that the apiserver (not the cache) says is New and not cancelled; and the
// move to Pending carries the resourceVersion read before the Create, so if the revision
// was cancelled in between, the update conflicts and the new pod is deleted at once. A
// revision whose pod disappeared is never given another one: it is Pending or Running by
// then, and it fails with DeployerPodGone.
func (c *Controller) syncRevision(ctx context.Context, key string) error {
	dc, rs := c.lookup(key)
	if rs == nil || dc == nil {
		c.forgetGone(key)
		return nil // gone, or not a revision of a DC we know: nothing to run
	}
	if c.writes.Stale(key, rs.ResourceVersion) {
		return nil // the cache is behind our own phase write; its event brings the revision back
	}
	current := revision.Phase(rs)
	if revision.FailureHookPending(rs) {
		return c.syncFailureHook(ctx, dc, rs)
	}
	if current.IsTerminal() {
		c.forgetGone(key)
		c.writes.Forget(key)
		return nil
	}
	log := plumbing.SyncLog(c.log, rs.Namespace, dc.Name, rs.Name)

	if revision.Cancelled(rs) {
		reason := v1alpha1.ReasonCancelled
		if revision.Superseded(rs) {
			reason = v1alpha1.ReasonSuperseded
		}
		t := phase.Transition{Phase: v1alpha1.RevisionPhaseFailed, Reason: reason, Msg: "the rollout was cancelled"}
		if err := c.transition(ctx, dc, rs, t); err != nil {
			return err
		}
		return phase.DeletePods(ctx, c.kube, rs)
	}

	pod, err := c.podLister.Pods(rs.Namespace).Get(v1alpha1.DeployerPodName(rs.Name))
	if apierrors.IsNotFound(err) {
		if current == v1alpha1.RevisionPhaseNew {
			return c.createDeployerPod(ctx, dc, rs)
		}
		return c.deployerPodMissing(ctx, key, dc, rs)
	}
	if err != nil {
		return err
	}
	c.forgetGone(key)
	if !revision.IsDeployerPodOf(rs, pod) {
		return c.nameTaken(ctx, dc, rs, pod)
	}

	if failed, err := c.failIfStuck(ctx, key, dc, rs, pod); failed || err != nil {
		return err
	}
	if failed, err := c.checkNode(ctx, key, dc, rs, pod); failed || err != nil {
		return err
	}

	next := revisionPhaseFor(pod)
	if revision.PhaseRank(next) <= revision.PhaseRank(current) {
		return nil
	}
	t := phase.Transition{Phase: next}
	if next.IsTerminal() {
		out := podOutcome(pod)
		t.Reason, t.Msg, t.Hooks = out.Reason, out.Message, out.Hooks
	}
	if next == v1alpha1.RevisionPhaseComplete {
		proven, err := c.proveComplete(ctx, rs, pod, &t)
		if err != nil || !proven {
			return err
		}
	}
	log.WithField("phase", next).Debug("Deployer pod moved on")
	return c.transition(ctx, dc, rs, t)
}

// transition writes t and records it.
func (c *Controller) transition(ctx context.Context, dc *v1alpha1.DeploymentConfig, rs *appsv1.ReplicaSet, t phase.Transition) error {
	updated, err := phase.Write(ctx, c.kube, rs, t)
	if err != nil || updated == nil {
		return err
	}
	c.writes.Wrote(rs.Namespace+"/"+rs.Name, rs.ResourceVersion, updated.ResourceVersion)
	phase.Record(c.recorder, c.metrics, dc, rs, t)
	l := plumbing.SyncLog(c.log, rs.Namespace, dc.Name, rs.Name).WithField("phase", t.Phase)
	if t.Reason != "" {
		l = l.WithField("reason", t.Reason)
	}
	l.Info("Revision moved to a new phase")
	return nil
}

// createDeployerPod creates the deployer pod of a New revision and moves it to Pending.
func (c *Controller) createDeployerPod(ctx context.Context, dc *v1alpha1.DeploymentConfig, cached *appsv1.ReplicaSet) error {
	live, err := revisions.Client{Kube: c.kube}.Get(ctx, cached.Namespace, cached.Name, revision.OfStatefulSet(cached))
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading revision %s: %w", cached.Name, err)
	}
	if revision.Phase(live) != v1alpha1.RevisionPhaseNew || revision.Cancelled(live) {
		return nil // the cache is behind; the update event brings the revision back
	}
	if older := c.pendingFailureHook(live); older != "" {
		// A superseded revision's failed hook (failedOnSupersede) runs before the next
		// rollout; its end enqueues this revision again.
		if err := c.markWaiting(ctx, live, v1alpha1.ReasonDeployerPodWaiting, fmt.Sprintf("the failed hook of %s runs first (pod %s)",
			older, v1alpha1.FailureHookRunnerName(older))); err != nil {
			return err
		}
		return plumbing.RequeueAfter(failureHookRecheck, "an older revision's failed hook runs")
	}
	pod, spec, err := PodFor(live, c.defaults)
	if err != nil {
		return c.transition(ctx, dc, live, phase.Transition{Phase: v1alpha1.RevisionPhaseFailed,
			Reason: v1alpha1.ReasonInvalidConfig, Msg: err.Error()})
	}
	_, err = c.kube.CoreV1().Pods(live.Namespace).Create(ctx, pod, plumbing.CreateOptions())
	switch {
	case apierrors.IsAlreadyExists(err):
		// Created by an earlier sync that did not get to write Pending, or a pod that is
		// not Stagehand's holds the name.
		existing, getErr := c.kube.CoreV1().Pods(live.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if getErr != nil {
			return fmt.Errorf("reading the existing deployer pod %s: %w", pod.Name, getErr)
		}
		if !revision.IsDeployerPodOf(live, existing) {
			return c.nameTaken(ctx, dc, live, existing)
		}
	case plumbing.Refused(err):
		return c.transition(ctx, dc, live, phase.Transition{Phase: v1alpha1.RevisionPhaseFailed,
			Reason: v1alpha1.ReasonDeployerPodNotAdmit,
			Msg:    fmt.Sprintf("the apiserver refused the deployer pod %s: %s%s", pod.Name, plumbing.APIMessage(err), whatToSet(err))})
	case err != nil:
		return c.deployerPodNotCreated(ctx, dc, live, spec, pod.Name, err)
	}
	// The Pending transition's RolloutPending event names the new pod: one event, not two.

	err = c.transition(ctx, dc, live, phase.Transition{Phase: v1alpha1.RevisionPhasePending})
	if !apierrors.IsConflict(err) {
		return err
	}
	fresh, getErr := revisions.Client{Kube: c.kube}.Get(ctx, live.Namespace, live.Name, revision.OfStatefulSet(live))
	if getErr != nil {
		return fmt.Errorf("reading revision %s after a conflict: %w", live.Name, getErr)
	}
	if revision.Cancelled(fresh) || revision.Phase(fresh).IsTerminal() {
		// Cancelled while the pod was being created: it must not run.
		return phase.DeletePods(ctx, c.kube, fresh)
	}
	return err // retried: the pod is in the cache by then and its phase takes over
}

// deployerPodNotCreated handles a refused Create: a Warning event and a retry with
// back-off until the strategy's timeout, counted from the start of the revision's run, has
// passed; then the revision fails. A check is also scheduled for the deadline itself, so
// that the revision never stays New after the queue's retries run out.
func (c *Controller) deployerPodNotCreated(ctx context.Context, dc *v1alpha1.DeploymentConfig, rs *appsv1.ReplicaSet,
	spec *v1alpha1.DeploymentConfigSpec, podName string, createErr error) error {
	deadline := runStart(rs).Add(revision.Timeout(&spec.Strategy))
	if !c.now().Before(deadline) {
		return c.transition(ctx, dc, rs, phase.Transition{Phase: v1alpha1.RevisionPhaseFailed,
			Reason: v1alpha1.ReasonDeployerPodNotAdmit,
			Msg:    fmt.Sprintf("the deployer pod %s could not be created: %v", podName, createErr)})
	}
	until := deadline.UTC().Format(time.RFC3339)
	if err := c.markWaiting(ctx, rs, v1alpha1.ReasonDeployerPodWaiting, fmt.Sprintf("the apiserver refused the deployer pod %s: %s; retrying with back-off until %s",
		podName, plumbing.APIMessage(createErr), until)); err != nil {
		return err
	}
	c.recorder.Eventf(dc, corev1.EventTypeWarning, v1alpha1.EventDeployerPodCreateFailed, v1alpha1.MsgDeployerPodCreateFailed,
		podName, createErr, until)
	key, _ := cache.MetaNamespaceKeyFunc(rs)
	c.queue.AddAfter(key, deadline.Sub(c.now())+time.Second)
	return fmt.Errorf("creating deployer pod %s: %w", podName, createErr)
}

// markWaiting records on a New revision what its deployer pod waits for, so that the
// DeploymentConfig's Progressing condition and kubectl stagehand get say it (DESIGN.md §4,
// invariant 7). The next phase transition removes it.
func (c *Controller) markWaiting(ctx context.Context, rs *appsv1.ReplicaSet, reason, msg string) error {
	if r, message := revision.Waiting(rs); r == reason && message == msg {
		return nil
	}
	marked := rs.DeepCopy()
	if marked.Annotations == nil {
		marked.Annotations = map[string]string{}
	}
	marked.Annotations[v1alpha1.WaitingAnnotation] = revision.FormatStatusReason(reason, msg)
	updated, err := revisions.Client{Kube: c.kube}.Update(ctx, marked, plumbing.UpdateOptions())
	if err != nil {
		return fmt.Errorf("recording what revision %s waits for: %w", rs.Name, err)
	}
	c.writes.Wrote(rs.Namespace+"/"+rs.Name, rs.ResourceVersion, updated.ResourceVersion)
	*rs = *updated
	return nil
}

// whatToSet is the advice for a refusal of the deployer pod that names resource fields (a
// ResourceQuota that requires a resource the controller's defaults do not give, a
// LimitRange bound): the fields of spec.strategy.resources to set.
func whatToSet(err error) string {
	fields := plumbing.ResourceFieldsOf(err)
	if len(fields) == 0 {
		return ""
	}
	for i, f := range fields {
		fields[i] = "spec.strategy.resources." + f
	}
	return "; set " + strings.Join(fields, " and ") + " in the DeploymentConfig " +
		"(the controller's --deployer-requests and --deployer-limits give the defaults)"
}

// deployerPodMissing handles a Pending or Running revision whose deployer pod is not in
// the cache: tolerated for a few requeues, then confirmed with the apiserver.
func (c *Controller) deployerPodMissing(ctx context.Context, key string, dc *v1alpha1.DeploymentConfig, rs *appsv1.ReplicaSet) error {
	if c.countGone(key) <= podGoneTolerance {
		return plumbing.RequeueAfter(podGoneRequeue, "the deployer pod is not in the cache")
	}
	pod, err := c.kube.CoreV1().Pods(rs.Namespace).Get(ctx, v1alpha1.DeployerPodName(rs.Name), metav1.GetOptions{})
	if err == nil {
		if !revision.IsDeployerPodOf(rs, pod) {
			return c.nameTaken(ctx, dc, rs, pod)
		}
		return plumbing.RequeueAfter(podGoneRequeue, "the deployer pod exists but the cache has not seen it")
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading the deployer pod of %s: %w", rs.Name, err)
	}
	c.forgetGone(key)
	reason, msg := goneReason(rs)
	return c.transition(ctx, dc, rs, phase.Transition{Phase: v1alpha1.RevisionPhaseFailed, Reason: reason, Msg: msg})
}

// runStart is when the revision's current run started: its creation, or its last retry.
func runStart(rs *appsv1.ReplicaSet) time.Time {
	start := rs.CreationTimestamp.Time
	if at, ok := revision.RetriedAt(rs); ok && at.After(start) {
		return at
	}
	return start
}

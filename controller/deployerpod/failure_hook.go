package deployerpod

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/phase"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
	"github.com/stagehand-dev/stagehand/internal/revisions"
)

// syncFailureHook runs the failure hook of a Failed revision (revision.FailureHookPending)
// exactly once, in a runner pod of the built-in deployer image (stagehand-deployer
// --failure-hook), and records its outcome on the revision; the DeploymentConfig
// controller holds the rollback until then.
//
// The runner starts only once the revision's deployer pod has finished or is gone, so no
// two pods ever act for the revision at once (DESIGN.md §4 invariants 1 and 2: the runner
// is not a deployer pod, and its name is <revision>-failure-hook). Exactly once rests on
// the deterministic name (a second Create is AlreadyExists) and on the Running state
// written after the Create: a runner that disappears once Running is never replaced.
func (c *Controller) syncFailureHook(ctx context.Context, dc *v1alpha1.DeploymentConfig, rs *appsv1.ReplicaSet) error {
	deployer, err := c.podLister.Pods(rs.Namespace).Get(v1alpha1.DeployerPodName(rs.Name))
	if err == nil && revision.IsDeployerPodOf(rs, deployer) && !podstatus.Finished(deployer) {
		return nil // it may still act: its end or deletion brings the revision back
	}
	name := v1alpha1.FailureHookRunnerName(rs.Name)
	pod, err := c.podLister.Pods(rs.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return c.startFailureHook(ctx, dc, rs, name)
	}
	if err != nil {
		return err
	}
	if pod.Labels[v1alpha1.FailureHookForLabel] != rs.Name || !revision.Owns(rs, pod) {
		return c.endFailureHook(ctx, dc, rs, v1alpha1.FailureHookFailed,
			fmt.Sprintf("pod %s exists and is not this revision's failure-hook runner; the hook did not run", name))
	}
	if podstatus.Finished(pod) {
		out := podOutcome(pod)
		switch {
		case pod.Status.Phase == corev1.PodSucceeded:
			return c.endFailureHook(ctx, dc, rs, v1alpha1.FailureHookSucceeded, "")
		case out.Reason == v1alpha1.ReasonHookNotRun:
			return c.endFailureHook(ctx, dc, rs, v1alpha1.FailureHookNotRun, out.Message)
		}
		return c.endFailureHook(ctx, dc, rs, v1alpha1.FailureHookFailed, out.Reason+": "+out.Message)
	}
	if state, _ := v1alpha1.FailureHookStateOf(rs); state == "" {
		if err := c.markFailureHook(ctx, dc, rs, v1alpha1.FailureHookRunning, ""); err != nil {
			return err
		}
	}
	return c.boundFailureHook(ctx, dc, rs, pod)
}

// boundFailureHook stops a runner that ran past the hook's bound plus the start slack, and its hook pod,
// whatever the node did with its activeDeadlineSeconds, so that the rollback never waits
// longer; otherwise it checks again at that moment.
func (c *Controller) boundFailureHook(ctx context.Context, dc *v1alpha1.DeploymentConfig, rs *appsv1.ReplicaSet, pod *corev1.Pod) error {
	spec, err := revision.Snapshot(rs)
	if err != nil {
		return c.endFailureHook(ctx, dc, rs, v1alpha1.FailureHookFailed, err.Error())
	}
	bound := revision.FailureHookTimeout(spec)
	deadline := pod.CreationTimestamp.Add(bound + revision.FailureHookStartSlack)
	if c.now().Before(deadline) {
		return plumbing.RequeueAfter(deadline.Sub(c.now())+time.Second, "the failure hook runs")
	}
	if err := phase.DeleteFailureHookPods(ctx, c.kube, rs, pod); err != nil {
		return fmt.Errorf("stopping the failed hook of %s after its bound: %w", rs.Name, err)
	}
	c.recorder.Eventf(dc, corev1.EventTypeWarning, v1alpha1.EventFailureHookTimedOut, v1alpha1.MsgFailureHookTimedOut, rs.Name, bound, pod.Name)
	return c.markFailureHook(ctx, dc, rs, v1alpha1.FailureHookTimedOut,
		fmt.Sprintf("ran longer than its bound of %s (plus %s to start); pod %s was deleted", bound, revision.FailureHookStartSlack, pod.Name))
}

// startFailureHook creates the runner pod, unless it ran already: a revision that says
// Running has had its runner, which is gone now (confirmed with the apiserver).
func (c *Controller) startFailureHook(ctx context.Context, dc *v1alpha1.DeploymentConfig, rs *appsv1.ReplicaSet, name string) error {
	if state, _ := v1alpha1.FailureHookStateOf(rs); state == v1alpha1.FailureHookRunning {
		_, err := c.kube.CoreV1().Pods(rs.Namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			return plumbing.RequeueAfter(podGoneRequeue, "the failure-hook runner exists but the cache has not seen it")
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("reading the failure-hook runner %s: %w", name, err)
		}
		return c.endFailureHook(ctx, dc, rs, v1alpha1.FailureHookFailed,
			fmt.Sprintf("the runner pod %s disappeared before it finished; the hook is not run again", name))
	}
	pod, _, err := FailureHookPodFor(rs, c.defaults)
	if err != nil {
		return c.endFailureHook(ctx, dc, rs, v1alpha1.FailureHookFailed, err.Error())
	}
	_, err = c.kube.CoreV1().Pods(rs.Namespace).Create(ctx, pod, plumbing.CreateOptions())
	switch {
	case apierrors.IsAlreadyExists(err):
		return plumbing.RequeueAfter(podGoneRequeue, "the failure-hook runner exists but the cache has not seen it")
	case plumbing.Refused(err):
		return c.endFailureHook(ctx, dc, rs, v1alpha1.FailureHookFailed,
			fmt.Sprintf("the apiserver refused the runner pod %s: %s", name, plumbing.APIMessage(err)))
	case err != nil:
		return fmt.Errorf("creating the failure-hook runner %s: %w", name, err)
	}
	c.recorder.Eventf(dc, corev1.EventTypeNormal, v1alpha1.EventFailureHookStarted, v1alpha1.MsgFailureHookStarted, rs.Name, name)
	return c.markFailureHook(ctx, dc, rs, v1alpha1.FailureHookRunning, "")
}

// failureHookRecheck is how often a New revision looks again at an older revision's
// failed hook that it waits for (its end also enqueues the latest revision).
const failureHookRecheck = 5 * time.Second

// pendingFailureHook is the name of an older revision of rs's DC whose failed hook is
// pending, or "": the next rollout waits for it.
func (c *Controller) pendingFailureHook(rs *appsv1.ReplicaSet) string {
	n, _ := revision.Number(rs)
	revs, err := c.rsLister.ReplicaSets(rs.Namespace).List(labels.SelectorFromSet(labels.Set{v1alpha1.ConfigLabel: rs.Labels[v1alpha1.ConfigLabel]}))
	if err != nil {
		return ""
	}
	for _, other := range revs {
		if m, ok := revision.Number(other); ok && m < n && revision.FailureHookPending(other) {
			return other.Name
		}
	}
	return ""
}

// endFailureHook records the hook's outcome and its event, and enqueues the DC's latest
// revision, which may wait for it (pendingFailureHook).
func (c *Controller) endFailureHook(ctx context.Context, dc *v1alpha1.DeploymentConfig, rs *appsv1.ReplicaSet, state v1alpha1.FailureHookState, msg string) error {
	if latest := v1alpha1.RevisionName(dc.Name, dc.Status.LatestVersion); latest != rs.Name {
		c.queue.Add(rs.Namespace + "/" + latest)
	}
	switch state {
	case v1alpha1.FailureHookSucceeded:
		c.recorder.Eventf(dc, corev1.EventTypeNormal, v1alpha1.EventFailureHookSucceeded, v1alpha1.MsgFailureHookSucceeded, rs.Name)
	case v1alpha1.FailureHookNotRun:
		c.recorder.Eventf(dc, corev1.EventTypeWarning, v1alpha1.EventFailureHookNotRun, v1alpha1.MsgFailureHookNotRun, rs.Name, msg)
	default:
		c.recorder.Eventf(dc, corev1.EventTypeWarning, v1alpha1.EventFailureHookFailed, v1alpha1.MsgFailureHookFailed, rs.Name, msg)
	}
	return c.markFailureHook(ctx, dc, rs, state, msg)
}

// markFailureHook writes the failure-hook annotation with the cached resourceVersion.
func (c *Controller) markFailureHook(ctx context.Context, dc *v1alpha1.DeploymentConfig, rs *appsv1.ReplicaSet, state v1alpha1.FailureHookState, msg string) error {
	marked := rs.DeepCopy()
	marked.Annotations[v1alpha1.FailureHookAnnotation] = v1alpha1.FormatFailureHook(state, podstatus.TruncateEnd(msg, v1alpha1.MaxStatusMessage))
	updated, err := revisions.Client{Kube: c.kube}.Update(ctx, marked, plumbing.UpdateOptions())
	if err != nil {
		return fmt.Errorf("recording the failed hook of %s as %s: %w", rs.Name, state, err)
	}
	c.writes.Wrote(rs.Namespace+"/"+rs.Name, rs.ResourceVersion, updated.ResourceVersion)
	plumbing.SyncLog(c.log, rs.Namespace, dc.Name, rs.Name).WithField("failureHook", state).Info("Failure hook moved on")
	if state.Finished() { // written once: the update carries the cached resourceVersion
		c.metrics.HookFinished(v1alpha1.FailureHookStage, string(state), c.failureHookSeconds(rs))
	}
	*rs = *updated
	return nil
}

// failureHookSeconds is how long the failure hook of rs has run: since its runner pod's
// creation, or -1 (unknown) when the runner never existed or is no longer cached.
func (c *Controller) failureHookSeconds(rs *appsv1.ReplicaSet) float64 {
	pod, err := c.podLister.Pods(rs.Namespace).Get(v1alpha1.FailureHookRunnerName(rs.Name))
	if err != nil || !revision.IsFailureHookRunnerOf(rs, pod) {
		return -1
	}
	return c.now().Sub(pod.CreationTimestamp.Time).Seconds()
}

// FailureHookPodFor is the failure-hook runner pod of revision rs: the deployer pod of its
// snapshot (NewPod: image, service account, security context, resources, placement)
// renamed, labelled with FailureHookForLabel, running the built-in image with
// --failure-hook and bounded by the hook's timeout plus the start slack.
func FailureHookPodFor(rs *appsv1.ReplicaSet, defaults Defaults) (*corev1.Pod, *v1alpha1.DeploymentConfigSpec, error) {
	pod, spec, err := PodFor(rs, defaults)
	if err != nil {
		return nil, nil, err
	}
	pod.Name = v1alpha1.FailureHookRunnerName(rs.Name)
	pod.Labels[v1alpha1.FailureHookForLabel] = rs.Name
	deadline := int64((revision.FailureHookTimeout(spec) + revision.FailureHookStartSlack) / time.Second)
	pod.Spec.ActiveDeadlineSeconds = &deadline
	c := &pod.Spec.Containers[0]
	c.Image, c.Command, c.Args = defaults.Image, nil, []string{v1alpha1.FailureHookFlag}
	return pod, spec, nil
}

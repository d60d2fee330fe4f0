// Package phase writes a revision's phase transitions (DESIGN.md §4), with their events
// and metrics. Both the DeploymentConfig controller (which supersedes and cancels) and the
// deployer-pod controller (which follows the deployer pod) move a revision's phase, and
// both go through Write, so the phase only moves forward whoever writes it.
package phase

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
	"github.com/stagehand-dev/stagehand/internal/revisions"
)

// Transition is one forward move of a revision's phase, with the outcome of a terminal one.
type Transition struct {
	Phase  v1alpha1.RevisionPhase
	Reason string // for a terminal phase
	Msg    string
	Cancel bool // also set the cancelled annotation
	// Hooks are the hooks that the deployer pod's run finished, from its termination
	// message: recorded with a terminal transition, so once per deployer pod (the
	// transition is written once). Not written to the revision.
	Hooks []v1alpha1.HookOutcome
}

// Write moves rs to t.Phase with an Update that carries rs's resourceVersion, so that two
// writers (the DeploymentConfig and the deployer-pod controllers) conflict instead of
// overwriting each other. It refuses to move a phase backwards or out of a terminal phase
// and then returns (nil, nil).
//
// The ReplicaSet also changes for reasons that have nothing to do with its phase: the
// ReplicaSet controller writes its status and the deployer scales it, often between the
// read and this write. Such a conflict is not a decision to revisit, so Write reads the
// ReplicaSet again and, when its phase and cancelled annotation are still what the
// transition was decided on, applies the transition to that version (up to
// conflictRetries times). Any other conflict is returned, as before.
func Write(ctx context.Context, kube kubernetes.Interface, rs *appsv1.ReplicaSet, t Transition) (*appsv1.ReplicaSet, error) {
	current := revision.Phase(rs)
	if current.IsTerminal() || revision.PhaseRank(t.Phase) <= revision.PhaseRank(current) {
		return nil, nil
	}
	base := rs
	for attempt := 0; ; attempt++ {
		updated, err := revisions.Client{Kube: kube}.Update(ctx, withTransition(base, t), plumbing.UpdateOptions())
		if err == nil {
			return updated, nil
		}
		if apierrors.IsConflict(err) && attempt < conflictRetries {
			live, getErr := revisions.Client{Kube: kube}.Get(ctx, rs.Namespace, rs.Name, revision.OfStatefulSet(rs))
			if getErr == nil && live.UID == rs.UID && revision.Phase(live) == current && revision.Cancelled(live) == revision.Cancelled(rs) {
				base = live
				continue
			}
		}
		return nil, fmt.Errorf("moving revision %s from %s to %s: %w", rs.Name, current, t.Phase, err)
	}
}

// conflictRetries bounds Write's retries after conflicts that left the phase alone.
const conflictRetries = 3

// withTransition is a copy of rs with t's annotations.
func withTransition(rs *appsv1.ReplicaSet, t Transition) *appsv1.ReplicaSet {
	rs = rs.DeepCopy()
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	rs.Annotations[v1alpha1.PhaseAnnotation] = string(t.Phase)
	delete(rs.Annotations, v1alpha1.WaitingAnnotation) // a New revision's wait is over
	if t.Phase.IsTerminal() && t.Reason != "" {
		rs.Annotations[v1alpha1.StatusReasonAnnotation] = revision.FormatStatusReason(t.Reason, t.Msg)
	}
	if t.Cancel {
		rs.Annotations[v1alpha1.CancelledAnnotation] = "true"
	}
	return rs
}

// Record records the event and the metrics of a written transition on the DC.
func Record(recorder record.EventRecorder, metrics *plumbing.Metrics, dc *v1alpha1.DeploymentConfig, rs *appsv1.ReplicaSet, t Transition) {
	if dc != nil {
		switch t.Phase {
		case v1alpha1.RevisionPhasePending:
			recorder.Eventf(dc, corev1.EventTypeNormal, v1alpha1.EventRolloutPending, v1alpha1.MsgRolloutPending, rs.Name, v1alpha1.DeployerPodName(rs.Name))
		case v1alpha1.RevisionPhaseRunning:
			recorder.Eventf(dc, corev1.EventTypeNormal, v1alpha1.EventRolloutRunning, v1alpha1.MsgRolloutRunning, rs.Name)
		case v1alpha1.RevisionPhaseComplete:
			recorder.Eventf(dc, corev1.EventTypeNormal, v1alpha1.EventRolloutComplete, v1alpha1.MsgRolloutComplete, rs.Name)
		case v1alpha1.RevisionPhaseFailed:
			recorder.Eventf(dc, corev1.EventTypeWarning, v1alpha1.EventRolloutFailed, v1alpha1.MsgRolloutFailed, rs.Name, t.Reason, t.Msg)
		}
	}
	if t.Phase.IsTerminal() {
		RecordFinished(metrics, rs, t)
	}
}

// RecordFinished records the metrics of a revision that reached a terminal phase, and of
// the hooks its deployer pod reported.
func RecordFinished(metrics *plumbing.Metrics, rs *appsv1.ReplicaSet, t Transition) {
	metrics.RolloutFinished(StrategyOf(rs), string(t.Phase), t.Reason, time.Since(rs.CreationTimestamp.Time))
	for _, h := range t.Hooks {
		metrics.HookFinished(h.Stage, string(h.Result), h.Seconds)
	}
}

// StrategyOf is the strategy type in a revision's snapshot, for metric labels.
func StrategyOf(rs *appsv1.ReplicaSet) string {
	spec, err := revision.Snapshot(rs)
	if err != nil || spec.Strategy.Type == "" {
		return "Unknown"
	}
	return string(spec.Strategy.Type)
}

// DeletePods deletes a revision's deployer pod and its hook pods: only pods that rs owns
// (an ownerReference to its UID), each deleted with a UID precondition, so that a pod
// that is not Stagehand's is never deleted, whatever its name or labels.
func DeletePods(ctx context.Context, kube kubernetes.Interface, rs *appsv1.ReplicaSet) error {
	pods := kube.CoreV1().Pods(rs.Namespace)
	deployer, err := pods.Get(ctx, v1alpha1.DeployerPodName(rs.Name), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("reading the deployer pod of %s: %w", rs.Name, err)
	case revision.IsDeployerPodOf(rs, deployer):
		if err := deleteOwned(ctx, kube, deployer); err != nil {
			return fmt.Errorf("deleting the deployer pod of %s: %w", rs.Name, err)
		}
	}
	// A runner exists only once the revision records its failure hook: no read before.
	runner, err := FailureHookRunner(ctx, pods, rs)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("reading the failure-hook runner of %s: %w", rs.Name, err)
	case revision.IsFailureHookRunnerOf(rs, runner) && runner.DeletionTimestamp == nil:
		if err := deleteOwned(ctx, kube, runner); err != nil {
			return fmt.Errorf("deleting the failure-hook runner of %s: %w", rs.Name, err)
		}
	}
	hooks, err := pods.List(ctx, metav1.ListOptions{LabelSelector: revision.HookPods(rs, "").String()})
	if err != nil {
		return fmt.Errorf("listing the hook pods of %s: %w", rs.Name, err)
	}
	for i := range hooks.Items {
		p := &hooks.Items[i]
		if p.DeletionTimestamp != nil || !revision.Owns(rs, p) {
			continue
		}
		if err := deleteOwned(ctx, kube, p); err != nil {
			return fmt.Errorf("deleting hook pod %s of %s: %w", p.Name, rs.Name, err)
		}
	}
	return nil
}

// deleteOwned deletes pod if it is still the same object (its UID): a pod deleted and
// created again under the same name in between is left alone.
func deleteOwned(ctx context.Context, kube kubernetes.Interface, pod *corev1.Pod) error {
	err := kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(pod.UID))})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// FailureHookRunner reads the failure-hook runner pod of rs, only when the revision
// records that its failure hook started (NotFound otherwise, without a request).
func FailureHookRunner(ctx context.Context, pods corev1client.PodInterface, rs *appsv1.ReplicaSet) (*corev1.Pod, error) {
	if state, _ := v1alpha1.FailureHookStateOf(rs); state == "" {
		return nil, apierrors.NewNotFound(corev1.Resource("pods"), v1alpha1.FailureHookRunnerName(rs.Name))
	}
	return pods.Get(ctx, v1alpha1.FailureHookRunnerName(rs.Name), metav1.GetOptions{})
}

// DeleteFailureHookPods deletes the failure-hook runner pod of rs and the hook pods of
// its failed stage (a runner that ran past its bound leaves its hook pod behind otherwise).
func DeleteFailureHookPods(ctx context.Context, kube kubernetes.Interface, rs *appsv1.ReplicaSet, runner *corev1.Pod) error {
	if err := deleteOwned(ctx, kube, runner); err != nil {
		return fmt.Errorf("deleting the failure-hook runner %s: %w", runner.Name, err)
	}
	hooks, err := kube.CoreV1().Pods(rs.Namespace).List(ctx, metav1.ListOptions{LabelSelector: revision.HookPods(rs, v1alpha1.FailureHookStage).String()})
	if err != nil {
		return fmt.Errorf("listing the failed hook's pods of %s: %w", rs.Name, err)
	}
	for i := range hooks.Items {
		if p := &hooks.Items[i]; p.DeletionTimestamp == nil && revision.Owns(rs, p) {
			if err := deleteOwned(ctx, kube, p); err != nil {
				return fmt.Errorf("deleting the failed hook's pod %s: %w", p.Name, err)
			}
		}
	}
	return nil
}

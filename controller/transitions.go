package controller

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// transition is one forward move of a revision's phase, with the outcome of a terminal one.
type transition struct {
	phase  v1alpha1.RevisionPhase
	reason string // for a terminal phase
	msg    string
	cancel bool // also set the cancelled annotation
}

// writeTransition moves rs to t.phase with an Update that carries rs's resourceVersion, so
// that two writers (the DeploymentConfig and the deployer-pod controllers) conflict instead
// of overwriting each other. It refuses to move a phase backwards or out of a terminal
// phase and then returns (nil, nil).
func writeTransition(ctx context.Context, kube kubernetes.Interface, rs *appsv1.ReplicaSet, t transition) (*appsv1.ReplicaSet, error) {
	current := revisionPhase(rs)
	if current.IsTerminal() || phaseRank(t.phase) <= phaseRank(current) {
		return nil, nil
	}
	rs = rs.DeepCopy()
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	rs.Annotations[v1alpha1.PhaseAnnotation] = string(t.phase)
	if t.phase.IsTerminal() && t.reason != "" {
		rs.Annotations[v1alpha1.StatusReasonAnnotation] = formatStatusReason(t.reason, t.msg)
	}
	if t.cancel {
		rs.Annotations[v1alpha1.CancelledAnnotation] = "true"
	}
	updated, err := kube.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, updateOptions())
	if err != nil {
		return nil, fmt.Errorf("moving revision %s from %s to %s: %w", rs.Name, current, t.phase, err)
	}
	return updated, nil
}

// recordTransition records the event and the metrics of a written transition on the DC.
func recordTransition(recorder record.EventRecorder, metrics *Metrics, dc *v1alpha1.DeploymentConfig, rs *appsv1.ReplicaSet, t transition) {
	if dc != nil {
		switch t.phase {
		case v1alpha1.RevisionPhasePending:
			recorder.Eventf(dc, corev1.EventTypeNormal, EventRolloutPending, MsgRolloutPending, rs.Name)
		case v1alpha1.RevisionPhaseRunning:
			recorder.Eventf(dc, corev1.EventTypeNormal, EventRolloutRunning, MsgRolloutRunning, rs.Name)
		case v1alpha1.RevisionPhaseComplete:
			recorder.Eventf(dc, corev1.EventTypeNormal, EventRolloutComplete, MsgRolloutComplete, rs.Name)
		case v1alpha1.RevisionPhaseFailed:
			recorder.Eventf(dc, corev1.EventTypeWarning, EventRolloutFailed, MsgRolloutFailed, rs.Name, t.reason, t.msg)
		}
	}
	if t.phase.IsTerminal() {
		metrics.rolloutFinished(strategyOf(rs), string(t.phase), t.reason, time.Since(rs.CreationTimestamp.Time))
	}
}

// strategyOf is the strategy type in a revision's snapshot, for metric labels.
func strategyOf(rs *appsv1.ReplicaSet) string {
	spec, err := snapshotSpec(rs)
	if err != nil || spec.Strategy.Type == "" {
		return "Unknown"
	}
	return string(spec.Strategy.Type)
}

// kubernetesPods is the part of the clientset that deleteRevisionPods needs.
type kubernetesPods interface {
	CoreV1() typedcorev1.CoreV1Interface
}

func sinceCreation(rs *appsv1.ReplicaSet) time.Duration { return time.Since(rs.CreationTimestamp.Time) }

// Package revision reads a ReplicaSet as a Stagehand revision (DESIGN.md §4): its number,
// phase, cause, config snapshot and outcome, the revisions a DeploymentConfig owns in
// order, the selectors of its hook pods, and the deadlines its strategy sets.
//
// It is the one home of the revision model. The controller, the deployer (and so every
// custom strategy image), the strategies and the kubectl plugin read revisions through it.
// It imports only api/v1alpha1 and Kubernetes types, so that importing it pulls in no
// behaviour.
package revision

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// Number is N of revision <dc>-N, from its revision label. ok is false when the label is
// missing or is not a number above 0: the ReplicaSet is then no revision.
func Number(rs *appsv1.ReplicaSet) (n int64, ok bool) {
	n, err := strconv.ParseInt(rs.Labels[v1alpha1.RevisionLabel], 10, 64)
	return n, err == nil && n > 0
}

// Phase is the revision's phase annotation; a revision without one is New.
func Phase(rs *appsv1.ReplicaSet) v1alpha1.RevisionPhase {
	if p := v1alpha1.RevisionPhase(rs.Annotations[v1alpha1.PhaseAnnotation]); p != "" {
		return p
	}
	return v1alpha1.RevisionPhaseNew
}

// PhaseRank orders the phases: a revision's phase only moves to a higher rank, except
// for a retry's explicit reset to New.
func PhaseRank(p v1alpha1.RevisionPhase) int {
	switch p {
	case v1alpha1.RevisionPhasePending:
		return 1
	case v1alpha1.RevisionPhaseRunning:
		return 2
	case v1alpha1.RevisionPhaseComplete, v1alpha1.RevisionPhaseFailed:
		return 3
	}
	return 0
}

// Cancelled reports whether the revision was cancelled.
func Cancelled(rs *appsv1.ReplicaSet) bool {
	return rs.Annotations[v1alpha1.CancelledAnnotation] == "true"
}

// Cause is the revision's cause annotation (ConfigChange, ImageChange, Manual, Rollback).
func Cause(rs *appsv1.ReplicaSet) v1alpha1.DeploymentCauseType {
	return v1alpha1.DeploymentCauseType(rs.Annotations[v1alpha1.CauseAnnotation])
}

// imageTriggerArrow separates the watched tag from the pinned image in the image-trigger
// annotation.
const imageTriggerArrow = " -> "

// FormatImageTrigger renders the image-trigger annotation of a revision that an image
// change caused: "<watched tag> -> <pinned image>".
func FormatImageTrigger(tag, image string) string {
	return tag + imageTriggerArrow + image
}

// CauseText says why the revision was created, for people: its cause, "Rollback to <n>"
// for a rollback and "ImageChange <watched tag>" for an image change; "" when it has no
// cause annotation.
func CauseText(rs *appsv1.ReplicaSet) string {
	cause := Cause(rs)
	to, trigger := rs.Annotations[v1alpha1.RollbackToAnnotation], rs.Annotations[v1alpha1.ImageTriggerAnnotation]
	switch {
	case cause == v1alpha1.DeploymentCauseRollback && to != "":
		return string(cause) + " to " + to
	case cause == v1alpha1.DeploymentCauseImageChange && trigger != "":
		tag, _, _ := strings.Cut(trigger, imageTriggerArrow)
		return string(cause) + " " + tag
	}
	return string(cause)
}

// Snapshot decodes the spec that the revision runs, from its config-snapshot annotation.
func Snapshot(rs *appsv1.ReplicaSet) (*v1alpha1.DeploymentConfigSpec, error) {
	raw, ok := rs.Annotations[v1alpha1.ConfigSnapshotAnnotation]
	if !ok || raw == "" {
		return nil, fmt.Errorf("revision %s has no %s annotation, so its spec is unknown", rs.Name, v1alpha1.ConfigSnapshotAnnotation)
	}
	spec := &v1alpha1.DeploymentConfigSpec{}
	if err := json.Unmarshal([]byte(raw), spec); err != nil {
		return nil, fmt.Errorf("the %s annotation of revision %s is not a DeploymentConfig spec in JSON: %w", v1alpha1.ConfigSnapshotAnnotation, rs.Name, err)
	}
	return spec, nil
}

// DesiredReplicas is the replicas the revision runs once complete, from its
// desired-replicas annotation.
func DesiredReplicas(rs *appsv1.ReplicaSet) (int32, error) {
	raw := rs.Annotations[v1alpha1.DesiredReplicasAnnotation]
	n, err := strconv.ParseInt(raw, 10, 32)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("revision %s has no valid %s annotation (have %q, want a number ≥ 0)", rs.Name, v1alpha1.DesiredReplicasAnnotation, raw)
	}
	return int32(n), nil
}

// FormatDesiredReplicas renders n for the desired-replicas annotation.
func FormatDesiredReplicas(n int32) string {
	return strconv.FormatInt(int64(n), 10)
}

// DeployerPod is the name of the revision's deployer pod, from its deployer-pod
// annotation, or v1alpha1.DeployerPodName for a revision without one.
func DeployerPod(rs *appsv1.ReplicaSet) string {
	if name := rs.Annotations[v1alpha1.DeployerPodAnnotation]; name != "" {
		return name
	}
	return v1alpha1.DeployerPodName(rs.Name)
}

// StatusReasonText is the status-reason annotation whole, "<Reason>: <message>" as
// FormatStatusReason wrote it, or "" when the revision has none: the outcome of a
// terminal revision, for people.
func StatusReasonText(rs *appsv1.ReplicaSet) string {
	return rs.Annotations[v1alpha1.StatusReasonAnnotation]
}

// StatusReason splits the status-reason annotation into its reason and message.
func StatusReason(rs *appsv1.ReplicaSet) (reason, message string) {
	reason, message, _ = strings.Cut(rs.Annotations[v1alpha1.StatusReasonAnnotation], ": ")
	return reason, message
}

// Waiting splits the waiting annotation of a New revision into its reason and message;
// both are empty when the revision waits for nothing.
func Waiting(rs *appsv1.ReplicaSet) (reason, message string) {
	reason, message, _ = strings.Cut(rs.Annotations[v1alpha1.WaitingAnnotation], ": ")
	return reason, message
}

// FormatStatusReason renders the status-reason and waiting annotations: "<Reason>: <message>".
func FormatStatusReason(reason, message string) string {
	if message == "" {
		return reason
	}
	return reason + ": " + message
}

// ControllerUID is the UID of the object that controls rs (its DeploymentConfig), or "".
func ControllerUID(rs *appsv1.ReplicaSet) types.UID {
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
		return ref.UID
	}
	return ""
}

// Owned returns the revisions among all whose controller is the object with UID owner (a
// DeploymentConfig), oldest first. A ReplicaSet without a valid revision label is left out.
func Owned(owner types.UID, all []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range all {
		if _, ok := Number(rs); ok && owner != "" && ControllerUID(rs) == owner {
			out = append(out, rs)
		}
	}
	Sort(out)
	return out
}

// Sort orders revisions oldest first, by number.
func Sort(revs []*appsv1.ReplicaSet) {
	sort.SliceStable(revs, func(i, j int) bool {
		a, _ := Number(revs[i])
		b, _ := Number(revs[j])
		return a < b
	})
}

// Find returns revision n among revs, or nil.
func Find(revs []*appsv1.ReplicaSet, n int64) *appsv1.ReplicaSet {
	for _, rs := range revs {
		if m, ok := Number(rs); ok && m == n {
			return rs
		}
	}
	return nil
}

// NewestComplete is the newest revision of revs (oldest first) in phase Complete, or nil:
// the revision that serves.
func NewestComplete(revs []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	for i := len(revs) - 1; i >= 0; i-- {
		if Phase(revs[i]) == v1alpha1.RevisionPhaseComplete {
			return revs[i]
		}
	}
	return nil
}

// Pointers turns a list's items into pointers into that list, for Owned.
func Pointers(items []appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	out := make([]*appsv1.ReplicaSet, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// Superseded reports whether the revision failed because a newer one superseded it.
func Superseded(rs *appsv1.ReplicaSet) bool {
	reason, _ := StatusReason(rs)
	return reason == v1alpha1.ReasonSuperseded
}

// ConfigKind is the kind of the controller ownerReference on every revision.
var ConfigKind = v1alpha1.SchemeGroupVersion.WithKind("DeploymentConfig")

// OwnerConfig is the name of the DeploymentConfig that controls rs, or "" when its
// controller is something else or nothing.
func OwnerConfig(rs *appsv1.ReplicaSet) string {
	ref := metav1.GetControllerOfNoCopy(rs)
	if ref == nil || ref.Kind != ConfigKind.Kind || ref.APIVersion != ConfigKind.GroupVersion().String() {
		return ""
	}
	return ref.Name
}

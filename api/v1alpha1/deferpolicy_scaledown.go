package v1alpha1

import (
	"encoding/json"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The deferred scale-down handshake on a ReplicaSet (docs/defer.md, "BeforeScaleDown"):
//
//  1. a scaler writes DeferScaleDownToAnnotation instead of lowering the replicas;
//  2. the DeferPolicy controller records the pods that will go in
//     DeferScaleDownChoiceAnnotation, in one write guarded by the ReplicaSet's
//     resourceVersion, before it marks any of them (DeferScaleDownAnnotation) and runs
//     their steps;
//  3. once every chosen pod's run has ended, it lowers the replicas and moves the choice
//     to DeferScaleDownRemovingAnnotation, in one write;
//  4. once the ReplicaSet controller has acted, it deletes any chosen pod that is still
//     there, and drops DeferScaleDownRemovingAnnotation.
//
// A StatefulSet uses the same annotations one ordinal at a time (docs/statefulsets.md):
// the choice is always its highest ordinal, the replicas go down by one once that pod's
// run has ended, and the request stays until it is met. It has no removing list: the
// StatefulSet controller removes exactly the highest ordinals.
//
// This file is the handshake's one home: both sides ask for, read, write and clear these
// annotations through the functions below, and nothing else formats or parses their
// values. The Set and Clear functions change obj in memory only; the caller writes it.
const (
	// DeferScaleDownChoiceAnnotation holds the pods chosen for a pending deferred
	// scale-down: "<replicas asked for>:<pod>,<pod>,...".
	DeferScaleDownChoiceAnnotation = GroupName + "/defer-scale-down-pods"
	// DeferScaleDownRemovingAnnotation holds the chosen pods, "<pod>,<pod>,...", from the
	// moment the replicas are lowered until each of them is gone or being deleted.
	DeferScaleDownRemovingAnnotation = GroupName + "/defer-scale-down-removing"
)

// DeferScaleDownRequestOf is the replicas asked for in obj's DeferScaleDownToAnnotation;
// ok is false when there is no request or it is not a replica count.
func DeferScaleDownRequestOf(obj metav1.Object) (to int32, ok bool) {
	raw, found := obj.GetAnnotations()[DeferScaleDownToAnnotation]
	if !found {
		return 0, false
	}
	n, err := strconv.ParseInt(raw, 10, 32)
	if err != nil || n < 0 {
		return 0, false
	}
	return int32(n), true
}

// HasDeferScaleDownRequest reports whether obj carries DeferScaleDownToAnnotation, valid
// or not.
func HasDeferScaleDownRequest(obj metav1.Object) bool {
	_, found := obj.GetAnnotations()[DeferScaleDownToAnnotation]
	return found
}

// DeferScaleDownChoiceOf is the choice recorded on obj: the replicas asked for when it
// was made, and the chosen pods' names. ok is false when there is none (or it is
// unreadable, which counts as none: the pods are chosen again).
func DeferScaleDownChoiceOf(obj metav1.Object) (to int32, pods []string, ok bool) {
	raw, found := obj.GetAnnotations()[DeferScaleDownChoiceAnnotation]
	if !found {
		return 0, nil, false
	}
	num, names, found := strings.Cut(raw, ":")
	n, err := strconv.ParseInt(num, 10, 32)
	if !found || err != nil || n < 0 {
		return 0, nil, false
	}
	return int32(n), splitNames(names), true
}

// DeferScaleDownMark is the value of DeferScaleDownAnnotation on the pods chosen for
// ReplicaSet rs's request for to replicas.
func DeferScaleDownMark(rs string, to int32) string {
	return rs + "/" + formatReplicas(to)
}

// DeferScaleDownRemovingOf names the chosen pods that obj's controller removes now.
func DeferScaleDownRemovingOf(obj metav1.Object) []string {
	return splitNames(obj.GetAnnotations()[DeferScaleDownRemovingAnnotation])
}

// DeferScaleDownRequestIs reports whether obj asks for a scale-down to exactly to
// replicas, written as SetDeferScaleDownRequest writes it.
func DeferScaleDownRequestIs(obj metav1.Object, to int32) bool {
	raw, found := obj.GetAnnotations()[DeferScaleDownToAnnotation]
	return found && raw == formatReplicas(to)
}

// InDeferScaleDown reports whether obj asks for a deferred scale-down or is in the middle
// of one: it carries a request, a choice or a removing list, valid or not.
func InDeferScaleDown(obj metav1.Object) bool {
	for _, key := range []string{DeferScaleDownToAnnotation, DeferScaleDownChoiceAnnotation, DeferScaleDownRemovingAnnotation} {
		if _, found := obj.GetAnnotations()[key]; found {
			return true
		}
	}
	return false
}

// DeferScaleDownMarkOf is the pod mark (DeferScaleDownMark's value) on obj; "" when obj
// is not chosen for a scale-down.
func DeferScaleDownMarkOf(obj metav1.Object) string {
	return obj.GetAnnotations()[DeferScaleDownAnnotation]
}

// DeferScaleDownRequestPatch is the JSON merge patch with which a scaler asks for a
// ReplicaSet's scale-down to to replicas (step 1), instead of lowering its replicas.
func DeferScaleDownRequestPatch(to int32) []byte {
	// Maps of strings always encode: there is no error to return.
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{DeferScaleDownToAnnotation: formatReplicas(to)}},
	})
	return patch
}

// SetDeferScaleDownRequest asks, on obj, for a scale-down to to replicas (step 1): the
// same request as DeferScaleDownRequestPatch, for a scaler that updates the whole object.
func SetDeferScaleDownRequest(obj metav1.Object, to int32) {
	setAnnotation(obj, DeferScaleDownToAnnotation, formatReplicas(to))
}

// ClearDeferScaleDownRequest withdraws obj's request, if any; a choice already made stays.
func ClearDeferScaleDownRequest(obj metav1.Object) {
	delete(obj.GetAnnotations(), DeferScaleDownToAnnotation)
}

// SetDeferScaleDownChoice records on obj the pods chosen for a request for to replicas
// (step 2), replacing any earlier choice.
func SetDeferScaleDownChoice(obj metav1.Object, to int32, pods []string) {
	setAnnotation(obj, DeferScaleDownChoiceAnnotation, formatReplicas(to)+":"+strings.Join(pods, ","))
}

// ClearDeferScaleDownChoice drops obj's choice, if any; the request stays.
func ClearDeferScaleDownChoice(obj metav1.Object) {
	delete(obj.GetAnnotations(), DeferScaleDownChoiceAnnotation)
}

// EndDeferScaleDownRequest drops obj's request and choice, for the write that sets its
// replicas (step 3). removing, when it names any pod, becomes the removing list.
func EndDeferScaleDownRequest(obj metav1.Object, removing []string) {
	ClearDeferScaleDownRequest(obj)
	ClearDeferScaleDownChoice(obj)
	if len(removing) > 0 {
		setAnnotation(obj, DeferScaleDownRemovingAnnotation, strings.Join(removing, ","))
	}
}

// ClearDeferScaleDownRemoving drops obj's removing list, which ends the scale-down (step 4).
func ClearDeferScaleDownRemoving(obj metav1.Object) {
	delete(obj.GetAnnotations(), DeferScaleDownRemovingAnnotation)
}

// SetDeferScaleDownMark marks the pod obj as chosen (step 2); mark is DeferScaleDownMark's
// value.
func SetDeferScaleDownMark(obj metav1.Object, mark string) {
	setAnnotation(obj, DeferScaleDownAnnotation, mark)
}

func formatReplicas(n int32) string {
	return strconv.FormatInt(int64(n), 10)
}

func setAnnotation(obj metav1.Object, key, value string) {
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[key] = value
	obj.SetAnnotations(a)
}

func splitNames(s string) []string {
	var out []string
	for _, n := range strings.Split(s, ",") {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

package v1alpha1

import (
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

// DeferScaleDownChoice is the value of DeferScaleDownChoiceAnnotation.
func DeferScaleDownChoice(to int32, pods []string) string {
	return strconv.FormatInt(int64(to), 10) + ":" + strings.Join(pods, ",")
}

// DeferScaleDownMark is the value of DeferScaleDownAnnotation on the pods chosen for
// ReplicaSet rs's request for to replicas.
func DeferScaleDownMark(rs string, to int32) string {
	return rs + "/" + strconv.FormatInt(int64(to), 10)
}

// DeferScaleDownRemovingOf names the chosen pods that obj's controller removes now.
func DeferScaleDownRemovingOf(obj metav1.Object) []string {
	return splitNames(obj.GetAnnotations()[DeferScaleDownRemovingAnnotation])
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

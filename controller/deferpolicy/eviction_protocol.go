package deferpolicy

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	lifecyclev1alpha1 "k8s.io/api/lifecycle/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// The Eviction's protocol, as the 1.37.2 apiserver validates it
// (pkg/apis/lifecycle/validation): the driver's part, which an evictionrequest-controller
// would play, in pure functions over an Eviction's status. docs/defer.md, "BeforeEviction".
const (
	// evictorName is the default responder the API describes, last at priority 100: it
	// evicts the pod through pods/eviction. No 1.37 component runs it; the driver does.
	evictorName     = lifecyclev1alpha1.EvictionResponderImperativeEviction
	evictorPriority = int32(100)
	// heartbeatDeadline: an Active responder silent this long is Interrupted and the
	// next one takes over (the API's 20 minutes).
	heartbeatDeadline = 20 * time.Minute
)

// Reasons of the Failed condition that the driver sets, on the Eviction and on its
// EvictionRequests.
const (
	reasonCanceled = string(lifecyclev1alpha1.EvictionConditionReasonCanceledDueToNoRequesters)
	reasonBlocked  = "BlockedByResponder"
)

// requestsFor are the EvictionRequests among all that target the pod name with uid.
func requestsFor(all []*lifecyclev1alpha1.EvictionRequest, name string, uid types.UID) []*lifecyclev1alpha1.EvictionRequest {
	var out []*lifecyclev1alpha1.EvictionRequest
	for _, r := range all {
		if t := r.Spec.Target.Pod; t != nil && t.Name == name && t.UID == uid && r.DeletionTimestamp == nil {
			out = append(out, r)
		}
	}
	return out
}

// wantsEviction reports whether a request still asks for the eviction.
func wantsEviction(reqs []*lifecyclev1alpha1.EvictionRequest) bool {
	return slices.ContainsFunc(reqs, func(r *lifecyclev1alpha1.EvictionRequest) bool {
		return r.Spec.Intent == lifecyclev1alpha1.EvictionRequestIntentEviction
	})
}

// requesters is status.requesters from reqs, merged over old: a requester whose request
// is gone stays, Withdrawn (the API keeps withdrawn requesters). Sorted by name.
func requesters(old []lifecyclev1alpha1.Requester, reqs []*lifecyclev1alpha1.EvictionRequest) []lifecyclev1alpha1.Requester {
	intent := map[string]lifecyclev1alpha1.RequesterIntent{}
	for _, r := range old {
		intent[r.Name] = lifecyclev1alpha1.RequesterIntentWithdrawn
	}
	for _, r := range reqs {
		if intent[r.Spec.Requester] != lifecyclev1alpha1.RequesterIntentEviction {
			intent[r.Spec.Requester] = lifecyclev1alpha1.RequesterIntent(r.Spec.Intent)
		}
	}
	out := make([]lifecyclev1alpha1.Requester, 0, len(intent))
	for name, i := range intent {
		out = append(out, lifecyclev1alpha1.Requester{Name: name, Intent: i})
	}
	slices.SortFunc(out, func(a, b lifecyclev1alpha1.Requester) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// initialStatus is the status of a new Eviction for pod: its responders and the default
// evictor, in the API's order, the first Active from now.
func initialStatus(pod *corev1.Pod, reqs []*lifecyclev1alpha1.EvictionRequest, now time.Time) lifecyclev1alpha1.EvictionStatus {
	var st lifecyclev1alpha1.EvictionStatus
	st.Requesters = requesters(nil, reqs)
	for _, r := range pod.Spec.EvictionResponders {
		st.TargetResponders = append(st.TargetResponders, lifecyclev1alpha1.TargetResponder{
			Name: r.Name, Priority: ptr.To(ptr.Deref(r.Priority, 0)), State: lifecyclev1alpha1.ResponderStateInactive})
	}
	st.TargetResponders = append(st.TargetResponders, lifecyclev1alpha1.TargetResponder{
		Name: evictorName, Priority: ptr.To(evictorPriority), State: lifecyclev1alpha1.ResponderStateInactive})
	sortResponders(st.TargetResponders)
	for _, t := range st.TargetResponders {
		st.Responders = append(st.Responders, lifecyclev1alpha1.ResponderStatus{Name: t.Name})
	}
	activate(&st, 0, now)
	return st
}

// sortResponders orders responders as the API selects them: the highest priority first;
// on a tie, by the domain's labels from the top one down, then by the key.
func sortResponders(rs []lifecyclev1alpha1.TargetResponder) {
	parts := func(name string) ([]string, string) {
		domain, key, _ := strings.Cut(name, "/")
		labels := strings.Split(domain, ".")
		slices.Reverse(labels)
		return labels, key
	}
	slices.SortStableFunc(rs, func(a, b lifecyclev1alpha1.TargetResponder) int {
		if pa, pb := ptr.Deref(a.Priority, -1), ptr.Deref(b.Priority, -1); pa != pb {
			return int(pb - pa)
		}
		la, ka := parts(a.Name)
		lb, kb := parts(b.Name)
		if c := slices.Compare(la, lb); c != 0 {
			return c
		}
		return strings.Compare(ka, kb)
	})
}

// activate makes the responder at index i (in status order) Active from now.
func activate(st *lifecyclev1alpha1.EvictionStatus, i int, now time.Time) {
	st.TargetResponders[i].State = lifecyclev1alpha1.ResponderStateActive
	if rs := responderStatus(st, st.TargetResponders[i].Name); rs != nil {
		rs.StartTime = &metav1.Time{Time: now}
	}
}

// active is the index of the Active responder, or -1.
func active(st *lifecyclev1alpha1.EvictionStatus) int {
	return slices.IndexFunc(st.TargetResponders, func(t lifecyclev1alpha1.TargetResponder) bool {
		return t.State == lifecyclev1alpha1.ResponderStateActive
	})
}

// responderStatus is the status entry of the responder name, or nil.
func responderStatus(st *lifecyclev1alpha1.EvictionStatus, name string) *lifecyclev1alpha1.ResponderStatus {
	i := slices.IndexFunc(st.Responders, func(r lifecyclev1alpha1.ResponderStatus) bool { return r.Name == name })
	if i < 0 {
		return nil
	}
	return &st.Responders[i]
}

// stateOf is the state of the responder name, or "" when the Eviction lists none.
func stateOf(st *lifecyclev1alpha1.EvictionStatus, name string) lifecyclev1alpha1.ResponderStateType {
	for _, t := range st.TargetResponders {
		if t.Name == name {
			return t.State
		}
	}
	return ""
}

// final reports whether the Eviction has ended: evicted, or failed.
func final(st *lifecyclev1alpha1.EvictionStatus) bool {
	return meta.IsStatusConditionTrue(st.Conditions, string(lifecyclev1alpha1.EvictionConditionTargetEvicted)) ||
		meta.IsStatusConditionTrue(st.Conditions, string(lifecyclev1alpha1.EvictionConditionFailed))
}

// end sets the Eviction's final condition; the Active responder, if any, takes state
// (the API wants it final first).
func end(st *lifecyclev1alpha1.EvictionStatus, cond lifecyclev1alpha1.EvictionConditionType, reason, message string,
	state lifecyclev1alpha1.ResponderStateType, generation int64) {
	if i := active(st); i >= 0 {
		st.TargetResponders[i].State = state
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: string(cond), Status: metav1.ConditionTrue,
		Reason: reason, Message: message, ObservedGeneration: generation})
}

// drive moves the Eviction's states on as an evictionrequest-controller would: withdrawn
// requests cancel it; an Active responder that reported completion is Completed and the
// next one becomes Active; a silent one is Interrupted. It returns whether it changed st.
// Stopping the pod (TargetEvicted) and blocking are the caller's.
func drive(st *lifecyclev1alpha1.EvictionStatus, reqs []*lifecyclev1alpha1.EvictionRequest, generation int64, now time.Time) bool {
	if final(st) {
		return false
	}
	before := st.DeepCopy()
	st.Requesters = requesters(st.Requesters, reqs)
	i := active(st)
	switch {
	case !wantsEviction(reqs):
		end(st, lifecyclev1alpha1.EvictionConditionFailed, reasonCanceled,
			"every requester withdrew its EvictionRequest: the eviction is canceled", lifecyclev1alpha1.ResponderStateCanceled, generation)
	case i < 0:
	case reported(st, i):
		st.TargetResponders[i].State = lifecyclev1alpha1.ResponderStateCompleted
		next(st, i, now)
	case silentSince(responderStatus(st, st.TargetResponders[i].Name), now) >= heartbeatDeadline:
		st.TargetResponders[i].State = lifecyclev1alpha1.ResponderStateInterrupted
		next(st, i, now)
	}
	return !equalStatus(before, st)
}

// reported reports whether the responder at index i has set its completionTime.
func reported(st *lifecyclev1alpha1.EvictionStatus, i int) bool {
	rs := responderStatus(st, st.TargetResponders[i].Name)
	return rs != nil && rs.CompletionTime != nil
}

// next activates the responder after i, if there is one.
func next(st *lifecyclev1alpha1.EvictionStatus, i int, now time.Time) {
	if i+1 < len(st.TargetResponders) {
		activate(st, i+1, now)
	}
}

// silentSince is how long a responder has said nothing: since its last heartbeat, or its
// start.
func silentSince(rs *lifecyclev1alpha1.ResponderStatus, now time.Time) time.Duration {
	switch {
	case rs == nil:
		return 0
	case rs.HeartbeatTime != nil:
		return now.Sub(rs.HeartbeatTime.Time)
	case rs.StartTime != nil:
		return now.Sub(rs.StartTime.Time)
	}
	return 0
}

func equalStatus(a, b *lifecyclev1alpha1.EvictionStatus) bool {
	return slices.EqualFunc(a.Requesters, b.Requesters, func(x, y lifecyclev1alpha1.Requester) bool { return x == y }) &&
		slices.EqualFunc(a.TargetResponders, b.TargetResponders, func(x, y lifecyclev1alpha1.TargetResponder) bool {
			return x.Name == y.Name && x.State == y.State && ptr.Equal(x.Priority, y.Priority)
		}) && len(a.Conditions) == len(b.Conditions) && slices.EqualFunc(a.Responders, b.Responders,
		func(x, y lifecyclev1alpha1.ResponderStatus) bool { return x.StartTime.Equal(y.StartTime) })
}

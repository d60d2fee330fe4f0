package main

import (
	"bufio"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"time"
)

// auditEvent is the part of an audit.k8s.io/v1 Event that the count needs.
type auditEvent struct {
	AuditID   string `json:"auditID"`
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	User      struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
	} `json:"objectRef"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	ResponseStatus           *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// auditWindow selects requests: received in [from, to), about namespace, not sent with
// skipUserAgent (the bench's own clients).
type auditWindow struct {
	namespace     string
	from, to      time.Time
	skipUserAgent string
}

// scanAudit calls fn for every event of r, one JSON object a line; a torn last line (the
// apiserver still writing it) is skipped.
func scanAudit(r io.Reader, fn func(*auditEvent)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var e auditEvent
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			fn(&e)
		}
	}
	return sc.Err()
}

type callKey struct{ user, resource, verb string }

func (k callKey) String() string { return k.user + "\x00" + k.resource + "\x00" + k.verb }

var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}

// countAudit counts each request of window w once, at its first stage past
// RequestReceived (ResponseStarted for a watch, else ResponseComplete or Panic): those
// about the namespace in Calls and the totals, the cluster-scoped ones of the identities
// seen there in ClusterScoped.
func countAudit(r io.Reader, w auditWindow) (APICostSide, error) {
	var side APICostSide
	calls, failed, cluster := map[callKey]int{}, map[callKey]int{}, map[callKey]int{}
	seen := map[string]bool{}
	err := scanAudit(r, func(e *auditEvent) {
		if e.Stage == "RequestReceived" || seen[e.AuditID] || e.UserAgent == w.skipUserAgent ||
			e.RequestReceivedTimestamp.Before(w.from) || !e.RequestReceivedTimestamp.Before(w.to) {
			return
		}
		seen[e.AuditID] = true
		k := callKey{user: identity(e.User.Username, e.UserAgent, w.namespace), verb: e.Verb}
		if o := e.ObjectRef; o != nil {
			k.resource = strings.TrimSuffix(o.Resource+"/"+o.Subresource, "/")
		}
		switch {
		case e.ObjectRef != nil && e.ObjectRef.Namespace == w.namespace:
			calls[k]++
			if e.ResponseStatus != nil && e.ResponseStatus.Code >= 400 {
				failed[k]++
			}
		case e.ObjectRef == nil || e.ObjectRef.Namespace == "":
			cluster[k]++
		}
	})
	byUser := map[string]*IdentityCost{}
	for k, n := range calls {
		side.Calls = append(side.Calls, APICall{User: k.user, Resource: k.resource, Verb: k.verb, Count: n, Failed: failed[k]})
		id := byUser[k.user]
		if id == nil {
			id = &IdentityCost{User: k.user}
			byUser[k.user] = id
		}
		switch {
		case k.resource == "events":
			side.Events, id.Events = side.Events+n, id.Events+n
		case slices.Contains(writeVerbs, k.verb):
			side.Writes, id.Writes = side.Writes+n, id.Writes+n
		default:
			side.Reads, id.Reads = side.Reads+n, id.Reads+n
		}
	}
	for _, id := range byUser {
		side.ByIdentity = append(side.ByIdentity, *id)
	}
	for k, n := range cluster {
		if byUser[k.user] != nil {
			side.ClusterScoped = append(side.ClusterScoped, APICall{User: k.user, Resource: k.resource, Verb: k.verb, Count: n})
		}
	}
	for _, cs := range [][]APICall{side.Calls, side.ClusterScoped} {
		slices.SortFunc(cs, func(a, b APICall) int {
			return strings.Compare(callKey{a.User, a.Resource, a.Verb}.String(), callKey{b.User, b.Resource, b.Verb}.String())
		})
	}
	slices.SortFunc(side.ByIdentity, func(a, b IdentityCost) int { return strings.Compare(a.User, b.User) })
	return side, err
}

// identity shortens a requester: the controller manager's controllers by the name its
// client-go user agents end with, service accounts as sa:<namespace>/<name> (the rollout's
// namespace as <ns>), anything else as its user agent's program and user.
func identity(user, userAgent, ns string) string {
	program, _, _ := strings.Cut(userAgent, "/")
	switch {
	case user == "system:kube-controller-manager":
		if parts := strings.Split(userAgent, "/"); len(parts) >= 5 {
			return "kube-controller-manager/" + parts[len(parts)-1]
		}
		return "kube-controller-manager"
	case user == "system:kube-scheduler":
		return "kube-scheduler"
	case user == "system:apiserver":
		return "kube-apiserver"
	case strings.HasPrefix(user, "system:serviceaccount:"):
		sa := strings.TrimPrefix(user, "system:serviceaccount:")
		if name, ok := strings.CutPrefix(sa, ns+":"); ok && ns != "" {
			sa = "<ns>:" + name
		}
		return "sa:" + strings.Replace(sa, ":", "/", 1)
	case program == "":
		return user
	}
	return program + " (" + user + ")"
}

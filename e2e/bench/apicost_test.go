package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// auditLines are hand-written audit events, one JSON object a line, around a window of
// namespace "web" from 10:00:00 to 10:00:10.
const auditLines = `{"auditID":"a1","stage":"ResponseComplete","verb":"create","user":{"username":"system:serviceaccount:stagehand-system:stagehand-controller"},"userAgent":"stagehand-controller/v1 (linux/amd64)","objectRef":{"resource":"replicasets","namespace":"web","name":"app-2"},"responseStatus":{"code":201},"requestReceivedTimestamp":"2026-01-01T10:00:01Z"}
{"auditID":"a2","stage":"ResponseComplete","verb":"create","user":{"username":"system:serviceaccount:stagehand-system:stagehand-controller"},"userAgent":"stagehand-controller/v1 (linux/amd64)","objectRef":{"resource":"replicasets","namespace":"web","name":"app-2"},"responseStatus":{"code":409},"requestReceivedTimestamp":"2026-01-01T10:00:01.5Z"}
{"auditID":"a3","stage":"ResponseStarted","verb":"watch","user":{"username":"system:serviceaccount:web:stagehand-deployer"},"userAgent":"stagehand-deployer/v1 (linux/amd64)","objectRef":{"resource":"pods","namespace":"web"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T10:00:02Z"}
{"auditID":"a4","stage":"ResponseComplete","verb":"update","user":{"username":"system:serviceaccount:web:stagehand-deployer"},"userAgent":"stagehand-deployer/v1 (linux/amd64)","objectRef":{"resource":"replicasets","subresource":"scale","namespace":"web","name":"app-2"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T10:00:03Z"}
{"auditID":"a3","stage":"ResponseComplete","verb":"watch","user":{"username":"system:serviceaccount:web:stagehand-deployer"},"userAgent":"stagehand-deployer/v1 (linux/amd64)","objectRef":{"resource":"pods","namespace":"web"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T10:00:02Z"}
{"auditID":"a5","stage":"ResponseComplete","verb":"create","user":{"username":"system:kube-controller-manager"},"userAgent":"kube-controller-manager/v1.36.3 (linux/amd64) kubernetes/abc/replicaset-controller","objectRef":{"resource":"events","namespace":"web"},"responseStatus":{"code":201},"requestReceivedTimestamp":"2026-01-01T10:00:04Z"}
{"auditID":"a6","stage":"ResponseComplete","verb":"create","user":{"username":"system:kube-controller-manager"},"userAgent":"kube-controller-manager/v1.36.3 (linux/amd64) kubernetes/abc/replicaset-controller","objectRef":{"resource":"pods","namespace":"web"},"responseStatus":{"code":201},"requestReceivedTimestamp":"2026-01-01T10:00:04Z"}
{"auditID":"a7","stage":"ResponseComplete","verb":"create","user":{"username":"system:kube-scheduler"},"userAgent":"kube-scheduler/v1.36.3 (linux/amd64) kubernetes/abc/scheduler","objectRef":{"resource":"pods","subresource":"binding","namespace":"web","name":"app-2-x"},"responseStatus":{"code":201},"requestReceivedTimestamp":"2026-01-01T10:00:05Z"}
{"auditID":"a8","stage":"ResponseComplete","verb":"update","user":{"username":"stagehand-admin"},"userAgent":"stagehand-nodeagent","objectRef":{"resource":"pods","subresource":"status","namespace":"web","name":"app-2-x"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T10:00:05Z"}
{"auditID":"b1","stage":"ResponseComplete","verb":"update","user":{"username":"stagehand-admin"},"userAgent":"bench/v0.0.0 (linux/amd64) kubernetes/$Format","objectRef":{"resource":"deploymentconfigs","namespace":"web","name":"app"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T10:00:00.5Z"}
{"auditID":"b2","stage":"ResponseComplete","verb":"update","user":{"username":"system:serviceaccount:web:stagehand-deployer"},"userAgent":"stagehand-deployer/v1 (linux/amd64)","objectRef":{"resource":"replicasets","subresource":"scale","namespace":"web"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T09:59:59Z"}
{"auditID":"b3","stage":"ResponseComplete","verb":"update","user":{"username":"system:serviceaccount:web:stagehand-deployer"},"userAgent":"stagehand-deployer/v1 (linux/amd64)","objectRef":{"resource":"replicasets","subresource":"scale","namespace":"web"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T10:00:10Z"}
{"auditID":"b4","stage":"ResponseComplete","verb":"update","user":{"username":"system:serviceaccount:other:stagehand-deployer"},"userAgent":"stagehand-deployer/v1 (linux/amd64)","objectRef":{"resource":"replicasets","subresource":"scale","namespace":"other"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T10:00:03Z"}
{"auditID":"c1","stage":"ResponseComplete","verb":"update","user":{"username":"stagehand-admin"},"userAgent":"stagehand-nodeagent","objectRef":{"resource":"nodes","subresource":"status","name":"stagehand-node-1"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T10:00:06Z"}
{"auditID":"c2","stage":"ResponseComplete","verb":"list","user":{"username":"someone-else"},"userAgent":"kubectl/v1.36.3","objectRef":{"resource":"nodes"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T10:00:06Z"}
{"auditID":"d1","stage":"ResponseComplete","verb":"update","user":{"username":"system:serviceaccount:web:stagehand-deployer"},"userAgent":"stagehand-deployer/v1 (linux/amd64)","objectRef":{"resource":"replicasets","subresource":"scale","namespace":"web"},"responseStatus":{"code":200},"requestRecei`

func TestCountAudit(t *testing.T) {
	from := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	w := auditWindow{namespace: "web", from: from, to: from.Add(10 * time.Second), skipUserAgent: "bench/v0.0.0 (linux/amd64) kubernetes/$Format"}
	side, err := countAudit(strings.NewReader(auditLines), w)
	require.NoError(t, err)

	assert.Equal(t, []APICall{
		{User: "kube-controller-manager/replicaset-controller", Resource: "events", Verb: "create", Count: 1},
		{User: "kube-controller-manager/replicaset-controller", Resource: "pods", Verb: "create", Count: 1},
		{User: "kube-scheduler", Resource: "pods/binding", Verb: "create", Count: 1},
		{User: "sa:<ns>/stagehand-deployer", Resource: "pods", Verb: "watch", Count: 1},
		{User: "sa:<ns>/stagehand-deployer", Resource: "replicasets/scale", Verb: "update", Count: 1},
		{User: "sa:stagehand-system/stagehand-controller", Resource: "replicasets", Verb: "create", Count: 2, Failed: 1},
		{User: "stagehand-nodeagent (stagehand-admin)", Resource: "pods/status", Verb: "update", Count: 1},
	}, side.Calls, "each request once (the watch at its start), in the window, in the namespace, not the bench's own")
	assert.Equal(t, 6, side.Writes, "creates and updates, events left out")
	assert.Equal(t, 1, side.Reads, "the watch")
	assert.Equal(t, 1, side.Events)
	assert.Equal(t, []APICall{
		{User: "stagehand-nodeagent (stagehand-admin)", Resource: "nodes/status", Verb: "update", Count: 1},
	}, side.ClusterScoped, "cluster-scoped requests only of identities that worked in the namespace")
	assert.Contains(t, side.ByIdentity, IdentityCost{User: "sa:<ns>/stagehand-deployer", Writes: 1, Reads: 1})
	assert.Contains(t, side.ByIdentity, IdentityCost{User: "kube-controller-manager/replicaset-controller", Writes: 1, Events: 1})
	assert.Len(t, side.ByIdentity, 5)
}

func TestIdentity(t *testing.T) {
	tests := []struct {
		name, user, userAgent, want string
	}{
		{"a controller of the controller manager", "system:kube-controller-manager",
			"kube-controller-manager/v1.36.3 (linux/amd64) kubernetes/abc/deployment-controller", "kube-controller-manager/deployment-controller"},
		{"the controller manager itself", "system:kube-controller-manager",
			"kube-controller-manager/v1.36.3 (linux/amd64) kubernetes/abc", "kube-controller-manager"},
		{"the scheduler", "system:kube-scheduler", "kube-scheduler/v1.36.3 (linux/amd64) kubernetes/abc/scheduler", "kube-scheduler"},
		{"a service account of the rollout's namespace", "system:serviceaccount:web:stagehand-deployer", "x", "sa:<ns>/stagehand-deployer"},
		{"a service account elsewhere", "system:serviceaccount:stagehand-system:stagehand-controller", "x", "sa:stagehand-system/stagehand-controller"},
		{"a user by its program", "stagehand-admin", "stagehand-nodeagent", "stagehand-nodeagent (stagehand-admin)"},
		{"a user without a user agent", "stagehand-admin", "", "stagehand-admin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, identity(tt.user, tt.userAgent, "web"))
		})
	}
}

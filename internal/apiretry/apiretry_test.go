package apiretry_test

import (
	"context"
	"errors"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stagehand-dev/stagehand/internal/apiretry"
)

func TestDoAsksAgainOnlyWhatIsTransient(t *testing.T) {
	rs := schema.GroupResource{Group: "apps", Resource: "replicasets"}
	timeout := apierrors.NewServerTimeout(rs, "list", 1)
	forbidden := apierrors.NewForbidden(rs, "web-2", errors.New("no"))

	calls := 0
	err := apiretry.Do(context.Background(), func() error {
		calls++
		if calls < 3 {
			return timeout
		}
		return nil
	})
	assert.NoError(t, err, "a timeout is asked again until it succeeds")
	assert.Equal(t, 3, calls)

	calls = 0
	err = apiretry.Do(context.Background(), func() error { calls++; return forbidden })
	assert.True(t, apierrors.IsForbidden(err), "a refusal is returned as it is: %v", err)
	assert.Equal(t, 1, calls, "a refusal is never asked again")

	ctx, cancel := context.WithCancel(context.Background())
	calls = 0
	err = apiretry.Do(ctx, func() error { calls++; cancel(); return timeout })
	assert.True(t, apierrors.IsServerTimeout(err), "the last answer is kept: %v", err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, calls, "no call after ctx is done")
}

// A busy apiserver resets the HTTP/2 stream of a request that ran past its timeout; the
// client sees it inside a *url.Error. 250 of 1,000 first rollouts failed on it in a
// make bench run before it counted as transient.
func TestStreamResetIsTransient(t *testing.T) {
	reset := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/apis/apps/v1/namespaces/a/replicasets",
		Err: errors.New("stream error: stream ID 2281; INTERNAL_ERROR; received from peer")}
	assert.True(t, apiretry.IsTransient(reset))
	assert.False(t, apiretry.IsTransient(errors.New("replicasets.apps \"web-2\" not found")))
}

// The denial that make chaos saw a few seconds after an apiserver restart: its RBAC
// authorizer had not read the ClusterRoles yet, so even the bootstrap roles were "not found".
func TestRBACWarmingUpIsTransientAndAPlainDenialIsNot(t *testing.T) {
	rs := schema.GroupResource{Group: "apps", Resource: "replicasets"}
	cold := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "replicasets/scale"}, "dc-06-5",
		errors.New(`User "system:serviceaccount:ns:stagehand-deployer" cannot update resource "replicasets/scale" `+
			`in API group "apps" in the namespace "ns": RBAC: [clusterrole.rbac.authorization.k8s.io `+
			`"system:service-account-issuer-discovery" not found, clusterrole.rbac.authorization.k8s.io "system:basic-user" not found]`))
	assert.True(t, apiretry.RBACWarmingUp(cold))
	assert.True(t, apiretry.IsTransient(cold))

	plain := apierrors.NewForbidden(rs, "web-2", errors.New(`User "system:serviceaccount:ns:default" cannot update resource "replicasets"`))
	assert.False(t, apiretry.RBACWarmingUp(plain), "a denial without the authorizer's note is a refusal")
	userRole := apierrors.NewForbidden(rs, "web-2", errors.New(`User "u" cannot get resource "replicasets": `+
		`RBAC: clusterrole.rbac.authorization.k8s.io "deployer-extra" not found`))
	assert.False(t, apiretry.RBACWarmingUp(userRole), "a binding to a role nobody created stays a refusal")
	assert.False(t, apiretry.RBACWarmingUp(nil))

	calls := 0
	err := apiretry.Do(t.Context(), func() error {
		calls++
		if calls < 2 {
			return cold
		}
		return nil
	})
	assert.NoError(t, err)
	assert.Equal(t, 2, calls, "the cold denial is asked again")
}

// A hook pod's create that a just-restarted apiserver denied because it had not mapped a
// policy's paramKind yet (make chaos, after an apiserver restart) is asked again, whether
// it comes as a Forbidden or with reason Invalid; the policy's own denial is not.
func TestAdmissionWarmingUpIsTransient(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	msg := "ValidatingAdmissionPolicy 'stagehand-controller-defer-steps' denied request: failed to configure policy: " +
		"failed to find resource referenced by paramKind: 'stagehand.dev/v1alpha1, Kind=DeferPolicy'"
	forbidden := apierrors.NewForbidden(pods, "dc-06-4-hook-mid", errors.New(msg))
	assert.True(t, apiretry.IsTransient(forbidden))
	invalid := apierrors.NewForbidden(pods, "dc-06-4-hook-mid", errors.New(msg))
	invalid.ErrStatus.Reason, invalid.ErrStatus.Code = metav1.StatusReasonInvalid, 422
	assert.True(t, apiretry.IsTransient(invalid))
	assert.True(t, apiretry.WarmingUp(invalid))

	own := apierrors.NewForbidden(pods, "dc-06-4-hook-mid",
		errors.New("ValidatingAdmissionPolicy 'stagehand-run-code' denied request: the requesting user may not create pods"))
	assert.False(t, apiretry.IsTransient(own), "a policy's own denial is a refusal")
}

package plumbing

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestRefused(t *testing.T) {
	pods := corev1.Resource("pods")
	invalid := apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Pod").GroupKind(), "web-1-deploy",
		field.ErrorList{field.Required(field.NewPath("spec", "containers").Index(0).Child("image"), "")})
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "invalid", err: invalid, want: true},
		{name: "pod security", err: apierrors.NewForbidden(pods, "web-1-deploy", errors.New(`violates PodSecurity "restricted:latest"`)), want: true},
		{name: "quota clears by itself", err: apierrors.NewForbidden(pods, "web-1-deploy", errors.New("exceeded quota: pods")), want: false},
		{name: "service account not in the admission cache yet",
			err: apierrors.NewForbidden(pods, "web-1-deploy", errors.New("error looking up service account ns/stagehand-deployer")), want: false},
		{name: "a policy a just-restarted apiserver could not configure yet", err: policyDenial(
			"ValidatingAdmissionPolicy 'stagehand-controller-defer-steps' denied request: failed to configure policy: " +
				"failed to find resource referenced by paramKind: 'stagehand.dev/v1alpha1, Kind=DeferPolicy'"), want: false},
		{name: "a policy's own denial", err: policyDenial(
			"ValidatingAdmissionPolicy 'stagehand-run-code' denied request: the requesting user may not create pods"), want: true},
		{name: "an RBAC authorizer that has not read the roles yet", err: apierrors.NewForbidden(pods, "web-1-deploy", errors.New(
			`User "system:serviceaccount:stagehand-system:stagehand-controller" cannot create resource "pods": `+
				`RBAC: clusterrole.rbac.authorization.k8s.io "system:basic-user" not found`)), want: false},
		{name: "conflict", err: apierrors.NewConflict(pods, "x", errors.New("changed")), want: false},
		{name: "timeout", err: apierrors.NewServerTimeout(pods, "create", 1), want: false},
		{name: "plain", err: errors.New("connection refused"), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, Refused(tt.err)) })
	}
	assert.Contains(t, APIMessage(invalid), "spec.containers[0].image: Required value")
	assert.Equal(t, "connection refused", APIMessage(errors.New("connection refused")))
}

// policyDenial is a ValidatingAdmissionPolicy's denial as the apiserver's dispatcher makes
// it: a Forbidden message, with reason Invalid (422) when the denial has no reason of its
// own, as a configuration error never has (k8s.io/apiserver, policy/validating).
func policyDenial(message string) error {
	err := apierrors.NewForbidden(corev1.Resource("pods"), "web-1-deploy", errors.New(message))
	err.ErrStatus.Reason = metav1.StatusReasonInvalid
	err.ErrStatus.Code = 422
	return err
}

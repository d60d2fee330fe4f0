package plumbing

import (
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/stagehand-dev/stagehand/internal/apiretry"
)

// Refused reports whether the apiserver refused a create for good: Invalid, or Forbidden
// for a reason other than those that can clear by themselves, which are retried until the
// strategy's timeout:
//   - an exceeded quota;
//   - a service account that the admission cache has not seen yet;
//   - an admission policy that the apiserver could not configure, such as a policy whose
//     paramKind is a CRD that a just-restarted apiserver has not mapped yet ("failed to
//     configure policy: failed to find resource referenced by paramKind", seen in make
//     chaos after apiserver restarts), or a binding it could not configure;
//   - a denial by an RBAC authorizer that has not read the roles yet
//     (apiretry.RBACWarmingUp).
//
// The apiserver answers a policy it could not configure with reason Invalid (422): its
// dispatcher gives a denial without a reason of its own that reason. So the message is
// looked at before the reason.
func Refused(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	if strings.Contains(msg, "failed to configure policy") || strings.Contains(msg, "failed to configure binding") {
		return false
	}
	if apierrors.IsInvalid(err) || apierrors.IsRequestEntityTooLargeError(err) || apierrors.IsBadRequest(err) {
		return true
	}
	if !apierrors.IsForbidden(err) {
		return false
	}
	return !strings.Contains(msg, "exceeded quota") && !strings.Contains(msg, "service account") && !apiretry.RBACWarmingUp(err)
}

// APIMessage is the apiserver's own message of a refusal.
func APIMessage(err error) string {
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Message != "" { //nolint:errorlint // a Status error is never wrapped here
		return status.Status().Message
	}
	return err.Error()
}

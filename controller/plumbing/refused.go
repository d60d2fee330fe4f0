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
//   - a just-restarted apiserver that has not read its own configuration yet: an
//     admission policy or binding it could not configure, or an RBAC authorizer that has
//     not read the roles (apiretry.WarmingUp). Such a denial may come with reason
//     Invalid, so it is looked at before the reason.
func Refused(err error) bool {
	if err == nil || apiretry.WarmingUp(err) {
		return false
	}
	if apierrors.IsInvalid(err) || apierrors.IsRequestEntityTooLargeError(err) || apierrors.IsBadRequest(err) {
		return true
	}
	if !apierrors.IsForbidden(err) {
		return false
	}
	msg := err.Error()
	return !strings.Contains(msg, "exceeded quota") && !strings.Contains(msg, "service account")
}

// APIMessage is the apiserver's own message of a refusal.
func APIMessage(err error) string {
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Message != "" { //nolint:errorlint // a Status error is never wrapped here
		return status.Status().Message
	}
	return err.Error()
}

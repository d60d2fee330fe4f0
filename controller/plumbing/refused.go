package plumbing

import (
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Refused reports whether the apiserver refused a create for good: Invalid, or Forbidden
// for a reason other than a quota or a service account that its admission cache has not
// seen yet (those can clear by themselves, and are retried until the strategy's timeout).
func Refused(err error) bool {
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

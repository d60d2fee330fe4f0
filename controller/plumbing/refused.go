package plumbing

import (
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Refused reports whether the apiserver refused a create for good: Invalid, or Forbidden
// for a reason other than those that can clear by themselves, which are retried until the
// strategy's timeout:
//   - an exceeded quota;
//   - a service account that the admission cache has not seen yet;
//   - an admission policy that the apiserver could not configure, such as a policy whose
//     paramKind is a CRD that a just-restarted apiserver has not mapped yet ("failed to
//     configure policy: failed to find resource referenced by paramKind", seen in make
//     chaos after every apiserver restart).
func Refused(err error) bool {
	if apierrors.IsInvalid(err) || apierrors.IsRequestEntityTooLargeError(err) || apierrors.IsBadRequest(err) {
		return true
	}
	if !apierrors.IsForbidden(err) {
		return false
	}
	msg := err.Error()
	for _, passing := range []string{"exceeded quota", "service account", "failed to configure policy"} {
		if strings.Contains(msg, passing) {
			return false
		}
	}
	return true
}

// APIMessage is the apiserver's own message of a refusal.
func APIMessage(err error) string {
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Message != "" { //nolint:errorlint // a Status error is never wrapped here
		return status.Status().Message
	}
	return err.Error()
}

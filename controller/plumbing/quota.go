package plumbing

import (
	"regexp"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// QuotaExceeded reports whether the apiserver refused a create because a ResourceQuota of
// the namespace is used up ("exceeded quota: <name>, requested: ..."). That clears by
// itself when other pods end, so the ReplicaSet controller, and Stagehand, retry it with
// a capped back-off. Refused is false for it.
func QuotaExceeded(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota")
}

// ExceededQuotaName is the name of the ResourceQuota in an "exceeded quota" refusal, or
// "" when the message does not name one.
func ExceededQuotaName(err error) string {
	if !QuotaExceeded(err) {
		return ""
	}
	_, rest, _ := strings.Cut(APIMessage(err), "exceeded quota: ")
	name, _, _ := strings.Cut(rest, ",")
	return strings.TrimSpace(name)
}

// QuotaFieldRequired reports whether a ResourceQuota refused a create because the object
// lacks a field that the quota counts ("failed quota: <name>: must specify limits.cpu
// for: step"). Retrying cannot fix that; Refused is true for it.
func QuotaFieldRequired(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "must specify ")
}

var (
	// quotaFieldRE finds the fields a ResourceQuota asks for.
	quotaFieldRE = regexp.MustCompile(`\b((?:requests|limits)\.[a-z0-9-]+)\b`)
	// limitRangeRE finds a LimitRange bound: "maximum cpu usage per Container is 500m, but
	// limit is 1".
	limitRangeRE = regexp.MustCompile(`(?:maximum|minimum) ([a-z0-9-]+) usage per (?:Container|Pod) is [^,]+, but (limit|request) is`)
)

// ResourceFieldsOf names the container resource fields a quota or LimitRange refusal is
// about, such as "limits.cpu", sorted and without repeats; nil when it names none.
func ResourceFieldsOf(err error) []string {
	if !apierrors.IsForbidden(err) {
		return nil
	}
	msg := APIMessage(err)
	var out []string
	for _, m := range quotaFieldRE.FindAllStringSubmatch(msg, -1) {
		out = append(out, m[1])
	}
	for _, m := range limitRangeRE.FindAllStringSubmatch(msg, -1) {
		out = append(out, m[2]+"s."+m[1])
	}
	slices.Sort(out)
	return slices.Compact(out)
}

package main

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// resourceList is a setting of requests or limits, written as kubectl set resources
// writes them: "cpu=10m,memory=32Mi". The empty string sets none. It is both an envconfig
// Decoder and a flag.Value.
type resourceList corev1.ResourceList

// Decode parses s (envconfig).
func (l *resourceList) Decode(s string) error { return l.Set(s) }

// Set parses s (flag).
func (l *resourceList) Set(s string) error {
	out := resourceList{}
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		name, value, ok := strings.Cut(item, "=")
		if !ok || strings.TrimSpace(name) == "" {
			return fmt.Errorf("%q is not NAME=QUANTITY (for example cpu=10m,memory=32Mi)", item)
		}
		q, err := resource.ParseQuantity(strings.TrimSpace(value))
		if err != nil {
			return fmt.Errorf("%s=%s: %w", name, value, err)
		}
		if q.Sign() < 0 {
			return fmt.Errorf("%s=%s: must not be negative", name, value)
		}
		out[corev1.ResourceName(strings.TrimSpace(name))] = q
	}
	*l = out
	return nil
}

// String renders the list in Set's syntax, sorted by name.
func (l *resourceList) String() string {
	if l == nil {
		return ""
	}
	items := make([]string, 0, len(*l))
	for name, q := range *l {
		items = append(items, string(name)+"="+q.String())
	}
	sort.Strings(items)
	return strings.Join(items, ",")
}

// requirements pairs requests and limits, and refuses a request above its limit.
func requirements(flag string, requests, limits resourceList) (corev1.ResourceRequirements, error) {
	for name, req := range requests {
		if limit, ok := limits[name]; ok && req.Cmp(limit) > 0 {
			return corev1.ResourceRequirements{}, fmt.Errorf("--%s-requests %s=%s is above --%s-limits %s=%s",
				flag, name, req.String(), flag, name, limit.String())
		}
	}
	return corev1.ResourceRequirements{Requests: corev1.ResourceList(requests), Limits: corev1.ResourceList(limits)}, nil
}

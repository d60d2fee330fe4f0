package dcedit

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ParseResourceList reads "cpu=200m,memory=512Mi" into a ResourceList; every value is a
// quantity (resource.ParseQuantity).
func ParseResourceList(s string) (corev1.ResourceList, error) {
	if s == "" {
		return nil, nil
	}
	out := corev1.ResourceList{}
	for _, part := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || name == "" || value == "" {
			return nil, fmt.Errorf("%q is not NAME=QUANTITY (such as cpu=200m,memory=512Mi)", part)
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %w", name, value, err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("%s=%s: a quantity must not be negative", name, value)
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}

// SetResources merges limits and requests into the container's resources, and refuses a
// result whose request is above its limit (the ReplicaSet's pods would be refused later).
func SetResources(c *corev1.Container, limits, requests corev1.ResourceList) error {
	merge := func(dst *corev1.ResourceList, src corev1.ResourceList) {
		if len(src) == 0 {
			return
		}
		if *dst == nil {
			*dst = corev1.ResourceList{}
		}
		for k, v := range src {
			(*dst)[k] = v
		}
	}
	merge(&c.Resources.Limits, limits)
	merge(&c.Resources.Requests, requests)
	var names []string
	for k := range c.Resources.Requests {
		names = append(names, string(k))
	}
	sort.Strings(names)
	for _, n := range names {
		req := c.Resources.Requests[corev1.ResourceName(n)]
		if lim, ok := c.Resources.Limits[corev1.ResourceName(n)]; ok && req.Cmp(lim) > 0 {
			return fmt.Errorf("container %s: the %s request %s is above its limit %s", c.Name, n, req.String(), lim.String())
		}
	}
	return nil
}

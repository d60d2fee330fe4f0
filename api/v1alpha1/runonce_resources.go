package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
)

// WithDefaultResources is set with the requests and limits of defaults filled in where
// set has none for that resource, so that a namespace whose ResourceQuota requires them
// admits the pod. What set gives always wins. A resource that set limits but does not
// request gets no default request: the apiserver makes its request equal to the limit, as
// for any container. A default limit below a request that set gives is raised to it, so
// every request stays at or below its limit. Run-once pods that Stagehand makes for
// itself (the deployer pod, defer step pods) use it; hook pods keep their template
// container's resources as they are.
func WithDefaultResources(set, defaults corev1.ResourceRequirements) corev1.ResourceRequirements {
	out := *set.DeepCopy()
	for name, def := range defaults.Requests {
		_, requested := out.Requests[name]
		_, limited := out.Limits[name]
		if requested || limited {
			continue
		}
		if out.Requests == nil {
			out.Requests = corev1.ResourceList{}
		}
		out.Requests[name] = def.DeepCopy()
	}
	for name, def := range defaults.Limits {
		if _, ok := set.Limits[name]; ok {
			continue
		}
		if request, ok := out.Requests[name]; ok && request.Cmp(def) > 0 {
			def = request
		}
		if out.Limits == nil {
			out.Limits = corev1.ResourceList{}
		}
		out.Limits[name] = def.DeepCopy()
	}
	return out
}

package plumbing

import (
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
)

// Serves reports whether the apiserver serves every one of resources in groupVersion
// ("lifecycle.k8s.io/v1alpha1"). A group version it does not know is false, not an
// error.
func Serves(d discovery.DiscoveryInterface, groupVersion string, resources ...string) (bool, error) {
	list, err := d.ServerResourcesForGroupVersion(groupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, r := range resources {
		if !slices.ContainsFunc(list.APIResources, func(a metav1.APIResource) bool { return a.Name == r }) {
			return false, nil
		}
	}
	return true, nil
}

package plumbing

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
)

func TestServesNeedsEveryResourceOfTheGroupVersion(t *testing.T) {
	kube := fake.NewClientset()
	d := kube.Discovery().(*fakediscovery.FakeDiscovery)
	d.Resources = []*metav1.APIResourceList{{GroupVersion: "lifecycle.k8s.io/v1alpha1",
		APIResources: []metav1.APIResource{{Name: "evictionrequests"}, {Name: "evictionrequests/status"}}}}

	served, err := Serves(d, "lifecycle.k8s.io/v1alpha1", "evictionrequests")
	require.NoError(t, err)
	assert.True(t, served)
	served, err = Serves(d, "lifecycle.k8s.io/v1alpha1", "evictionrequests", "evictions")
	require.NoError(t, err)
	assert.False(t, served, "one resource missing")
	served, err = Serves(d, "example.dev/v1", "things")
	require.NoError(t, err, "an unknown group version is not an error")
	assert.False(t, served)
}

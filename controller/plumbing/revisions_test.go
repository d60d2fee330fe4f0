package plumbing

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func TestRevisionListerReadsBothKinds(t *testing.T) {
	dc := &v1alpha1.DeploymentConfig{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "u"},
		Spec: v1alpha1.DeploymentConfigSpec{StatefulSet: &v1alpha1.StatefulSetWorkload{ServiceName: "db"},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db:1"}}}}}}
	v1alpha1.SetDefaults(dc)
	view, err := revision.New(dc, 1)
	require.NoError(t, err)
	cr, err := revision.ToControllerRevision(view)
	require.NoError(t, err)
	cr.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "x"}}
	corrupt := cr.DeepCopy()
	corrupt.Name = "db-2"
	corrupt.Labels[v1alpha1.RevisionLabel] = "2"
	corrupt.Data = runtime.RawExtension{Raw: []byte(`{"template": 3}`)}

	stateful := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, c := range []*appsv1.ControllerRevision{cr, corrupt} {
		obj, err := StatefulRevisionView(c)
		require.NoError(t, err, "the transform never fails, or the informer would drop the record")
		require.NoError(t, stateful.Add(obj))
	}
	replicaSets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	require.NoError(t, replicaSets.Add(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns",
		Labels: map[string]string{v1alpha1.ConfigLabel: "web"}}}))
	l := NewRevisionLister(appslisters.NewReplicaSetLister(replicaSets), stateful)

	all, err := l.ReplicaSets("ns").List(labels.Everything())
	require.NoError(t, err)
	assert.Len(t, all, 3)
	got, err := l.ReplicaSets("ns").Get("db-1")
	require.NoError(t, err)
	assert.True(t, revision.OfStatefulSet(got))
	assert.Empty(t, got.ManagedFields)
	assert.Equal(t, "db:1", got.Spec.Template.Spec.Containers[0].Image)
	broken, err := l.ReplicaSets("ns").Get("db-2")
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.RevisionPhaseNew, revision.Phase(broken), "a record whose data is unreadable keeps its annotations")
	_, err = l.ReplicaSets("ns").Get("web-1")
	require.NoError(t, err)
	_, err = l.ReplicaSets("ns").Get("nope")
	assert.Error(t, err)
	byConfig, err := l.List(labels.SelectorFromSet(labels.Set{v1alpha1.ConfigLabel: "db"}))
	require.NoError(t, err)
	assert.Len(t, byConfig, 2)
}

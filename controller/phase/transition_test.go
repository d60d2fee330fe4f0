package phase

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func revisionIn(phase v1alpha1.RevisionPhase) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns", UID: "uid-web-1", ResourceVersion: "1",
		Annotations: map[string]string{v1alpha1.PhaseAnnotation: string(phase)}}}
}

// conflictOnce makes the first Update a conflict, after changing the stored ReplicaSet
// with change, as another writer would have.
func conflictOnce(t *testing.T, kube *k8sfake.Clientset, change func(*appsv1.ReplicaSet)) {
	done := false
	kube.PrependReactor("update", "replicasets", func(k8stesting.Action) (bool, runtime.Object, error) {
		if done {
			return false, nil, nil
		}
		done = true
		rs, err := kube.Tracker().Get(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}, "ns", "web-1")
		require.NoError(t, err)
		other := rs.(*appsv1.ReplicaSet).DeepCopy()
		change(other)
		other.ResourceVersion = "2"
		require.NoError(t, kube.Tracker().Update(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}, other, "ns"))
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "replicasets"}, "web-1", nil)
	})
}

func TestWriteRetriesAConflictThatLeftThePhaseAlone(t *testing.T) {
	rs := revisionIn(v1alpha1.RevisionPhaseNew)
	kube := k8sfake.NewClientset(rs)
	conflictOnce(t, kube, func(o *appsv1.ReplicaSet) { o.Status.Replicas = 1 }) // the ReplicaSet controller's status write

	updated, err := Write(context.Background(), kube, rs, Transition{Phase: v1alpha1.RevisionPhasePending})
	require.NoError(t, err)
	require.NotNil(t, updated)
	assert.Equal(t, "Pending", updated.Annotations[v1alpha1.PhaseAnnotation])
	assert.Equal(t, int32(1), updated.Status.Replicas, "written on top of the other change, not over it")
}

func TestWriteReturnsAConflictThatChangedTheDecision(t *testing.T) {
	tests := []struct {
		name   string
		change func(*appsv1.ReplicaSet)
	}{
		{name: "superseded in between", change: func(o *appsv1.ReplicaSet) {
			o.Annotations[v1alpha1.PhaseAnnotation] = string(v1alpha1.RevisionPhaseFailed)
			o.Annotations[v1alpha1.CancelledAnnotation] = "true"
		}},
		{name: "cancelled by a user in between", change: func(o *appsv1.ReplicaSet) { o.Annotations[v1alpha1.CancelledAnnotation] = "true" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := revisionIn(v1alpha1.RevisionPhaseNew)
			kube := k8sfake.NewClientset(rs)
			conflictOnce(t, kube, tt.change)

			_, err := Write(context.Background(), kube, rs, Transition{Phase: v1alpha1.RevisionPhasePending})
			assert.True(t, apierrors.IsConflict(err), "the caller must see the conflict: %v", err)
		})
	}
}

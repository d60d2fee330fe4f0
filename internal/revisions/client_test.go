package revisions

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func dc(stateful bool) *v1alpha1.DeploymentConfig {
	d := &v1alpha1.DeploymentConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "dc-uid"},
		Spec: v1alpha1.DeploymentConfigSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db:1"}}},
		}},
	}
	if stateful {
		d.Spec.StatefulSet = &v1alpha1.StatefulSetWorkload{ServiceName: "db"}
	}
	v1alpha1.SetDefaults(d)
	return d
}

func TestStatefulSetRevisionsLiveInControllerRevisions(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientset()
	c := Client{Kube: kube}
	view, err := revision.New(dc(true), 1)
	require.NoError(t, err)

	// Create writes a ControllerRevision and no ReplicaSet
	created, err := c.Create(ctx, view, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.True(t, revision.OfStatefulSet(created))
	cr, err := kube.AppsV1().ControllerRevisions("ns").Get(ctx, "db-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), cr.Revision)
	rss, err := kube.AppsV1().ReplicaSets("ns").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, rss.Items)

	// A phase write updates the record's annotations
	created.Annotations[v1alpha1.PhaseAnnotation] = string(v1alpha1.RevisionPhaseRunning)
	_, err = c.Update(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	read, err := c.GetAny(ctx, "ns", "db-1")
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.RevisionPhaseRunning, revision.Phase(read))

	// Scaling the record is refused: it runs no pod
	read.Spec.Replicas = new(int32)
	*read.Spec.Replicas = 3
	_, err = c.Update(ctx, read, metav1.UpdateOptions{})
	assert.ErrorContains(t, err, "runs no pod of its own")

	list, err := c.List(ctx, "ns", "db", true)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "db-1", list[0].Name)

	require.NoError(t, c.Delete(ctx, &list[0], metav1.DeleteOptions{}))
	_, err = c.GetAny(ctx, "ns", "db-1")
	assert.True(t, apierrors.IsNotFound(err), "got %v", err)
}

func TestReplicaSetRevisionsStayReplicaSets(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientset()
	c := Client{Kube: kube}
	rs, err := revision.New(dc(false), 1)
	require.NoError(t, err)
	_, err = c.Create(ctx, rs, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kube.AppsV1().ReplicaSets("ns").Get(ctx, "db-1", metav1.GetOptions{})
	require.NoError(t, err)
	crs, err := kube.AppsV1().ControllerRevisions("ns").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, crs.Items)
	read, err := c.GetAny(ctx, "ns", "db-1")
	require.NoError(t, err)
	assert.False(t, revision.OfStatefulSet(read))

	// A ControllerRevision that is not a Stagehand record is not a revision
	_, err = c.Get(ctx, "ns", "other", true)
	assert.True(t, apierrors.IsNotFound(err))
}

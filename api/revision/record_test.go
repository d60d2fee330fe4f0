package revision

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func statefulDC() *v1alpha1.DeploymentConfig {
	dc := &v1alpha1.DeploymentConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "dc-uid"},
		Spec: v1alpha1.DeploymentConfigSpec{
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db:1"}}},
			},
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			StatefulSet: &v1alpha1.StatefulSetWorkload{ServiceName: "db"},
		},
	}
	v1alpha1.SetDefaults(dc)
	return dc
}

func TestNewStatefulSetRevisionIsAViewOfItsRecord(t *testing.T) {
	view, err := New(statefulDC(), 2)
	require.NoError(t, err)

	assert.True(t, OfStatefulSet(view))
	assert.Equal(t, ControllerRevisionKind, Kind(view))
	assert.Equal(t, "2", view.Labels[v1alpha1.RevisionLabel], "the record carries the revision label")
	assert.NotContains(t, view.Spec.Template.Labels, v1alpha1.RevisionLabel, "the pods do not: a rollback must give them back their very template")
	assert.Equal(t, "db", view.Spec.Template.Labels[v1alpha1.ConfigLabel])
	assert.Equal(t, int32(0), *view.Spec.Replicas)

	// Until the StatefulSet names the template's hash, the view selects no pod
	selector, err := metav1.LabelSelectorAsSelector(view.Spec.Selector)
	require.NoError(t, err)
	pod := labels.Set{"app": "db", v1alpha1.ConfigLabel: "db", appsv1.ControllerRevisionHashLabelKey: "db-5c6d"}
	assert.False(t, selector.Matches(pod))

	// Its record holds the revision's number and template; read back with the hash known,
	// the view selects the StatefulSet's pods of that hash, and only those
	cr, err := ToControllerRevision(view)
	require.NoError(t, err)
	assert.Equal(t, int64(2), cr.Revision)
	assert.Equal(t, view.Name, cr.Name)
	assert.Equal(t, view.OwnerReferences, cr.OwnerReferences)
	cr.Annotations[v1alpha1.TemplateHashAnnotation] = "db-5c6d"
	read, err := FromControllerRevision(cr)
	require.NoError(t, err)
	assert.Equal(t, view.Spec.Template, read.Spec.Template)
	assert.Equal(t, "db-5c6d", TemplateHash(read))
	selector, err = metav1.LabelSelectorAsSelector(read.Spec.Selector)
	require.NoError(t, err)
	assert.True(t, selector.Matches(pod))
	pod[appsv1.ControllerRevisionHashLabelKey] = "db-7f8e"
	assert.False(t, selector.Matches(pod), "a pod of another template is not of this revision")
	pod[appsv1.ControllerRevisionHashLabelKey] = "db-5c6d"
	pod[v1alpha1.HookStageLabel] = "pre"
	assert.False(t, selector.Matches(pod), "hook pods are never the revision's")

	// Written back, the record is the same
	again, err := ToControllerRevision(read)
	require.NoError(t, err)
	assert.JSONEq(t, string(cr.Data.Raw), string(again.Data.Raw))
}

func TestReplicaSetRevisionsAreNotRecords(t *testing.T) {
	dc := statefulDC()
	dc.Spec.StatefulSet = nil
	rs, err := New(dc, 1)
	require.NoError(t, err)
	assert.False(t, OfStatefulSet(rs))
	assert.Equal(t, ReplicaSetKind, Kind(rs))
	assert.Equal(t, "1", rs.Spec.Template.Labels[v1alpha1.RevisionLabel])
	_, err = ToControllerRevision(rs)
	assert.ErrorContains(t, err, "is not a StatefulSet revision")
}

func TestExecHookSelectorOfAStatefulSetRevisionUsesTheTemplateHash(t *testing.T) {
	view, err := New(statefulDC(), 2)
	require.NoError(t, err)
	view.Annotations[v1alpha1.TemplateHashAnnotation] = "db-new"
	matches := func(pods v1alpha1.ExecHookPods, hash string) bool {
		sel, err := metav1.LabelSelectorAsSelector(ExecHookSelector(view, pods))
		require.NoError(t, err)
		return sel.Matches(labels.Set{"app": "db", v1alpha1.ConfigLabel: "db", appsv1.ControllerRevisionHashLabelKey: hash})
	}
	assert.True(t, matches(v1alpha1.ExecHookPodsNew, "db-new"))
	assert.False(t, matches(v1alpha1.ExecHookPodsNew, "db-old"))
	assert.True(t, matches(v1alpha1.ExecHookPodsOld, "db-old"))
	assert.False(t, matches(v1alpha1.ExecHookPodsOld, "db-new"))
	assert.True(t, matches(v1alpha1.ExecHookPodsAll, "db-old"))
}

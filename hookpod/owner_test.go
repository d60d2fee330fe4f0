package hookpod_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/hookpod"
)

// foreignHookPod is a pod that is not Stagehand's but has the name and labels of the pre
// hook pod of web-3, and has succeeded: no ownerReference to the revision.
func foreignHookPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-3-hook-pre", Namespace: "ns", UID: "someone-elses",
			Labels: map[string]string{v1alpha1.ConfigLabel: "web", v1alpha1.RevisionLabel: "3", v1alpha1.HookStageLabel: "pre"}},
		Status: corev1.PodStatus{Phase: corev1.PodSucceeded},
	}
}

// Stagehand never adopts, reads or deletes a pod it does not own: a foreign pod under a
// hook pod's name neither counts as the hook having run nor is watched as the hook, and
// the hook fails with a message that names it.
func TestRunnerLeavesAForeignPodUnderTheHookNameAlone(t *testing.T) {
	client := fake.NewClientset(foreignHookPod())
	out := &lines{}
	r := hookpod.NewRunner(core{client.CoreV1()}, revision("web-3"), hookpod.Options{Out: out})

	err := r.Run(t.Context(), "pre", hook())
	require.Error(t, err, "a succeeded pod that the revision does not own is not this hook's run")
	assert.Contains(t, err.Error(), "web-3-hook-pre already exists and does not belong to this revision")
	assert.NotContains(t, out.all, "--> pre hook web-3-hook-pre: already succeeded")

	require.NoError(t, r.DeleteSucceeded(context.Background()))
	kept, getErr := client.CoreV1().Pods("ns").Get(context.Background(), "web-3-hook-pre", metav1.GetOptions{})
	require.NoError(t, getErr, "the foreign pod is never deleted")
	assert.Equal(t, "someone-elses", string(kept.UID))
}

// A hook pod that the revision owns and that already succeeded (a deployer run again) is
// not run again, and DeleteSucceeded removes it.
func TestRunnerResumesAndCleansUpItsOwnSucceededHookPod(t *testing.T) {
	rs := revision("web-3")
	own := foreignHookPod()
	own.UID = "mine"
	own.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID}}
	client := fake.NewClientset(own)
	r := hookpod.NewRunner(core{client.CoreV1()}, rs, hookpod.Options{Out: &lines{}})

	require.NoError(t, r.Run(t.Context(), "pre", hook()))
	assert.Empty(t, r.Outcomes(), "an earlier run reported it: not again")
	require.NoError(t, r.DeleteSucceeded(context.Background()))
	_, getErr := client.CoreV1().Pods("ns").Get(context.Background(), "web-3-hook-pre", metav1.GetOptions{})
	assert.Error(t, getErr, "the revision's own succeeded hook pod is deleted")
}

// A revision without hooks has no hook pods, so its deployer ends without a request.
func TestRunnerWithoutHooksDeletesWithoutListing(t *testing.T) {
	client := fake.NewClientset()
	r := hookpod.NewRunner(core{client.CoreV1()}, revision("web-3"), hookpod.Options{Out: &lines{}})
	require.NoError(t, r.Run(t.Context(), "pre", nil))
	require.NoError(t, r.DeleteSucceeded(context.Background()))
	assert.Empty(t, client.Actions())
}

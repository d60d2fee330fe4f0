//go:build e2e

package e2e

// kubectl stagehand adopt statefulset/NAME and eject (docs/statefulsets.md, "Adopt and
// eject"): the StatefulSet stays, its pods keep their UIDs and its claims theirs.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/revision"
	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// podUIDs are the UIDs of StatefulSet db's pods, by name.
func podUIDs(t *testing.T, ns string) map[string]string {
	t.Helper()
	list, err := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=db"})
	require.NoError(t, err)
	out := map[string]string{}
	for _, p := range list.Items {
		out[p.Name] = string(p.UID)
	}
	return out
}

func TestStatefulSetAdoptThenEjectKeepsEveryPodAndClaim(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	for i := range 3 {
		createHostPathVolume(t, ns, fmt.Sprintf("/stagehand-test/%s/data-%d", ns, i))
	}
	// Given a plain StatefulSet with 3 ready pods and a claim each
	_, err := env.Kube.AppsV1().StatefulSets(ns).Create(ctx, plainStatefulSet("db", ns), metav1.CreateOptions{})
	require.NoError(t, err)
	waitForStatefulSet(t, ns, "db", "3 ready pods on its template", func(s *appsv1.StatefulSet) bool {
		return s.Status.ReadyReplicas == 3 && s.Status.UpdatedReplicas == 3 && s.Status.CurrentRevision == s.Status.UpdateRevision
	})
	pods, claims := podUIDs(t, ns), claimUIDs(t, ns)
	require.Len(t, pods, 3)
	require.Len(t, claims, 3)
	history := followPods(t, ns, "app=db")

	// When it is adopted
	out := pluginOK(t, ns, "adopt", "statefulset/db", "--timeout=60s")
	assert.Contains(t, out.Stdout, "statefulset/db adopted: deploymentconfig/db runs its pods as revision 1")

	// Then the DC controls it, revision 1 is Complete and records the pods' template hash,
	// and no pod was touched
	set, err := env.Kube.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
	require.NoError(t, err)
	dc, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Get(ctx, "db", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, metav1.IsControlledBy(set, dc), "the DC controls the StatefulSet")
	assert.NotContains(t, dc.Annotations, stagehandv1.AdoptAnnotation, "the hand-over is over")
	one := waitForStatefulRevision(t, ns, 1, stagehandv1.RevisionPhaseComplete)
	assert.Equal(t, set.Status.CurrentRevision, revision.TemplateHash(one))
	assert.Equal(t, "statefulset/db", one.Annotations[stagehandv1.AdoptedFromAnnotation])
	require.Eventually(t, func() bool {
		dc, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Get(ctx, "db", metav1.GetOptions{})
		return err == nil && dc.Status.LatestVersion == 1 && dc.Status.Phase == stagehandv1.RevisionPhaseComplete && dc.Status.ReadyReplicas == 3
	}, 30*time.Second, 200*time.Millisecond, "the DC shows revision 1 Complete with 3 ready")
	assert.Equal(t, pods, podUIDs(t, ns), "same pods")
	assert.Equal(t, claims, claimUIDs(t, ns), "same claims")

	// And a second adopt is refused, changing nothing
	r := plugin(t, ns, "adopt", "statefulset/db")
	assert.NotZero(t, r.ExitCode)
	assert.Contains(t, r.Stderr, "a DeploymentConfig named db exists in namespace "+ns)

	// When it is ejected
	out = pluginOK(t, ns, "eject", "dc/db", "--yes", "--timeout=60s")
	assert.Contains(t, out.Stdout, "deploymentconfig/db ejected: statefulset/db runs its pods")

	// Then the StatefulSet is nobody's, the DC and its records are gone, and still no pod
	// was touched
	set, err = env.Kube.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Nil(t, metav1.GetControllerOf(set))
	assert.NotContains(t, set.Labels, stagehandv1.ConfigLabel)
	assert.Empty(t, set.Annotations)
	_, err = env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Get(ctx, "db", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the DC is gone: %v", err)
	assert.Equal(t, pods, podUIDs(t, ns), "same pods")
	assert.Equal(t, claims, claimUIDs(t, ns), "same claims")
	_, deleted, _ := history.snapshot()
	assert.Empty(t, deleted, "no pod was ever deleted")
	waitForStatefulSet(t, ns, "db", "3 ready pods", func(s *appsv1.StatefulSet) bool { return s.Status.ReadyReplicas == 3 })

	// And a second eject is refused
	r = plugin(t, ns, "eject", "dc/db", "--yes")
	assert.NotZero(t, r.ExitCode)
	assert.Contains(t, r.Stderr, "deploymentconfig/db not found")
}

//go:build e2e

package e2e

// A StatefulSet DC meets the old verbs: a revision superseded mid-walk, and rollout undo
// --to-revision, which gives back exactly the template (and so the hash) of the revision.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/revision"
	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

func TestStatefulSetSupersedeMidWalkThenUndoToRevisionOne(t *testing.T) {
	requireController(t)
	given := env.Given(t)
	ns := given.NS
	ctx := context.Background()
	for i := range 3 {
		createHostPathVolume(t, ns, fmt.Sprintf("/stagehand-test/%s/data-%d", ns, i))
	}
	dc := statefulDC(ns)
	dc.Spec.MinReadySeconds = 2 // a walk slow enough to be superseded in
	s := given.DeploymentConfig(dc)
	s.When().Created()
	one := waitForStatefulRevision(t, ns, 1, stagehandv1.RevisionPhaseComplete)
	claims := claimUIDs(t, ns)
	setVersion := func(v int) { updateDB(t, ns, func(dc *stagehandv1.DeploymentConfig) { framework.SetVersion(dc, v) }) }

	// When revision 2 is superseded by revision 3 while it walks
	setVersion(2)
	require.Eventually(t, func() bool {
		two := waitForStatefulRevision(t, ns, 2, stagehandv1.RevisionPhaseRunning)
		hash := revision.TemplateHash(two)
		if hash == "" {
			return false
		}
		pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: appsv1.ControllerRevisionHashLabelKey + "=" + hash})
		return err == nil && len(pods.Items) > 0
	}, 2*time.Minute, 100*time.Millisecond, "revision 2 walking")
	setVersion(3)

	// Then revision 2 ends Failed, superseded, and revision 3 runs on every pod
	two := waitForStatefulRevision(t, ns, 2, stagehandv1.RevisionPhaseFailed)
	assert.Contains(t, two.Annotations[stagehandv1.StatusReasonAnnotation], stagehandv1.ReasonSuperseded)
	three := waitForStatefulRevision(t, ns, 3, stagehandv1.RevisionPhaseComplete)
	podsOnHash(t, ns, revision.TemplateHash(three))

	// When rollout undo --to-revision=1
	pluginOK(t, ns, "rollout", "undo", "dc/db", "--to-revision", "1")

	// Then revision 4 has exactly revision 1's template: the same hash, its image, on every pod
	four := waitForStatefulRevision(t, ns, 4, stagehandv1.RevisionPhaseComplete)
	assert.Equal(t, revision.TemplateHash(one), revision.TemplateHash(four))
	assert.Equal(t, one.Spec.Template.Spec.Containers[0].Image, four.Spec.Template.Spec.Containers[0].Image)
	assert.Equal(t, one.Spec.Template.Spec.Containers[0].Env, four.Spec.Template.Spec.Containers[0].Env)
	podsOnHash(t, ns, revision.TemplateHash(one))
	assert.Equal(t, claims, claimUIDs(t, ns))
	s.Then().OneDeployerPodPerRevision(4)
}

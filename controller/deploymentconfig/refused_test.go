package deploymentconfig

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	k8stesting "k8s.io/client-go/testing"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/internal/controllertest"
)

// refuseReplicaSets makes the fake apiserver refuse every ReplicaSet as Invalid, the way
// the ReplicaSet validation refuses a template that the DC's schema let through.
func refuseReplicaSets(f *fixture) {
	f.Kube.PrependReactor("create", "replicasets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInvalid(v1alpha1.SchemeGroupVersion.WithKind("ReplicaSet").GroupKind(), "web-2",
			field.ErrorList{field.Invalid(field.NewPath("spec", "template", "spec", "containers").Index(0).Child("ports").Index(0).Child("containerPort"),
				70000, "must be between 1 and 65535, inclusive")})
	})
}

func warnings(f *fixture) []string {
	var out []string
	for {
		select {
		case e := <-f.Events.Events:
			if strings.HasPrefix(e, corev1.EventTypeWarning) {
				out = append(out, e)
			}
		default:
			return out
		}
	}
}

// DESIGN.md §4 invariant 7: a revision whose ReplicaSet the apiserver refuses is Failed at
// once, with the apiserver's message, and the status never shows the previous revision's
// phase as the latest's.
func TestSyncRefusedReplicaSetFailsTheRevisionAtOnce(t *testing.T) {
	base := controllertest.WithLatest(controllertest.DC("web", "app:1", 2), 1)
	rs1 := controllertest.Revision(t, base, 1, v1alpha1.RevisionPhaseComplete, 2)
	dc := base.DeepCopy()
	dc.Spec.Template.Spec.Containers[0].Image = "app:2"
	dc.Status.Phase = v1alpha1.RevisionPhaseComplete
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs1)
	refuseReplicaSets(f)

	require.NoError(t, f.syncDC("web"), "a refusal is not retried")
	got := f.GetDC("web")
	assert.Equal(t, int64(2), got.Status.LatestVersion)
	assert.Equal(t, v1alpha1.RevisionPhaseFailed, got.Status.Phase, "the printer column shows the latest revision, not revision 1")
	p := condition(t, got, v1alpha1.ConditionProgressing)
	assert.Equal(t, v1alpha1.ReasonRevisionCreateFailed, p.Reason)
	assert.Contains(t, p.Message, "web-2")
	assert.Contains(t, p.Message, "containerPort")
	require.Len(t, warnings(f), 1)
	assert.Equal(t, int32(2), *f.GetRS("web-1").Spec.Replicas, "the previous revision keeps serving")

	// A sync on a cache that has seen latestVersion 2 but not the refusal does not try
	// again either, nor record a second event: it writes the status again.
	stale := got.DeepCopy()
	stale.Status.Phase = v1alpha1.RevisionPhaseNew
	stale.Status.Conditions = nil
	f.Cache(stale)
	require.NoError(t, f.syncDC("web"))
	assert.NotContains(t, f.Actions(), "create replicasets")
	assert.Empty(t, warnings(f))
	assert.Equal(t, v1alpha1.RevisionPhaseFailed, f.GetDC("web").Status.Phase)

	// The next syncs do not try again, nor record another event, while the spec stays.
	f.Cache(got)
	require.NoError(t, f.syncDC("web"))
	assert.NotContains(t, f.Actions(), "create replicasets")
	assert.Empty(t, warnings(f))
	assert.Equal(t, v1alpha1.RevisionPhaseFailed, f.GetDC("web").Status.Phase)

	// A fixed spec (a new generation) creates the revision.
	fixed := f.GetDC("web")
	fixed.Generation++
	f.Kube.ReactionChain = f.Kube.ReactionChain[1:]
	f.Cache(fixed)
	require.NoError(t, f.syncDC("web"))
	assert.Contains(t, f.Actions(), "create replicasets")
	assert.Equal(t, "New", f.GetRS("web-2").Annotations[v1alpha1.PhaseAnnotation])
}

package deferstep

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func TestStepPodNameIsDeterministicAndCarriesTheUID(t *testing.T) {
	pod := runningPod()
	assert.Equal(t, "db-0-defer-0123abcd-2-3", Name(pod, v1alpha1.DeferAfterTermination, 1, 3), "step index from 1, attempt, 8 characters of the UID")

	pod.UID = "abc"
	assert.Equal(t, "db-0-defer-abc-1-1", Name(pod, v1alpha1.DeferAfterTermination, 0, 1), "a UID shorter than 8 is used whole")

	long := runningPod()
	long.Name = strings.Repeat("a", 250)
	name := Name(long, v1alpha1.DeferAfterTermination, 15, 12)
	assert.Equal(t, strings.Repeat("a", 200)+"-defer-0123abcd-16-12", name, "the pod's name is cut at 200 characters")
	assert.LessOrEqual(t, len(name), 253, "a valid object name")
	long.Name = strings.Repeat("b", 200)
	assert.Equal(t, long.Name+"-defer-0123abcd-1-1", Name(long, v1alpha1.DeferAfterTermination, 0, 1), "200 characters are kept whole")
	long.Name = strings.Repeat("b", 201)
	assert.Equal(t, strings.Repeat("b", 200)+"-defer-0123abcd-1-1", Name(long, v1alpha1.DeferAfterTermination, 0, 1))

	other := runningPod()
	other.UID = "ffffffff-4567-89ef-aaaa-bbbbccccdddd"
	assert.NotEqual(t, Name(runningPod(), v1alpha1.DeferAfterTermination, 0, 1), Name(other, v1alpha1.DeferAfterTermination, 0, 1),
		"a pod of the same name with another UID gets other step pods")

	for _, when := range []v1alpha1.DeferWhen{v1alpha1.DeferBeforeScaleDown, v1alpha1.DeferBeforeEviction} {
		assert.Equal(t, "db-0-defer-0123abcd-1-1-b", Name(runningPod(), when, 0, 1),
			"a run before the pod stops has other names than the AfterTermination run that may follow it")
	}
}

// Selector finds every step pod that Build makes for a pod, and no other pod's.
func TestSelectorSelectsThePodsStepsOnly(t *testing.T) {
	pod := runningPod()
	p := policy("cleanup", v1alpha1.DeferAfterTermination, "db", "flush", "archive")
	sel := Selector(pod)
	for i := range p.Spec.Steps {
		sp, err := Build(pod, &v1alpha1.DeferRun{Steps: 2, Current: i, Attempt: 1}, p, Name(pod, v1alpha1.DeferAfterTermination, i, 1), corev1.ResourceRequirements{})
		require.NoError(t, err)
		assert.True(t, sel.Matches(labels.Set(sp.Labels)), "step %d", i+1)
	}
	other := runningPod()
	other.UID = "ffffffff-4567-89ef-aaaa-bbbbccccdddd"
	sp, err := Build(other, &v1alpha1.DeferRun{Steps: 2}, p, Name(other, v1alpha1.DeferAfterTermination, 0, 1), corev1.ResourceRequirements{})
	require.NoError(t, err)
	assert.False(t, sel.Matches(labels.Set(sp.Labels)), "a pod of the same name with another UID")
	assert.False(t, sel.Matches(labels.Set(pod.Labels)), "the pod itself")
	assert.Equal(t, v1alpha1.DeferStepOfLabel+"="+podUID, sel.String(), "the label selector of a List call")
}

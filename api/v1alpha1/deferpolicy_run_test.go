package v1alpha1

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func TestDeferRunOfRefusesARecordThatDoesNotHoldTogether(t *testing.T) {
	now := metav1.Now()
	good := &DeferRun{Policy: "p", Steps: 3, Current: 3, Started: &now, Deadline: &now}
	pod := &metav1.ObjectMeta{Annotations: map[string]string{DeferRunAnnotation: good.Encode()}}
	run, err := DeferRunOf(pod)
	require.NoError(t, err)
	assert.Equal(t, "3/3", run.Progress())

	for name, raw := range map[string]string{
		"not JSON":             "{",
		"current past the end": `{"steps":2,"current":3}`,
		"negative current":     `{"steps":2,"current":-1}`,
		"too many steps":       `{"steps":17,"current":0}`,
		"started, no deadline": `{"steps":2,"current":0,"started":"2026-01-01T00:00:00Z"}`,
		"negative attempt":     `{"steps":2,"current":0,"attempt":-1}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := DeferRunOf(&metav1.ObjectMeta{Annotations: map[string]string{DeferRunAnnotation: raw}})
			assert.Error(t, err)
		})
	}
	none, err := DeferRunOf(&metav1.ObjectMeta{})
	assert.NoError(t, err)
	assert.Nil(t, none)
}

func TestFirstSelectingIsTheFirstByNameOfItsKind(t *testing.T) {
	policy := func(name string, when DeferWhen, deleting bool) *DeferPolicy {
		p := &DeferPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: DeferPolicySpec{
			When: when, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{}
		}
		return p
	}
	all := []*DeferPolicy{
		policy("c", DeferAfterTermination, false), policy("a", DeferAfterTermination, true),
		policy("b", "", false), policy("0", DeferBeforeScaleDown, false),
	}
	first, others := FirstSelecting(all, DeferAfterTermination, map[string]string{"app": "web"})
	require.NotNil(t, first)
	assert.Equal(t, "b", first.Name, "unset when is AfterTermination; a policy being deleted is left out")
	assert.Equal(t, []string{"c"}, others)
	first, _ = FirstSelecting(all, DeferBeforeScaleDown, map[string]string{"app": "web"})
	assert.Equal(t, "0", first.Name)
	first, others = FirstSelecting(all, DeferAfterTermination, map[string]string{"app": "db"})
	assert.Nil(t, first)
	assert.Empty(t, others)
	first, _ = FirstSelecting(all, DeferAfterTermination, map[string]string{"app": "web", DeployerPodForLabel: "web-1"})
	assert.Nil(t, first, "never a deployer pod")
}

func TestDeferControllerPodsCachesWhatPoliciesSelectAndTheSteps(t *testing.T) {
	sel := DeferControllerPods()
	for name, set := range map[string]labels.Set{
		"an application pod": {"app": "web"},
		"an unlabelled pod":  {},
		"a defer step pod":   {DeferStepOfLabel: "uid", DeferStepLabel: "1"},
	} {
		assert.True(t, sel.Matches(set), name)
	}
	for name, set := range map[string]labels.Set{
		"a deployer pod": {DeployerPodForLabel: "web-1", "app": "web"},
		"a hook pod":     {HookStageLabel: "pre", "app": "web"},
	} {
		assert.False(t, sel.Matches(set), name)
		assert.True(t, IsStagehandRunOncePod(set), name+": left out only because no policy selects it")
	}
}

func TestDeferRecordAccessors(t *testing.T) {
	pod := &corev1.Pod{}
	assert.False(t, HasDeferRun(pod))
	assert.Empty(t, DeferProgressOf(pod))
	assert.False(t, DeferReleased(pod))

	run := &DeferRun{Steps: 3, Current: 1}
	SetDeferRun(pod, run)
	assert.True(t, HasDeferRun(pod))
	assert.Equal(t, "1/3", DeferProgressOf(pod))
	back, err := DeferRunOf(pod)
	require.NoError(t, err)
	assert.Equal(t, run.Current, back.Current)

	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.FixedZone("x", 3600))
	MarkDeferReleased(pod, at)
	assert.True(t, DeferReleased(pod))
	assert.Equal(t, "2026-11-26T11:00:00Z", pod.Annotations[DeferReleasedAnnotation])

	step := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{DeferStepForAnnotation: "web-0"}}}
	assert.Equal(t, "web-0", DeferStepFor(step))
	assert.Empty(t, DeferStepFor(pod))
}

package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

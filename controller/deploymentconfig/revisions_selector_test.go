package deploymentconfig

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/internal/controllertest"
)

// A revision's ReplicaSet selects its own pods and never a deployer or hook pod of the
// same revision, even when the user's selector is made of Stagehand's own labels only.
func TestRevisionSelectorExcludesDeployerAndHookPods(t *testing.T) {
	tests := []struct {
		name     string
		selector *metav1.LabelSelector
	}{
		{name: "the default selector (template labels)"},
		{name: "a selector of Stagehand's config label only", selector: &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.ConfigLabel: "web"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dc := controllertest.DC("web", "app:1", 2)
			dc.Spec.Template.Labels[v1alpha1.ConfigLabel] = "web"
			dc.Spec.Selector = tt.selector
			v1alpha1.SetDefaults(dc)
			rs, err := newRevision(dc, 3, configChange(3))
			require.NoError(t, err)
			selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
			require.NoError(t, err)

			assert.True(t, selector.Matches(labels.Set(rs.Spec.Template.Labels)), "the revision must select its own pods")
			revision := labels.Set{v1alpha1.ConfigLabel: "web", v1alpha1.RevisionLabel: "3", "app": "web"}
			hook := labels.Merge(revision, labels.Set{v1alpha1.HookStageLabel: "pre"})
			deployer := labels.Merge(revision, labels.Set{v1alpha1.DeployerPodForLabel: "web-3"})
			assert.False(t, selector.Matches(hook), "a hook pod must never be adopted by the revision")
			assert.False(t, selector.Matches(deployer), "a deployer pod must never be adopted by the revision")
		})
	}
}

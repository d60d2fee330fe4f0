//go:build e2e && realnode

package realnode

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// TestRealNodeRootImageUnderRunAsNonRootFailsWithTheKubeletsReason: a revision whose image
// runs as root, in a template that says runAsNonRoot, is stopped by the kubelet itself
// (CreateContainerConfigError), and the revision fails with that reason once the stuck
// grace (30 s) has passed, long before its 600 s timeout; revision 1 keeps serving.
func TestRealNodeRootImageUnderRunAsNonRootFailsWithTheKubeletsReason(t *testing.T) {
	requireController(t)
	dc := realDC(t, "web", 2, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{TimeoutSeconds: ptr.To[int64](600)}
	dc.Spec.Template.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}
	s := env.Given(t).DeploymentConfig(dc)
	pods := env.RecordPodHistory(t, s.NS)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(2)

	// When revision 2's image runs as root (the pause image has no USER)
	changed := time.Now()
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		dc.Spec.Template.Spec.Containers[0].Image = env.RealImage(t, "stagehand/pause").Ref
	})
	// Then the kubelet refuses its container
	refused := env.WaitForPods(t, s.NS, stagehandv1.RevisionLabel+"=2,!"+stagehandv1.DeployerPodForLabel, framework.RolloutTimeout,
		"a pod of revision 2 refused by the kubelet", func(pods []*corev1.Pod) bool {
			return slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return refusedContainer(p) != nil })
		})
	for _, p := range refused {
		if w := refusedContainer(p); w != nil {
			assert.Contains(t, w.Message, "runAsNonRoot", "pod %s", p.Name)
			t.Logf("pod %s: %s: %s", p.Name, w.Reason, w.Message)
		}
	}
	// and the revision fails with the kubelet's reason, not a timeout, and revision 1 serves
	s.Then().RevisionPhase(2, failed).RevisionReplicas(1, 2).ReadyPods(2)
	took := time.Since(changed)
	rs, err := env.Kube.AppsV1().ReplicaSets(s.NS).Get(t.Context(), "web-2", metav1.GetOptions{})
	require.NoError(t, err)
	reason := rs.Annotations[stagehandv1.StatusReasonAnnotation]
	t.Logf("revision 2 failed %s after the change: %s", took.Round(time.Second), reason)
	assert.Contains(t, reason, "CreateContainerConfigError")
	assert.Contains(t, reason, "runAsNonRoot")
	assert.NotContains(t, reason, stagehandv1.ReasonTimedOut)
	assert.Less(t, took, 2*time.Minute, "the stuck grace, not timeoutSeconds, ends the rollout")
	pods.LogAll(t)
}

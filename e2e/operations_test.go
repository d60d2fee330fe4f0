//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

func TestPauseBlocksNewRevisionsAndResumeLetsThemGo(t *testing.T) {
	requireController(t)
	s := env.Given(t).DeploymentConfig(framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling))
	s.When().Created().Then().RevisionPhase(1, complete)

	// When the config is paused and its template changes, then no revision is created
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) { dc.Spec.Paused = true }).
		Then().DeploymentConfig("Progressing reason Paused", func(dc *stagehandv1.DeploymentConfig) bool {
		c := meta.FindStatusCondition(dc.Status.Conditions, stagehandv1.ConditionProgressing)
		return c != nil && c.Reason == stagehandv1.ReasonPaused
	})
	s.When().TemplateChanged(2)
	changed := s.Get().Generation
	// The controller has acted on the change once observedGeneration reaches it.
	s.Then().DeploymentConfig("the template change observed while paused", func(dc *stagehandv1.DeploymentConfig) bool {
		return dc.Status.ObservedGeneration >= changed
	})
	assert.Equal(t, int64(1), s.Get().Status.LatestVersion, "a paused config got a new revision")
	_, err := env.Kube.AppsV1().ReplicaSets(s.NS).Get(context.Background(), "web-2", metav1.GetOptions{})
	assert.Error(t, err, "revision 2 must not exist while paused")

	// When it is resumed, then the pending change rolls out
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) { dc.Spec.Paused = false }).
		Then().RevisionPhase(2, complete).ReadyPods(1)
}

func TestHistoryIsPrunedToRevisionHistoryLimit(t *testing.T) {
	requireController(t)
	dc := framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.RevisionHistoryLimit = ptr.To[int32](2)
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete)
	for v := int64(2); v <= 5; v++ {
		s.When().TemplateChanged(int(v)).Then().RevisionPhase(v, complete)
	}

	// Then the latest revision and at most two old ones remain: web-3, web-4, web-5
	then := s.Then()
	env.WaitForPods(t, s.NS, "app=web", framework.RolloutTimeout, "only web-5's pod", func(pods []*corev1.Pod) bool {
		return len(pods) == 1 && pods[0].Labels[stagehandv1.RevisionLabel] == "5"
	})
	then.DeploymentConfig("latestVersion 5", func(dc *stagehandv1.DeploymentConfig) bool { return dc.Status.LatestVersion == 5 })
	require.Eventually(t, func() bool {
		rss, err := env.Kube.AppsV1().ReplicaSets(s.NS).List(context.Background(), metav1.ListOptions{LabelSelector: stagehandv1.ConfigLabel + "=web"})
		if err != nil {
			return false
		}
		names := map[string]bool{}
		for _, rs := range rss.Items {
			names[rs.Name] = true
		}
		return len(names) == 3 && names["web-3"] && names["web-4"] && names["web-5"]
	}, 30*time.Second, 200*time.Millisecond, "revisions after pruning:\n%s", env.Describe(s.NS, "web"))
}

func TestTestModeScalesToZeroAfterTheRollout(t *testing.T) {
	requireController(t)
	dc := framework.NewDeploymentConfig("web", 2, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Test = true
	s := env.Given(t).DeploymentConfig(dc)

	// When a test-mode config rolls out, then the rollout completes and every revision ends at 0
	s.When().Created().Then().RevisionPhase(1, complete).RevisionReplicas(1, 0).ReadyPods(0)
	s.When().TemplateChanged(2).Then().RevisionPhase(2, complete).RevisionReplicas(2, 0).RevisionReplicas(1, 0).ReadyPods(0)
}

func TestScaleSubresourceScalesTheActiveRevision(t *testing.T) {
	requireController(t)
	s := env.Given(t).DeploymentConfig(framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling))
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(1)

	// When the config is scaled with `kubectl scale dc/web --replicas=3`
	s.When().Scaled(3).
		// Then the active revision runs 3 pods, with no new revision
		Then().RevisionReplicas(1, 3).ReadyPods(3).
		DeploymentConfig("3 ready replicas", func(dc *stagehandv1.DeploymentConfig) bool {
			return dc.Status.ReadyReplicas == 3 && dc.Status.Replicas == 3
		})
	assert.Equal(t, int64(1), s.Get().Status.LatestVersion, "scaling must not create a revision")

	scale, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(s.NS).GetScale(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(3), scale.Status.Replicas)
	assert.Contains(t, scale.Status.Selector, "app=web", "the scale subresource reports the selector, for an HPA")
}

// The deployer's service account can do what a rollout needs in its own namespace, and
// nothing more (docs/security.md).
func TestDeployerPermissionsAreExactlyWhatARolloutNeeds(t *testing.T) {
	requireController(t)
	s := env.Given(t).DeploymentConfig(framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling))
	s.When().Created().Then().RevisionPhase(1, complete)
	user := "system:serviceaccount:" + s.NS + ":" + stagehandv1.DeployerServiceAccountName

	type access struct {
		group, resource, subresource, verb string
		otherNamespace                     bool
	}
	allowed := []access{
		{"apps", "replicasets", "", "get", false}, {"apps", "replicasets", "", "list", false},
		{"apps", "replicasets", "", "watch", false}, {"apps", "replicasets", "", "update", false},
		{"apps", "replicasets", "scale", "update", false}, {"", "pods", "", "create", false},
		{"", "pods", "", "delete", false}, {"", "pods", "", "patch", false}, {"", "pods", "", "watch", false}, {"", "pods", "log", "get", false},
		{"", "events", "", "create", false},
		// Exec hooks: an ExecutionHook per attempt, which the ExecutionHook controller checks
		// against the revision's config snapshot; the deployer itself may not exec.
		{"stagehand.dev", "executionhooks", "", "create", false}, {"stagehand.dev", "executionhooks", "", "watch", false},
		{"stagehand.dev", "hookactions", "", "create", false},
		// BeforeScaleDown DeferPolicies, read once at the first scale-down.
		{"stagehand.dev", "deferpolicies", "", "list", false},
	}
	denied := []access{
		{"", "secrets", "", "get", false}, {"", "configmaps", "", "list", false},
		{"apps", "deployments", "", "create", false}, {"apps", "replicasets", "", "create", false},
		{"apps", "replicasets", "", "delete", false}, {"stagehand.dev", "deploymentconfigs", "", "update", false},
		{"stagehand.dev", "deploymentconfigs", "status", "update", false}, {"", "pods", "exec", "create", false},
		{"stagehand.dev", "executionhooks", "", "delete", false}, {"stagehand.dev", "executionhooks", "status", "update", false},
		{"stagehand.dev", "deferpolicies", "", "create", false}, {"stagehand.dev", "deferpolicies", "", "update", false},
		{"rbac.authorization.k8s.io", "rolebindings", "", "create", false},
		{"apps", "replicasets", "", "update", true}, {"", "pods", "", "create", true},
	}
	check := func(a access) bool {
		ns := s.NS
		if a.otherNamespace {
			ns = "default"
		}
		review, err := env.Kube.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   user,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + s.NS, "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: ns, Group: a.group, Resource: a.resource, Subresource: a.subresource, Verb: a.verb,
				},
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		return review.Status.Allowed
	}
	for _, a := range allowed {
		assert.True(t, check(a), "the deployer needs %s %s", a.verb, describe(a.group, a.resource, a.subresource))
	}
	for _, a := range denied {
		assert.False(t, check(a), "the deployer must not have %s %s (other namespace: %t)", a.verb, describe(a.group, a.resource, a.subresource), a.otherNamespace)
	}
}

func describe(group, resource, subresource string) string {
	s := resource
	if subresource != "" {
		s += "/" + subresource
	}
	if group != "" {
		s = fmt.Sprintf("%s.%s", s, group)
	}
	return s
}

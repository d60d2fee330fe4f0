//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// An eject interrupted after it made its paused Deployment (here the apiserver refuses the
// DeploymentConfig's deletion, through an admission policy of the test) is run again after
// the DeploymentConfig rolled on: the rerun checks the DC again and hands over what it
// runs now, revision 2, not the revision of its first plan.
func TestEjectRerunTakesWhatTheDeploymentConfigRolledOnTo(t *testing.T) {
	requireController(t)
	s := env.Given(t).DeploymentConfig(framework.NewDeploymentConfig("web", 2, stagehandv1.DeploymentStrategyTypeRolling))
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(2)
	stop := refuseDeploymentConfigDeletes(t, s.NS)

	first := plugin(t, s.NS, "eject", "dc/web", "--timeout=20s")

	require.NotZero(t, first.ExitCode, "%s", first)
	t.Logf("the interrupted eject: %s", first)
	d, err := env.Kube.AppsV1().Deployments(s.NS).Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err, "the interrupted eject made its Deployment")
	require.True(t, d.Spec.Paused)
	stop()
	s.When().TemplateChanged(2).Then().RevisionPhase(2, complete).ReadyPods(2)
	uids := waitReadyWeb(t, s.NS, 2, "2")

	out := pluginOK(t, s.NS, "eject", "dc/web", "--timeout=60s")

	assert.Contains(t, out.Stderr+out.Stdout, "rolled on since the eject began")
	d, err = env.Kube.AppsV1().Deployments(s.NS).Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "2", envOf(d.Spec.Template.Spec.Containers[0], "VERSION"), "the Deployment runs what the DC rolled on to")
	assert.False(t, d.Spec.Paused)
	deploymentOwnsWebPods(t, s.NS, uids)
}

// refuseDeploymentConfigDeletes makes the apiserver refuse every deletion of a
// DeploymentConfig in ns, with a ValidatingAdmissionPolicy, until the returned stop.
func refuseDeploymentConfigDeletes(t *testing.T, ns string) (stop func()) {
	t.Helper()
	ctx := context.Background()
	name := "refuse-dc-delete-" + ns
	policies := env.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	bindings := env.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	_, err := policies.Create(ctx, &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Delete},
					Rule: admissionv1.Rule{APIGroups: []string{stagehandv1.GroupName}, APIVersions: []string{"*"},
						Resources: []string{"deploymentconfigs"}},
				}}}},
			Validations: []admissionv1.Validation{{Expression: "false", Message: "the test refuses DeploymentConfig deletes"}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = bindings.Create(ctx, &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	deleteRefused := func() bool {
		err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Delete(ctx, "web",
			metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil
	}
	require.Eventually(t, deleteRefused, 30*time.Second, 200*time.Millisecond, "the policy never took effect")
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		assert.NoError(t, bindings.Delete(ctx, name, metav1.DeleteOptions{}))
		assert.NoError(t, policies.Delete(ctx, name, metav1.DeleteOptions{}))
		require.Eventually(t, func() bool { return !deleteRefused() }, 30*time.Second, 200*time.Millisecond, "the policy never went")
	}
	t.Cleanup(stop)
	return stop
}

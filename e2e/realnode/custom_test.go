//go:build e2e && realnode

package realnode

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// appPort is where the test app serves GET /healthz (its PORT variable).
const appPort = 8080

// TestRealNodeCustomStrategyImageChecksTheCanaryThroughAService rolls a DC whose Custom
// strategy is the pushed example-strategy image (examples/custom-strategy): its deployer
// pod runs that image, starts one canary pod of revision 2, checks it with GET through a
// ClusterIP Service that selects only revision 2's pods (kube-proxy on the real node), and
// finishes with the built-in Rolling strategy.
func TestRealNodeCustomStrategyImageChecksTheCanaryThroughAService(t *testing.T) {
	requireController(t)
	strategy := env.RealImage(t, "stagehand/example-strategy")
	dc := realDC(t, "web", 2, stagehandv1.DeploymentStrategyTypeCustom)
	serveHealthz(&dc.Spec.Template.Spec)
	dc.Spec.Strategy.CustomParams = &stagehandv1.CustomDeploymentStrategyParams{Image: strategy.Ref}
	s := env.Given(t).DeploymentConfig(dc)
	pods := env.RecordPodHistory(t, s.NS)
	canary := revisionService(t, s.NS, "web", 2)

	// When revision 1 rolls out (no check yet) and revision 2 rolls out with the check on
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(2)
	checkURL := fmt.Sprintf("http://%s:%d/healthz", canary.Spec.ClusterIP, appPort)
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		dc.Spec.Strategy.CustomParams.Environment = []corev1.EnvVar{
			{Name: "CHECK_URL", Value: checkURL},
			{Name: "CHECK_ATTEMPTS", Value: "15"},
			{Name: "CHECK_INTERVAL", Value: "1s"},
			{Name: "CHECK_TIMEOUT", Value: "2s"},
		}
	}).Then().RevisionPhase(2, complete).RevisionReplicas(1, 0).RevisionReplicas(2, 2).ReadyPods(2).OneDeployerPodPerRevision(2)

	// Then the deployer pods ran the pushed example-strategy image, and revision 2's log
	// shows the canary answering through the Service before the built-in Rolling finished
	pods.LogAll(t)
	for _, name := range []string{"web-1-deploy", "web-2-deploy"} {
		deployers := pods.Named(name)
		require.Len(t, deployers, 1, name)
		checkRanImage(t, deployers[0], strategy)
	}
	log := logOf(t, s.NS, "web-2-deploy")
	for _, line := range []string{
		"Canary: starting 1 pod of web-2",
		"Canary check passed: GET " + checkURL + " answered 200 OK",
		"rolling web-2 out with the built-in Rolling strategy",
		"Success",
	} {
		assert.Contains(t, log, line, "kubectl logs web-2-deploy:\n%s", log)
	}
	assert.Contains(t, logOf(t, s.NS, "web-1-deploy"), "Canary check skipped: CHECK_URL is not set")
}

// serveHealthz makes the template's app container serve GET /healthz on appPort, and be
// ready only once it answers.
func serveHealthz(spec *corev1.PodSpec) {
	c := &spec.Containers[0]
	c.Env = append(c.Env, corev1.EnvVar{Name: "PORT", Value: strconv.Itoa(appPort)})
	c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: appPort}}
	c.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(appPort)}},
		PeriodSeconds: 1,
	}
}

// revisionService creates a ClusterIP Service in front of the pods of revision n of dc.
func revisionService(t *testing.T, ns, dc string, n int64) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: stagehandv1.RevisionName(dc, n)},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{stagehandv1.ConfigLabel: dc, stagehandv1.RevisionLabel: strconv.FormatInt(n, 10)},
			Ports:    []corev1.ServicePort{{Name: "http", Port: appPort, TargetPort: intstr.FromInt32(appPort)}},
		},
	}
	created, err := env.Kube.CoreV1().Services(ns).Create(t.Context(), svc, metav1.CreateOptions{})
	require.NoError(t, err, "creating Service %s/%s", ns, svc.Name)
	require.NotEmpty(t, created.Spec.ClusterIP)
	return created
}

//go:build e2e

package e2e

// kubectl stagehand convert end to end: OpenShift DeploymentConfigs as an OpenShift user has
// them (e2e/testdata/openshift) are converted by the real plugin, applied with kubectl, and
// rolled out by the controller. Each manifest runs in a namespace of its own.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// manifestTestApp is the application image in the manifests; the suite's own replaces it.
const manifestTestApp = "stagehand/testapp:e2e"

// controllerDeployerImage is the deployer image of the installed controller
// (STAGEHAND_DEPLOYER_IMAGE of deploy/controller/deployment.yaml, or what make e2e-kind
// patched in), which convert --deployer-image must name for the cluster to run it.
func controllerDeployerImage(t *testing.T) string {
	t.Helper()
	d, err := env.Kube.AppsV1().Deployments(framework.ControllerNamespace).Get(context.Background(), "stagehand-controller", metav1.GetOptions{})
	require.NoError(t, err, "reading the controller's Deployment")
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == "STAGEHAND_DEPLOYER_IMAGE" {
				return e.Value
			}
		}
	}
	t.Fatalf("the controller's Deployment sets no STAGEHAND_DEPLOYER_IMAGE")
	return ""
}

// convertManifest runs kubectl stagehand convert on an OpenShift manifest of testdata,
// with the suite's test app image, and requires exit 0.
func convertManifest(t *testing.T, ns, file string, flags ...string) framework.PluginResult {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "openshift", file))
	require.NoError(t, err)
	require.Contains(t, string(data), manifestTestApp, "every manifest runs the test app")
	path := filepath.Join(t.TempDir(), file)
	require.NoError(t, os.WriteFile(path, []byte(strings.ReplaceAll(string(data), manifestTestApp, images.TestApp)), 0o644))
	args := append([]string{"convert", "-f", path, "--deployer-image", controllerDeployerImage(t)}, flags...)
	res, err := env.Plugin(context.Background(), ns, nil, args...)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "%s", res)
	t.Logf("kubectl stagehand convert -f %s: notes on stderr:\n%s", file, res.Stderr)
	return res
}

// applyConverted applies the plugin's output with kubectl in ns.
func applyConverted(t *testing.T, ns string, res framework.PluginResult) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "converted.yaml")
	require.NoError(t, os.WriteFile(path, []byte(res.Stdout), 0o644))
	out, err := env.Kubectl(ns, "apply", "-f", path)
	require.NoError(t, err, "kubectl apply of the converted manifest: %s\n--- converted:\n%s", out, res.Stdout)
}

// assertInOrder checks that the lines appear in log, in this order.
func assertInOrder(t *testing.T, log string, lines ...string) {
	t.Helper()
	at := 0
	for _, line := range lines {
		i := strings.Index(log[at:], line)
		if !assert.GreaterOrEqual(t, i, 0, "%q after position %d of the deployer log:\n%s", line, at, log) {
			return
		}
		at += i + len(line)
	}
}

func TestConvertOpenShiftManifestsRollOut(t *testing.T) {
	requireController(t)
	tests := []struct {
		file       string
		dc         string
		replicas   int
		wantStderr []string
		// then checks the rollout of revision 1 after it completed.
		then func(t *testing.T, s *framework.Given)
	}{
		{
			file:     "recreate-hooks.yaml",
			dc:       "orders",
			replicas: 2,
			wantStderr: []string{
				"note: service/orders: not a DeploymentConfig; left out",
			},
			then: func(t *testing.T, s *framework.Given) {
				s.Then().ReadyPods(2)
				assertInOrder(t, deployerLog(t, s.NS, "orders-1"),
					"pre: the schema of orders is at version 41",
					"mid: migrating orders to version 42",
					"post: orders is live, telling the team")
				_, err := env.Kube.CoreV1().Services(s.NS).Get(context.Background(), "orders", metav1.GetOptions{})
				assert.True(t, apierrors.IsNotFound(err), "the Service was left out of the output: %v", err)
			},
		},
		{
			file:     "rolling-retry.yaml",
			dc:       "catalog",
			replicas: 2,
			wantStderr: []string{
				"warning: deploymentconfig/catalog: spec.strategy.rollingParams.post.tagImages: dropped: tagImages tags images into ImageStreams",
				"note: deploymentconfig/catalog: spec.strategy.rollingParams.pre.failurePolicy: Retry: OpenShift retries a failing hook forever",
				"note: route/catalog: not a DeploymentConfig; left out",
			},
			then: func(t *testing.T, s *framework.Given) {
				s.Then().ReadyPods(2)
				assertInOrder(t, deployerLog(t, s.NS, "catalog-1"),
					"pre: warming a 64Mi catalog cache",
					"post: the catalog smoke test passed")
				p := s.Get().Spec.Strategy.RollingParams
				require.NotNil(t, p)
				assert.Equal(t, intstr.FromInt32(1), *p.MaxSurge)
				assert.Equal(t, intstr.FromString("50%"), *p.MaxUnavailable)
				require.NotNil(t, p.Pre)
				assert.Equal(t, stagehandv1.LifecycleHookFailurePolicyRetry, p.Pre.FailurePolicy)
				require.NotNil(t, p.Post, "the post hook keeps its execNewPod action")
				require.NotNil(t, p.Post.ExecNewPod)
			},
		},
		{
			file:     "custom-until.yaml",
			dc:       "search",
			replicas: 4,
			wantStderr: []string{
				"note: deploymentconfig/search: spec.strategy.customParams.image: openshift/origin-deployer:v3.11 is OpenShift's deployer; dropped",
			},
			then: func(t *testing.T, s *framework.Given) {
				s.Then().ReadyPods(4)
				assertInOrder(t, deployerLog(t, s.NS, "search-1"),
					"Scaling search-1 up to 2",
					"smoke test at half way against /healthz",
					"Scaling search-1 up to 4",
					"Success")
				pod, err := env.Kube.CoreV1().Pods(s.NS).Get(context.Background(), "search-1-deploy", metav1.GetOptions{})
				require.NoError(t, err)
				assert.Equal(t, controllerDeployerImage(t), pod.Spec.Containers[0].Image, "the command runs in the built-in deployer")
			},
		},
		{
			file:     "test-mode.yaml",
			dc:       "checkout",
			replicas: 0,
			wantStderr: []string{
				"note: deploymentconfig/checkout: metadata: dropped what the OpenShift cluster set: metadata.resourceVersion, metadata.uid, metadata.creationTimestamp, metadata.generation, metadata.annotations[kubectl.kubernetes.io/last-applied-configuration]",
				"note: deploymentconfig/checkout: status: dropped",
			},
			then: func(t *testing.T, s *framework.Given) {
				s.Then().RevisionReplicas(1, 0).ReadyPods(0)
				assert.True(t, s.Get().Spec.Test)
				assert.Contains(t, deployerLog(t, s.NS, "checkout-1"), "smoke test of checkout passed")
			},
		},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.file, ".yaml"), func(t *testing.T) {
			// Given the OpenShift manifest, converted by the plugin
			s := env.Given(t).DeploymentConfig(&stagehandv1.DeploymentConfig{ObjectMeta: metav1.ObjectMeta{Name: tt.dc}})
			res := convertManifest(t, s.NS, tt.file)
			for _, want := range tt.wantStderr {
				assert.Contains(t, res.Stderr, want)
			}
			assert.Equal(t, 1, strings.Count(res.Stdout, "kind: DeploymentConfig"), "one DeploymentConfig on stdout:\n%s", res.Stdout)
			assert.NotContains(t, res.Stdout, "apps.openshift.io")

			// When it is applied with kubectl
			applyConverted(t, s.NS, res)

			// Then revision 1 completes, and the DeploymentConfig says so
			s.Then().RevisionPhase(1, complete).OneDeployerPodPerRevision(1).
				DeploymentConfig("revision 1 Complete", func(dc *stagehandv1.DeploymentConfig) bool {
					return dc.Status.LatestVersion == 1 && dc.Status.Phase == complete
				})
			tt.then(t, s)
		})
	}
}

func TestConvertWithoutADeploymentConfigFails(t *testing.T) {
	requireCluster(t)
	ns := env.Namespace(t)
	input := `apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{port: 8080}]}
---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: web}
spec: {to: {kind: Service, name: web}}
`
	res, err := env.Plugin(context.Background(), ns, []byte(input), "convert", "-f", "-")
	require.NoError(t, err)
	assert.NotEqual(t, 0, res.ExitCode, "%s", res)
	assert.Contains(t, res.Stderr, "no DeploymentConfig (apps.openshift.io/v1) in the input: found Service, Route", "%s", res)
	assert.Empty(t, strings.TrimSpace(res.Stdout), "nothing to apply")
}

// An ImageStreamTag trigger needs its registry filled in: converted as is, the config waits
// for a tag that cannot resolve and says why; converted with --registry, it rolls out the
// tag's digest.
func TestConvertImageTriggerWaitsUntilTheRegistryIsFilledIn(t *testing.T) {
	requireController(t)
	reg := env.RequireRegistry(t)
	s := env.Given(t).DeploymentConfig(&stagehandv1.DeploymentConfig{ObjectMeta: metav1.ObjectMeta{Name: "storefront"}})

	// Given the manifest converted without --registry
	res := convertManifest(t, s.NS, "image-trigger.yaml")
	assert.Contains(t, res.Stderr, "warning: deploymentconfig/storefront: spec.triggers[0].imageChangeParams.from: ImageStreamTag testapp:e2e became registry.invalid/testapp:e2e")
	assert.Contains(t, res.Stderr, "replace registry.invalid with the registry that holds the image, or convert again with --registry")
	assert.Contains(t, res.Stderr, "note: deploymentconfig/storefront: spec.triggers[0].imageChangeParams.lastTriggeredImage: dropped")

	// When it is applied, then it waits for the placeholder registry, saying so
	applyConverted(t, s.NS, res)
	s.Then().DeploymentConfig("ImagesResolved False for registry.invalid", func(dc *stagehandv1.DeploymentConfig) bool {
		c := imagesResolved(dc)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "registry.invalid/testapp:e2e")
	})
	assert.Equal(t, int64(0), s.Get().Status.LatestVersion, "no rollout of a tag that never resolved")

	// When it is converted again with the registry and applied, then the digest rolls out
	pinned := pushRandom(t, reg.Image("testapp:e2e"))
	applyConverted(t, s.NS, convertManifest(t, s.NS, "image-trigger.yaml", "--registry", reg.Address))
	s.Then().RevisionPhase(1, complete).ReadyPods(2)
	dc := s.Get()
	assert.Equal(t, reg.Image("testapp:e2e"), dc.Spec.Triggers[0].ImageChangeParams.From.Image)
	assert.Equal(t, pinned, dc.Spec.Template.Spec.Containers[0].Image, "the container is pinned to the tag's digest")
	assert.Equal(t, stagehandv1.DeploymentTriggerOnConfigChange, dc.Spec.Triggers[1].Type)
}

// A Template's DeploymentConfig is converted with its parameters substituted as oc process
// does; one that names a required parameter without a value is refused, naming the
// parameter and the field, until the value is given with --param.
func TestConvertTemplateRefusesAMissingParameterThenRollsOutWithIt(t *testing.T) {
	requireController(t)
	s := env.Given(t).DeploymentConfig(&stagehandv1.DeploymentConfig{ObjectMeta: metav1.ObjectMeta{Name: "inventory"}})

	// Given the Template, converted without a value for its required parameter GREETING
	data, err := os.ReadFile(filepath.Join("testdata", "openshift", "template.yaml"))
	require.NoError(t, err)
	res, err := env.Plugin(context.Background(), s.NS, data, "convert", "-f", "-")
	require.NoError(t, err)

	// Then it is refused, and says which parameter, where, and what to do
	assert.Equal(t, 1, res.ExitCode, "%s", res)
	assert.Contains(t, res.Stderr, "template/inventory: objects[2] (deploymentconfig/inventory) names a parameter without a value: "+
		"${GREETING} (required) at spec.template.spec.containers[0].env[0].value; give it with --param GREETING=VALUE, "+
		"or process the Template first: oc process -f FILE -p GREETING=VALUE | kubectl stagehand convert -f -", "%s", res)
	assert.Empty(t, strings.TrimSpace(res.Stdout), "nothing to apply")

	// When it is converted with --param and applied
	res = convertManifest(t, s.NS, "template.yaml", "--param", "GREETING=hello from the template")
	assert.Contains(t, res.Stderr, "note: template/inventory: converted its DeploymentConfigs inventory; "+
		"substituted the parameters GREETING (--param), NAME (its default), REPLICAS (its default)")
	assert.Contains(t, res.Stderr, "note: service/inventory: not a DeploymentConfig; left out")
	assert.Equal(t, 1, strings.Count(res.Stdout, "kind: DeploymentConfig"), "one DeploymentConfig on stdout:\n%s", res.Stdout)
	for _, param := range []string{"${NAME}", "${GREETING}", "${{REPLICAS}}"} {
		assert.NotContains(t, res.Stdout, param, "the Template's parameters are substituted")
	}
	assert.Contains(t, res.Stdout, "(home ${HOME})", "${HOME} is not a parameter of the Template: it stays for the shell")
	applyConverted(t, s.NS, res)

	// Then it rolls out with the substituted values: 2 replicas, the greeting in the post hook
	s.Then().RevisionPhase(1, complete).ReadyPods(2)
	assert.Contains(t, deployerLog(t, s.NS, "inventory-1"), "post: inventory says hello from the template (home ")
	vars := s.Get().Spec.Template.Spec.Containers[0].Env
	require.Len(t, vars, 1)
	assert.Equal(t, "hello from the template", vars[0].Value)
}

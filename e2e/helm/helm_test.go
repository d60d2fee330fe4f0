//go:build e2e

package helm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
	"github.com/stagehand-dev/stagehand/e2e/localcluster/gate"
	"github.com/stagehand-dev/stagehand/e2e/localcluster/nodeagent"
)

// localValues adapt the chart to the local cluster, where every pod shares the host's
// network: each controller pod gets an IP of its own and serves its metrics and probes
// there (as the e2e suite's install of deploy/ does).
var localValues = []string{
	"--set-string", "podAnnotations." + strings.ReplaceAll(nodeagent.OwnIPAnnotation, ".", `\.`) + "=true",
	"--set", "extraArgs[0]=--metrics-addr=$(POD_IP):8080",
	"--set", "extraEnv[0].name=POD_IP",
	"--set", "extraEnv[0].valueFrom.fieldRef.fieldPath=status.podIP",
}

// The chart installs Stagehand, which rolls out a DC with a hook. An upgrade to the next
// chart version, with changed values, rolls the controller and leaves the running DC
// untouched: same revision, same pods, no new deployer pod. A rollout after it works.
func TestHelmInstallRolloutAndUpgradeKeepTheDCs(t *testing.T) {
	requireLocalCluster(t)
	ctx := context.Background()
	helm := helmBinary(t)
	chart := filepath.Join(env.RepoRoot, "charts", "stagehand")

	// Given the chart installed
	run(t, helm, append([]string{"install", "stagehand", chart, "--namespace", framework.ControllerNamespace,
		"--create-namespace", "--wait", "--timeout", "3m"}, localValues...)...)

	// When a DC with a pre hook rolls out
	dc := framework.NewDeploymentConfig("web", 2, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{Pre: &stagehandv1.LifecycleHook{
		FailurePolicy: stagehandv1.LifecycleHookFailurePolicyAbort,
		ExecNewPod:    &stagehandv1.ExecNewPodHook{ContainerName: "app", Command: []string{"/bin/sh", "-c", "echo migrated"}}}}
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, stagehandv1.RevisionPhaseComplete).ReadyPods(2)
	s.When().TemplateChanged(2).Then().RevisionPhase(2, stagehandv1.RevisionPhaseComplete).ReadyPods(2)
	before := podUIDs(t, s.NS)

	// And the chart is upgraded to its next version, with other values
	next := packageNext(t, helm, chart)
	run(t, helm, append([]string{"upgrade", "stagehand", next, "--namespace", framework.ControllerNamespace,
		"--wait", "--timeout", "3m", "--set", "log.level=debug", "--set", "workers.deploymentConfig=8"}, localValues...)...)

	// Then the controller runs the new values, and the DC is untouched
	deployment, err := env.Kube.AppsV1().Deployments(framework.ControllerNamespace).Get(ctx, "stagehand-controller", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, deployment.Spec.Template.Spec.Containers[0].Args, "--dc-workers=8")
	assert.Equal(t, "stagehand-0.1.1", deployment.Labels["helm.sh/chart"])
	time.Sleep(5 * time.Second) // a controller that touched the DC would have by now
	got := s.Get()
	assert.Equal(t, int64(2), got.Status.LatestVersion, "no new revision")
	assert.Equal(t, stagehandv1.RevisionPhaseComplete, got.Status.Phase)
	assert.Equal(t, before, podUIDs(t, s.NS), "the DC's pods are the same pods")
	s.Then().OneDeployerPodPerRevision(2)

	// And it still rolls out
	s.When().TemplateChanged(3).Then().RevisionPhase(3, stagehandv1.RevisionPhaseComplete).ReadyPods(2)
}

func helmBinary(t *testing.T) string {
	t.Helper()
	path := filepath.Join(env.RepoRoot, "bin", "tools", "helm")
	if _, err := os.Stat(path); err != nil {
		gate.Require(t, "no "+path+": run make tools")
	}
	return path
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig, "HELM_CACHE_HOME="+t.TempDir(),
		"HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %s\n%s\n%s", name, strings.Join(args, " "), out, env.ControllerLogs())
	return string(out)
}

// packageNext packages the chart as its next patch version, 0.1.1, the way a release
// would bump it.
func packageNext(t *testing.T, helm, chart string) string {
	t.Helper()
	dir := t.TempDir()
	run(t, helm, "package", chart, "--version", "0.1.1", "--destination", dir)
	return filepath.Join(dir, "stagehand-0.1.1.tgz")
}

// podUIDs are the UIDs of the DC's app pods (no deployer or hook pods).
func podUIDs(t *testing.T, ns string) map[string]types.UID {
	t.Helper()
	pods, err := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=web," +
		"!" + stagehandv1.DeployerPodForLabel + ",!" + stagehandv1.HookStageLabel})
	require.NoError(t, err)
	out := map[string]types.UID{}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			out[p.Name] = p.UID
		}
	}
	require.Len(t, out, 2)
	return out
}

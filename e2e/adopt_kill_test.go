//go:build e2e

package e2e

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// adopt is killed (SIGKILL) as soon as each of its steps shows, then run again: every
// time the end state is the one of an uninterrupted adoption, with the same pods, none of
// them ever unready.
func TestAdoptKilledAtEachStepIsFinishedByARerun(t *testing.T) {
	requireController(t)
	steps := []struct {
		name string
		done func(ctx context.Context, ns string) bool
	}{
		{"the DeploymentConfig is created", func(ctx context.Context, ns string) bool {
			_, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Get(ctx, "web", metav1.GetOptions{})
			return err == nil
		}},
		{"the Deployment is deleted", func(ctx context.Context, ns string) bool {
			_, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}},
		{"a pod is relabelled", func(ctx context.Context, ns string) bool {
			pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: stagehandv1.RevisionLabel + "=1,app=web"})
			return err == nil && len(pods.Items) > 0
		}},
		{"the pods are handed over", func(ctx context.Context, ns string) bool {
			dc, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Get(ctx, "web", metav1.GetOptions{})
			return err == nil && dc.Annotations[stagehandv1.AdoptAnnotation] == stagehandv1.AdoptReady
		}},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			ns := env.Namespace(t)
			ctx := context.Background()
			_, err := env.Kube.AppsV1().Deployments(ns).Create(ctx, webDeployment(3), metav1.CreateOptions{})
			require.NoError(t, err)
			before := env.WaitForPods(t, ns, "app=web", framework.RolloutTimeout, "3 ready", func(pods []*corev1.Pod) bool {
				n := 0
				for _, p := range pods {
					if framework.PodReady(p) {
						n++
					}
				}
				return n == 3 && len(pods) == 3
			})
			watched := watchNeverUnready(t, ns)

			cmd := exec.Command(env.PluginPath(), "--kubeconfig", env.Kubeconfig, "--namespace", ns, "adopt", "deployment/web")
			require.NoError(t, cmd.Start())
			killed := false
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if step.done(ctx, ns) {
					killed = cmd.Process.Kill() == nil
					break
				}
			}
			_ = cmd.Wait()
			require.True(t, killed, "adopt was killed after %s", step.name)

			rerun := pluginOK(t, ns, "adopt", "deployment/web")
			assert.Contains(t, rerun.Stdout, "deployment/web adopted")
			assert.Contains(t, rerun.Stderr, "an adoption was interrupted; finishing it")
			rs, err := env.Kube.AppsV1().ReplicaSets(ns).Get(ctx, "web-1", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, string(stagehandv1.RevisionPhaseComplete), rs.Annotations[stagehandv1.PhaseAnnotation])
			after, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			require.NoError(t, err)
			var was, now []string
			for _, p := range before {
				was = append(was, string(p.UID))
			}
			for _, p := range after.Items {
				now = append(now, string(p.UID))
				if ref := metav1.GetControllerOfNoCopy(&p); assert.NotNil(t, ref, p.Name) {
					assert.Equal(t, "web-1", ref.Name)
				}
			}
			assert.ElementsMatch(t, was, now, "the same pods")
			_, err = env.Kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			assert.True(t, apierrors.IsNotFound(err))
			watched.mu.Lock()
			assert.Empty(t, watched.unready, "no pod was ever not ready")
			watched.mu.Unlock()
		})
	}
}

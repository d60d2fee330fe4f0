package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	stagehandfake "github.com/stagehand-dev/stagehand/api/client/clientset/versioned/fake"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/rollout"
)

// helloDC is deploymentconfig hello of namespace shop: containers app and sidecar, the init
// container migrate, a ConfigChange trigger and an automatic ImageChange trigger on sidecar.
func helloDC() *v1alpha1.DeploymentConfig {
	return &v1alpha1.DeploymentConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "shop", ResourceVersion: "10"},
		Spec: v1alpha1.DeploymentConfigSpec{
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "migrate", Image: "stagehand/testapp:1"}},
				Containers: []corev1.Container{
					{Name: "app", Image: "stagehand/testapp:1", Env: []corev1.EnvVar{{Name: "GREETING", Value: "hello"}}},
					{Name: "sidecar", Image: "reg/side@sha256:aa"},
				},
			}},
			Triggers: []v1alpha1.DeploymentTriggerPolicy{
				{Type: v1alpha1.DeploymentTriggerOnConfigChange},
				{Type: v1alpha1.DeploymentTriggerOnImageChange, ImageChangeParams: &v1alpha1.DeploymentTriggerImageChangeParams{
					Automatic: true, ContainerNames: []string{"sidecar"}, From: v1alpha1.ImageReference{Image: "reg/side:stable"}}},
			},
			Strategy: v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRolling},
		},
	}
}

// setRun is one run of `set ...` on fake clientsets.
type setRun struct {
	stdout, stderr string
	err            error
	sh             *stagehandfake.Clientset
}

func (r setRun) writes() int {
	n := 0
	for _, a := range r.sh.Actions() {
		if a.GetVerb() == "update" {
			n++
		}
	}
	return n
}

func (r setRun) dc(t *testing.T) *v1alpha1.DeploymentConfig {
	t.Helper()
	dc, err := r.sh.StagehandV1alpha1().DeploymentConfigs("shop").Get(context.Background(), "hello", metav1.GetOptions{})
	require.NoError(t, err)
	return dc
}

// runSet runs `set args...` against dc (and the kube objects); prepare may add reactors.
func runSet(t *testing.T, dc *v1alpha1.DeploymentConfig, kubeObjs []runtime.Object, prepare func(*stagehandfake.Clientset), args ...string) setRun {
	t.Helper()
	sh := stagehandfake.NewSimpleClientset(dc)
	if prepare != nil {
		prepare(sh)
	}
	kube := kubefake.NewSimpleClientset(kubeObjs...)
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{Out: &out, ErrOut: &errOut}
	cmd := newSetCommandWith(func() (*rollout.Client, error) {
		return &rollout.Client{Kube: kube, Stagehand: sh, Namespace: "shop"}, nil
	}, streams)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usagef("%v", err) })
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	sh.ClearActions()
	err := cmd.ExecuteContext(context.Background())
	return setRun{stdout: out.String(), stderr: errOut.String(), err: err, sh: sh}
}

func TestSetImage(t *testing.T) {
	t.Run("sets a container and an init container and says so", func(t *testing.T) {
		r := runSet(t, helloDC(), nil, nil, "image", "dc/hello", "app=stagehand/testapp:2", "migrate=stagehand/testapp:2")
		require.NoError(t, r.err)
		assert.Equal(t, "deploymentconfig.stagehand.dev/hello image updated\n", r.stdout)
		assert.Equal(t, 1, r.writes())
		dc := r.dc(t)
		assert.Equal(t, "stagehand/testapp:2", dc.Spec.Template.Spec.Containers[0].Image)
		assert.Equal(t, "stagehand/testapp:2", dc.Spec.Template.Spec.InitContainers[0].Image)
		assert.Empty(t, r.stderr, "app has no image trigger")
	})
	t.Run("the same image again writes nothing and says so", func(t *testing.T) {
		r := runSet(t, helloDC(), nil, nil, "image", "hello", "app=stagehand/testapp:1")
		require.NoError(t, r.err)
		assert.Equal(t, "deploymentconfig.stagehand.dev/hello: image unchanged (app=stagehand/testapp:1), nothing written\n", r.stdout)
		assert.Equal(t, 0, r.writes())
	})
	t.Run("an unknown container is named with the ones there are", func(t *testing.T) {
		r := runSet(t, helloDC(), nil, nil, "image", "dc/hello", "web=x:1")
		require.Error(t, r.err)
		assert.Equal(t, `deploymentconfig/hello: the pod template has no container "web"; its containers: app, sidecar (init: migrate)`, r.err.Error())
		assert.Equal(t, 1, exitCode(r.err))
		assert.Equal(t, 0, r.writes())
	})
	t.Run("an image trigger is warned about, and --disable-trigger turns it off in the same write", func(t *testing.T) {
		r := runSet(t, helloDC(), nil, nil, "image", "dc/hello", "sidecar=reg/side:2")
		require.NoError(t, r.err)
		assert.Contains(t, r.stderr, "Warning: container sidecar follows reg/side:stable through an automatic ImageChange trigger")
		assert.Contains(t, r.stderr, "--disable-trigger")
		assert.True(t, r.dc(t).Spec.Triggers[1].ImageChangeParams.Automatic)

		r = runSet(t, helloDC(), nil, nil, "image", "dc/hello", "sidecar=reg/side:2", "--disable-trigger")
		require.NoError(t, r.err)
		assert.Equal(t, 1, r.writes())
		dc := r.dc(t)
		assert.False(t, dc.Spec.Triggers[1].ImageChangeParams.Automatic)
		assert.Equal(t, "reg/side:2", dc.Spec.Template.Spec.Containers[1].Image)
		assert.Contains(t, r.stderr, "is now manual")
	})
	t.Run("a conflict is retried on a fresh read", func(t *testing.T) {
		conflicts := 0
		r := runSet(t, helloDC(), nil, func(sh *stagehandfake.Clientset) {
			sh.PrependReactor("update", "deploymentconfigs", func(k8stesting.Action) (bool, runtime.Object, error) {
				if conflicts++; conflicts == 1 {
					return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "stagehand.dev", Resource: "deploymentconfigs"}, "hello", nil)
				}
				return false, nil, nil
			})
		}, "image", "dc/hello", "app=stagehand/testapp:2")
		require.NoError(t, r.err)
		assert.Equal(t, 2, r.writes())
		gets := 0
		for _, a := range r.sh.Actions() {
			if a.GetVerb() == "get" {
				gets++
			}
		}
		assert.Equal(t, 2, gets, "each attempt reads the object again")
		assert.Equal(t, "stagehand/testapp:2", r.dc(t).Spec.Template.Spec.Containers[0].Image)
	})
	t.Run("--dry-run=client sends nothing and -o yaml prints the result only", func(t *testing.T) {
		r := runSet(t, helloDC(), nil, nil, "image", "dc/hello", "app=stagehand/testapp:2", "--dry-run=client", "-o", "yaml")
		require.NoError(t, r.err)
		assert.Equal(t, 0, r.writes())
		var got v1alpha1.DeploymentConfig
		require.NoError(t, yaml.Unmarshal([]byte(r.stdout), &got))
		assert.Equal(t, "stagehand.dev/v1alpha1", got.APIVersion)
		assert.Equal(t, "DeploymentConfig", got.Kind)
		assert.Equal(t, "stagehand/testapp:2", got.Spec.Template.Spec.Containers[0].Image)
		assert.Equal(t, "stagehand/testapp:1", r.dc(t).Spec.Template.Spec.Containers[0].Image)
	})
	t.Run("--dry-run=server asks the apiserver to keep nothing", func(t *testing.T) {
		r := runSet(t, helloDC(), nil, nil, "image", "dc/hello", "app=stagehand/testapp:2", "--dry-run=server")
		require.NoError(t, r.err)
		assert.Equal(t, "deploymentconfig.stagehand.dev/hello image updated (server dry run)\n", r.stdout)
		var dryRun []string
		for _, a := range r.sh.Actions() {
			if u, ok := a.(k8stesting.UpdateActionImpl); ok {
				dryRun = u.GetUpdateOptions().DryRun
			}
		}
		assert.Equal(t, []string{metav1.DryRunAll}, dryRun)
	})
	t.Run("usage mistakes exit 2", func(t *testing.T) {
		for _, args := range [][]string{
			{"image", "dc/hello"},
			{"image", "dc/hello", "app"},
			{"image", "deployment/hello", "app=x"},
			{"image", "dc/hello", "app=x", "--dry-run=maybe"},
			{"image", "dc/hello", "app=x", "-o", "wide"},
		} {
			r := runSet(t, helloDC(), nil, nil, args...)
			require.Error(t, r.err, "%q", args)
			assert.Equal(t, 2, exitCode(r.err), "%q: %v", args, r.err)
		}
	})
}

package dcedit

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func podSpec() *corev1.PodSpec {
	return &corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "migrate", Image: "m:1"}},
		Containers:     []corev1.Container{{Name: "app", Image: "a:1"}, {Name: "sidecar", Image: "s:1"}},
	}
}

func TestSetImages(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    []string // images of migrate, app, sidecar
		wantErr string
	}{
		{name: "one container", args: []string{"app=a:2"}, want: []string{"m:1", "a:2", "s:1"}},
		{name: "an init container", args: []string{"migrate=m:2"}, want: []string{"m:2", "a:1", "s:1"}},
		{name: "every container", args: []string{"*=x:9"}, want: []string{"x:9", "x:9", "x:9"}},
		{name: "unknown container", args: []string{"web=a:2"}, wantErr: `no container "web"; its containers: app, sidecar (init: migrate)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sets, err := ParseImageArgs(tt.args)
			require.NoError(t, err)
			spec := podSpec()
			_, err = SetImages(spec, sets)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, []string{spec.InitContainers[0].Image, spec.Containers[0].Image, spec.Containers[1].Image})
		})
	}
	for _, bad := range [][]string{nil, {"app"}, {"=a:1"}, {"app="}, {"app=a:1", "app=a:2"}} {
		_, err := ParseImageArgs(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestEnvChangeApply(t *testing.T) {
	ref := &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}
	env := []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", ValueFrom: ref}, {Name: "C", Value: "3"}}
	tests := []struct {
		name string
		args []string
		want []corev1.EnvVar
	}{
		{name: "replace keeps the place", args: []string{"B=2"}, want: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}, {Name: "C", Value: "3"}}},
		{name: "add appends", args: []string{"D=", "E=5"}, want: append(append([]corev1.EnvVar{}, env...), corev1.EnvVar{Name: "D"}, corev1.EnvVar{Name: "E", Value: "5"})},
		{name: "remove", args: []string{"A-", "C-"}, want: []corev1.EnvVar{{Name: "B", ValueFrom: ref}}},
		{name: "remove a missing one", args: []string{"Z-"}, want: env},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseEnvArgs(tt.args)
			require.NoError(t, err)
			assert.Equal(t, tt.want, c.Apply(env))
		})
	}
	for _, bad := range [][]string{{"A"}, {"=1"}, {"A=1", "A-"}, {"A\tB=1"}} {
		_, err := ParseEnvArgs(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestFromConfigMapNamesLikeKubectl(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data: map[string]string{"db.host": "x", "log-level": "y"}, BinaryData: map[string][]byte{"cert": nil}}
	got := FromConfigMap(cm, "APP_")
	require.Len(t, got, 3)
	assert.Equal(t, []string{"APP_CERT", "APP_DB_HOST", "APP_LOG_LEVEL"}, []string{got[0].Name, got[1].Name, got[2].Name})
	assert.Equal(t, "db.host", got[1].ValueFrom.ConfigMapKeyRef.Key)
	assert.Equal(t, "settings", got[1].ValueFrom.ConfigMapKeyRef.Name)

	s := FromSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Data: map[string][]byte{"password": nil}}, "")
	require.Len(t, s, 1)
	assert.Equal(t, "PASSWORD", s[0].Name)
	assert.Equal(t, "password", s[0].ValueFrom.SecretKeyRef.Key)
}

func TestPrintEnv(t *testing.T) {
	var b bytes.Buffer
	PrintEnv(&b, "container app", []corev1.EnvVar{{Name: "A", Value: "1"},
		{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "b"}}},
		{Name: "C", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "c"}}}},
		[]corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "all"}}}})
	assert.Equal(t, "# container app\n# every key of configmap all\nA=1\n# B from configmap cm, key b\n# C from secret s, key c\n", b.String())
}

func TestResources(t *testing.T) {
	lim, err := ParseResourceList("cpu=200m,memory=512Mi")
	require.NoError(t, err)
	req, err := ParseResourceList("cpu=100m")
	require.NoError(t, err)
	c := &corev1.Container{Name: "app", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}
	err = SetResources(c, lim, req)
	require.Error(t, err, "the memory request 1Gi is above the new limit")
	assert.Contains(t, err.Error(), "the memory request 1Gi is above its limit 512Mi")

	c.Resources.Requests = nil
	require.NoError(t, SetResources(c, lim, req))
	assert.Equal(t, "200m", c.Resources.Limits.Cpu().String())
	assert.Equal(t, "100m", c.Resources.Requests.Cpu().String())

	for _, bad := range []string{"cpu", "cpu=lots", "memory=-1Gi", "=1"} {
		_, err := ParseResourceList(bad)
		assert.Error(t, err, bad)
	}
}

func triggered() *v1alpha1.DeploymentConfig {
	return &v1alpha1.DeploymentConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "hello"},
		Spec: v1alpha1.DeploymentConfigSpec{
			Template: corev1.PodTemplateSpec{Spec: *podSpec()},
			Triggers: []v1alpha1.DeploymentTriggerPolicy{
				{Type: v1alpha1.DeploymentTriggerOnConfigChange},
				{Type: v1alpha1.DeploymentTriggerOnImageChange, ImageChangeParams: &v1alpha1.DeploymentTriggerImageChangeParams{
					Automatic: true, ContainerNames: []string{"app"}, From: v1alpha1.ImageReference{Image: "reg/app:stable"}}},
			},
		},
	}
}

func TestTriggerEdits(t *testing.T) {
	tests := []struct {
		name    string
		edit    TriggerEdit
		want    []TriggerRow
		wantErr string
	}{
		{name: "manual: config removed, image manual", edit: TriggerEdit{Manual: true},
			want: []TriggerRow{{Type: "config"}, {Type: "image", Value: "reg/app:stable (app)"}}},
		{name: "manual config only", edit: TriggerEdit{Manual: true, FromConfig: true},
			want: []TriggerRow{{Type: "config"}, {Type: "image", Value: "reg/app:stable (app)", Auto: true}}},
		{name: "add an image trigger", edit: TriggerEdit{FromImage: "reg/side:1", Containers: []string{"sidecar"}},
			want: []TriggerRow{{Type: "config", Auto: true}, {Type: "image", Value: "reg/app:stable (app)", Auto: true}, {Type: "image", Value: "reg/side:1 (sidecar)", Auto: true}}},
		{name: "update an image trigger to manual", edit: TriggerEdit{FromImage: "reg/app:stable", Manual: true},
			want: []TriggerRow{{Type: "config", Auto: true}, {Type: "image", Value: "reg/app:stable (app)"}}},
		{name: "remove the image trigger", edit: TriggerEdit{FromImage: "reg/app:stable", Remove: true},
			want: []TriggerRow{{Type: "config", Auto: true}}},
		{name: "remove all", edit: TriggerEdit{RemoveAll: true}, want: []TriggerRow{{Type: "config"}}},
		{name: "a container already followed", edit: TriggerEdit{FromImage: "reg/other:1", Containers: []string{"app"}}, wantErr: "container app already follows reg/app:stable"},
		{name: "an init container", edit: TriggerEdit{FromImage: "reg/m:1", Containers: []string{"migrate"}}, wantErr: "init container"},
		{name: "unknown container", edit: TriggerEdit{FromImage: "reg/m:1", Containers: []string{"web"}}, wantErr: `no container "web"`},
		{name: "new tag without containers", edit: TriggerEdit{FromImage: "reg/m:1"}, wantErr: "name its containers with -c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, tt.edit.Validate())
			dc := triggered()
			err := tt.edit.Apply(dc)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, Rows(dc))
			assert.NotNil(t, dc.Spec.Triggers, "never nil: the API would default it back to ConfigChange")
		})
	}

	// --auto after --manual brings the ConfigChange trigger back, first
	dc := triggered()
	require.NoError(t, TriggerEdit{Manual: true}.Apply(dc))
	require.NoError(t, TriggerEdit{Auto: true}.Apply(dc))
	assert.Equal(t, triggered().Spec.Triggers, dc.Spec.Triggers)

	for _, bad := range []TriggerEdit{{Manual: true, Auto: true}, {Remove: true}, {RemoveAll: true, FromConfig: true}, {Containers: []string{"app"}}, {FromImage: "reg/app@sha256:abc"}} {
		assert.Error(t, bad.Validate(), "%+v", bad)
	}
}

func TestHookSlots(t *testing.T) {
	hook := &v1alpha1.LifecycleHook{FailurePolicy: v1alpha1.LifecycleHookFailurePolicyAbort, ExecNewPod: &v1alpha1.ExecNewPodHook{ContainerName: "app", Command: []string{"true"}}}

	recreate := &v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRecreate}
	require.NoError(t, SetHook(recreate, Mid, hook))
	assert.Same(t, hook, recreate.RecreateParams.Mid)
	got, err := ExecNewPodHook(recreate, Mid)
	require.NoError(t, err)
	assert.Same(t, hook.ExecNewPod, got)

	rolling := &v1alpha1.DeploymentStrategy{}
	err = SetHook(rolling, Mid, hook)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the Rolling strategy has no mid hook")
	require.NoError(t, SetHook(rolling, Post, hook))
	assert.Same(t, hook, rolling.RollingParams.Post)
	require.NoError(t, SetHook(rolling, Post, nil))
	assert.Nil(t, rolling.RollingParams.Post)

	_, err = ExecNewPodHook(rolling, Pre)
	var none *NoHookError
	require.ErrorAs(t, err, &none)
	assert.Equal(t, "the Rolling strategy has no pre hook: add one with kubectl stagehand set deployment-hook --pre", err.Error())

	custom := &v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeCustom}
	assert.Error(t, SetHook(custom, Pre, hook))
}

package hookpod_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/hookpod"
)

func revision(name string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID("rs-uid"),
			Labels: map[string]string{v1alpha1.ConfigLabel: "web", v1alpha1.RevisionLabel: "3"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "stagehand.dev/v1alpha1", Kind: "DeploymentConfig",
				Name: "web", UID: "dc-uid", Controller: new(true)}},
		},
		Spec: appsv1.ReplicaSetSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", v1alpha1.RevisionLabel: "3"}},
			Spec: corev1.PodSpec{
				ServiceAccountName: "app-sa",
				NodeSelector:       map[string]string{"disk": "ssd"},
				Tolerations:        []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
				Affinity:           &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}},
				ImagePullSecrets:   []corev1.LocalObjectReference{{Name: "pull"}},
				SecurityContext:    &corev1.PodSecurityContext{RunAsNonRoot: new(true)},
				Volumes: []corev1.Volume{
					{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
					{Name: "config", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				},
				Containers: []corev1.Container{
					{Name: "sidecar", Image: "sidecar:1"},
					{
						Name: "app", Image: "app:2", ImagePullPolicy: corev1.PullAlways, WorkingDir: "/srv",
						Command: []string{"server"}, Args: []string{"--port=8080"},
						Env: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "MODE", Value: "serve"}, {Name: "B", Value: "2"}},
						EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}},
						Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
							corev1.ResourceMemory: resource.MustParse("64Mi")}},
						SecurityContext: &corev1.SecurityContext{ReadOnlyRootFilesystem: new(true)},
						VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "secret", MountPath: "/secret"},
							{Name: "config", MountPath: "/config"}},
						ReadinessProbe: &corev1.Probe{},
					},
				},
			},
		}},
	}
}

func hook() *v1alpha1.LifecycleHook {
	return &v1alpha1.LifecycleHook{FailurePolicy: v1alpha1.LifecycleHookFailurePolicyAbort, ExecNewPod: &v1alpha1.ExecNewPodHook{
		ContainerName: "app", Command: []string{"/bin/sh", "-c"}, Args: []string{"migrate"},
		Env:     []corev1.EnvVar{{Name: "MODE", Value: "migrate"}, {Name: "EXTRA", Value: "x"}},
		Volumes: []string{"config", "data"},
	}}
}

func TestBuild(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	pod, err := hookpod.Build(hookpod.Spec{
		Revision: revision("web-3"), Stage: "mid", Attempt: 1, Hook: hook(),
		Labels: map[string]string{"team": "a", v1alpha1.HookStageLabel: "spoofed"}, Annotations: map[string]string{"note": "n"},
		Deadline: now.Add(90*time.Second + 300*time.Millisecond), Now: now,
	})
	require.NoError(t, err)

	assert.Equal(t, "web-3-hook-mid", pod.Name)
	assert.Equal(t, "ns", pod.Namespace)
	assert.Equal(t, map[string]string{"team": "a", v1alpha1.ConfigLabel: "web", v1alpha1.RevisionLabel: "3", v1alpha1.HookStageLabel: "mid"}, pod.Labels)
	assert.NotContains(t, pod.Labels, "app", "a hook pod must not match the ReplicaSet's selector")
	assert.Equal(t, map[string]string{"note": "n"}, pod.Annotations)
	require.Len(t, pod.OwnerReferences, 1)
	owner := pod.OwnerReferences[0]
	assert.Equal(t, "ReplicaSet", owner.Kind)
	assert.Equal(t, types.UID("rs-uid"), owner.UID)
	assert.False(t, *owner.Controller)

	spec := pod.Spec
	assert.Equal(t, corev1.RestartPolicyNever, spec.RestartPolicy)
	assert.Equal(t, "app-sa", spec.ServiceAccountName)
	assert.Equal(t, map[string]string{"disk": "ssd"}, spec.NodeSelector)
	assert.Equal(t, "dedicated", spec.Tolerations[0].Key)
	assert.NotNil(t, spec.Affinity)
	assert.Equal(t, "pull", spec.ImagePullSecrets[0].Name)
	assert.True(t, *spec.SecurityContext.RunAsNonRoot)
	assert.Equal(t, int64(91), *spec.ActiveDeadlineSeconds, "what is left of the deadline, rounded up")

	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]
	assert.Equal(t, hookpod.ContainerName, c.Name)
	assert.Equal(t, "app:2", c.Image)
	assert.Equal(t, corev1.PullAlways, c.ImagePullPolicy)
	assert.Equal(t, "/srv", c.WorkingDir)
	assert.Equal(t, []string{"/bin/sh", "-c"}, c.Command)
	assert.Equal(t, []string{"migrate"}, c.Args)
	assert.Equal(t, []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "MODE", Value: "migrate"}, {Name: "B", Value: "2"}, {Name: "EXTRA", Value: "x"}}, c.Env)
	assert.Equal(t, "cm", c.EnvFrom[0].ConfigMapRef.Name)
	assert.Equal(t, "64Mi", c.Resources.Limits.Memory().String())
	assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	assert.Nil(t, c.ReadinessProbe, "probes are not inherited")

	var volumes, mounts []string
	for _, v := range spec.Volumes {
		volumes = append(volumes, v.Name)
	}
	for _, m := range c.VolumeMounts {
		mounts = append(mounts, m.Name)
	}
	assert.Equal(t, []string{"data", "config"}, volumes, "only the listed volumes, in the template's order")
	assert.Equal(t, []string{"data", "config"}, mounts)
}

func TestBuildDoesNotShareTheTemplate(t *testing.T) {
	rs := revision("web-3")
	pod, err := hookpod.Build(hookpod.Spec{Revision: rs, Stage: "pre", Attempt: 1, Hook: hook()})
	require.NoError(t, err)
	pod.Spec.NodeSelector["disk"] = "changed"
	pod.Spec.Containers[0].Env[0].Value = "changed"
	assert.Equal(t, "ssd", rs.Spec.Template.Spec.NodeSelector["disk"])
	assert.Equal(t, "1", rs.Spec.Template.Spec.Containers[1].Env[0].Value)
	assert.Nil(t, pod.Spec.ActiveDeadlineSeconds, "no deadline, no activeDeadlineSeconds")
}

func TestBuildNames(t *testing.T) {
	long := strings.Repeat("a", 50) + "-12"
	tests := []struct {
		name     string
		revision string
		stage    string
		attempt  int
		want     string
	}{
		{name: "first attempt", revision: "web-3", stage: "pre", attempt: 1, want: "web-3-hook-pre"},
		{name: "retry suffix", revision: "web-3", stage: "pre", attempt: 2, want: "web-3-hook-pre-2"},
		{name: "long name shortened", revision: long, stage: "post", attempt: 1, want: v1alpha1.ShortenName(long + "-hook-post")},
		{name: "long retries stay distinct", revision: long, stage: "post", attempt: 3, want: v1alpha1.ShortenName(long + "-hook-post-3")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod, err := hookpod.Build(hookpod.Spec{Revision: revision(tt.revision), Stage: tt.stage, Attempt: tt.attempt, Hook: hook()})
			require.NoError(t, err)
			assert.Equal(t, tt.want, pod.Name)
			assert.LessOrEqual(t, len(pod.Name), v1alpha1.MaxDerivedNameLength)
		})
	}
}

func TestBuildRefusesWhatTheTemplateLacks(t *testing.T) {
	noContainer := hook()
	noContainer.ExecNewPod.ContainerName = "missing"
	noVolume := hook()
	noVolume.ExecNewPod.Volumes = []string{"data", "nope"}
	for name, h := range map[string]*v1alpha1.LifecycleHook{"container": noContainer, "volume": noVolume, "action": {FailurePolicy: "Abort"}} {
		t.Run(name, func(t *testing.T) {
			_, err := hookpod.Build(hookpod.Spec{Revision: revision("web-3"), Stage: "pre", Attempt: 1, Hook: h})
			var invalid *hookpod.InvalidHookError
			assert.ErrorAs(t, err, &invalid)
		})
	}
}

func TestActiveDeadlineSeconds(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	assert.Nil(t, hookpod.ActiveDeadlineSeconds(time.Time{}, now))
	assert.Equal(t, int64(1), *hookpod.ActiveDeadlineSeconds(now.Add(-time.Minute), now), "at least 1 when the deadline passed")
	assert.Equal(t, int64(60), *hookpod.ActiveDeadlineSeconds(now.Add(time.Minute), now))
}

func TestMergeEnv(t *testing.T) {
	env := func(kv ...string) []corev1.EnvVar {
		var out []corev1.EnvVar
		for i := 0; i < len(kv); i += 2 {
			out = append(out, corev1.EnvVar{Name: kv[i], Value: kv[i+1]})
		}
		return out
	}
	tests := []struct {
		name       string
		base, hook []corev1.EnvVar
		want       []corev1.EnvVar
	}{
		{name: "both empty"},
		{name: "hook only", hook: env("X", "1"), want: env("X", "1")},
		{name: "hook wins in place", base: env("A", "1", "B", "2"), hook: env("A", "9"), want: env("A", "9", "B", "2")},
		{name: "new names appended in order", base: env("A", "1"), hook: env("C", "3", "B", "2"), want: env("A", "1", "C", "3", "B", "2")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, hookpod.MergeEnv(tt.base, tt.hook))
		})
	}
}

package deferstep

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// volumesPod has one volume of every kind a step may or may not share.
func volumesPod() *corev1.Pod {
	p := runningPod()
	p.Spec.Volumes = []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-db-0"}}},
		{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db-conf"}}}},
		{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
		{Name: "other", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "other"}}},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib"}}},
		{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db-creds"}}},
		{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}},
	}
	return p
}

func mounts(names ...string) []corev1.VolumeMount {
	var out []corev1.VolumeMount
	for i, n := range names {
		out = append(out, corev1.VolumeMount{Name: n, MountPath: "/m/" + n + strings.Repeat("x", i)})
	}
	return out
}

func TestStepVolumesCopiesTheSharableMountedVolumesOnce(t *testing.T) {
	step := v1alpha1.DeferStep{Name: "flush", VolumeMounts: mounts("data", "conf", "data", "info", "scratch")}
	got, err := stepVolumes(volumesPod(), step)
	require.NoError(t, err)
	want := []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-db-0"}}},
		{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db-conf"}}}},
		{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{}}},
		// A generic ephemeral volume's claim is named <pod>-<volume>.
		{Name: "scratch", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "db-0-scratch"}}},
	}
	assert.Equal(t, want, got, "the mounted volumes only (not \"other\"), each once, in the order of the mounts")

	got, err = stepVolumes(volumesPod(), v1alpha1.DeferStep{Name: "noop"})
	require.NoError(t, err)
	assert.Empty(t, got, "a step without mounts gets no volume")
}

func TestStepVolumesRefusesVolumesAStepCannotShare(t *testing.T) {
	for _, tc := range []struct {
		volume string
		want   string
	}{
		{"tmp", "emptyDir"},
		{"host", "hostPath"},
		{"creds", "secret"},
		{"proj", "projected"},
		{"nope", "which the pod does not have"},
	} {
		t.Run(tc.volume, func(t *testing.T) {
			step := v1alpha1.DeferStep{Name: "wipe", VolumeMounts: mounts("data", tc.volume)}
			got, err := stepVolumes(volumesPod(), step)
			require.Error(t, err)
			assert.Nil(t, got)
			assert.Contains(t, err.Error(), "step wipe")
			assert.Contains(t, err.Error(), `"`+tc.volume+`"`)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestBuildStepPod(t *testing.T) {
	pod := volumesPod()
	pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To[int64](999)}
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](999)}
	pod.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
	pod.Spec.ServiceAccountName = "db"
	p := policy("cleanup", v1alpha1.DeferAfterTermination, "db", "flush", "archive")
	p.Spec.Steps[1].Env = []corev1.EnvVar{{Name: "BUCKET", Value: "b"}, {Name: "STAGEHAND_POD_NAME", Value: "spoofed"}}
	p.Spec.Steps[1].VolumeMounts = mounts("data")
	p.Spec.Steps[1].Args = []string{"--all"}
	run := &v1alpha1.DeferRun{Policy: "cleanup", When: v1alpha1.DeferAfterTermination, Steps: 2, Current: 1, Attempt: 2}

	sp, err := Build(pod, run, p, "the-name", corev1.ResourceRequirements{})
	require.NoError(t, err)

	assert.Equal(t, "the-name", sp.Name)
	assert.Equal(t, "ns", sp.Namespace)
	assert.Equal(t, map[string]string{
		v1alpha1.DeferStepOfLabel: podUID,
		v1alpha1.DeferStepLabel:   "2",
		v1alpha1.DeferPolicyLabel: "cleanup",
	}, sp.Labels)
	assert.Equal(t, map[string]string{v1alpha1.DeferStepForAnnotation: podName}, sp.Annotations)
	assert.Empty(t, sp.OwnerReferences, "not owned by the pod: the garbage collector would take the logs")
	assert.Equal(t, nodeA, sp.Spec.NodeName)
	assert.Equal(t, corev1.RestartPolicyNever, sp.Spec.RestartPolicy)
	require.NotNil(t, sp.Spec.AutomountServiceAccountToken)
	assert.False(t, *sp.Spec.AutomountServiceAccountToken, "no API credentials")
	assert.Empty(t, sp.Spec.ServiceAccountName, "not the pod's service account")
	assert.Equal(t, pod.Spec.SecurityContext, sp.Spec.SecurityContext)
	assert.Equal(t, pod.Spec.Tolerations, sp.Spec.Tolerations)
	require.Len(t, sp.Spec.Volumes, 1)
	assert.Equal(t, "data", sp.Spec.Volumes[0].Name)

	require.Len(t, sp.Spec.Containers, 1)
	ctr := sp.Spec.Containers[0]
	assert.Equal(t, v1alpha1.DeferStepContainer, ctr.Name)
	assert.Equal(t, "busybox", ctr.Image)
	assert.Equal(t, []string{"sh", "-c", "archive"}, ctr.Command, "the current step's, not the first's")
	assert.Equal(t, []string{"--all"}, ctr.Args)
	assert.Equal(t, mounts("data"), ctr.VolumeMounts)
	assert.Equal(t, []corev1.EnvVar{
		{Name: "STAGEHAND_POD_NAME", Value: podName},
		{Name: "STAGEHAND_POD_NAMESPACE", Value: "ns"},
		{Name: "STAGEHAND_POD_UID", Value: podUID},
		{Name: "STAGEHAND_POD_LABELS", Value: "app=db,tier=data"},
		{Name: "STAGEHAND_NODE_NAME", Value: nodeA},
		{Name: "STAGEHAND_DEFER_STEP", Value: "2"},
		{Name: "STAGEHAND_DEFER_WHEN", Value: "AfterTermination"},
		{Name: "BUCKET", Value: "b"},
		{Name: "STAGEHAND_POD_NAME", Value: "spoofed"},
	}, ctr.Env, "the identity first, then the step's own")
	assert.Equal(t, &corev1.SecurityContext{RunAsUser: ptr.To[int64](999)}, ctr.SecurityContext,
		"without its own, the step runs as the pod's first container")
	assert.NotSame(t, pod.Spec.Containers[0].SecurityContext, ctr.SecurityContext, "a copy, not the cache's")
}

// The step's own resources win over the controller's defaults before Build
// (controller/deferpolicy stepResources); Build puts what it is given on the container.
func TestBuildStepPodPrefersTheStepsOwnSecurityContextAndResources(t *testing.T) {
	pod := runningPod()
	pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To[int64](999)}
	p := policy("cleanup", v1alpha1.DeferBeforeScaleDown, "db", "flush")
	p.Spec.Steps[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000)}
	p.Spec.Steps[0].Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}
	run := &v1alpha1.DeferRun{Policy: "cleanup", When: v1alpha1.DeferBeforeScaleDown, Steps: 1}

	sp, err := Build(pod, run, p, "n", *p.Spec.Steps[0].Resources)
	require.NoError(t, err)
	ctr := sp.Spec.Containers[0]
	assert.Equal(t, ptr.To[int64](1000), ctr.SecurityContext.RunAsUser)
	assert.Equal(t, *p.Spec.Steps[0].Resources, ctr.Resources)
	assert.Equal(t, "1", sp.Labels[v1alpha1.DeferStepLabel])
	assert.Contains(t, ctr.Env, corev1.EnvVar{Name: "STAGEHAND_DEFER_WHEN", Value: "BeforeScaleDown"})
	assert.Contains(t, ctr.Env, corev1.EnvVar{Name: "STAGEHAND_DEFER_STEP", Value: "1"})

	pod.Spec.Containers = nil
	p.Spec.Steps[0].SecurityContext = nil
	sp, err = Build(pod, run, p, "n", corev1.ResourceRequirements{})
	require.NoError(t, err)
	assert.Nil(t, sp.Spec.Containers[0].SecurityContext, "a pod without containers has nothing to copy")
}

func TestBuildStepPodFailsWithTheVolumeError(t *testing.T) {
	p := policy("cleanup", v1alpha1.DeferAfterTermination, "db", "flush")
	p.Spec.Steps[0].VolumeMounts = mounts("tmp")
	sp, err := Build(volumesPod(), &v1alpha1.DeferRun{Steps: 1}, p, "n", corev1.ResourceRequirements{})
	assert.Nil(t, sp)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `step flush mounts volume "tmp"`)
}

func TestTargetLabelsReadTheStepsIdentity(t *testing.T) {
	pod := volumesPod()
	pod.Labels = map[string]string{"app": "web", v1alpha1.ConfigLabel: "web", v1alpha1.RevisionLabel: "2"}
	policy := &v1alpha1.DeferPolicy{ObjectMeta: metav1.ObjectMeta{Name: "drain"},
		Spec: v1alpha1.DeferPolicySpec{Steps: []v1alpha1.DeferStep{{Name: "one", Image: "busybox"}}}}
	step, err := Build(pod, &v1alpha1.DeferRun{Steps: 1}, policy, "web-step-1", corev1.ResourceRequirements{})
	require.NoError(t, err)
	assert.Equal(t, pod.Labels, TargetLabels(step))
	assert.Nil(t, TargetLabels(pod))
}

package deployerpod

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/internal/controllertest"
)

func TestBuildDeployerPodContract(t *testing.T) {
	dc := controllertest.DC("web", "app:1", 1)
	dc.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"}
	dc.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
	dc.Spec.Template.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
	// A template that runs as root, privileged, changes nothing in the deployer pod.
	dc.Spec.Template.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: new(int64(0)), RunAsNonRoot: new(false)}
	dc.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{
		Privileged: new(true), AllowPrivilegeEscalation: new(true), Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}},
	}
	deadline := int64(900)
	dc.Spec.Strategy = v1alpha1.DeploymentStrategy{
		Type:                  v1alpha1.DeploymentStrategyTypeCustom,
		ActiveDeadlineSeconds: &deadline,
		Labels:                map[string]string{"team": "a"},
		Annotations:           map[string]string{"note": "x"},
		Resources:             corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
		CustomParams: &v1alpha1.CustomDeploymentStrategyParams{
			Image: "custom:1", Command: []string{"/run"}, Environment: []corev1.EnvVar{{Name: "EXTRA", Value: "1"}},
		},
	}
	rs := controllertest.Revision(t, dc, 3, v1alpha1.RevisionPhaseNew, 0)
	pod := deployerPod(t, rs, "")

	assert.Equal(t, "web-3-deploy", pod.Name)
	assert.Equal(t, "ns", pod.Namespace)
	assert.Equal(t, map[string]string{"team": "a", v1alpha1.ConfigLabel: "web", v1alpha1.RevisionLabel: "3", v1alpha1.DeployerPodForLabel: "web-3"}, pod.Labels)
	assert.Equal(t, map[string]string{"note": "x"}, pod.Annotations)
	require.Len(t, pod.OwnerReferences, 1)
	assert.Equal(t, "ReplicaSet", pod.OwnerReferences[0].Kind)
	assert.Equal(t, rs.UID, pod.OwnerReferences[0].UID)
	assert.Nil(t, pod.OwnerReferences[0].Controller, "not a controller reference")
	assert.Equal(t, "stagehand-deployer", pod.Spec.ServiceAccountName)
	assert.Equal(t, corev1.RestartPolicyNever, pod.Spec.RestartPolicy)
	assert.Equal(t, int64(900), *pod.Spec.ActiveDeadlineSeconds)
	assert.Equal(t, map[string]string{"zone": "a"}, pod.Spec.NodeSelector)
	assert.Len(t, pod.Spec.Tolerations, 1)
	assert.Equal(t, "pull", pod.Spec.ImagePullSecrets[0].Name)
	require.Len(t, pod.Spec.Containers, 1)
	c := pod.Spec.Containers[0]
	assert.Equal(t, "deployer", c.Name)
	assert.Equal(t, "custom:1", c.Image)
	assert.Equal(t, []string{"/run"}, c.Command)
	assert.Equal(t, corev1.TerminationMessageFallbackToLogsOnError, c.TerminationMessagePolicy)
	assert.Equal(t, "100m", c.Resources.Limits.Cpu().String())
	assert.Equal(t, []corev1.EnvVar{
		{Name: "STAGEHAND_REVISION", Value: "web-3"}, {Name: "STAGEHAND_NAMESPACE", Value: "ns"},
		{Name: "OPENSHIFT_DEPLOYMENT_NAME", Value: "web-3"}, {Name: "OPENSHIFT_DEPLOYMENT_NAMESPACE", Value: "ns"},
		{Name: "EXTRA", Value: "1"},
	}, c.Env)
	assertPodSecurityRestricted(t, pod)

	// Built-in strategies run the controller's deployer image.
	builtin := controllertest.Revision(t, controllertest.DC("web", "app:1", 1), 1, v1alpha1.RevisionPhaseNew, 0)
	assert.Equal(t, "stagehand/deployer:test", deployerPod(t, builtin, "").Spec.Containers[0].Image)
	assert.Nil(t, deployerPod(t, builtin, "").Spec.Containers[0].Command)
	assertPodSecurityRestricted(t, deployerPod(t, builtin, ""))
}

// assertPodSecurityRestricted checks the security contexts of DESIGN.md §5, which pass Pod
// Security "restricted". No runAsUser: the image's own non-root user is kept.
func assertPodSecurityRestricted(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	assert.Equal(t, &corev1.PodSecurityContext{
		RunAsNonRoot:   new(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}, pod.Spec.SecurityContext)
	require.Len(t, pod.Spec.Containers, 1)
	assert.Equal(t, &corev1.SecurityContext{
		RunAsNonRoot:             new(true),
		AllowPrivilegeEscalation: new(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}, pod.Spec.Containers[0].SecurityContext)
}

func TestRevisionPhaseFor(t *testing.T) {
	tests := []struct {
		pod  corev1.PodPhase
		want v1alpha1.RevisionPhase
	}{
		{corev1.PodPending, v1alpha1.RevisionPhasePending},
		{"", v1alpha1.RevisionPhasePending},
		{corev1.PodRunning, v1alpha1.RevisionPhaseRunning},
		{corev1.PodSucceeded, v1alpha1.RevisionPhaseComplete},
		{corev1.PodFailed, v1alpha1.RevisionPhaseFailed},
	}
	for _, tt := range tests {
		t.Run(string(tt.pod), func(t *testing.T) {
			assert.Equal(t, tt.want, revisionPhaseFor(&corev1.Pod{Status: corev1.PodStatus{Phase: tt.pod}}))
		})
	}
}

func TestParseTerminationMessage(t *testing.T) {
	long := strings.Repeat("x", 2000)
	tests := []struct {
		name, raw, reason, message string
	}{
		{name: "contract JSON", raw: `{"reason":"HookFailed","message":"boom"}`, reason: "HookFailed", message: "boom"},
		{name: "JSON with spaces", raw: "  {\"reason\":\"TimedOut\",\"message\":\" slow \"}\n", reason: "TimedOut", message: "slow"},
		{name: "plain text", raw: "  panic: oops\n", reason: "Failed", message: "panic: oops"},
		{name: "JSON without reason", raw: `{"message":"m"}`, reason: "Failed", message: `{"message":"m"}`},
		{name: "empty", raw: "", reason: "Failed", message: ""},
		{name: "long log tail", raw: long, reason: "Failed", message: "..." + long[:v1alpha1.MaxStatusMessage-3]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseTerminationMessage(tt.raw)
			assert.Equal(t, tt.reason, got.Reason)
			assert.Equal(t, tt.message, got.Message)
		})
	}
}

func TestPodOutcomeDeadlineExceeded(t *testing.T) {
	d := int64(60)
	pod := &corev1.Pod{Spec: corev1.PodSpec{ActiveDeadlineSeconds: &d},
		Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "DeadlineExceeded"}}
	assert.Equal(t, v1alpha1.ReasonDeadlineExceeded, podOutcome(pod).Reason)
}

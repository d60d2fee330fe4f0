package openshift

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func TestConvertRecreateWithHooks(t *testing.T) {
	dc, notes := convertOne(t, openshiftDC(t, `
strategy:
  type: Recreate
  activeDeadlineSeconds: 3600
  resources: {limits: {cpu: 500m}}
  labels: {team: payments}
  annotations: {example.com/audit: "yes"}
  recreateParams:
    timeoutSeconds: 300
    pre:
      failurePolicy: Abort
      execNewPod: {containerName: app, command: [/bin/sh, -c, echo pre], env: [{name: STAGE, value: pre}], volumes: [data]}
    mid:
      failurePolicy: Ignore
      execNewPod: {containerName: app, command: [bin/migrate]}
    post:
      failurePolicy: Retry
      execNewPod: {containerName: app, command: [bin/notify]}
`), Options{})
	want := v1alpha1.DeploymentStrategy{
		Type:                  v1alpha1.DeploymentStrategyTypeRecreate,
		ActiveDeadlineSeconds: ptr.To[int64](3600),
		Resources:             corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}},
		Labels:                map[string]string{"team": "payments"},
		Annotations:           map[string]string{"example.com/audit": "yes"},
		RecreateParams: &v1alpha1.RecreateDeploymentStrategyParams{
			TimeoutSeconds: ptr.To[int64](300),
			Pre: &v1alpha1.LifecycleHook{FailurePolicy: v1alpha1.LifecycleHookFailurePolicyAbort, ExecNewPod: &v1alpha1.ExecNewPodHook{
				ContainerName: "app", Command: []string{"/bin/sh", "-c", "echo pre"},
				Env: []corev1.EnvVar{{Name: "STAGE", Value: "pre"}}, Volumes: []string{"data"},
			}},
			Mid:  &v1alpha1.LifecycleHook{FailurePolicy: v1alpha1.LifecycleHookFailurePolicyIgnore, ExecNewPod: &v1alpha1.ExecNewPodHook{ContainerName: "app", Command: []string{"bin/migrate"}}},
			Post: &v1alpha1.LifecycleHook{FailurePolicy: v1alpha1.LifecycleHookFailurePolicyRetry, ExecNewPod: &v1alpha1.ExecNewPodHook{ContainerName: "app", Command: []string{"bin/notify"}}},
		},
	}
	assert.Equal(t, want, dc.Spec.Strategy)
	assert.Equal(t, []string{"note spec.strategy.recreateParams.post.failurePolicy"}, where(notes))
	assert.Equal(t, "Retry: OpenShift retries a failing hook forever; Stagehand stops after retry.maxAttempts attempts "+
		"(default 3, waiting 1s doubling up to 60s between them) and then fails the rollout as Abort does; "+
		"set spec.strategy.recreateParams.post.retry to change that", notes[0].Message)
}

func TestConvertRollingParams(t *testing.T) {
	dc, notes := convertOne(t, openshiftDC(t, `
strategy:
  type: Rolling
  rollingParams:
    updatePeriodSeconds: 2
    intervalSeconds: 3
    timeoutSeconds: 120
    maxSurge: 1
    maxUnavailable: 50%
    updatePercent: -20
    pre: {failurePolicy: Abort, execNewPod: {containerName: app, command: [echo, pre]}}
    post: {failurePolicy: Ignore, execNewPod: {containerName: app, command: [echo, post]}}
`), Options{})
	want := &v1alpha1.RollingDeploymentStrategyParams{
		UpdatePeriodSeconds: ptr.To[int64](2),
		IntervalSeconds:     ptr.To[int64](3),
		TimeoutSeconds:      ptr.To[int64](120),
		MaxSurge:            ptr.To(intstr.FromInt32(1)),
		MaxUnavailable:      ptr.To(intstr.FromString("50%")),
		Pre:                 &v1alpha1.LifecycleHook{FailurePolicy: v1alpha1.LifecycleHookFailurePolicyAbort, ExecNewPod: &v1alpha1.ExecNewPodHook{ContainerName: "app", Command: []string{"echo", "pre"}}},
		Post:                &v1alpha1.LifecycleHook{FailurePolicy: v1alpha1.LifecycleHookFailurePolicyIgnore, ExecNewPod: &v1alpha1.ExecNewPodHook{ContainerName: "app", Command: []string{"echo", "post"}}},
	}
	assert.Equal(t, v1alpha1.DeploymentStrategyTypeRolling, dc.Spec.Strategy.Type)
	assert.Equal(t, want, dc.Spec.Strategy.RollingParams)
	assert.Equal(t, []string{"warning spec.strategy.rollingParams.updatePercent"}, where(notes))
	assert.Equal(t, "-20: not converted (deprecated in OpenShift, and Stagehand does not have it); set maxSurge and maxUnavailable instead", notes[0].Message)
}

func TestConvertDropsOpenShiftsPacing(t *testing.T) {
	dc, notes := convertOne(t, openshiftDC(t, `
strategy:
  type: Rolling
  rollingParams:
    updatePeriodSeconds: 1
    intervalSeconds: 1
    timeoutSeconds: 600
`), Options{})
	assert.Nil(t, dc.Spec.Strategy.RollingParams.UpdatePeriodSeconds, "OpenShift's default pacing is dropped")
	assert.Nil(t, dc.Spec.Strategy.RollingParams.IntervalSeconds)
	assert.Equal(t, []string{"note spec.strategy.rollingParams.updatePeriodSeconds", "note spec.strategy.rollingParams.intervalSeconds"}, where(notes))
	assert.Contains(t, notes[0].Message, "event-driven")
	assert.Contains(t, notes[0].Message, "Set updatePeriodSeconds: 1 again to keep OpenShift's pacing")
}

func TestConvertHooks(t *testing.T) {
	tests := []struct {
		name         string
		post         string
		want         *v1alpha1.LifecycleHook
		wantNotes    []string
		wantMessages map[string]string
	}{
		{
			name:      "tagImages beside execNewPod is dropped, the hook kept",
			post:      "{failurePolicy: Abort, execNewPod: {containerName: app, command: [echo]}, tagImages: [{containerName: app, to: {kind: ImageStreamTag, name: web:live}}]}",
			want:      &v1alpha1.LifecycleHook{FailurePolicy: v1alpha1.LifecycleHookFailurePolicyAbort, ExecNewPod: &v1alpha1.ExecNewPodHook{ContainerName: "app", Command: []string{"echo"}}},
			wantNotes: []string{"warning spec.strategy.rollingParams.post.tagImages"},
			wantMessages: map[string]string{"spec.strategy.rollingParams.post.tagImages": "dropped: tagImages tags images into ImageStreams, " +
				"which Stagehand does not have; the hook's execNewPod action is kept"},
		},
		{
			name:      "a hook with only tagImages is dropped entirely",
			post:      "{failurePolicy: Retry, tagImages: [{containerName: app, to: {kind: ImageStreamTag, name: web:live}}]}",
			want:      nil,
			wantNotes: []string{"warning spec.strategy.rollingParams.post.tagImages"},
			wantMessages: map[string]string{"spec.strategy.rollingParams.post.tagImages": "dropped, and the whole hook with it (it had no other action): " +
				"tagImages tags images into ImageStreams, which Stagehand does not have; tag the image in your pipeline, or in an execNewPod hook that runs a registry tool"},
		},
		{
			name:         "a hook without any action is dropped",
			post:         "{failurePolicy: Abort}",
			want:         nil,
			wantNotes:    []string{"warning spec.strategy.rollingParams.post"},
			wantMessages: map[string]string{"spec.strategy.rollingParams.post": "dropped: the hook has no execNewPod action, the only action a Stagehand hook has"},
		},
		{
			name:         "no failurePolicy",
			post:         "{execNewPod: {containerName: app, command: [echo]}}",
			want:         &v1alpha1.LifecycleHook{ExecNewPod: &v1alpha1.ExecNewPodHook{ContainerName: "app", Command: []string{"echo"}}},
			wantNotes:    []string{"warning spec.strategy.rollingParams.post.failurePolicy"},
			wantMessages: map[string]string{"spec.strategy.rollingParams.post.failurePolicy": "missing: Stagehand needs Abort, Retry or Ignore, so it will refuse the result"},
		},
		{
			name:      "an unknown failurePolicy",
			post:      "{failurePolicy: Sometimes, execNewPod: {containerName: app, command: [echo]}}",
			want:      &v1alpha1.LifecycleHook{ExecNewPod: &v1alpha1.ExecNewPodHook{ContainerName: "app", Command: []string{"echo"}}},
			wantNotes: []string{"warning spec.strategy.rollingParams.post.failurePolicy"},
		},
		{
			name: "a container and a volume that the template does not have",
			post: "{failurePolicy: Abort, execNewPod: {containerName: worker, command: [echo], volumes: [data, cache]}}",
			want: &v1alpha1.LifecycleHook{FailurePolicy: v1alpha1.LifecycleHookFailurePolicyAbort, ExecNewPod: &v1alpha1.ExecNewPodHook{
				ContainerName: "worker", Command: []string{"echo"}, Volumes: []string{"data", "cache"},
			}},
			wantNotes: []string{"warning spec.strategy.rollingParams.post.execNewPod.containerName", "warning spec.strategy.rollingParams.post.execNewPod.volumes[1]"},
			wantMessages: map[string]string{
				"spec.strategy.rollingParams.post.execNewPod.containerName": `"worker" is not a container of spec.template.spec.containers, so Stagehand will refuse the result`,
				"spec.strategy.rollingParams.post.execNewPod.volumes[1]":    `"cache" is not a volume of spec.template.spec.volumes, so Stagehand will refuse the result`,
			},
		},
		{
			name:      "no command and no containerName",
			post:      "{failurePolicy: Abort, execNewPod: {env: [{name: A, value: b}]}}",
			want:      &v1alpha1.LifecycleHook{FailurePolicy: v1alpha1.LifecycleHookFailurePolicyAbort, ExecNewPod: &v1alpha1.ExecNewPodHook{Env: []corev1.EnvVar{{Name: "A", Value: "b"}}}},
			wantNotes: []string{"warning spec.strategy.rollingParams.post.execNewPod.command", "warning spec.strategy.rollingParams.post.execNewPod.containerName"},
		},
		{
			name:      "unknown fields of the hook and of execNewPod",
			post:      "{failurePolicy: Abort, timeoutSeconds: 30, execNewPod: {containerName: app, command: [echo], args: [x], workingDir: /tmp}}",
			want:      &v1alpha1.LifecycleHook{FailurePolicy: v1alpha1.LifecycleHookFailurePolicyAbort, ExecNewPod: &v1alpha1.ExecNewPodHook{ContainerName: "app", Command: []string{"echo"}}},
			wantNotes: []string{"warning spec.strategy.rollingParams.post.execNewPod.args", "warning spec.strategy.rollingParams.post.execNewPod.workingDir", "warning spec.strategy.rollingParams.post.timeoutSeconds"},
			wantMessages: map[string]string{
				// Stagehand has args; OpenShift's hook has not, which is why they are dropped.
				"spec.strategy.rollingParams.post.execNewPod.args": "not converted: OpenShift's execNewPod has no args field (its command carries the arguments), " +
					"so OpenShift's apiserver drops it, or refuses the object under strict field validation: on OpenShift the hook never ran with these arguments. " +
					"Stagehand's execNewPod has args, but carrying them over would change what the hook runs; " +
					"if the hook needs them, add them to command (or to execNewPod.args) of the result",
				"spec.strategy.rollingParams.post.execNewPod.workingDir": "not converted: Stagehand has no such field",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dc, notes := convertOne(t, openshiftDC(t, "strategy: {type: Rolling, rollingParams: {post: "+tt.post+"}}"), Options{})
			require.NotNil(t, dc.Spec.Strategy.RollingParams)
			assert.Equal(t, tt.want, dc.Spec.Strategy.RollingParams.Post)
			assert.Equal(t, tt.wantNotes, where(notes))
			for field, msg := range tt.wantMessages {
				assert.Equal(t, msg, message(t, notes, field))
			}
		})
	}
}

// strategyCase is one case of TestConvertStrategyTypesAndTheirParameters.
type strategyCase struct {
	name         string
	strategy     string
	opts         Options
	want         v1alpha1.DeploymentStrategy
	wantNotes    []string
	wantMessages map[string]string
}

// strategyCases are TestConvertStrategyTypesAndTheirParameters's cases.
var strategyCases = []strategyCase{
	{
		name:     "Custom with OpenShift's deployer gets the default Stagehand deployer",
		strategy: "{type: Custom, customParams: {image: 'openshift/origin-deployer:v3.11', command: [/bin/sh, -c, ./canary.sh], environment: [{name: STEP, value: '10'}]}}",
		want: v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeCustom, CustomParams: &v1alpha1.CustomDeploymentStrategyParams{
			Image: "stagehand/deployer:latest", Command: []string{"/bin/sh", "-c", "./canary.sh"}, Environment: []corev1.EnvVar{{Name: "STEP", Value: "10"}},
		}},
		wantNotes: []string{"note spec.strategy.customParams.image"},
		wantMessages: map[string]string{"spec.strategy.customParams.image": "openshift/origin-deployer:v3.11 is OpenShift's deployer; replaced with Stagehand's, " +
			"stagehand/deployer:latest, which also answers to the name openshift-deploy (so scripts such as openshift-deploy --until=50% keep working)"},
	},
	{
		name:     "Custom with ose-deployer by digest gets the given deployer, and a script that calls openshift-deploy is a warning",
		strategy: "{type: Custom, customParams: {image: 'registry.redhat.io/openshift4/ose-deployer@sha256:0123', command: [/bin/sh, -c, openshift-deploy --until=50% && openshift-deploy]}}",
		opts:     Options{DeployerImage: "registry.example.com/stagehand/deployer:v1"},
		want: v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeCustom, CustomParams: &v1alpha1.CustomDeploymentStrategyParams{
			Image: "registry.example.com/stagehand/deployer:v1", Command: []string{"/bin/sh", "-c", "openshift-deploy --until=50% && openshift-deploy"},
		}},
		wantNotes: []string{"note spec.strategy.customParams.image", "warning spec.strategy.customParams.command"},
		wantMessages: map[string]string{"spec.strategy.customParams.command": "runs openshift-deploy with type Custom, which that deployer refuses, " +
			"on OpenShift as on Stagehand: it runs only the Recreate and Rolling strategies; set spec.strategy.type to Rolling or Recreate " +
			"and remove customParams.image, and the command runs in the built-in deployer around that strategy"},
	},
	{
		name:      "Custom with the user's own image keeps it, with a warning",
		strategy:  "{type: Custom, customParams: {image: example.com/canary:2}, recreateParams: {timeoutSeconds: 60}}",
		want:      v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeCustom, CustomParams: &v1alpha1.CustomDeploymentStrategyParams{Image: "example.com/canary:2"}, RecreateParams: &v1alpha1.RecreateDeploymentStrategyParams{TimeoutSeconds: ptr.To[int64](60)}},
		wantNotes: []string{"warning spec.strategy.customParams.image"},
	},
	{
		name:     "Rolling drops OpenShift's deployer image: the command runs in the built-in deployer",
		strategy: "{type: Rolling, customParams: {image: 'quay.io/openshift/origin-deployer:4.14', command: [/bin/sh, -c, openshift-deploy]}}",
		want: v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRolling, CustomParams: &v1alpha1.CustomDeploymentStrategyParams{
			Command: []string{"/bin/sh", "-c", "openshift-deploy"},
		}},
		wantNotes: []string{"note spec.strategy.customParams.image"},
		wantMessages: map[string]string{"spec.strategy.customParams.image": "quay.io/openshift/origin-deployer:4.14 is OpenShift's deployer; dropped: " +
			"with type Rolling, Stagehand runs customParams.command in its own deployer image, which also answers to the name openshift-deploy"},
	},
	{
		name:      "Recreate drops another image with a warning",
		strategy:  "{type: Recreate, customParams: {image: example.com/tools:1, command: [./deploy.sh]}}",
		want:      v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRecreate, CustomParams: &v1alpha1.CustomDeploymentStrategyParams{Command: []string{"./deploy.sh"}}},
		wantNotes: []string{"warning spec.strategy.customParams.image"},
	},
	{
		name:         "Custom without customParams",
		strategy:     "{type: Custom}",
		want:         v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeCustom},
		wantNotes:    []string{"warning spec.strategy.customParams.image"},
		wantMessages: map[string]string{"spec.strategy.customParams.image": "missing: type Custom runs this image as the deployer, so Stagehand will refuse the result; set it, or use type Rolling or Recreate"},
	},
	{
		name:      "Rolling drops recreateParams",
		strategy:  "{type: Rolling, recreateParams: {timeoutSeconds: 60}, rollingParams: {timeoutSeconds: 90}}",
		want:      v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRolling, RollingParams: &v1alpha1.RollingDeploymentStrategyParams{TimeoutSeconds: ptr.To[int64](90)}},
		wantNotes: []string{"warning spec.strategy.recreateParams"},
	},
	{
		name:      "no type means Rolling, which drops recreateParams",
		strategy:  "{recreateParams: {timeoutSeconds: 60}}",
		want:      v1alpha1.DeploymentStrategy{},
		wantNotes: []string{"warning spec.strategy.recreateParams"},
	},
	{
		name:      "Recreate drops rollingParams",
		strategy:  "{type: Recreate, rollingParams: {timeoutSeconds: 90}}",
		want:      v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRecreate},
		wantNotes: []string{"warning spec.strategy.rollingParams"},
	},
	{
		name:         "activeDeadlineSeconds not above the timeout of the type",
		strategy:     "{recreateParams: null, rollingParams: {timeoutSeconds: 300}, activeDeadlineSeconds: 300}",
		want:         v1alpha1.DeploymentStrategy{ActiveDeadlineSeconds: ptr.To[int64](300), RollingParams: &v1alpha1.RollingDeploymentStrategyParams{TimeoutSeconds: ptr.To[int64](300)}},
		wantNotes:    []string{"warning spec.strategy.activeDeadlineSeconds"},
		wantMessages: map[string]string{"spec.strategy.activeDeadlineSeconds": "300 is not above the strategy's timeoutSeconds (300), so Stagehand will refuse the result; raise it"},
	},
	{
		name:      "activeDeadlineSeconds above the timeout",
		strategy:  "{type: Recreate, recreateParams: {timeoutSeconds: 60}, activeDeadlineSeconds: 61}",
		want:      v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRecreate, ActiveDeadlineSeconds: ptr.To[int64](61), RecreateParams: &v1alpha1.RecreateDeploymentStrategyParams{TimeoutSeconds: ptr.To[int64](60)}},
		wantNotes: []string{},
	},
	{
		name:         "an unknown type",
		strategy:     "{type: BlueGreen}",
		want:         v1alpha1.DeploymentStrategy{},
		wantNotes:    []string{"warning spec.strategy.type"},
		wantMessages: map[string]string{"spec.strategy.type": `"BlueGreen" is not a strategy type (want Recreate, Rolling or Custom); not converted, so Stagehand uses Rolling`},
	},
	{
		name:      "unknown fields of the strategy and its parameters",
		strategy:  "{type: Recreate, canaryWeight: 10, recreateParams: {timeoutSeconds: 60, drainSeconds: 5}, customParams: {image: '', secrets: [a]}}",
		want:      v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRecreate, RecreateParams: &v1alpha1.RecreateDeploymentStrategyParams{TimeoutSeconds: ptr.To[int64](60)}, CustomParams: &v1alpha1.CustomDeploymentStrategyParams{}},
		wantNotes: []string{"warning spec.strategy.recreateParams.drainSeconds", "warning spec.strategy.customParams.secrets", "warning spec.strategy.canaryWeight"},
	},
}

func TestConvertStrategyTypesAndTheirParameters(t *testing.T) {
	tests := strategyCases
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dc, notes := convertOne(t, openshiftDC(t, "strategy: "+tt.strategy), tt.opts)
			assert.Equal(t, tt.want, dc.Spec.Strategy)
			assert.Equal(t, tt.wantNotes, where(notes))
			for field, msg := range tt.wantMessages {
				assert.Equal(t, msg, message(t, notes, field))
			}
		})
	}
}

func TestIsOpenShiftDeployer(t *testing.T) {
	tests := []struct {
		image string
		want  bool
	}{
		{image: "openshift/origin-deployer:v3.11", want: true},
		{image: "origin-deployer", want: true},
		{image: "registry.redhat.io/openshift3/ose-deployer:v3.11.784", want: true},
		{image: "quay.io/openshift/origin-deployer@sha256:0123", want: true},
		{image: "localhost:5000/ose-deployer:latest", want: true},
		{image: "openshift/origin-deployer-extra:v1", want: false},
		{image: "origin-deployer/tools:1", want: false},
		{image: "stagehand/deployer:latest", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			assert.Equal(t, tt.want, isOpenShiftDeployer(tt.image))
		})
	}
}

package adopt

import (
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// Annotations of a Deployment that belong to the Deployment controller or to kubectl's
// client-side apply: they are not carried over, and the warnings say so.
var notCarried = []string{"deployment.kubernetes.io/", "kubectl.kubernetes.io/last-applied-configuration"}

// ConfigFrom is the DeploymentConfig that adopts d: the same name, namespace, labels and
// user annotations; template, selector, replicas, minReadySeconds and
// revisionHistoryLimit as they are; RollingUpdate as Rolling with the same maxSurge and
// maxUnavailable, Recreate as Recreate; progressDeadlineSeconds as the strategy's
// timeoutSeconds; and a ConfigChange trigger. What has no DeploymentConfig equivalent is
// left out and named in warnings, never dropped silently.
func ConfigFrom(d *appsv1.Deployment) (*v1alpha1.DeploymentConfig, []string, error) {
	if d.Spec.Selector == nil {
		return nil, nil, fmt.Errorf("deployment %s has no selector", d.Name)
	}
	var warnings []string
	dc := &v1alpha1.DeploymentConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "DeploymentConfig"},
		ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: d.Namespace, Labels: copyMap(d.Labels)},
		Spec: v1alpha1.DeploymentConfigSpec{
			Replicas:             d.Spec.Replicas,
			Selector:             d.Spec.Selector.DeepCopy(),
			Template:             *d.Spec.Template.DeepCopy(),
			MinReadySeconds:      d.Spec.MinReadySeconds,
			RevisionHistoryLimit: d.Spec.RevisionHistoryLimit,
			Triggers:             []v1alpha1.DeploymentTriggerPolicy{{Type: v1alpha1.DeploymentTriggerOnConfigChange}},
		},
	}
	warnings = append(warnings, carryAnnotations(dc, d.Annotations)...)
	timeout := d.Spec.ProgressDeadlineSeconds
	timeoutSeconds, activeDeadline := deadlines(timeout)
	switch d.Spec.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		dc.Spec.Strategy = v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRecreate,
			RecreateParams: &v1alpha1.RecreateDeploymentStrategyParams{TimeoutSeconds: timeoutSeconds}}
	default:
		p := &v1alpha1.RollingDeploymentStrategyParams{TimeoutSeconds: timeoutSeconds}
		if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
			p.MaxSurge, p.MaxUnavailable = ru.MaxSurge, ru.MaxUnavailable
		}
		dc.Spec.Strategy = v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRolling, RollingParams: p}
	}
	if activeDeadline != nil {
		dc.Spec.Strategy.ActiveDeadlineSeconds = activeDeadline
		warnings = append(warnings, fmt.Sprintf("progressDeadlineSeconds %d is not below the deployer's default activeDeadlineSeconds %d: "+
			"the DeploymentConfig gets timeoutSeconds %d and activeDeadlineSeconds %d, so that a rollout may make no progress for as long as the Deployment's could",
			*timeout, v1alpha1.DefaultActiveDeadlineSeconds, *timeoutSeconds, *activeDeadline))
	}
	if timeout != nil && *timeout > 0 && d.Spec.MinReadySeconds >= *timeout {
		return nil, warnings, fmt.Errorf("minReadySeconds %d is not below progressDeadlineSeconds %d: a DeploymentConfig refuses that (no pod could ever be available in time); lower minReadySeconds first",
			d.Spec.MinReadySeconds, *timeout)
	}
	return dc, warnings, nil
}

// maxSeconds is the largest timeoutSeconds or activeDeadlineSeconds a DeploymentConfig admits.
const maxSeconds = 1<<31 - 1

// deadlines maps progressDeadlineSeconds to the strategy's timeoutSeconds and, when that is
// not below the default activeDeadlineSeconds (21600; 2147483647, "never", is common), to
// an activeDeadlineSeconds one above it: admission wants the deployer's deadline above the
// timeout. The timeout stays below the largest admitted deadline.
func deadlines(progressDeadline *int32) (timeout, activeDeadline *int64) {
	if progressDeadline == nil {
		return nil, nil
	}
	t := min(int64(*progressDeadline), maxSeconds-1)
	if t < v1alpha1.DefaultActiveDeadlineSeconds {
		return &t, nil
	}
	return &t, new(t + 1)
}

// carryAnnotations copies the user annotations of the adopted object to dc, and warns of
// each one it leaves out.
func carryAnnotations(dc *v1alpha1.DeploymentConfig, annotations map[string]string) []string {
	var warnings []string
	for _, k := range sortedKeys(annotations) {
		if dropped(k) {
			warnings = append(warnings, fmt.Sprintf("annotation %s is not carried over: it belongs to the Deployment controller or to kubectl apply", k))
			continue
		}
		if dc.Annotations == nil {
			dc.Annotations = map[string]string{}
		}
		dc.Annotations[k] = annotations[k]
	}
	return warnings
}

func dropped(key string) bool {
	for _, prefix := range notCarried {
		if strings.HasPrefix(key, prefix) {
			return true
		}
	}
	return false
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

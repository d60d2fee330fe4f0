package hookpod

import (
	"fmt"
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// ContainerName is the name of the one container of every hook pod. It is part of the
// public contract: `kubectl logs <hook pod> -c lifecycle` works, and so does plain
// `kubectl logs <hook pod>`.
const ContainerName = "lifecycle"

// Spec is everything a hook pod is built from.
type Spec struct {
	// Revision is the revision's ReplicaSet. It owns the hook pod, and its pod template is
	// the template the hook inherits from.
	Revision *appsv1.ReplicaSet
	// Stage is pre, mid or post.
	Stage string
	// Attempt counts from 1; attempts after the first get a -<attempt> name suffix.
	Attempt int
	// Hook is the hook to run; its execNewPod action is required.
	Hook *v1alpha1.LifecycleHook
	// Labels and Annotations are the strategy's (spec.strategy.labels and annotations).
	Labels      map[string]string
	Annotations map[string]string
	// Deadline is when the deployer's own activeDeadlineSeconds runs out; zero: none.
	Deadline time.Time
	// Now is the time of building, for the deadline.
	Now time.Time
}

// InvalidHookError is a hook that cannot be built from the template: running it again
// changes nothing until the DeploymentConfig is fixed.
type InvalidHookError struct {
	Message string
}

func (e *InvalidHookError) Error() string { return e.Message }

// Build returns the hook pod of s. It is a pure function: the same Spec always gives the
// same pod, which is what makes a re-run deployer adopt the pod of the same attempt.
func Build(s Spec) (*corev1.Pod, error) {
	rs := s.Revision
	if s.Hook == nil || s.Hook.ExecNewPod == nil {
		return nil, &InvalidHookError{Message: fmt.Sprintf("the %s hook of %s has no execNewPod action; set execNewPod", s.Stage, rs.Name)}
	}
	action := s.Hook.ExecNewPod
	template := rs.Spec.Template.Spec
	var base *corev1.Container
	for i := range template.Containers {
		if template.Containers[i].Name == action.ContainerName {
			base = &template.Containers[i]
			break
		}
	}
	if base == nil {
		return nil, &InvalidHookError{Message: fmt.Sprintf("the %s hook of %s names the container %q, which is not in the pod template; set execNewPod.containerName to one of the template's containers",
			s.Stage, rs.Name, action.ContainerName)}
	}
	volumes, mounts, err := selectVolumes(template.Volumes, base.VolumeMounts, action.Volumes)
	if err != nil {
		return nil, &InvalidHookError{Message: fmt.Sprintf("the %s hook of %s: %v", s.Stage, rs.Name, err)}
	}
	container := corev1.Container{
		Name:            ContainerName,
		Image:           base.Image,
		ImagePullPolicy: base.ImagePullPolicy,
		Command:         append([]string(nil), action.Command...),
		Args:            append([]string(nil), action.Args...),
		Env:             MergeEnv(base.Env, action.Env),
		EnvFrom:         deepCopyEnvFrom(base.EnvFrom),
		WorkingDir:      base.WorkingDir,
		Resources:       *base.Resources.DeepCopy(),
		SecurityContext: base.SecurityContext.DeepCopy(),
		VolumeMounts:    mounts,
		// The deployer reads the termination message on failure; logs fill in when the
		// command wrote none.
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	copied := rs.Spec.Template.DeepCopy().Spec
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            v1alpha1.HookPodName(rs.Name, s.Stage, s.Attempt),
			Namespace:       rs.Namespace,
			Labels:          Labels(rs, s.Stage, s.Labels),
			Annotations:     copyMap(s.Annotations),
			OwnerReferences: []metav1.OwnerReference{ownerRef(rs)},
		},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{container},
			RestartPolicy:                 corev1.RestartPolicyNever,
			Volumes:                       volumes,
			ServiceAccountName:            copied.ServiceAccountName,
			AutomountServiceAccountToken:  copied.AutomountServiceAccountToken,
			NodeSelector:                  copied.NodeSelector,
			Tolerations:                   copied.Tolerations,
			Affinity:                      copied.Affinity,
			ImagePullSecrets:              copied.ImagePullSecrets,
			SecurityContext:               copied.SecurityContext,
			TerminationGracePeriodSeconds: copied.TerminationGracePeriodSeconds,
			ActiveDeadlineSeconds:         ActiveDeadlineSeconds(s.Deadline, s.Now),
		},
	}
	return pod, nil
}

// Labels are the labels of the hook pods of rs at stage: the strategy's labels, then
// stagehand.dev/config, stagehand.dev/revision and stagehand.dev/hook=<stage>, which win.
func Labels(rs *appsv1.ReplicaSet, stage string, strategyLabels map[string]string) map[string]string {
	labels := copyMap(strategyLabels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[v1alpha1.ConfigLabel] = rs.Labels[v1alpha1.ConfigLabel]
	labels[v1alpha1.RevisionLabel] = rs.Labels[v1alpha1.RevisionLabel]
	labels[v1alpha1.HookStageLabel] = stage
	return labels
}

// ActiveDeadlineSeconds is what is left of the deployer's deadline at now, at least 1
// second; nil when there is no deadline.
func ActiveDeadlineSeconds(deadline, now time.Time) *int64 {
	if deadline.IsZero() {
		return nil
	}
	left := int64(math.Ceil(deadline.Sub(now).Seconds()))
	return new(max(left, 1))
}

// MergeEnv returns base with hook appended; a hook variable with the name of a base
// variable replaces it in place, so the order of base is kept.
func MergeEnv(base, hook []corev1.EnvVar) []corev1.EnvVar {
	override := make(map[string]corev1.EnvVar, len(hook))
	for _, v := range hook {
		override[v.Name] = v
	}
	merged := make([]corev1.EnvVar, 0, len(base)+len(hook))
	seen := map[string]bool{}
	for _, v := range base {
		if o, ok := override[v.Name]; ok {
			v = o
		}
		seen[v.Name] = true
		merged = append(merged, *v.DeepCopy())
	}
	for _, v := range hook {
		if !seen[v.Name] {
			seen[v.Name] = true
			merged = append(merged, *v.DeepCopy())
		}
	}
	if len(merged) == 0 {
		return nil
	}
	return merged
}

// selectVolumes returns the template volumes named in names and the container's mounts of
// them. A listed volume that the template lacks is an error (admission refuses it too).
func selectVolumes(all []corev1.Volume, mounts []corev1.VolumeMount, names []string) ([]corev1.Volume, []corev1.VolumeMount, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var volumes []corev1.Volume
	for _, v := range all {
		if want[v.Name] {
			volumes = append(volumes, *v.DeepCopy())
			delete(want, v.Name)
		}
	}
	for _, n := range names {
		if want[n] {
			return nil, nil, fmt.Errorf("execNewPod.volumes lists %q, which is not a volume of the pod template; remove it or add the volume", n)
		}
	}
	var selected []corev1.VolumeMount
	for _, m := range mounts {
		for _, v := range volumes {
			if m.Name == v.Name {
				selected = append(selected, *m.DeepCopy())
			}
		}
	}
	return volumes, selected, nil
}

func ownerRef(rs *appsv1.ReplicaSet) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: revision.Kind(rs).GroupVersion().String(), Kind: revision.Kind(rs).Kind,
		Name: rs.Name, UID: rs.UID,
		// Not the controller: the ReplicaSet controller must not adopt or count it.
		Controller: new(false), BlockOwnerDeletion: new(false),
	}
}

func deepCopyEnvFrom(in []corev1.EnvFromSource) []corev1.EnvFromSource {
	if in == nil {
		return nil
	}
	out := make([]corev1.EnvFromSource, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

func copyMap(in map[string]string) map[string]string {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

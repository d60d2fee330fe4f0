package deferstep

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// Build is the pod of run's current step of policy, named name (see Name): on pod's node,
// with the volumes the step mounts, the pod's identity in its environment, and no API
// credentials. resources are its container's requests and limits: the step's own, with
// the controller's defaults filled in where it sets none. It fails, naming the step and
// the volume, when the step mounts a volume that a second pod may not share.
func Build(pod *corev1.Pod, run *v1alpha1.DeferRun, policy *v1alpha1.DeferPolicy, name string, resources corev1.ResourceRequirements) (*corev1.Pod, error) {
	step := policy.Spec.Steps[run.Current]
	volumes, err := stepVolumes(pod, step)
	if err != nil {
		return nil, err
	}
	sc := step.SecurityContext
	if sc == nil && len(pod.Spec.Containers) > 0 {
		sc = pod.Spec.Containers[0].SecurityContext
	}
	env := append(identityEnv(pod, run.Current, run.When), step.Env...)
	ctr := corev1.Container{
		Name:            v1alpha1.DeferStepContainer,
		Image:           step.Image,
		Command:         step.Command,
		Args:            step.Args,
		Env:             env,
		VolumeMounts:    step.VolumeMounts,
		SecurityContext: sc.DeepCopy(),
		Resources:       resources,
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: pod.Namespace,
			Labels: map[string]string{
				v1alpha1.DeferStepOfLabel: string(pod.UID),
				v1alpha1.DeferStepLabel:   strconv.Itoa(run.Current + 1),
				v1alpha1.DeferPolicyLabel: policy.Name,
			},
			// Not owned by the pod: the garbage collector would delete the steps, and
			// their logs, the moment the pod goes. The controller deletes them after
			// its --defer-step-ttl instead (controller/deferpolicy/cleanup.go).
			Annotations: map[string]string{v1alpha1.DeferStepForAnnotation: pod.Name},
		},
		Spec: corev1.PodSpec{
			NodeName:                     pod.Spec.NodeName,
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			SecurityContext:              pod.Spec.SecurityContext.DeepCopy(),
			Tolerations:                  pod.Spec.Tolerations,
			ImagePullSecrets:             pod.Spec.ImagePullSecrets,
			Volumes:                      volumes,
			Containers:                   []corev1.Container{ctr},
		},
	}, nil
}

// identityEnv tells a step which pod it runs for.
func identityEnv(pod *corev1.Pod, i int, when v1alpha1.DeferWhen) []corev1.EnvVar {
	keys := make([]string, 0, len(pod.Labels))
	for k := range pod.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pairs := make([]string, 0, len(keys))
	for _, k := range keys {
		pairs = append(pairs, k+"="+pod.Labels[k])
	}
	return []corev1.EnvVar{
		{Name: "STAGEHAND_POD_NAME", Value: pod.Name},
		{Name: "STAGEHAND_POD_NAMESPACE", Value: pod.Namespace},
		{Name: "STAGEHAND_POD_UID", Value: string(pod.UID)},
		{Name: "STAGEHAND_POD_LABELS", Value: strings.Join(pairs, ",")},
		{Name: "STAGEHAND_NODE_NAME", Value: pod.Spec.NodeName},
		{Name: "STAGEHAND_DEFER_STEP", Value: strconv.Itoa(i + 1)},
		{Name: "STAGEHAND_DEFER_WHEN", Value: string(when)},
	}
}

// stepVolumes are the pod's volumes that the step mounts. Only volumes that a second pod
// may share are allowed: a generic ephemeral volume becomes its PVC; an emptyDir, a
// hostPath (the controller's identity may not mount one) or a Secret is refused.
func stepVolumes(pod *corev1.Pod, step v1alpha1.DeferStep) ([]corev1.Volume, error) {
	byName := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		byName[v.Name] = v
	}
	var out []corev1.Volume
	seen := map[string]bool{}
	for _, m := range step.VolumeMounts {
		if seen[m.Name] {
			continue
		}
		seen[m.Name] = true
		v, ok := byName[m.Name]
		if !ok {
			return nil, fmt.Errorf("step %s mounts volume %q, which the pod does not have", step.Name, m.Name)
		}
		switch {
		case v.PersistentVolumeClaim != nil, v.ConfigMap != nil, v.DownwardAPI != nil:
			out = append(out, *v.DeepCopy())
		case v.Ephemeral != nil:
			out = append(out, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pod.Name + "-" + v.Name},
			}})
		default:
			return nil, fmt.Errorf("step %s mounts volume %q, of a kind a step cannot share (%s); steps share persistentVolumeClaim, ephemeral, configMap and downwardAPI volumes (docs/defer.md)",
				step.Name, m.Name, volumeKind(v))
		}
	}
	return out, nil
}

func volumeKind(v corev1.Volume) string {
	switch {
	case v.EmptyDir != nil:
		return "emptyDir: it goes with the pod"
	case v.HostPath != nil:
		return "hostPath"
	case v.Secret != nil:
		return "secret"
	case v.Projected != nil:
		return "projected"
	}
	return "unsupported"
}

// TargetLabels are the labels of the pod a step pod runs for, as identityEnv gave them to
// it; nil for a pod that is not a step.
func TargetLabels(step *corev1.Pod) map[string]string {
	for _, c := range step.Spec.Containers {
		for _, e := range c.Env {
			if e.Name != "STAGEHAND_POD_LABELS" {
				continue
			}
			out := map[string]string{}
			for _, pair := range strings.Split(e.Value, ",") {
				if k, v, ok := strings.Cut(pair, "="); ok {
					out[k] = v
				}
			}
			return out
		}
	}
	return nil
}
